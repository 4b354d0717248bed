"""Partial shape inference that fills unknown dims backwards as MXNet does (an RNN cell's begin state learns its
batch size), foreach over data of unknown length, nested while_loop variables, and head gradients of another
shape (MXNet reads their leading elements)."""
import warnings

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.symbol.executor import creation_shapes


@pytest.mark.parametrize("batch", [1, 3])
def test_begin_state_batch_flows_back_through_add_and_fully_connected(batch):
    state = mx.sym.zeros(shape=(0, 5), name="begin")
    h2h = mx.sym.FullyConnected(state, num_hidden=6, name="h2h")
    pieces = mx.sym.split(h2h, num_outputs=2)            # a GRU slices h2h before adding i2h's pieces
    out = mx.sym.split(mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=6), num_outputs=2)[0] + pieces[0]
    assert list(creation_shapes(out, {"x": (batch, 4)}, {}).values()) == [(batch, 5)]
    assert out.infer_shape(x=(batch, 4))[1] == [(batch, 3)]
    assert out.infer_shape_partial()[1] == [(0, 3)]                 # as MXNet 1.9.1 gives


def test_where_and_unknown_rank_operands():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    assert (a + b).infer_shape_partial(a=(2, 5))[0] == [(2, 5), (2, 5)]
    w = mx.sym.where(mx.sym.ones_like(a), a, mx.sym.zeros((0, 0)))
    assert w.infer_shape(a=(2, 3))[1] == [(2, 3)]
    with pytest.raises(MXNetError):
        mx.sym.where(a, b, mx.sym.zeros((4,))).infer_shape(a=(2,), b=(2,))


def test_foreach_over_data_of_unknown_length():
    outs, states = mx.sym.contrib.foreach(lambda d, s: (d + s[0], [s[0] * 2]),
                                          mx.sym.var("data", shape=(0, 3, 4)), [mx.sym.var("s")])
    args, out_shapes, _ = mx.sym.Group([outs] + states).infer_shape_partial()
    assert args == [(0, 3, 4), (3, 4)] and out_shapes == [(0, 3, 4), (3, 4)]
    assert outs.infer_shape(data=(5, 3, 4))[1] == [(5, 3, 4)]


def test_while_loop_with_nested_loop_variables():
    x = mx.nd.array([1.0, 2.0])
    out, (a, (b,)) = mx.nd.contrib.while_loop(lambda a, b: a.sum() < 10, lambda a, b: (a, [a * 2, [b[0] + 1]]),
                                              [x, [x]], max_iterations=5)
    np.testing.assert_array_equal(a.asnumpy(), [4, 8])
    np.testing.assert_array_equal(b.asnumpy(), [3, 4])
    assert out.shape == (5, 2)
    with pytest.raises(MXNetError, match="nested"):
        mx.nd.contrib.while_loop(lambda a, b: a.sum() < 10, lambda a, b: (a, [a, b[0]]), [x, [x]], 3)


def test_head_gradient_of_another_shape_uses_its_leading_elements():
    x = mx.nd.arange(6).reshape((3, 2))
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y.backward(mx.nd.arange(8).reshape((4, 2)))
    assert "first 6 elements" in str(caught[0].message)
    np.testing.assert_array_equal(x.grad.asnumpy(), np.arange(6).reshape(3, 2) * 2)     # MXNet 1.9.1's
    with mx.autograd.record():
        y = x * 2
    with pytest.raises(MXNetError, match="fewer elements"):
        y.backward(mx.nd.ones((2, 2)))
