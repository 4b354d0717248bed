"""Executor.backward ignores the head gradient of an output whose gradient reaches no argument (MXNet prunes
it from the gradient graph), but still checks the head gradients that are used; backward before any forward
differentiates at the current arguments and leaves auxiliary states alone."""
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


def test_backward_before_forward():
    x = mx.sym.var("x")
    xg = mx.nd.zeros((2, 2))
    exe = mx.sym.repeat(x, repeats=2, axis=0).bind(mx.cpu(), args={"x": mx.nd.ones((2, 2))}, args_grad={"x": xg})
    exe.backward(mx.nd.array(np.arange(8).reshape(4, 2)))
    np.testing.assert_array_equal(xg.asnumpy(), [[2, 4], [10, 12]])


def test_backward_before_forward_keeps_auxiliary_states():
    net = mx.sym.BatchNorm(mx.sym.var("x"), name="bn")
    exe = net.simple_bind(mx.current_context(), x=(4, 3))      # where the head gradient is
    exe.arg_dict["x"][:] = mx.nd.array(np.random.rand(4, 3))
    exe.arg_dict["bn_gamma"][:] = 1
    exe.aux_dict["bn_moving_var"][:] = 1
    before = {k: v.asnumpy() for k, v in exe.aux_dict.items()}
    exe.backward(mx.nd.ones((4, 3)))
    for name, value in before.items():
        np.testing.assert_array_equal(exe.aux_dict[name].asnumpy(), value)


def test_head_gradients_on_another_device_are_copied_to_the_executors():
    x = mx.sym.var("x")
    exe = (x * x).simple_bind(mx.cpu(1), x=(2, 3))
    exe.arg_dict["x"][:] = np.arange(6, dtype=np.float32).reshape(2, 3)
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3), ctx=mx.cpu(0)) * 2)
    assert exe.grad_dict["x"].context == mx.cpu(1)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), 4 * np.arange(6).reshape(2, 3))
