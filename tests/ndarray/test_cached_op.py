"""mx.nd.CachedOp: a Symbol called on NDArrays (every input in list_inputs() order), differentiable."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


def _conv_plus_two():
    return mx.sym.Convolution(kernel=(3, 3), num_filter=4, name="conv") + 2


def _inputs():
    rng = np.random.default_rng(0)
    return [mx.nd.array(rng.standard_normal(s)) for s in ((2, 3, 6, 6), (4, 3, 3, 3), (4,))]


@pytest.mark.parametrize("flags", [(), [("static_alloc", "true"), ("data_indices", (0,))]])
def test_matches_eager_ops_and_writes_out(flags):
    data, weight, bias = _inputs()
    op = mx.nd.CachedOp(_conv_plus_two(), flags)
    expected = mx.nd.Convolution(data, weight, bias, kernel=(3, 3), num_filter=4) + 2
    np.testing.assert_allclose(op(data, weight, bias).asnumpy(), expected.asnumpy(), rtol=1e-5, atol=1e-5)
    out = mx.nd.zeros(expected.shape)
    op(data, weight, bias, out=out)
    np.testing.assert_allclose(out.asnumpy(), expected.asnumpy(), rtol=1e-5, atol=1e-5)


def test_gradients_match_eager():
    data, weight, bias = _inputs()
    op = mx.nd.CachedOp(_conv_plus_two())
    grads = []
    for call in (lambda d, w, b: op(d, w, b),
                 lambda d, w, b: mx.nd.Convolution(d, w, b, kernel=(3, 3), num_filter=4) + 2):
        for x in (data, weight, bias):
            x.attach_grad()
        with mx.autograd.record():
            (call(data, weight, bias * 2) * 3).backward()
        grads.append([x.grad.asnumpy() for x in (data, weight, bias)])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_several_outputs_give_a_list():
    x = mx.sym.var("x")
    op = mx.nd.CachedOp(mx.sym.Group([x * 2, x + 1]))
    twice, plus_one = op(mx.nd.ones((2,)))
    np.testing.assert_array_equal(twice.asnumpy(), [2, 2])
    np.testing.assert_array_equal(plus_one.asnumpy(), [2, 2])


def test_bad_calls_are_clear_errors():
    op = mx.nd.CachedOp(_conv_plus_two())
    with pytest.raises(MXNetError, match="takes 3 inputs"):
        op(mx.nd.ones((1, 3, 6, 6)))
    with pytest.raises(MXNetError, match="unknown flag"):
        mx.nd.CachedOp(_conv_plus_two(), [("no_such_flag", 1)])
