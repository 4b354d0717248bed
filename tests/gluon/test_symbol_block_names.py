"""SymbolBlock's structural parameter names (what save_parameters writes) as MXNet 1.9.1 gives them: the
parameters' names less their common character-wise prefix (values checked with real MXNet)."""
import numpy as np

import mixnet as mx
from mixnet.gluon import nn
from mixnet.gluon.model_zoo import vision


def test_common_prefix_is_stripped():
    net = vision.resnet18_v1(prefix="abc_")
    data = mx.sym.var("data")
    block = mx.gluon.SymbolBlock(net(data), data, params=net.collect_params())
    names = list(block._collect_params_with_prefix())
    assert names[:3] == ["conv0_weight", "batchnorm0_gamma", "batchnorm0_beta"]
    assert "stage1_conv0_weight" in names


def test_single_parameter_gets_the_empty_name():
    data, w = mx.sym.var("data"), mx.sym.var("w")
    block = mx.gluon.SymbolBlock(mx.sym.FullyConnected(data, w, num_hidden=2, no_bias=True), data)
    assert list(block._collect_params_with_prefix()) == [""]


def _parent():
    """A parent holding a SymbolBlock made from a fresh two-layer net (new global names every time)."""
    inner = nn.HybridSequential()
    with inner.name_scope():
        inner.add(nn.Dense(4, in_units=3), nn.Dense(2, in_units=4))
    data = mx.sym.var("data")
    parent = nn.HybridSequential()
    parent.add(mx.gluon.SymbolBlock(inner(data), data, params=inner.collect_params()))
    return parent


def test_child_symbol_block_round_trips_across_global_names(tmp_path):
    a = _parent()
    a.initialize()
    x = mx.nd.ones((1, 3))
    y = a(x).asnumpy()
    # character-wise: the common prefix of hybridsequential<k>_dense0_weight ... _dense1_bias ends in "dense"
    assert sorted(a._collect_params_with_prefix()) == ["0.0_bias", "0.0_weight", "0.1_bias", "0.1_weight"]
    a.save_parameters(str(tmp_path / "a.params"))
    b = _parent()                       # its parameters have other global names (hybridsequential<k>_...)
    b.load_parameters(str(tmp_path / "a.params"))
    np.testing.assert_allclose(b(x).asnumpy(), y)
