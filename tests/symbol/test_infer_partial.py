"""Partial shape and dtype inference as MXNet does it: what is known is inferred, shapes flow backwards through
same-shape ops and parameter rules, unknown entries stay () / None, given shapes override declared ones, and
inconsistent shapes raise MXNetError naming the node."""
import warnings

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


def _rnn_step():
    data, prev = mx.sym.var("data"), mx.sym.var("prev")
    x2h = mx.sym.FullyConnected(data, num_hidden=8, name="x2h")
    h2h = mx.sym.FullyConnected(prev, num_hidden=8, name="h2h")
    return mx.sym.Activation(mx.sym.elemwise_add(x2h, h2h), act_type="relu")


def test_elementwise_node_gives_its_known_shape_to_the_unknown_side():
    out = _rnn_step()
    with warnings.catch_warnings(record=True):
        assert out.infer_shape(data=(5, 3)) == (None, None, None)
    args, outs, aux = out.infer_shape_partial(data=(5, 3))
    shapes = dict(zip(out.list_arguments(), args))
    assert shapes["x2h_weight"] == (8, 3) and shapes["h2h_weight"] == () and shapes["prev"] == ()
    assert outs == [(5, 8)] and aux == []
    args, _, _ = out.infer_shape(data=(5, 3), prev=outs[0])
    assert dict(zip(out.list_arguments(), args))["h2h_weight"] == (8, 8)


def test_partial_dims_flow_through_cast_to_a_parameter():
    data = mx.sym.var("data", shape=(1, 0, 0, 0))
    weight = mx.sym.var("weight")
    conv = mx.sym.Convolution(mx.sym.cast(data, dtype="float16"), mx.sym.cast(weight, dtype="float16"),
                              kernel=(3, 3), num_filter=4, no_bias=True)
    args, _, _ = conv.infer_shape_partial()
    assert dict(zip(conv.list_arguments(), args)) == {"data": (1, 0, 0, 0), "weight": (4, 0, 3, 3)}


def test_shapes_flow_backwards_along_a_chain():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    out = mx.sym.elemwise_mul(mx.sym.relu(mx.sym.exp(a) * 2), b)
    args, outs, _ = out.infer_shape(b=(2, 7))
    assert args == [(2, 7), (2, 7)] and outs == [(2, 7)]


def test_given_shape_overrides_the_declared_one():
    a, b = mx.sym.var("a", shape=(2, 3)), mx.sym.var("b")
    c = mx.sym.elemwise_add(a, b)
    assert c.infer_shape()[0] == [(2, 3), (2, 3)]
    assert c.infer_shape(a=(5, 6))[0] == [(5, 6), (5, 6)]


def test_inconsistent_shapes_name_the_node():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    c = mx.sym.elemwise_add(a, mx.sym.relu(b), name="joined")
    with pytest.raises(MXNetError, match="joined"):
        c.infer_shape(a=(2, 3), b=(3, 2))


def test_infer_type_and_partial():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(mx.sym.Cast(data, dtype="float32"), num_hidden=4, name="fc")
    net = mx.sym.SoftmaxOutput(fc, name="sm")
    args, outs, aux = net.infer_type(data=np.float16)
    assert args == [np.float16, np.float32, np.float32, np.float32] and outs == [np.float32] and aux == []
    assert net.infer_type_partial() == ([None, np.float32, np.float32, np.float32], [np.float32], [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert mx.sym.FullyConnected(data, num_hidden=2).infer_type() == (None, None, None)
    assert "Cannot decide type" in str(caught[0].message)


def test_index_inputs_keep_their_own_dtype():
    x, idx = mx.sym.var("x"), mx.sym.var("idx")
    taken = mx.sym.batch_take(x, idx)
    args, outs, _ = taken.infer_type_partial(x=np.float64)
    assert args == [np.float64, None] and outs == [np.float64]
    # shape inference alone stands an integer dtype in for the indices
    assert taken.infer_shape(x=(4, 3), idx=(4,))[1] == [(4,)]


def test_recurrent_step_with_unknown_batch_state_still_has_an_output_shape():
    # Symbol `+` broadcasts in mixnet; a dim known on one side (> 1) still decides the output's
    data, h0 = mx.sym.var("data"), mx.sym.var("h0", shape=(0, 16))
    step = mx.sym.tanh(mx.sym.FullyConnected(data, num_hidden=16, name="i2h")
                       + mx.sym.FullyConnected(h0, num_hidden=16, name="h2h"))
    args, outs, _ = step.infer_shape_partial(data=(4, 3))
    assert outs == [(4, 16)]
    assert dict(zip(step.list_arguments(), args))["h2h_weight"] == (16, 16)
    assert (mx.sym.var("a") + mx.sym.var("b", shape=(0, 1))).infer_shape_partial(a=(3, 4))[1] == [(3, 4)]
