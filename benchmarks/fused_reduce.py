"""Elementwise chains fused with the reduction they feed (symbol/fuse.py, codegen/numba_reduce.py), float32:

* rowsum: y = sum(tanh(x*0.5 + 1) * x, axis=1), x of shape (n/1000, 1000) (a trailing-axes reduction);
* sqdiff: y = sum((a - b)**2) over all axes, a and b of n elements.

At n = 1e6 and 1e7, in the same run and interleaved (round-robin, so machine noise hits all alike): numpy eager
(one ufunc per op, then .sum), mixnet hybridized "before" (the chain fused, the reduction not:
config.FUSE_REDUCE off when the block compiles, as MIXNET_FUSE_REDUCE=0), mixnet hybridized "after" (the
reduction fused into the kernel), and a hand-written Numba kernel (the same tanh approximation, a prange loop
with a float64 running sum per row / a prange scalar reduction). Both mixnet blocks use static_alloc.
Prints one JSON line per measurement: median/min ms, ratios against numpy and "before", threads, load average.
Usage: python benchmarks/fused_reduce.py [--threads 1] [--rounds 7] [--steps 5] [--sizes 1e6,1e7]
"""
import argparse
import json
import os
import statistics
import time

os.environ.setdefault("MIXNET_COMPILE_BACKGROUND", "0")      # each block's first call returns fused


def hand_written():
    import numpy as np
    from numba import njit, prange
    from mixnet.codegen.approx import tanh_f32
    f32 = np.float32

    @njit(parallel=True, error_model="numpy")
    def rowsum(x, out):
        rows, cols = x.shape
        for r in prange(rows):
            s = 0.0
            for j in range(cols):
                v = x[r, j]
                s += tanh_f32(v * f32(0.5) + f32(1.0)) * v
            out[r] = s

    @njit(parallel=True, error_model="numpy")
    def sqdiff(a, b):
        s = 0.0
        for i in prange(a.size):
            d = a[i] - b[i]
            s += d * d
        return np.float32(s)
    return rowsum, sqdiff


def blocks():
    from mixnet import gluon

    class RowSum(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.sum(F.tanh(x * 0.5 + 1) * x, axis=1)

    class SqDiff(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return F.sum((a - b) ** 2)
    return {"rowsum": RowSum, "sqdiff": SqDiff}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1, help="numba threads (default 1: stable on a busy box)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--sizes", default="1e6,1e7")
    args = parser.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(var, str(args.threads))

    import numba
    import numpy as np
    from mixnet import config, nd
    numba.set_num_threads(args.threads)
    hand_rowsum, hand_sqdiff = hand_written()
    kinds = blocks()
    rng = np.random.default_rng(0)

    for n in (int(float(s)) for s in args.sizes.split(",")):
        data = {"rowsum": [rng.uniform(-3, 3, (n // 1000, 1000)).astype(np.float32)],
                "sqdiff": [rng.standard_normal(n).astype(np.float32) for _ in range(2)]}
        for case, arrays in data.items():
            nds = [nd.array(a) for a in arrays]
            impls = {}
            if case == "rowsum":
                x = arrays[0]
                out = np.empty(x.shape[0], np.float32)
                impls["numpy"] = lambda x=x: (np.tanh(x * np.float32(0.5) + np.float32(1)) * x).sum(axis=1)
                impls["numba-hand"] = lambda x=x, out=out: (hand_rowsum(x, out), out)[1]
            else:
                a, b = arrays
                impls["numpy"] = lambda a=a, b=b: ((a - b) ** 2).sum()
                impls["numba-hand"] = lambda a=a, b=b: hand_sqdiff(a, b)
            for label, reduce_on in (("mixnet-before", False), ("mixnet-after", True)):
                config.FUSE_REDUCE = reduce_on                    # read when the block's graph is fused
                block = kinds[case]()
                block.hybridize(static_alloc=True)
                block(*nds)
                ops = [nd_.raw["ops"] for nd_ in block._last_graph.inference.symbol._nodes()
                       if nd_.op is not None and nd_.op.name == "_fused_elemwise"]
                impls[label] = (lambda block=block: block(*nds))
                impls[label].ops = ops
            config.FUSE_REDUCE = True
            reference = np.asarray(impls["numpy"](), np.float64)
            for name, fn in impls.items():
                got = fn()
                got = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)
                if not np.allclose(got, reference, rtol=1e-4, atol=1e-2):
                    raise SystemExit(f"{case} {name}: result differs from numpy")
                for _ in range(2):
                    fn()
            samples = {name: [] for name in impls}
            for _ in range(args.rounds):
                for name, fn in impls.items():
                    for _ in range(args.steps):
                        start = time.perf_counter()
                        fn()
                        samples[name].append((time.perf_counter() - start) * 1e3)
            med = {name: statistics.median(s) for name, s in samples.items()}
            load = os.getloadavg()
            for name, s in samples.items():
                line = {"case": case, "n": n, "impl": name, "median_ms": round(med[name], 3),
                        "min_ms": round(min(s), 3), "vs_numpy": round(med[name] / med["numpy"], 3),
                        "vs_before": round(med[name] / med["mixnet-before"], 3), "threads": args.threads,
                        "load": [round(v, 2) for v in load]}
                if hasattr(impls[name], "ops"):
                    line["kernels"] = impls[name].ops
                print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
