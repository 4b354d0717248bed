"""W1 on a GPU: y = tanh(x*0.5 + 1) * sigmoid(x) - x*x/3, float32, and the same chain times a broadcast row
(x of shape (n/1024, 1024) times b of shape (1024,)), through the CUDA kernel mixnet.codegen.cupy_gpu generates.

Compares, in the same run: cupy eager (one kernel per op), the generated kernel (output preallocated, and
allocating), and cupy.fuse of the same expression (cupy's own fusion: the peer baseline). Times are device times
(CUDA events, cupyx.profiler.benchmark); prints one JSON line per measurement with the median, the min, the
ratio against cupy eager and against cupy.fuse, and the effective bandwidth (bytes read + written / time).
Needs cupy and a GPU; says so and exits 0 otherwise (this machine has none: the figures come from a GPU session).
Usage: python benchmarks/elementwise_gpu.py [--repeats 50] [--sizes 1e6,1e7,1e8]
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

HERE = "benchmarks/elementwise_gpu.py"


def chain_group(broadcast):
    from mixnet.codegen.ir import Group, Step, inp, step
    steps = [
        Step("_mul_scalar", "{0} * {scalar}", (inp(0),), {"scalar": 0.5}, HERE),
        Step("_plus_scalar", "{0} + {scalar}", (step(0),), {"scalar": 1.0}, HERE),
        Step("tanh", "tanh({0})", (step(1),), {}, HERE),
        Step("sigmoid", "1 / (1 + exp(-{0}))", (inp(0),), {}, HERE),
        Step("elemwise_mul", "{0} * {1}", (step(2), step(3)), {}, HERE),
        Step("square", "{0} * {0}", (inp(0),), {}, HERE),
        Step("_div_scalar", "{0} / {scalar}", (step(5),), {"scalar": 3.0}, HERE),
        Step("elemwise_sub", "{0} - {1}", (step(4), step(6)), {}, HERE),
    ]
    if broadcast:
        steps.append(Step("broadcast_mul", "{0} * {1}", (step(7), inp(1)), {}, HERE))
    return Group(steps, outputs=[len(steps) - 1], n_inputs=2 if broadcast else 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--sizes", default="1e6,1e7,1e8")
    args = parser.parse_args()
    try:
        import cupy
        from cupyx.profiler import benchmark
    except ImportError as e:
        print(f"elementwise_gpu: cupy is not installed ({e}); nothing to measure")
        return
    if not cupy.is_available():
        print("elementwise_gpu: cupy finds no usable GPU; nothing to measure")
        return
    os.environ.setdefault("MIXNET_CACHE_DIR", os.path.join(tempfile.gettempdir(), "mixnet-bench-kernels"))
    from mixnet.codegen.cupy_gpu import compile_kernel

    def w1(x):
        return cupy.tanh(x * np.float32(0.5) + np.float32(1.0)) * (1 / (1 + cupy.exp(-x))) - x * x / np.float32(3.0)

    def w1_row(x, b):
        return w1(x) * b

    device = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    for size in (int(float(s)) for s in args.sizes.split(",")):
        for broadcast in (False, True):
            kernel = compile_kernel(chain_group(broadcast))
            eager = w1_row if broadcast else w1
            fused = cupy.fuse(eager)
            rng = cupy.random.default_rng(0)
            x = rng.standard_normal((size // 1024, 1024), dtype=cupy.float32)
            inputs = (x, rng.standard_normal(1024, dtype=cupy.float32)) if broadcast else (x,)
            out = cupy.empty_like(x)
            reference = eager(*[i.astype(cupy.float64) for i in inputs])
            err = float(cupy.abs(kernel(*inputs) - reference).max())
            assert err < 1e-4, ("generated kernel disagrees with cupy eager", err)
            cases = {"cupy eager": lambda: eager(*inputs), "cupy.fuse": lambda: fused(*inputs),
                     "codegen kernel (out=)": lambda: kernel(*inputs, out=out),
                     "codegen kernel, allocating": lambda: kernel(*inputs)}
            times = {name: benchmark(fn, n_repeat=args.repeats, n_warmup=5).gpu_times[0] * 1e3
                     for name, fn in cases.items()}
            base, peer = np.median(times["cupy eager"]), np.median(times["cupy.fuse"])
            moved = sum(i.nbytes for i in inputs) + x.nbytes
            for name, t in times.items():
                med = float(np.median(t))
                print(json.dumps({"benchmark": "elementwise W1 gpu" + (" x row" if broadcast else ""), "size": x.size,
                                  "what": name, "ms_median": round(med, 4), "ms_min": round(float(np.min(t)), 4),
                                  "speedup_vs_cupy_eager": round(base / med, 2),
                                  "ratio_vs_cupy_fuse": round(med / peer, 2),
                                  "GB_per_s": round(moved / med / 1e6, 1), "device": device}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
