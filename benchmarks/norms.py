"""Forward + backward of the normalizations: LayerNorm (128, 512) and (32, 128, 768), BatchNorm (64, 64, 28, 28)
NCHW in training mode, softmax and log_softmax (128, 1000), and gluon's SoftmaxCrossEntropyLoss on a classifier's
(128, 10) scores (log_softmax + pick + mean: the loss of benchmarks/mlp.py, where per-op overhead dominates); float32.

Each case runs, interleaved in rounds (benchmarks/_common.py): a hand-written numpy forward + backward (the
baseline), mixnet eager (gluon layer or nd op under autograd.record, then backward with a head gradient), mixnet
hybridized, and optionally another mixnet checkout as a worker ('mixnet:/path', e.g. the code before the fused
kernels). Prints one JSON line per case and framework with ratio_vs_numpy and the load average.
Usage: python benchmarks/norms.py [--threads 1] [--rounds 8] [--steps 10] [--cases ln_small,...]
       [--frameworks numpy,mixnet,mixnet-hybrid,mixnet:/path/to/old/checkout]
"""
import argparse
import os
import sys

from _common import InProcess, Worker, interleave, report, serve_worker, set_threads_from_argv

THREADS = set_threads_from_argv()

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = {
    "ln_small": ("layernorm", (128, 512)),
    "ln_large": ("layernorm", (32, 128, 768)),
    "bn": ("batchnorm", (64, 64, 28, 28)),
    "softmax": ("softmax", (128, 1000)),
    "log_softmax": ("log_softmax", (128, 1000)),
    "softmax_ce": ("softmax_ce", (128, 10)),
}


def _data(shape):
    rng = np.random.default_rng(0)
    return rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------------------
# numpy: the textbook forward and backward, written for speed (no recomputation, keepdims broadcasting)
def numpy_step(kind, shape):
    x, head = _data(shape)
    if kind == "layernorm":
        gamma, beta = np.ones(shape[-1], np.float32), np.zeros(shape[-1], np.float32)

        def step():
            mean = x.mean(-1, keepdims=True)
            xc = x - mean
            rstd = 1 / np.sqrt((xc * xc).mean(-1, keepdims=True) + 1e-5)
            xhat = xc * rstd
            y = xhat * gamma + beta                                   # noqa: F841 - the forward's output
            dxhat = head * gamma
            dx = (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True)) * rstd
            axes = tuple(range(x.ndim - 1))
            return dx, (head * xhat).sum(axes), head.sum(axes)
    elif kind == "batchnorm":
        c = shape[1]
        gamma, beta = np.ones((1, c, 1, 1), np.float32), np.zeros((1, c, 1, 1), np.float32)
        axes = (0, 2, 3)

        def step():
            mean = x.mean(axes, keepdims=True)
            xc = x - mean
            rstd = 1 / np.sqrt((xc * xc).mean(axes, keepdims=True) + 1e-5)
            xhat = xc * rstd
            y = xhat * gamma + beta                                   # noqa: F841
            dxhat = head * gamma
            dx = (dxhat - dxhat.mean(axes, keepdims=True) - xhat * (dxhat * xhat).mean(axes, keepdims=True)) * rstd
            return dx, (head * xhat).sum(axes), head.sum(axes)
    elif kind == "softmax":
        def step():
            e = np.exp(x - x.max(-1, keepdims=True))
            p = e / e.sum(-1, keepdims=True)
            return p * (head - (head * p).sum(-1, keepdims=True))
    elif kind == "log_softmax":
        def step():
            z = x - x.max(-1, keepdims=True)
            y = z - np.log(np.exp(z).sum(-1, keepdims=True))
            return head - np.exp(y) * head.sum(-1, keepdims=True)
    else:
        label, rows = _labels(shape), np.arange(shape[0])

        def step():                                                   # as benchmarks/mlp.py's numpy step
            z = x - x.max(-1, keepdims=True)
            e = np.exp(z)
            s = e.sum(-1, keepdims=True)
            loss = np.log(s[:, 0]) - z[rows, label]                   # noqa: F841 - the forward's output
            dz = e / s
            dz[rows, label] -= 1
            return dz
    return step


def _labels(shape):
    return np.random.default_rng(1).integers(0, shape[-1], shape[0])


# ---------------------------------------------------------------------------------------------------------
def mixnet_step(root, kind, shape, hybrid):
    sys.path.insert(0, root)
    import mixnet as mx
    from mixnet.gluon import nn
    from mixnet.ops import _fastpath

    x_np, head_np = _data(shape)
    if kind == "layernorm":
        block = nn.LayerNorm(in_channels=shape[-1])
    elif kind == "batchnorm":
        block = nn.BatchNorm(in_channels=shape[1])
    elif kind == "softmax_ce":
        block = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    else:
        class Soft(mx.gluon.HybridBlock):
            def hybrid_forward(self, F, v):
                return getattr(F, kind)(v, axis=-1)
        block = Soft()
    block.initialize()
    if hybrid:
        block.hybridize()
    x, head = mx.nd.array(x_np), mx.nd.array(head_np)
    x.attach_grad()
    label = mx.nd.array(_labels(shape).astype(np.float32))

    def step():
        with mx.autograd.record():
            y = block(x, label) if kind == "softmax_ce" else block(x)
        if kind == "softmax_ce":
            y.backward()                     # head gradient 1 per sample, as the numpy step
        else:
            y.backward(head)
        x.grad.wait_to_read()

    step()
    _fastpath.wait_compiled()            # the Numba loops are compiled in a child at first use
    return step


def build(name, case):
    kind, shape = CASES[case]
    if name == "numpy":
        return numpy_step(kind, shape)
    root = name.split(":", 1)[1] if ":" in name else os.path.dirname(HERE)
    return mixnet_step(root, kind, shape, hybrid=name == "mixnet-hybrid")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--frameworks", default="numpy,mixnet,mixnet-hybrid")
    parser.add_argument("--case", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        serve_worker(build(args.worker, args.case))
        return
    script = os.path.abspath(sys.argv[0])
    for case in args.cases.split(","):
        runners = []
        for name in args.frameworks.split(","):
            if name in ("numpy", "mixnet", "mixnet-hybrid"):
                runners.append(InProcess(name, build(name, case)))
            elif name.startswith("mixnet:"):
                extra = ["--case", case] + (["--threads", str(args.threads)] if args.threads else [])
                runners.append(Worker(name, sys.executable, script, extra))
            else:
                raise SystemExit(f"unknown framework {name}")
        results, loads = interleave(runners, args.rounds, args.steps)
        report(f"norms/{case}", results, "numpy", loads, THREADS)


if __name__ == "__main__":
    main()
