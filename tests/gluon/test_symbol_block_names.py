"""SymbolBlock's structural parameter names (what save_parameters writes) as MXNet 1.9.1 gives them: the
parameters' names less their common character-wise prefix (values checked with real MXNet)."""
import numpy as np

import mixnet as mx
from mixnet.gluon.model_zoo import vision


def test_common_prefix_is_stripped(tmp_path):
    net = vision.resnet18_v1(prefix="abc_")
    data = mx.sym.var("data")
    block = mx.gluon.SymbolBlock(net(data), data, params=net.collect_params())
    names = list(block._collect_params_with_prefix())
    assert names[:3] == ["conv0_weight", "batchnorm0_gamma", "batchnorm0_beta"]
    assert "stage1_conv0_weight" in names


def test_single_parameter_gets_the_empty_name_and_round_trips(tmp_path):
    data, w = mx.sym.var("data"), mx.sym.var("w")
    make = lambda: mx.gluon.SymbolBlock(mx.sym.FullyConnected(data, w, num_hidden=2, no_bias=True), data)  # noqa
    block = make()
    assert list(block._collect_params_with_prefix()) == [""]
    block.initialize()
    x = mx.nd.ones((1, 3))
    y = block(x).asnumpy()
    block.save_parameters(str(tmp_path / "b.params"))
    other = make()
    other.load_parameters(str(tmp_path / "b.params"))
    np.testing.assert_allclose(other(x).asnumpy(), y)
