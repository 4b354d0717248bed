"""One convolution forward + backward (and max pooling's backward) on LeNet's layers, with out= buffers against
without, through the op kernels a hybridized graph calls (Convolution, _conv_data_grad, _conv_weight_grad,
_pool_max_bwd).

Variants, run interleaved in rounds in one process:
  fresh     no out=: each kernel allocates its result (eager mode, hybridize without static_alloc)
  out       out= planned buffers, written in place by the kernels (hybridize(static_alloc=True))
  out-copy  the result computed fresh, then copied into the buffer: what out= cost before the kernels wrote
            into it (common.into)
Paths: fast (the Numba im2col/col2im fast paths) and generic (`_fastpath.ENABLED = False`).
Reports the median time of one forward+backward per variant and path, and the peak traced memory (tracemalloc, in
a separate untimed call) of each.

    python3 benchmarks/conv_out.py [--rounds 15] [--reps 5] [--threads 1]
"""
import argparse
import json
import os
import sys
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    sys.path.insert(0, os.path.dirname(HERE))
    import numpy as np
    from mixnet.ops import _fastpath, registry

    for dtype in (np.float32, np.float64):
        _fastpath.numba_kernels(np, np.zeros(1, dtype))
    _fastpath.wait_compiled()

    layers = {"conv1": ((64, 1, 28, 28), 20), "conv2": ((64, 20, 12, 12), 50)}
    ops = {name: registry.get(name) for name in ("Convolution", "_conv_data_grad", "_conv_weight_grad",
                                                 "_pool_max_bwd", "Pooling")}
    rng = np.random.default_rng(0)
    steps = {}
    for layer, (xs, f) in layers.items():
        x = rng.standard_normal(xs).astype(np.float32)
        w = (rng.standard_normal((f, xs[1], 5, 5)) * 0.1).astype(np.float32)
        b = rng.standard_normal(f).astype(np.float32)
        geo = {"kernel": (5, 5), "stride": (1, 1), "dilate": (1, 1), "pad": (0, 0), "num_group": 1}
        conv = ops["Convolution"].parse(dict(geo, num_filter=f))
        dgrad = ops["_conv_data_grad"].parse(dict(geo, shape=xs[2:]))
        wgrad = ops["_conv_weight_grad"].parse(geo)
        pool = ops["Pooling"].parse({"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"})
        y = ops["Convolution"].kernel(np, x, w, b, **conv)
        gp = rng.standard_normal(ops["Pooling"].kernel(np, y, **pool).shape).astype(np.float32)
        g = ops["_pool_max_bwd"].kernel(np, gp, y, **pool)
        bufs = [np.empty_like(y), np.empty_like(g), np.empty_like(x), np.empty_like(w)]

        def step(variant, x=x, w=w, b=b, y=y, g=g, gp=gp, bufs=bufs, conv=conv, dgrad=dgrad, wgrad=wgrad,
                 pool=pool):
            calls = [lambda out=None: ops["Convolution"].kernel(np, x, w, b, out=out, **conv),
                     lambda out=None: ops["_pool_max_bwd"].kernel(np, gp, y, out=out, **pool),
                     lambda out=None: ops["_conv_data_grad"].kernel(np, g, w, out=out, **dgrad),
                     lambda out=None: ops["_conv_weight_grad"].kernel(np, x, g, out=out, **wgrad)]
            for call, buf in zip(calls, bufs):
                if variant == "fresh":
                    call()
                elif variant == "out":
                    call(buf)
                else:
                    np.copyto(buf, call())
        steps[layer] = step

    variants = ("fresh", "out", "out-copy")
    times = {}
    for path in ("fast", "generic"):
        _fastpath.ENABLED = path == "fast"
        for layer, step in steps.items():
            for v in variants:
                step(v)                                      # warm: workspaces, dispatch
            samples = {v: [] for v in variants}
            for _ in range(args.rounds):
                for v in variants:
                    t0 = time.perf_counter()
                    for _ in range(args.reps):
                        step(v)
                    samples[v].append((time.perf_counter() - t0) / args.reps * 1e3)
            for v in variants:
                tracemalloc.start()
                step(v)
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                times[(path, layer, v)] = (float(np.median(samples[v])), peak)
    _fastpath.ENABLED = True
    load = os.getloadavg()[0]
    for (path, layer, v), (ms, peak) in times.items():
        fresh_ms, fresh_peak = times[(path, layer, "fresh")]
        copy_ms = times[(path, layer, "out-copy")][0]
        print(json.dumps({"benchmark": "conv_out", "path": path, "layer": layer, "variant": v,
                          "median_ms": round(ms, 3), "vs_fresh": round(ms / fresh_ms, 3),
                          "vs_out_copy": round(ms / copy_ms, 3), "peak_kib": round(peak / 1024, 1),
                          "peak_vs_fresh": round(peak / fresh_peak, 3), "threads": args.threads,
                          "load_avg": round(load, 2)}))


if __name__ == "__main__":
    main()
