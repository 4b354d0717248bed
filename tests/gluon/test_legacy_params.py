"""Block.save_params / load_params, MXNet 1.x's deprecated forms: a legacy file (global names, the block's
prefix stripped) that a SymbolBlock of the same graph reads; gluon.nn.SymbolBlock is gluon.SymbolBlock."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetWarning
from mixnet.gluon import nn


def test_save_params_writes_prefix_stripped_names_a_symbol_block_loads(tmp_path):
    assert nn.SymbolBlock is mx.gluon.SymbolBlock
    net = nn.HybridSequential(prefix="m_")
    with net.name_scope():
        net.add(nn.Conv2D(3, (3, 3)), nn.Dense(4))
    net.initialize()
    x = mx.nd.ones((1, 1, 6, 6))
    y = net(x).asnumpy()
    path = str(tmp_path / "m.params")
    with pytest.warns(MXNetWarning, match="save_params is deprecated"):
        net.save_params(path)
    assert sorted(mx.nd.load(path)) == ["conv0_bias", "conv0_weight", "dense0_bias", "dense0_weight"]
    with mx.name.Prefix("m_"):
        graph = net(mx.sym.var("data"))
    block = nn.SymbolBlock(outputs=graph, inputs=mx.sym.var("data"))
    block.collect_params().load(path, restore_prefix="m_")
    np.testing.assert_allclose(block(x).asnumpy(), y, rtol=1e-6)
    other = nn.HybridSequential(prefix="m_")
    with other.name_scope():
        other.add(nn.Conv2D(3, (3, 3)), nn.Dense(4))
    with pytest.warns(MXNetWarning, match="load_params is deprecated"):
        other.load_params(path)
    np.testing.assert_allclose(other(x).asnumpy(), y, rtol=1e-6)
