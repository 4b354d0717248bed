"""Writes tests/data/optimizer/lbsgd_mxnet.npz with real MXNet 1.9.1: the weights (and momenta) after a few
LBSGD updates for each warmup strategy, batch_scale, clipping, a scheduler and multi-precision, so
tests/optimizer/test_lbsgd.py can check mixnet's LBSGD against it. Every step gets a fresh gradient array (MXNet
keeps a reference to the first gradient of a macro-batch; fresh arrays keep that from mattering).

Run with MXNet's Python (not by the tests):
    ~/.venvs/mxref/bin/python tests/data/make_lbsgd_reference.py
"""
import os

import mxnet as mx
import numpy as np

assert mx.__version__ == "1.9.1", mx.__version__
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizer")
STEPS = 7
CASES = {  # name: LBSGD keyword arguments (scheduler: FactorScheduler(step=2, factor=0.5))
    "linear": dict(learning_rate=0.1, momentum=0.9, wd=1e-4, warmup_strategy="linear", warmup_epochs=1,
                   updates_per_epoch=4, batch_scale=1),
    "linear_bs2": dict(learning_rate=0.1, momentum=0.9, wd=1e-3, warmup_strategy="linear", warmup_epochs=2,
                       updates_per_epoch=3, batch_scale=2),
    "power2": dict(learning_rate=0.05, warmup_strategy="power2", warmup_epochs=2, updates_per_epoch=4,
                   batch_scale=2),
    "sqrt": dict(learning_rate=0.05, momentum=0.5, warmup_strategy="sqrt", warmup_epochs=1, updates_per_epoch=5,
                 batch_scale=3, clip_gradient=0.5, rescale_grad=0.5, begin_epoch=1),
    "lars": dict(learning_rate=0.1, momentum=0.9, wd=1e-3, warmup_strategy="lars", batch_scale=1),
    "lars_bs2": dict(learning_rate=0.1, wd=1e-2, warmup_strategy="lars", batch_scale=2),
    "scheduler": dict(momentum=0.9, warmup_strategy="linear", warmup_epochs=1, updates_per_epoch=3,
                      batch_scale=1, scheduler=True),
    "fp16_mp": dict(learning_rate=0.1, momentum=0.9, wd=1e-4, warmup_epochs=1, updates_per_epoch=4,
                    multi_precision=True, float16=True),
}


def main():
    rng = np.random.default_rng(11)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    grads = (rng.standard_normal((STEPS, 3, 4)) * 2).astype(np.float32)
    out = {"weight": w0, "grads": grads}
    for name, kw in CASES.items():
        kw = dict(kw)
        dtype = np.float16 if kw.pop("float16", False) else np.float32
        if kw.pop("scheduler", False):
            kw["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.2)
        opt = mx.optimizer.create("lbsgd", **kw)
        weight = mx.nd.array(w0, dtype=dtype)
        state = opt.create_state_multi_precision(0, weight)
        for step in range(STEPS):
            opt.update_multi_precision(0, weight, mx.nd.array(grads[step], dtype=dtype), state)
            out[f"{name}_weight{step}"] = weight.asnumpy()
    os.makedirs(HERE, exist_ok=True)
    np.savez(os.path.join(HERE, "lbsgd_mxnet.npz"), **out)


if __name__ == "__main__":
    main()
