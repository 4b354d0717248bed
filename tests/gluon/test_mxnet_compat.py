"""Parameters saved by real MXNet 1.9.1 load into the same mixnet architecture and give MXNet's outputs
(tests/data/make_gluon_reference.py wrote the files)."""
import json
import os

import numpy as np

from mixnet import autograd, nd
from mixnet.gluon import nn

HERE = os.path.join(os.path.dirname(__file__), "..", "data", "gluon")
EXPECTED = json.load(open(os.path.join(HERE, "cnn_expected.json")))


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


def test_names_match_mxnet():
    net = build()
    assert list(net._collect_params_with_prefix()) == EXPECTED["param_names"]
    assert list(net.collect_params()) == EXPECTED["global_names"]


def test_mxnet_params_give_mxnet_outputs_and_gradients():
    net = build()
    net.load_parameters(os.path.join(HERE, "cnn.params"))
    x = nd.array(EXPECTED["x"])
    np.testing.assert_allclose(net(x).asnumpy(), EXPECTED["out_infer"], rtol=1e-4, atol=1e-5)
    x.attach_grad()
    with autograd.record(train_mode=False):
        y = net(x)
    y.backward(nd.ones_like(y), train_mode=False)
    np.testing.assert_allclose(x.grad.asnumpy(), EXPECTED["grad_x"], rtol=1e-4, atol=1e-5)


def test_training_mode_batchnorm_matches_mxnet():
    net = build()
    net.load_parameters(os.path.join(HERE, "cnn.params"))
    net[7]._rate = 0.0
    with autograd.record(train_mode=True):
        y = net(nd.array(EXPECTED["x"]))
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), EXPECTED["out_train_no_dropout"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(net[1].running_mean.data().asnumpy(), EXPECTED["bn_running_mean_after_train_step"],
                               rtol=1e-5, atol=1e-6)


def test_legacy_prefix_stripped_file_loads():
    net = build()
    net.load_parameters(os.path.join(HERE, "cnn_legacy.params"))
    np.testing.assert_allclose(net(nd.array(EXPECTED["x"])).asnumpy(), EXPECTED["out_infer"], rtol=1e-4,
                               atol=1e-5)
