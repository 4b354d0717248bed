"""W6: inference memory of a 20-layer MLP (Dense 2048->2048 + ReLU), batch 256. Weights are 320 MiB.

Every variant runs in its own fresh subprocess (`--variant NAME`), so one variant's high-water mark cannot hide
another's. Per variant:
  rss_after_setup_mb   resident set after building + initializing the net and the input (before any forward)
  first_rise_mb        peak RSS rise during the first forward, above rss_after_setup (fresh process: the figure
                       comparable with the peers' figures in benchmarks/README.md; includes tracing and kernel
                       compile/load when hybridized)
  peak_rise_mb         largest peak RSS rise over the timed (steady-state) forwards, each above the RSS just
                       before that call: the transient working set of a forward. Memory the allocator kept from an
                       earlier call is reused without new page faults, so this can be lower than first_rise_mb
  rss_after_mb         RSS after all forwards (what stays resident: plans, compiled kernels, allocator caches)
  ms_median, ms_min    forward time (synchronised) over --runs forwards after the first
  grad_buffers         parameters holding a gradient buffer (inference should hold none)
Peak rise = VmHWM - VmRSS before the call, with the high-water mark reset first (`echo 5 > /proc/self/clear_refs`);
where that is not allowed, a background thread samples /proc/self/statm every 0.5 ms instead.

Variants: numpy (hand-written forward, in-place bias + ReLU), mixnet eager, mixnet hybridized (default),
mixnet hybridized(static_alloc=True, static_shape=True), and, when ~/.venvs/mxref exists, the same Gluon code on
MXNet 1.9.1 (eager and static_alloc).

    python3 benchmarks/memory.py [--runs 5] [--threads N] [--variants numpy,mixnet-eager,...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import MXNET_PYTHON, set_threads_from_argv, skipped  # noqa: E402

THREADS = set_threads_from_argv()
import numpy as np  # noqa: E402

LAYERS, WIDTH, BATCH = 20, 2048, 256
MIB = 1024.0 * 1024.0
VARIANTS = ("numpy", "mixnet-eager", "mixnet-hybrid", "mixnet-static", "mxnet-eager", "mxnet-static")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE / MIB


def _hwm_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    raise OSError("no VmHWM")


def _reset_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rise(fn):
    """Runs fn(); returns (seconds, peak RSS rise in MiB above the RSS just before the call)."""
    if _reset_hwm():
        before = rss_mb()
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        return elapsed, max(0.0, _hwm_mb() - before)
    before, peak, done = rss_mb(), [0.0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb())
            time.sleep(0.0005)
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    done.set()
    t.join()
    return elapsed, max(0.0, max(peak[0], rss_mb()) - before)


def numpy_setup():
    rng = np.random.default_rng(0)
    scale = np.float32(np.sqrt(6.0 / (2 * WIDTH)))
    weights, biases = [], []
    for _ in range(LAYERS):
        w = rng.random((WIDTH, WIDTH), dtype=np.float32)
        w -= np.float32(0.5)
        w *= 2 * scale
        weights.append(w)
        biases.append(np.zeros(WIDTH, np.float32))
    x = rng.standard_normal((BATCH, WIDTH), dtype=np.float32)

    def forward():
        h = x
        for w, b in zip(weights, biases):
            h = h @ w.T
            h += b
            np.maximum(h, 0, out=h)
        return h
    return forward, 0


def gluon_setup(mx, hybrid, static):
    """The same Gluon code for mixnet and MXNet 1.9.1."""
    nn = mx.gluon.nn
    net = nn.HybridSequential()
    for _ in range(LAYERS):
        net.add(nn.Dense(WIDTH, activation="relu", in_units=WIDTH))
    net.initialize(mx.init.Xavier())
    if hybrid:
        net.hybridize(static_alloc=True, static_shape=True) if static else net.hybridize()
    x = mx.nd.array(np.random.default_rng(0).standard_normal((BATCH, WIDTH), dtype=np.float32))
    mx.nd.waitall()

    def forward():
        out = net(x)
        mx.nd.waitall()
        return out

    grads = 0
    for p in net.collect_params().values():
        arr = p.data()
        g = getattr(arr, "_grad", None)
        # MXNet 1.x keeps them on the Parameter (a list per ctx). Not asked of mixnet: its Parameter._grad gives
        # MXNet's view of them and so allocates them (320 MiB here) where backward has not yet.
        if g is None and mx.__name__ == "mxnet":
            g = p._grad
        grads += g is not None
    return forward, grads


def run_variant(name, runs):
    if name == "numpy":
        forward, grads = numpy_setup()
    else:
        framework, kind = name.split("-")
        if framework == "mixnet":
            sys.path.insert(0, os.path.dirname(HERE))
        import importlib
        mx = importlib.import_module(framework)
        forward, grads = gluon_setup(mx, kind != "eager", kind == "static")
    import gc
    gc.collect()
    setup = rss_mb()
    load = os.getloadavg()[0]
    first_s, first_rise = peak_rise(forward)
    times, rises = [], []
    for _ in range(runs):
        gc.collect()
        s, r = peak_rise(forward)
        times.append(s * 1e3)
        rises.append(r)
    loads = [load, os.getloadavg()[0]]
    return {"benchmark": "memory W6", "what": name, "rss_after_setup_mb": round(setup, 1),
            "peak_rise_mb": round(max(rises), 1), "first_rise_mb": round(first_rise, 1),
            "first_call_ms": round(first_s * 1e3, 1), "ms_median": round(statistics.median(times), 1),
            "ms_min": round(min(times), 1), "rss_after_mb": round(rss_mb(), 1), "n": runs, "grad_buffers": grads,
            "threads": THREADS,
            "load_avg": round(statistics.median(loads), 2), "load_avg_max": round(max(loads), 2)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--variant", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.runs)), flush=True)
        return
    script = os.path.abspath(sys.argv[0])
    extra = ["--runs", str(args.runs)] + (["--threads", str(args.threads)] if args.threads else [])
    base = None
    for name in args.variants.split(","):
        python = sys.executable
        if name.startswith("mxnet"):
            if not os.path.exists(MXNET_PYTHON):
                skipped("memory W6", name, f"{MXNET_PYTHON} not found")
                continue
            python = MXNET_PYTHON
        proc = subprocess.run([python, script, "--variant", name, *extra], capture_output=True, text=True)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode or not lines:
            skipped("memory W6", name, f"rc={proc.returncode}: {proc.stderr.strip()[-300:]}")
            continue
        row = json.loads(lines[-1])
        if name == "numpy":
            base = row
        elif base is not None:
            row["time_ratio_vs_numpy"] = round(row["ms_median"] / base["ms_median"], 2)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
