"""Executor.backward ignores the head gradient of an output whose gradient reaches no argument (MXNet prunes
it from the gradient graph), but still checks the head gradients that are used."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


@pytest.mark.parametrize("make", [mx.sym.shape_array, mx.sym.size_array, mx.sym.BlockGrad,
                                  lambda x: mx.sym.argmax(x, axis=1)])
def test_unused_head_gradient_of_any_shape_is_ignored(make):
    x = mx.sym.var("x")
    xa = mx.nd.array(np.random.rand(2, 3))
    xg = mx.nd.ones((2, 3))
    exe = make(x).bind(mx.cpu(), args={"x": xa}, args_grad={"x": xg})
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((7, 5))])
    np.testing.assert_array_equal(xg.asnumpy(), np.zeros((2, 3)))


def test_used_head_gradient_shape_is_checked():
    x = mx.sym.var("x")
    exe = (x * 2).bind(mx.cpu(), args={"x": mx.nd.ones((2, 3))}, args_grad={"x": mx.nd.zeros((2, 3))})
    exe.forward(is_train=True)
    with pytest.raises(MXNetError, match="head gradient"):
        exe.backward([mx.nd.ones((7, 5))])


def test_mixed_outputs_use_only_the_differentiable_head():
    x = mx.sym.var("x")
    group = mx.sym.Group([mx.sym.shape_array(x), x * 3])
    xg = mx.nd.zeros((2, 2))
    exe = group.bind(mx.cpu(), args={"x": mx.nd.ones((2, 2))}, args_grad={"x": xg})
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((9,)), mx.nd.ones((2, 2)) * 2])
    np.testing.assert_array_equal(xg.asnumpy(), np.full((2, 2), 6.0))
