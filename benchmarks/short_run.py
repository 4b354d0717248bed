"""Short runs: what a user sees in the first seconds of a hybridized block, in the default mode.

The steady-state benchmarks (elementwise.py, mlp.py) wait until every kernel is compiled or loaded before they
time anything. A short script does not: its first seconds run whatever is ready. Each measurement here is a fresh
interpreter (`--child CASE`) that imports mixnet, builds and hybridizes the block, and then calls it for
`--seconds` (default 3) in the default mode (background compilation on), timing every call. After that window,
in the same process, it times the hand-written baseline of the workload (and mixnet's own steady state, once
everything is in), so the ratios compare figures taken on the same machine at the same moment.

Cases:
  W1  the elementwise chain tanh(x*0.5+1)*sigmoid(x) - x*x/3 (elementwise.py), 1e6 float32, predict mode;
      baseline: the hand-written Numba kernel (parallel variant, the one the fused kernel runs at this size,
      elementwise.py's `hand_written`). Target (issue 13): mean per call over the run <= 1.3x the baseline.
  W2  the MLP 784-512-512-10 training step (mlp.py: net and loss hybridized, record, backward, SGD), batch 128;
      baseline: mlp.py's hand-written numpy step. Target: <= 1.0x the baseline. Where W2 stands
      (benchmarks/README.md, "The eager loops loaded ahead, at import"): the steady state is 0.994-0.997x (its
      hidden layers' GEMMs run in the shape OpenBLAS computes faster, feature-major, and mixnet's fused kernels
      beat numpy's passes); with a warm cache `import mixnet` loads the eager loops without Numba, so the first
      calls no longer share the GIL with that load (~25-30 ms less of the window); what is left is the first
      call's trace and plans.
Cache states, each in its own temporary MIXNET_CACHE_DIR (NUMBA_CACHE_DIR inside it, so the eager fast-path
loops are cold too):
  cold  nothing compiled yet;
  warm  after a process that ran the same workload until every kernel was compiled and cached.
Each row: mean_ms (the window's wall time / its calls, the first call included), median_ms, calls,
first_call_s, first_fused_s (from the start of the first call to the end of the first call that ran with every
kernel in: W1 its fused kernel, W2 the eager Numba loops its plans call; null: not within the window), hybridize_to_call_s, baseline_ms, ratio (mean_ms / baseline_ms),
steady_ms (mixnet once everything is loaded), rss_mb before the first call / after the window / peak, and
numba_imported (whether the window ended with Numba in the process).

    python3 benchmarks/short_run.py [--cases W1,W2] [--states cold,warm] [--repeats 3] [--seconds 3]
                                    [--threads 1] [--mixnet /path/to/checkout] [--preload]
--mixnet runs another checkout (before/after comparisons); each row names the mixnet it imported.
--preload (warm cache only; a diagnostic): the child waits until the eager loops are loaded before building the
block. Since `import mixnet` starts that load (config.LOAD_AHEAD), it differs from the default only where the
load is not done by the first call.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TARGETS = {"W1": 1.3, "W2": 1.0}


def rss_mb(field="VmRSS"):
    """This process's resident (VmRSS) or peak resident (VmHWM) memory in MiB, from /proc (None elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def timed(fn, seconds, min_calls=1):
    """Calls fn for `seconds` (at least min_calls times); returns the per-call seconds."""
    samples = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or len(samples) < min_calls:
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return samples


# ------------------------------------------------------------------------------------------------ workloads
def w1(mx, np):
    """(call, all_fused, baseline): the hybridized chain in predict mode, and the hand-written Numba kernel."""
    class Chain(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.tanh(x * 0.5 + 1) * F.sigmoid(x) - x * x / 3

    net = Chain()
    net.initialize()
    x_np = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
    x = mx.nd.array(x_np)
    hybridize_at = time.perf_counter()
    net.hybridize()

    def call():
        with mx.autograd.predict_mode():
            net(x).wait_to_read()

    def all_fused():
        graph = getattr(net, "_last_graph", None)
        return graph is not None and graph.inference.fused_groups > 0

    def baseline():
        from elementwise import hand_written
        _, parallel = hand_written()
        out = np.empty_like(x_np)
        return lambda: parallel(x_np, out)

    def settle():
        net._last_graph.inference.wait_fused()

    return hybridize_at, call, all_fused, baseline, settle


def w2(mx, np):
    """The hybridized MLP training step (mlp.py's model and data) and mlp.py's hand-written numpy step."""
    import mlp
    autograd = mx.autograd
    net, loss_fn, trainer, x, y = mlp.gluon_model(mx, 128, hybrid=True)
    hybridize_at = time.perf_counter()
    net.hybridize()
    loss_fn.hybridize()

    def call():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(128)
        loss.wait_to_read()

    def parts():
        for block in (net, loss_fn):
            for graph in getattr(block, "_cached_graphs", {}).values():
                for plan in list(getattr(graph, "_training", {}).values()):
                    yield from (p for p in (plan.forward, plan.backward) if p is not None)

    def all_fused():
        # the MLP's plans fuse no elementwise group (its activations are GEMM epilogues): what it waits for is
        # the plans' background work and the eager Numba loops (the epilogue, softmax and SGD kernels)
        plans = list(parts())
        fastpath = sys.modules.get("mixnet.ops._fastpath")
        return bool(plans) and all(p._fusing is None or not p._fusing.is_alive() for p in plans) and (
            fastpath is not None and fastpath._module is not None)

    def baseline():
        step, _, _ = mlp.numpy_step(128)
        return step

    def settle():
        for plan in parts():
            plan.wait_fused()
        fastpath = sys.modules.get("mixnet.ops._fastpath")
        if fastpath is not None and hasattr(fastpath, "wait_compiled"):
            fastpath.wait_compiled()

    return hybridize_at, call, all_fused, baseline, settle


def preload_eager_loops(np):
    """Loads the eager loops' cached float32 code now, before the window (--preload): the load `import mixnet`
    started, or one started here (without Numba where the cache holds their export)."""
    from mixnet.ops import _fastpath
    _fastpath.numba_kernels(np, np.zeros(1, np.float32))     # a warm cache: starts the background loading
    _fastpath.wait_compiled()


def child(case, seconds, preload=False):
    start = time.perf_counter()
    import numpy as np

    import mixnet as mx
    imported = time.perf_counter()
    if preload:
        preload_eager_loops(np)
    hybridize_at, call, all_fused, baseline, settle = {"W1": w1, "W2": w2}[case](mx, np)
    rss_before = rss_mb()
    first = time.perf_counter()
    samples, fused_at = [], None
    while time.perf_counter() - first < seconds:
        t = time.perf_counter()
        call()
        end = time.perf_counter()
        samples.append(end - t)
        if fused_at is None and all_fused():
            fused_at = end - first
    window = time.perf_counter() - first
    rss_after, numba_imported = rss_mb(), "numba" in sys.modules
    settle()
    steady = timed(call, 1.0, 5)
    base_fn = baseline()
    timed(base_fn, 0.2, 3)                 # compile (the hand-written kernel) and warm up
    base = timed(base_fn, 1.0, 5)
    mean = window / len(samples)
    return {"mixnet": os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__))),
            "import_s": round(imported - start, 3), "hybridize_to_call_s": round(first - hybridize_at, 4),
            "calls": len(samples), "mean_ms": round(1e3 * mean, 3),
            "median_ms": round(1e3 * statistics.median(samples), 3), "first_call_s": round(samples[0], 3),
            "first_fused_s": None if fused_at is None else round(fused_at, 3),
            "steady_ms": round(1e3 * statistics.median(steady), 3),
            "baseline_ms": round(1e3 * statistics.median(base), 3),
            "ratio": round(mean / statistics.median(base), 2),
            "rss_mb_before": rss_before, "rss_mb_after": rss_after, "rss_mb_peak": rss_mb("VmHWM"),
            "numba_imported": numba_imported}


def run_child(case, cache, seconds, mixnet_root, env, preload=False):
    run_env = {**env, "MIXNET_CACHE_DIR": cache, "NUMBA_CACHE_DIR": os.path.join(cache, "numba"),
               "PYTHONPATH": os.pathsep.join([mixnet_root, HERE])}
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", case, "--seconds", str(seconds)]
                          + (["--preload"] if preload else []),
                          env=run_env, capture_output=True, text=True, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        return {"error": proc.stderr.strip()[-600:]}
    return json.loads(lines[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="W1,W2")
    parser.add_argument("--states", default="cold,warm")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per case and state")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=1, help="BLAS and Numba threads")
    parser.add_argument("--mixnet", default=ROOT, help="the mixnet checkout to run")
    parser.add_argument("--preload", action="store_true",
                        help="load the eager Numba loops before the window (diagnostic: not the default mode)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps({**child(args.child, args.seconds, args.preload), "preload": args.preload}), flush=True)
        return
    env = {k: v for k, v in os.environ.items() if k not in ("MIXNET_COMPILE_BACKGROUND", "PYTHONPATH")}
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[var] = str(args.threads)
    root = os.path.abspath(args.mixnet)
    for case in args.cases.split(","):
        for state in args.states.split(","):
            for rep in range(args.repeats):
                cache = tempfile.mkdtemp(prefix="mixnet-short-run-")
                try:
                    if state == "warm":            # one run that waits until everything is compiled and cached
                        run_child(case, cache, 0.1, root, env)
                    load = os.getloadavg()[0]
                    row = {"benchmark": "short run", "what": case, "cache": state, "repeat": rep,
                           "seconds": args.seconds,
                           **run_child(case, cache, args.seconds, root, env, args.preload and state == "warm"),
                           "target_ratio": TARGETS[case], "threads": args.threads, "load_avg": round(load, 2)}
                    print(json.dumps(row), flush=True)
                finally:
                    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
