"""What the background loading of Numba costs the user's thread (the warm-start window of short_run.py's W2).

With a warm kernel cache, the first hybridized call starts a background thread that imports Numba and loads the
eager loops' cached machine code (ops/_fastpath.py, ~0.3 s of CPU). Meanwhile the user's thread keeps running and
shares the GIL with it. This measures that sharing alone, without mixnet's own step in the way: a fresh process
(--child) times mlp.py's hand-written numpy training step (the W2 baseline) before the load, then starts mixnet's
loader and runs the same step until the loader is done. `lost_s` is the window's wall time minus the steps' time
at the undisturbed median: what the load cost the user's thread. `loader_cpu_s` is the process's CPU time over
the window minus the steps' (approximately the loader's). A first child fills a temporary cache (the W2 step until
every loop is compiled); then --rounds children per checkout run alternately, so compare checkouts within a run.

    OMP_NUM_THREADS=1 python3 benchmarks/loading_window.py [--rounds 3] [--mixnet /path/to/checkout ...]
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


def child():
    import numpy as np  # noqa: F401 - imported before the timing, as the step needs it

    import mlp
    step, _, _ = mlp.numpy_step(128)
    for _ in range(20):
        step()
    base = []
    for _ in range(50):
        t = time.perf_counter()
        step()
        base.append(time.perf_counter() - t)
    os.environ["MIXNET_LOAD_AHEAD"] = "0"   # the load is started below, timed, not by the import (_fastpath.load_ahead)
    import mixnet
    from mixnet.ops import _fastpath
    _fastpath._ready.add("float32")          # what the first float32 call finds with a warm cache
    cpu0, start = time.process_time(), time.perf_counter()
    _fastpath._start_loading()
    steps = []
    while _fastpath._loading.is_alive():
        t = time.perf_counter()
        step()
        steps.append(time.perf_counter() - t)
    window, cpu = time.perf_counter() - start, time.process_time() - cpu0
    median = statistics.median(base)
    return {"mixnet": os.path.dirname(os.path.dirname(os.path.abspath(mixnet.__file__))),
            "loaded": _fastpath._module is not None, "step_ms": round(1e3 * median, 3),
            "window_s": round(window, 3), "steps": len(steps),
            "mean_step_ms_in_window": round(1e3 * statistics.mean(steps), 3) if steps else None,
            "lost_s": round(window - len(steps) * median, 3),
            "loader_cpu_s": round(cpu - len(steps) * median, 3)}


def warm(cache, root, env):
    """Fills `cache` with every loop the W2 step uses (short_run.py's warm state)."""
    code = ("import sys, numpy as np, mixnet as mx, short_run\n"
            "_, call, _, _, settle = short_run.w2(mx, np)\n"
            "call(); settle()\n")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mixnet", action="append", default=None, help="checkouts to compare (default: this one)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child()), flush=True)
        return
    roots = [os.path.abspath(r) for r in (args.mixnet or [ROOT])]
    base_env = {k: v for k, v in os.environ.items() if k not in ("MIXNET_COMPILE_BACKGROUND", "PYTHONPATH")}
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        base_env.setdefault(var, "1")
    caches = {}
    try:
        for root in roots:
            cache = caches[root] = tempfile.mkdtemp(prefix="mixnet-loading-window-")
            env = {**base_env, "MIXNET_CACHE_DIR": cache, "NUMBA_CACHE_DIR": os.path.join(cache, "numba"),
                   "PYTHONPATH": os.pathsep.join([root, HERE])}
            warm(cache, root, env)
        for rnd in range(args.rounds):
            for root in roots:
                cache = caches[root]
                env = {**base_env, "MIXNET_CACHE_DIR": cache, "NUMBA_CACHE_DIR": os.path.join(cache, "numba"),
                       "PYTHONPATH": os.pathsep.join([root, HERE])}
                proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child"], env=env,
                                      capture_output=True, text=True, check=False)
                lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                row = json.loads(lines[-1]) if lines else {"error": proc.stderr.strip()[-600:]}
                print(json.dumps({"benchmark": "loading window", "round": rnd, **row,
                                  "load_avg": round(os.getloadavg()[0], 2)}), flush=True)
    finally:
        for cache in caches.values():
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
