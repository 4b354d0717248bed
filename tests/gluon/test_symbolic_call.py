"""Gluon blocks called on Symbols (MXNet 1.x's symbolic composition): `net(mx.sym.var('data'))`, `loss(sym, sym)`
and `cell.unroll(n, symbols)` return Symbols whose parameter variables carry the parameters' names, and
evaluating that graph with the block's parameter values gives the eager result."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import gluon
from mixnet.gluon import nn

from .hybrid_equivalence import rand
from .test_hybridize_loss import CASES as LOSS_CASES


def _eval_with_params(sym, block, **inputs):
    """Evaluates `sym` with the block's current parameter values for its arguments and auxiliary states."""
    values = {name: p.data() for name, p in block.collect_params().items()}
    args = {n: values[n] if n in values else inputs[n] for n in sym.list_arguments()}
    aux = {n: values[n] for n in sym.list_auxiliary_states()}
    exe = sym.bind(mx.cpu(), args, aux_states=aux, grad_req="null")
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def _dense_net():
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="tanh", in_units=5), nn.Dense(3, in_units=8))
    return net, (4, 5)


def _conv_bn_net():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1, in_channels=2), nn.BatchNorm(in_channels=4), nn.Activation("relu"),
            nn.MaxPool2D(), nn.Flatten(), nn.Dense(2, in_units=16))
    return net, (2, 2, 4, 4)


def _lstm_net():
    return gluon.rnn.LSTM(6, num_layers=2, input_size=3), (5, 2, 3)


@pytest.mark.parametrize("make", [_dense_net, _conv_bn_net, _lstm_net], ids=["dense", "conv_bn", "lstm"])
@pytest.mark.parametrize("hybridized", [False, True])
def test_block_on_symbol_equals_eager(make, hybridized):
    net, shape = make()
    net.initialize(mx.init.Xavier())
    if hybridized:
        net.hybridize()        # a symbolic call composes the graph whether or not the block is hybridized
    x = rand(shape, 0).astype(np.float32)
    eager = net(mx.nd.array(x)).asnumpy()
    out = net(mx.sym.var("data"))
    assert isinstance(out, mx.sym.Symbol)
    names = set(net.collect_params().keys())
    assert set(out.list_arguments() + out.list_auxiliary_states()) == names | {"data"}
    (got,) = _eval_with_params(out, net, data=mx.nd.array(x))
    np.testing.assert_allclose(got, eager, rtol=1e-5, atol=1e-6)


def test_symbolic_call_names_match_mxnet():
    model = nn.Dense(16, activation="tanh", in_units=10, flatten=False, prefix="dense_t_")
    out = model(mx.sym.var("data"))
    assert out.list_outputs() == ["dense_t_tanh_fwd_output"]
    assert out.list_arguments() == ["data", "dense_t_weight", "dense_t_bias"]
    _, outs, _ = out.infer_shape(data=(2, 3, 10))
    assert outs == [(2, 3, 16)]


def test_parameter_variables_carry_attributes():
    """The graph's parameter variables are Parameter.var(): shape (0 = unknown), dtype, lr/wd mult and init."""
    dense = nn.Dense(4, prefix="pv_", weight_initializer=mx.init.Constant(0.5))
    dense.weight.lr_mult = 2.0
    out = dense(mx.sym.var("data"))
    attrs = out.attr_dict()["pv_weight"]
    assert attrs["__shape__"] == "(4, 0)"
    assert attrs["__lr_mult__"] == "2.0"
    assert "constant" in attrs["__init__"]
    # the unknown input dimension is inferred from the data shape
    arg_shapes, _, _ = out.infer_shape(data=(3, 7))
    assert dict(zip(out.list_arguments(), arg_shapes))["pv_weight"] == (4, 7)


def test_symbol_block_from_symbolic_call_shares_parameters():
    net, shape = _dense_net()
    net.initialize()
    data = mx.sym.var("data")
    block = gluon.SymbolBlock(net(data), data, params=net.collect_params())
    x = mx.nd.array(rand(shape, 1))
    np.testing.assert_allclose(block(x).asnumpy(), net(x).asnumpy(), rtol=1e-6)
    # all internal outputs: one array per graph output
    internals = net(data).get_internals()
    sym_block = gluon.SymbolBlock(internals, data, params=net.collect_params())
    outs = sym_block(x)
    assert len(outs) == len(internals.list_outputs())
    # a SymbolBlock called on a Symbol composes its graph onto it, one Symbol per output
    composed = sym_block(mx.sym.var("in"))
    assert len(composed) == len(internals.list_outputs())
    assert "in" in composed[-1].list_arguments() and "data" not in composed[-1].list_arguments()


def test_mixed_symbol_and_ndarray_inputs_raise_value_error():
    class Add(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return a + b

    with pytest.raises(ValueError, match="mixed NDArray and Symbol"):
        Add()(mx.nd.ones((2,)), mx.sym.var("b"))
    with pytest.raises(ValueError, match="mixed NDArray and Symbol"):
        Add()([mx.sym.var("a")], [mx.nd.ones((2,))])


@pytest.mark.parametrize("hybridized", [False, True])
def test_no_array_or_symbol_input_raises_value_error(hybridized):
    class Pick(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return a if a is not None else b

    block = Pick()
    if hybridized:
        block.hybridize()
    np.testing.assert_array_equal(block(None, mx.nd.ones((2,))).asnumpy(), [1, 1])
    with pytest.raises(ValueError, match="at least one NDArray or Symbol"):
        block(None, None)


def test_parameter_grad_follows_grad_req():
    """Parameter._grad (read by MXNet users' code): the gradient buffers, None with grad_req 'null'."""
    dense = nn.Dense(2, in_units=3)
    assert dense.weight._grad is None            # not initialized yet
    dense.initialize()
    dense.collect_params().setattr("grad_req", "null")
    assert dense.weight._grad is None
    dense.collect_params().setattr("grad_req", "write")
    (grad,) = dense.weight._grad
    assert grad.shape == (2, 3) and grad is dense.weight.grad()


def test_ndarray_made_inside_symbolic_call_is_refused_clearly():
    class AddOnes(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x + mx.nd.ones((3,))

    with pytest.raises(mx.base.MXNetError, match="outside hybridize"):
        AddOnes()(mx.sym.var("x"))


@pytest.mark.parametrize("name, make, args", LOSS_CASES, ids=[c[0] for c in LOSS_CASES])
def test_loss_on_symbols_equals_eager(name, make, args):
    loss = make()
    values = args(3, 7)
    eager = loss(*[mx.nd.array(v, dtype=v.dtype) for v in values]).asnumpy()
    names = [f"in{i}" for i in range(len(values))]
    out = loss(*[mx.sym.var(n) for n in names])
    assert isinstance(out, mx.sym.Symbol)
    got = out.eval(mx.cpu(), **{n: mx.nd.array(v, dtype=v.dtype) for n, v in zip(names, values)})[0]
    np.testing.assert_allclose(got.asnumpy(), eager, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("cell_type, n_states", [(gluon.rnn.RNNCell, 1), (gluon.rnn.LSTMCell, 2),
                                                  (gluon.rnn.GRUCell, 1)])
def test_cell_unroll_on_symbols_equals_eager(cell_type, n_states):
    cell = cell_type(5, input_size=3, prefix="c_")
    cell.initialize()
    x = rand((2, 4, 3), 3).astype(np.float32)
    eager_out, eager_states = cell.unroll(4, mx.nd.array(x), layout="NTC", merge_outputs=True)
    steps = [mx.sym.var(f"c_t{i}_data") for i in range(4)]
    outs, states = cell.unroll(4, steps)
    assert [o.name for o in outs] == [f"c_t{i}_out" for i in range(4)]
    assert len(states) == n_states and all(isinstance(s, mx.sym.Symbol) for s in states)
    inputs = {f"c_t{i}_data": mx.nd.array(x[:, i]) for i in range(4)}
    got = _eval_with_params(mx.sym.Group(outs + states), cell, **inputs)
    np.testing.assert_allclose(np.stack(got[:4], axis=1), eager_out.asnumpy(), rtol=1e-5, atol=1e-6)
    for g, e in zip(got[4:], eager_states):
        np.testing.assert_allclose(g, e.asnumpy(), rtol=1e-5, atol=1e-6)


def test_initializers_compare_by_class_and_arguments():
    """Two blocks built alike have equal (not identical) parameter initializers, as in MXNet."""
    assert mx.init.Constant(-10.0) == mx.init.Constant(-10.0)
    assert mx.init.Uniform(0.1) != mx.init.Uniform(0.2)
    assert mx.init.Xavier() != mx.init.MSRAPrelu()
    assert len({mx.init.Normal(0.5), mx.init.Normal(0.5)}) == 1
    first, second = nn.Dense(2, bias_initializer=mx.init.Constant(1.0)), nn.Dense(2, bias_initializer="ones")
    assert first.bias.init == nn.Dense(2, bias_initializer=mx.init.Constant(1.0)).bias.init
    assert first.bias.init != second.bias.init


def test_adding_or_replacing_a_child_retraces_a_hybridized_block():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, flatten=False))
    net.hybridize()
    net.initialize()
    x = mx.nd.ones((2, 3, 5))
    assert net(x).shape == (2, 3, 4)
    net.add(nn.Flatten())
    assert net(x).shape == (2, 12)
    net.fc = nn.Dense(3, in_units=12)
    net.fc.initialize()
    assert net(x).shape == (2, 3)
