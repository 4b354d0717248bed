"""One Dense(512, relu) layer, forward + backward, batch 128, 512 inputs: the GEMM epilogue pass on and off.

Runs interleaved in rounds in one process:
  numpy            hand-written: y = max(x W^T + b, 0); dz = g * (y > 0); dW = dz^T x; db = dz.sum(0); dx = dz W
  epilogue         mixnet, hybridized (MIXNET_EPILOGUE on): _fc_epilogue forward, _act_bwd_bias backward
  no-epilogue      mixnet, hybridized, the pass off (config.EPILOGUE = False when the plans are built)
  (add "-static" to a mixnet variant for hybridize(static_alloc=True))
Prints one JSON line per variant: median / min ms, ratio vs numpy, load average, threads.

    python3 benchmarks/dense_epilogue.py [--rounds 10] [--steps 20] [--threads 1]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from _common import InProcess, interleave, report, set_threads_from_argv  # noqa: E402

THREADS = set_threads_from_argv()
import numpy as np  # noqa: E402

BATCH, IN, UNITS = 128, 512, 512


def _data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((BATCH, IN)).astype(np.float32),
            rng.standard_normal((BATCH, UNITS)).astype(np.float32))


def numpy_step():
    x, g = _data()
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((UNITS, IN)) * 0.05).astype(np.float32)
    b = np.zeros(UNITS, np.float32)

    def step():
        y = x @ w.T
        y += b
        np.maximum(y, 0, out=y)
        dz = g * (y > 0)
        dz.T @ x, dz.sum(axis=0), dz @ w

    return step


def mixnet_step(epilogue, static_alloc):
    import mixnet as mx
    from mixnet import config
    x_np, g_np = _data()
    net = mx.gluon.nn.Dense(UNITS, activation="relu", in_units=IN)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=static_alloc)
    x, g = mx.nd.array(x_np), mx.nd.array(g_np)
    x.attach_grad()

    def step():
        with mx.autograd.record():
            y = net(x)
        y.backward(g)

    previous = config.EPILOGUE
    config.EPILOGUE = epilogue                 # read when the plans are built, on the first calls
    try:
        step()
        step()
    finally:
        config.EPILOGUE = previous
    for graph in net._cached_graphs.values():
        for plan in graph._training.values():
            for part in (plan.forward, plan.backward):
                if part is not None:
                    part.wait_fused()
    return step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--variants", default="numpy,epilogue,no-epilogue,epilogue-static,no-epilogue-static")
    args = parser.parse_args()
    runners = []
    for name in args.variants.split(","):
        if name == "numpy":
            runners.append(InProcess(name, numpy_step()))
        else:
            base = name[:-len("-static")] if name.endswith("-static") else name
            if base not in ("epilogue", "no-epilogue"):
                raise SystemExit(f"unknown variant {name}")
            runners.append(InProcess(name, mixnet_step(base == "epilogue", name.endswith("-static"))))
    from mixnet.ops import _fastpath
    _fastpath.wait_compiled()                  # the epilogue loops compile in a child on a cold cache
    results, loads = interleave(runners, args.rounds, args.steps)
    report("dense_epilogue", results, "numpy", loads, THREADS)


if __name__ == "__main__":
    main()
