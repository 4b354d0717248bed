"""Eager nd.contrib.foreach / while_loop / cond: outputs and gradients (values checked with MXNet 1.9.1)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, nd


def test_foreach_stacks_outputs_and_carries_states():
    def body(x, states):
        return x * 2, [states[0] + x]
    out, states = nd.contrib.foreach(body, nd.arange(6).reshape((3, 2)), [nd.zeros((2,))])
    assert out.shape == (3, 2) and states[0].asnumpy().tolist() == [6, 9]
    out, state = nd.contrib.foreach(lambda x, s: (x * x.shape[0], s), nd.arange(3), nd.zeros((1,)))
    assert out.shape == (3, 1)                     # 1-D data gives (1,) slices, as in MXNet


def test_foreach_nested_outputs_and_gradient_of_closure_weight():
    w = nd.array([2.0, 3.0])
    w.attach_grad()
    data = nd.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    with autograd.record():
        outs, final = nd.contrib.foreach(lambda x, s: ([x * w, x + 1], s * w), data, nd.ones((2,)))
        loss = outs[0].sum() + final.sum()
    loss.backward()
    assert isinstance(outs, list) and outs[1].shape == (3, 2)
    # d/dw of sum_i x_i*w (=6) plus d/dw of w^3 (= 3 w^2)
    np.testing.assert_allclose(w.grad.asnumpy(), [6 + 12, 6 + 27])


def test_while_loop_pads_with_zero_rows_and_differentiates():
    outs, final = nd.contrib.while_loop(lambda i, s: i < 3, lambda i, s: (s, (i + 1, s + i)),
                                        (nd.array([0]), nd.array([1])), max_iterations=5)
    assert outs.asnumpy().ravel().tolist() == [1, 1, 2, 0, 0]          # MXNet: garbage in the last two rows
    assert [v.asscalar() for v in final] == [3, 4]
    s = nd.array([1.0])
    s.attach_grad()
    with autograd.record():
        _, fin = nd.contrib.while_loop(lambda i, s: i < 4, lambda i, s: (None, (i + 1, s * 2)),
                                       (nd.array([0]), s), max_iterations=10)
    fin[1].backward()
    assert s.grad.asscalar() == 16                                      # s * 2^4


def test_while_loop_edge_cases():
    outs, final = nd.contrib.while_loop(lambda i: i < 0, lambda i: (i, i + 1), nd.array([0]), max_iterations=5)
    assert outs == [] and isinstance(final, mx.nd.NDArray)
    with pytest.raises(ValueError, match="max_iterations"):
        nd.contrib.while_loop(lambda i: i < 1, lambda i: (i, i + 1), nd.array([0]))
    with pytest.raises(mx.MXNetError, match="changed from"):
        nd.contrib.while_loop(lambda i: i < 2, lambda i: (None, nd.ones((2,))), nd.array([0]), max_iterations=3)


def test_cond_runs_and_differentiates_only_the_taken_branch():
    a, b = nd.array([1.0]), nd.array([2.0])
    a.attach_grad()
    with autograd.record():
        r = nd.contrib.cond(a * b < 5, lambda: (a + 5) * (b + 5), lambda: (a - 5) * (b - 5))
    r.backward()
    assert r.asscalar() == 42 and a.grad.asscalar() == 7
    r2 = nd.contrib.cond(a * b > 5, lambda: (a + 5) * (b + 5), lambda: (a - 5) * (b - 5))
    assert r2.asscalar() == 12
