"""W1: a fused elementwise chain, y = tanh(x*0.5 + 1) * sigmoid(x) - x*x/3, float32, at 1e6 and 1e7 elements.

Compares, in the same run and interleaved (round-robin, so machine noise hits all alike):
numpy eager (one ufunc per op), mixnet eager (mx.nd ops), the mixnet.codegen kernel (serial and parallel
variants, output preallocated and allocated), and a hand-written vectorizable Numba kernel (the same
approximations written by hand: what the code generator should match); PyTorch eager and torch.compile as peers,
measured in their own process (benchmarks/_torch_elementwise.py, in a venv under ~/.venvs that has torch) just
before, with the same thread count (--no-torch skips them).
Prints one JSON line per measurement: median/min ms, ratios against numpy eager and the hand-written kernel,
load average. Targets (issue): codegen >= 5x numpy eager at 1e6, <= 1.3x the hand-written kernel.
Usage: python benchmarks/elementwise.py [--repeats 21] [--sizes 1e6,1e7] [--threads N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import torch_python  # noqa: E402


def chain_group():
    from mixnet.codegen import Group, Step, inp, step
    here = "benchmarks/elementwise.py"
    return Group([
        Step("_mul_scalar", "{0} * {scalar}", (inp(0),), {"scalar": 0.5}, here),
        Step("_plus_scalar", "{0} + {scalar}", (step(0),), {"scalar": 1.0}, here),
        Step("tanh", "tanh({0})", (step(1),), {}, here),
        Step("sigmoid", "sigmoid({0})", (inp(0),), {}, here),            # the registry's template
        Step("elemwise_mul", "{0} * {1}", (step(2), step(3)), {}, here),
        Step("square", "{0} * {0}", (inp(0),), {}, here),
        Step("_div_scalar", "{0} / {scalar}", (step(5),), {"scalar": 3.0}, here),
        Step("elemwise_sub", "{0} - {1}", (step(4), step(6)), {}, here),
    ], outputs=[7], n_inputs=1)


def hand_written():
    from numba import njit, prange
    from mixnet.codegen.approx import sigmoid_f32, tanh_f32
    f32 = np.float32

    @njit(error_model="numpy")
    def serial(x, out):
        for i in range(x.size):
            v = x[i]
            out[i] = tanh_f32(v * f32(0.5) + f32(1.0)) * sigmoid_f32(v) - v * v / f32(3.0)

    @njit(parallel=True, error_model="numpy")
    def parallel(x, out):
        for i in prange(x.size):
            v = x[i]
            out[i] = tanh_f32(v * f32(0.5) + f32(1.0)) * sigmoid_f32(v) - v * v / f32(3.0)
    return serial, parallel


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--sizes", default="1e6,1e7")
    parser.add_argument("--threads", type=int, default=None, help="numba threads for the parallel variants")
    parser.add_argument("--no-torch", action="store_true", help="skip the PyTorch peer (eager, torch.compile)")
    args = parser.parse_args()
    os.environ.setdefault("MIXNET_CACHE_DIR", os.path.join(tempfile.gettempdir(), "mixnet-bench-kernels"))

    import numba
    import mixnet as mx
    from mixnet.codegen import compile_kernel
    if args.threads:
        numba.set_num_threads(args.threads)

    kernel = compile_kernel(chain_group(), parallel_threshold=1)     # the parallel variant on demand below
    kernel.ensure_compiled("parallel")
    hand_serial, hand_parallel = hand_written()

    def numpy_eager(x):
        return np.tanh(x * np.float32(0.5) + np.float32(1.0)) * (1 / (1 + np.exp(-x))) - x * x / np.float32(3.0)

    def mixnet_eager(xm):
        return mx.nd.tanh(xm * 0.5 + 1) * mx.nd.sigmoid(xm) - xm * xm / 3

    class Chain(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.tanh(x * 0.5 + 1) * F.sigmoid(x) - x * x / 3

    hybridized = Chain()
    hybridized.hybridize()
    torch_rows = {} if args.no_torch else torch_peer(args.sizes, args.repeats, numba.get_num_threads())

    for size in (int(float(s)) for s in args.sizes.split(",")):
        x = np.random.default_rng(0).standard_normal(size).astype(np.float32)
        xm = mx.nd.array(x)
        out = np.empty_like(x)
        serial, parallel = kernel.ensure_compiled("serial"), kernel.ensure_compiled("parallel")
        n = x.size
        cases = {
            "numpy eager": lambda: numpy_eager(x),
            "mixnet eager": lambda: mixnet_eager(xm).wait_to_read(),
            "mixnet hybridized (fused)": lambda: hybridized(xm).wait_to_read(),
            "codegen serial (out=)": lambda: serial(n, x, out),
            "codegen parallel (out=)": lambda: parallel(n, x, out),
            "codegen kernel() parallel, allocating": lambda: kernel(x),
            "hand-written serial (out=)": lambda: hand_serial(x, out),
            "hand-written parallel (out=)": lambda: hand_parallel(x, out),
        }
        # correctness first
        ref = numpy_eager(x.astype(np.float64))
        for name in ("codegen serial (out=)", "hand-written serial (out=)"):
            cases[name]()
            err = float(np.abs(out - ref).max())
            assert err < 1e-5, (name, err)
        samples = {name: [] for name in cases}
        for fn in cases.values():
            fn()
        hybridized._last_graph.inference.wait_fused()   # the kernel compiles in the background: time it fused
        for _ in range(args.repeats):
            for name, fn in cases.items():
                start = time.perf_counter()
                fn()
                samples[name].append((time.perf_counter() - start) * 1e3)
        base = statistics.median(samples["numpy eager"])
        hand = {"serial": statistics.median(samples["hand-written serial (out=)"]),
                "parallel": statistics.median(samples["hand-written parallel (out=)"])}
        load = os.getloadavg()[0]
        for name, s in samples.items():
            med = statistics.median(s)
            row = {"benchmark": "elementwise W1", "size": size, "what": name, "ms_median": round(med, 3),
                   "ms_min": round(min(s), 3), "speedup_vs_numpy": round(base / med, 2),
                   "threads": numba.get_num_threads(), "load_avg": round(load, 2)}
            if name.startswith("codegen") or name.startswith("mixnet hybridized"):
                variant = "serial" if "serial" in name else "parallel"
                row["ratio_vs_hand_written_" + variant] = round(med / hand[variant], 2)
            print(json.dumps(row), flush=True)
        for peer in torch_rows.get(size, []):        # measured in its own process just before, same machine
            print(json.dumps({"benchmark": "elementwise W1", "size": size, "what": peer["what"],
                              "ms_median": round(peer["ms_median"], 3), "ms_min": round(peer["ms_min"], 3),
                              "speedup_vs_numpy": round(base / peer["ms_median"], 2),
                              "threads": numba.get_num_threads(), "load_avg": round(load, 2),
                              **({"first_call_s": peer["first_call_s"]} if "first_call_s" in peer else {})}),
                  flush=True)


def torch_peer(sizes, repeats, threads):
    """{size: [rows]} from _torch_elementwise.py in an interpreter that can import torch, or {} (said why)."""
    py = torch_python()
    if py is None:
        print(json.dumps({"benchmark": "elementwise W1", "what": "torch", "skipped": "no interpreter here or in "
                          "~/.venvs can import torch"}), flush=True)
        return {}
    script = os.path.join(HERE, "_torch_elementwise.py")
    done = subprocess.run([py, script, sizes, str(repeats), str(threads)], capture_output=True, text=True,
                          check=False)
    rows = {}
    for line in done.stdout.splitlines():
        row = json.loads(line)
        rows.setdefault(row["size"], []).append(row)
    if done.returncode != 0:
        print(json.dumps({"benchmark": "elementwise W1", "what": "torch", "skipped": done.stderr[-300:]}),
              flush=True)
    return rows


if __name__ == "__main__":
    main()
