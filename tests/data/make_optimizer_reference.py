"""Writes tests/data/optimizer/sgd_mxnet.npz with real MXNet 1.9.1: sgd_update and sgd_mom_update results for
fixed weights, gradients and momenta, so tests/test_optimizer.py can check mixnet's SGD bit for bit (MXNet
computes the step as (lr * rescale_grad) * grad, or lr * clip(rescale_grad * grad) when clipping).

Run with MXNet's Python (not by the tests):
    ~/.venvs/mxref/bin/python tests/data/make_optimizer_reference.py
"""
import os

import mxnet as mx
import numpy as np

assert mx.__version__ == "1.9.1", mx.__version__
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizer")
CASES = {  # name: (lr, wd, rescale_grad, clip_gradient, momentum)
    "plain": (0.0137, 0.0, 0.01, -1.0, 0.0),
    "wd": (0.0137, 0.01, 0.01, -1.0, 0.0),
    "clip": (0.0137, 0.01, 0.01, 0.2, 0.0),
    "mom": (0.0137, 0.0, 0.01, -1.0, 0.9),
    "mom_wd": (0.0137, 0.01, 0.01, -1.0, 0.9),
    "mom_wd_clip": (0.0137, 0.01, 0.01, 0.2, 0.9),
}


def main():
    rng = np.random.default_rng(3)
    w = rng.standard_normal(1000).astype(np.float32)
    g = (rng.standard_normal(1000) * 37.3).astype(np.float32)
    m = rng.standard_normal(1000).astype(np.float32)
    out = {"weight": w, "grad": g, "mom": m}
    for name, (lr, wd, rescale, clip, momentum) in CASES.items():
        weight, mom = mx.nd.array(w), mx.nd.array(m)
        kw = dict(lr=lr, wd=wd, rescale_grad=rescale, clip_gradient=clip, out=weight)
        if momentum:
            mx.nd.sgd_mom_update(weight, mx.nd.array(g), mom, momentum=momentum, **kw)
            out[name + "_mom"] = mom.asnumpy()
        else:
            mx.nd.sgd_update(weight, mx.nd.array(g), **kw)
        out[name + "_weight"] = weight.asnumpy()
        out[name + "_hparams"] = np.array([lr, wd, rescale, clip, momentum], np.float64)
    os.makedirs(HERE, exist_ok=True)
    np.savez(os.path.join(HERE, "sgd_mxnet.npz"), **out)


if __name__ == "__main__":
    main()
