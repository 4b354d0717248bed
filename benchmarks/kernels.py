"""The eager CPU kernels of the LeNet / MLP training steps, each on its Numba fast path and on its generic numpy
path (`mixnet.ops._fastpath.ENABLED = False`), interleaved in rounds in one process. One JSON line per kernel:
median / min ms of each path and the speed-up of the medians.

Shapes are those of benchmarks/lenet.py (batch 64) and benchmarks/mlp.py (the SGD update of its 669,706 weights).

    python3 benchmarks/kernels.py [--rounds 15] [--threads 1]
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import set_threads_from_argv  # noqa: E402

THREADS = set_threads_from_argv()
sys.path.insert(0, os.path.dirname(HERE))
import numpy as np  # noqa: E402

from mixnet.ops import _fastpath, nn_act, nn_conv  # noqa: E402
from mixnet.optimizer.optimizer import _sgd_flat  # noqa: E402

_POOL = dict(kernel=(2, 2), pool_type="max", global_pool=False, pooling_convention="valid", stride=(2, 2), pad=(),
             p_value=None, count_include_pad=None, layout=None, cudnn_off=False)


def cases():
    rng = np.random.default_rng(0)

    def arr(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    out = {}
    for name, (c, h, f) in {"conv1": (1, 28, 20), "conv2": (20, 12, 50)}.items():
        x, w, b, g = arr(64, c, h, h), arr(f, c, 5, 5), arr(f), arr(64, f, h - 4, h - 4)
        geo = ((5, 5), (), (), (), 1)
        out[f"{name} forward"] = lambda x=x, w=w, b=b, geo=geo: nn_conv.conv_forward(np, x, w, *geo, bias=b)
        out[f"{name} weight grad"] = lambda x=x, g=g, geo=geo: nn_conv.conv_weight_grad(np, x, g, *geo)
        out[f"{name} data grad"] = lambda g=g, w=w, h=h, geo=geo: nn_conv.conv_data_grad(np, g, w, (h, h), *geo)
    for name, (c, h) in {"pool1": (20, 24), "pool2": (50, 8)}.items():
        x, g = arr(64, c, h, h), arr(64, c, h // 2, h // 2)
        out[f"{name} max backward"] = lambda x=x, g=g: nn_conv._k_pool_max_bwd(np, g, x, **_POOL)
    x, g = arr(64, 20, 24, 24), arr(64, 20, 24, 24)
    out["relu backward (conv1 output)"] = lambda: nn_act._k_relu_bwd(np, g, x)
    w, gw = arr(669706), arr(669706)
    out["sgd update (MLP weights)"] = lambda: _sgd_flat(np, [w, gw, None], 0.01, 0.0, 1 / 128, None, 0.0)
    return out


def timed(fn, enabled):
    _fastpath.ENABLED = enabled
    try:
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3
    finally:
        _fastpath.ENABLED = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    kernels = cases()
    for fn in kernels.values():                 # compile (or load from the cache) and warm up both paths
        timed(fn, True)
        timed(fn, False)
    samples = {(name, path): [] for name in kernels for path in ("numba", "generic")}
    loads = []
    for _ in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for name, fn in kernels.items():
            samples[name, "numba"].append(timed(fn, True))
            samples[name, "generic"].append(timed(fn, False))
    for name in kernels:
        fast, slow = samples[name, "numba"], samples[name, "generic"]
        print(json.dumps({
            "benchmark": "kernels", "what": name, "numba_median_ms": round(statistics.median(fast), 3),
            "numba_min_ms": round(min(fast), 3), "generic_median_ms": round(statistics.median(slow), 3),
            "generic_min_ms": round(min(slow), 3),
            "speedup_median": round(statistics.median(slow) / statistics.median(fast), 2),
            "threads": THREADS, "load_avg": round(statistics.median(loads), 2)}), flush=True)


if __name__ == "__main__":
    main()
