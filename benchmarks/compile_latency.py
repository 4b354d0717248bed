"""First-call (compile) latency of hybridized blocks, cold and warm kernel cache (reference/performance.md §4.4).

Each measurement runs in its own fresh interpreter (`--child CASE`) with MIXNET_CACHE_DIR pointed at a new
temporary directory: the first process finds it empty (cold), the second finds what the first left (warm).
Cases:
  mlp     MLP 784-512-512-10 (benchmarks/mlp.py), hybridized, batch 128: first forward (inference plan)
  mlp-train  the same MLP and a hybridized SoftmaxCrossEntropyLoss: first training step (record, backward:
          the training plans, their backward graphs and fused backward kernels)
  chain   W1 block tanh(x*0.5+1)*sigmoid(x) - x*x/3, hybridized, predict mode, 1e6 float32: first call compiles
          (cold) or loads (warm) one fused Numba kernel
Per process it reports import_s (import mixnet), setup_s (build + initialize + hybridize), first_call_s,
second_call_s (both may still run unfused: kernels compile in the background), fused_ready_s (from the first call
until every fused kernel is compiled and swapped in) and fused_call_s (a call with them), plus the kernel files
and Numba cache files in the cache dir.
Targets (issue): first hybridized call of the MLP <= 2 s cold, <= 0.3 s warm.

    python3 benchmarks/compile_latency.py [--cases mlp,chain] [--repeats 1] [--threads N]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from _common import set_threads_from_argv  # noqa: E402

THREADS = set_threads_from_argv()


def child(case):
    t0 = time.perf_counter()
    sys.path.insert(0, ROOT)
    import numpy as np
    import mixnet as mx
    t1 = time.perf_counter()
    nn = mx.gluon.nn
    rng = np.random.default_rng(0)
    if case in ("mlp", "mlp-train"):
        net = nn.HybridSequential()
        net.add(nn.Dense(512, activation="relu", in_units=784), nn.Dense(512, activation="relu", in_units=512),
                nn.Dense(10, in_units=512))
        x = mx.nd.array(rng.standard_normal((128, 784), dtype=np.float32))
    elif case == "chain":
        class Chain(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                return F.tanh(x * 0.5 + 1) * F.sigmoid(x) - x * x / 3
        net = Chain()
        x = mx.nd.array(rng.standard_normal(1_000_000, dtype=np.float32))
    else:
        raise SystemExit(f"unknown case {case}")
    net.initialize(mx.init.Xavier())
    net.hybridize()
    if case == "mlp-train":
        loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
        loss_fn.hybridize()
        label = mx.nd.array(rng.integers(0, 10, 128).astype(np.float32))

        def call():
            with mx.autograd.record():
                loss = loss_fn(net(x), label)
            loss.backward()
            return loss
    else:
        def call():
            with mx.autograd.predict_mode():
                return net(x)
    mx.nd.waitall()
    t2 = time.perf_counter()
    call().wait_to_read()
    t3 = time.perf_counter()
    call().wait_to_read()
    t4 = time.perf_counter()
    graph = getattr(net, "_last_graph", None)
    plans = [graph.inference] if case != "mlp-train" else \
        [q for p in graph._training.values() for q in (p.forward, p.backward) if q is not None]
    for plan in plans:                  # the fused kernels compile in the background (a child process)
        plan.wait_fused()
    t5 = time.perf_counter()
    call().wait_to_read()
    t6 = time.perf_counter()
    return {"import_s": round(t1 - t0, 3), "setup_s": round(t2 - t1, 3), "first_call_s": round(t3 - t2, 3),
            "second_call_s": round(t4 - t3, 4), "fused_ready_s": round(t5 - t2, 3),
            "fused_call_s": round(t6 - t5, 4), "fused_groups": sum(p.fused_groups for p in plans)}


def cache_files(path):
    kernels = numba_files = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            if f.endswith(".py") and os.path.basename(dirpath) == os.path.basename(path):
                kernels += 1
            elif f.endswith((".nbi", ".nbc")):
                numba_files += 1
    return kernels, numba_files


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="mlp,mlp-train,chain")
    parser.add_argument("--repeats", type=int, default=1, help="cold+warm pairs per case (each a new cache dir)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)), flush=True)
        return
    script = os.path.abspath(sys.argv[0])
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}   # kernels cache under the new dir
    for case in args.cases.split(","):
        for rep in range(args.repeats):
            cache = tempfile.mkdtemp(prefix="mixnet-compile-bench-")
            try:
                for state in ("cold", "warm"):
                    load = os.getloadavg()[0]
                    start = time.perf_counter()
                    proc = subprocess.run([sys.executable, script, "--child", case],
                                          env={**env, "MIXNET_CACHE_DIR": cache}, capture_output=True, text=True)
                    wall = time.perf_counter() - start
                    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                    if proc.returncode or not lines:
                        print(json.dumps({"benchmark": "compile latency", "what": case, "cache": state,
                                          "error": proc.stderr.strip()[-400:]}), flush=True)
                        break
                    kernels, numba_files = cache_files(cache)
                    row = {"benchmark": "compile latency", "what": case, "cache": state, "repeat": rep,
                           **json.loads(lines[-1]), "process_wall_s": round(wall, 3),
                           "kernel_files": kernels, "numba_cache_files": numba_files, "threads": THREADS,
                           "load_avg": round(load, 2)}
                    if case.startswith("mlp"):
                        row["target_s"] = 2.0 if state == "cold" else 0.3
                    print(json.dumps(row), flush=True)
            finally:
                shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
