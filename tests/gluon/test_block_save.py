"""Block.save / Block.load (MXNet 1.9's prefix-model.json + prefix-model.params)."""
import json
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet import nd
from mixnet.gluon import nn

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "blocksave")


def build(units=2):
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(4, activation="relu", in_units=3), nn.Dense(units, in_units=4))
    return net


def test_loads_a_block_saved_by_mxnet():
    expected = json.load(open(os.path.join(DATA, "expected.json")))
    net = build()
    net.load(os.path.join(DATA, "mlp"))
    np.testing.assert_allclose(net(nd.array(expected["x"])).asnumpy(), expected["y"], rtol=1e-6)


def test_save_load_round_trip_with_mxnet_layout(tmp_path):
    net = build()
    net.initialize()
    net.hybridize()
    x = nd.random.uniform(shape=(2, 3))
    y = net(x).asnumpy()
    net.save(str(tmp_path / "m"))
    doc = json.load(open(tmp_path / "m-model.json"))
    theirs = json.load(open(os.path.join(DATA, "mlp-model.json")))
    assert list(doc) == list(theirs) == ["hybridsequential0"]
    assert sorted(doc["hybridsequential0"]) == sorted(theirs["hybridsequential0"])
    assert doc["hybridsequential0"]["in_format"] == [0] and doc["hybridsequential0"]["out_format"] == 0
    again = build()
    again.load(str(tmp_path / "m"))
    np.testing.assert_allclose(again(x).asnumpy(), y)


def test_load_into_a_different_architecture_is_a_clear_error():
    other = nn.HybridSequential(prefix="other_")
    with pytest.raises(mx.MXNetError, match="saved from block 'net'"):
        other.load(os.path.join(DATA, "mlp"))
    wrong = nn.HybridSequential(prefix="net_")
    with wrong.name_scope():
        wrong.add(nn.Dense(4, in_units=3))
    with pytest.raises(mx.MXNetError, match="children"):
        wrong.load(os.path.join(DATA, "mlp"))
