"""Writes reference files for tests/gluon/test_mxnet_compat.py with real MXNet 1.9.1.

Run with MXNet's Python (not by the tests):
    MXNET_MKLDNN_ENABLED=0 MXNET_STORAGE_FALLBACK_LOG_VERBOSE=0 ~/.venvs/mxref/bin/python tests/data/make_gluon_reference.py
oneDNN must be off: MXNet 1.9.1's oneDNN max pooling, run in predict mode, keeps no argmax workspace and sends
every window's gradient to its first element (a bug mixnet does not copy).
It saves a small CNN's parameters with save_parameters, a legacy prefix-named file, and JSON with a fixed input
and MXNet's outputs (inference and training mode) and input gradient.
"""
import json
import os

import mxnet as mx
import numpy as np
from mxnet import autograd, nd
from mxnet.gluon import nn

assert mx.__version__ == "1.9.1", mx.__version__
assert os.environ.get("MXNET_MKLDNN_ENABLED") == "0", "run with MXNET_MKLDNN_ENABLED=0 (see the docstring)"
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gluon")


def build():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1, in_channels=2, activation="relu"),
                nn.BatchNorm(in_channels=4),
                nn.MaxPool2D(2),
                nn.Conv2D(3, 2, strides=1, in_channels=4),
                nn.AvgPool2D(pool_size=2, strides=1, padding=1),
                nn.Flatten(),
                nn.Dense(8, activation="tanh", in_units=27),
                nn.Dropout(0.5),
                nn.Dense(3, in_units=8),
                nn.LayerNorm(in_channels=3))
    return net


def main():
    mx.random.seed(7)
    np.random.seed(7)
    net = build()
    net.initialize(mx.init.Xavier())
    for name, p in net.collect_params().items():       # non-trivial statistics and affine terms
        if "running" in name or "gamma" in name or "beta" in name:
            p.set_data(nd.array(np.random.uniform(0.5, 1.5, p.shape)))
    x = np.random.uniform(-1, 1, (2, 2, 6, 6)).astype(np.float32)
    out_infer = net(nd.array(x)).asnumpy()
    xx = nd.array(x)
    xx.attach_grad()
    with autograd.record(train_mode=False):
        y = net(xx)
    y.backward(nd.ones_like(y), train_mode=False)   # gradient of the inference-mode function
    grad = xx.grad.asnumpy()
    net.save_parameters(os.path.join(HERE, "cnn.params"))
    net.collect_params().save(os.path.join(HERE, "cnn_legacy.params"), strip_prefix="net_")
    with autograd.record(train_mode=True):
        mx.random.seed(1)
        net2 = build()
        net2.load_parameters(os.path.join(HERE, "cnn.params"))
        net2[7]._rate = 0.0          # no dropout: training-mode output is then deterministic
        y_train = net2(nd.array(x))
    y_train.backward()             # MXNet updates BatchNorm's running statistics in the backward pass
    running_after = net2[1].running_mean.data().asnumpy()
    json.dump({"x": x.tolist(), "out_infer": out_infer.tolist(), "grad_x": grad.tolist(),
               "out_train_no_dropout": y_train.asnumpy().tolist(),
               "bn_running_mean_after_train_step": running_after.tolist(),
               "param_names": list(net._collect_params_with_prefix()),
               "global_names": list(net.collect_params())},
              open(os.path.join(HERE, "cnn_expected.json"), "w"))


if __name__ == "__main__":
    main()
