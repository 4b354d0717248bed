"""mxnet.ndarray.op / mxnet.symbol.op / symbol._internal and gluon.nn.SymbolBlock: the module paths MXNet code
imports op functions and blocks from."""
import pytest

import mixnet as mx


def test_ndarray_op_module_gives_mx_nd_functions():
    from mixnet.ndarray.op import Activation, FullyConnected, sgd_update, Custom  # noqa: F401
    import mixnet.ndarray.op as op
    assert op.relu is mx.nd.relu and op.FullyConnected is mx.nd.FullyConnected and op.CachedOp is mx.nd.CachedOp
    assert "Convolution" in dir(op) and not any(name.startswith("_") for name in dir(op))
    assert Activation(mx.nd.array([-1.0, 2.0]), act_type="relu").asnumpy().tolist() == [0.0, 2.0]
    with pytest.raises(AttributeError, match="no operator 'zeros'"):
        op.zeros                 # a helper of mx.nd, not an op (as in MXNet's module)


def test_symbol_op_and_internal_modules():
    from mixnet.symbol.op import Convolution  # noqa: F401
    import mixnet.symbol.op as op
    import mixnet.symbol._internal as internal
    assert op.FullyConnected is mx.sym.FullyConnected and internal._plus_scalar is mx.sym._plus_scalar
    y = internal._plus_scalar(mx.sym.var("x"), scalar=1.0)
    assert y.eval(x=mx.nd.array([1.0]))[0].asnumpy().tolist() == [2.0]


def test_symbol_block_from_gluon_nn():
    assert mx.gluon.nn.SymbolBlock is mx.gluon.SymbolBlock
    x = mx.sym.var("data")
    block = mx.gluon.nn.SymbolBlock(mx.sym.relu(x), x)
    assert block(mx.nd.array([-1.0, 3.0])).asnumpy().tolist() == [0.0, 3.0]
