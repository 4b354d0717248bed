"""Writes tests/data/blocksave/mlp-model.{json,params} and expected.json with real MXNet 1.9.1's Block.save.

Run with MXNet's Python (not by the tests): ~/.venvs/mxref/bin/python tests/data/make_block_save.py
"""
import json
import os

import mxnet as mx
from mxnet import nd
from mxnet.gluon import nn

assert mx.__version__ == "1.9.1", mx.__version__
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "blocksave")

mx.random.seed(5)
net = nn.HybridSequential(prefix="net_")
with net.name_scope():
    net.add(nn.Dense(4, activation="relu", in_units=3), nn.Dense(2, in_units=4))
net.initialize(mx.init.Xavier())
net.hybridize()
x = nd.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
y = net(x)
net.save(os.path.join(HERE, "mlp"))
json.dump({"x": x.asnumpy().tolist(), "y": y.asnumpy().tolist()}, open(os.path.join(HERE, "expected.json"), "w"))
