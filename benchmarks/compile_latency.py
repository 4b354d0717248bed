"""First-call (compile) latency of hybridized blocks, cold and warm kernel cache.

Each measurement runs in its own fresh interpreter (`--child CASE`) with MIXNET_CACHE_DIR pointed at a new
temporary directory: the first process finds it empty (cold), the second finds what the first left (warm).
Cases:
  mlp     MLP 784-512-512-10 (benchmarks/mlp.py), hybridized, batch 128: first forward (inference plan)
  mlp-train  the same MLP and a hybridized SoftmaxCrossEntropyLoss: first training step (record, backward:
          the training plans, their backward graphs and fused backward kernels)
  chain   W1 block tanh(x*0.5+1)*sigmoid(x) - x*x/3, hybridized, predict mode, 1e6 float32: first call compiles
          (cold) or loads (warm) one fused Numba kernel
  lenet-train  eager LeNet (benchmarks/lenet.py's net, batch 64) with SGD: the eager fast paths' Numba loops
          (mixnet/ops/_numba_kernels.py). NUMBA_CACHE_DIR also points into the new directory (cold: empty). It
          reports first_step_s, steps20_s (the first 20 steps, the first included), fast_ready_s (from the first
          step until the loops' background compilation is done), load_step_s (the step that imports Numba and
          loads the loops) and step_ms (median of 10 steps after it). Run it with MIXNET_COMPILE_BACKGROUND=0 for
          the synchronous behaviour (compile inside the first step).
Per process the hybridized cases report import_s (import mixnet), setup_s (build + initialize + hybridize), first_call_s,
second_call_s (both may still run unfused: kernels compile in the background), fused_ready_s (from the first call
until every fused kernel is compiled and swapped in) and fused_call_s (a call with them), plus the kernel files
and Numba cache files in the cache dir.
Targets (issue): first hybridized call of the MLP <= 2 s cold, <= 0.3 s warm.

    python3 benchmarks/compile_latency.py [--cases mlp,chain,lenet-train] [--repeats 1] [--threads N]
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
    if case == "lenet-train":
        return eager_lenet(mx, np, t0, t1)
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


def eager_lenet(mx, np, t0, t1):
    from mixnet import config
    from mixnet.ops import _fastpath
    nn = mx.gluon.nn
    rng = np.random.default_rng(0)
    net = nn.Sequential()
    net.add(nn.Conv2D(20, kernel_size=5, activation="relu", in_channels=1), nn.MaxPool2D(pool_size=2, strides=2),
            nn.Conv2D(50, kernel_size=5, activation="relu", in_channels=20), nn.MaxPool2D(pool_size=2, strides=2),
            nn.Dense(500, activation="relu", in_units=800), nn.Dense(10, in_units=500))
    net.initialize(mx.init.Xavier())
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    x = mx.nd.array(rng.standard_normal((64, 1, 28, 28), dtype=np.float32))
    y = mx.nd.array(rng.integers(0, 10, 64).astype(np.float32))

    def step():
        start = time.perf_counter()
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(64)
        loss.wait_to_read()
        return time.perf_counter() - start

    t2 = time.perf_counter()
    steps = [step() for _ in range(20)]
    wait = getattr(_fastpath, "wait_compiled", None)      # absent before background compilation existed
    if wait is not None:
        wait()
    t4 = time.perf_counter()
    load_step = step()
    rest = sorted(step() for _ in range(10))
    return {"import_s": round(t1 - t0, 3), "setup_s": round(t2 - t1, 3), "first_step_s": round(steps[0], 3),
            "steps20_s": round(sum(steps), 3), "second_step_s": round(steps[1], 3),
            "fast_ready_s": round(t4 - t2, 3), "load_step_s": round(load_step, 3),
            "step_ms": round(1000 * rest[len(rest) // 2], 1), "fast_path": _fastpath._module is not None,
            "background": config.COMPILE_BACKGROUND}


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
                    run_env = {**env, "MIXNET_CACHE_DIR": cache}
                    if case == "lenet-train":          # the eager loops cache where Numba is told to
                        run_env["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba-eager")
                    proc = subprocess.run([sys.executable, script, "--child", case], env=run_env,
                                          capture_output=True, text=True)
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
