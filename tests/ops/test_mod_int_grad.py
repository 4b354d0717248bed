"""mod's gradients are zero on integer dtypes (MXNet defines them for floating types only), and unchanged on
floats: broadcast_mod, % scalar, scalar %."""
import numpy as np
import pytest

import mixnet as mx

_CASES = [lambda a, b: mx.nd.broadcast_mod(a, b), lambda a, b: a % 3, lambda a, b: 7 % a]


@pytest.mark.parametrize("fn", _CASES)
def test_integer_mod_gradients_are_zero(fn):
    a = mx.nd.array([[5, 7, 9]], dtype="int32")
    b = mx.nd.array([[2], [4]], dtype="int32")
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = fn(a, b)
    y.backward(mx.nd.ones(y.shape, dtype="int32") * 3)
    assert not a.grad.asnumpy().any() and not b.grad.asnumpy().any()


def test_float_mod_gradients_are_kept():
    a = mx.nd.array([[5.5, 7.0, 9.25]])
    b = mx.nd.array([[2.0], [4.0]])
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = mx.nd.broadcast_mod(a, b)
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), [[2, 2, 2]])
    np.testing.assert_allclose(b.grad.asnumpy(), [[-(2 + 3 + 4)], [-(1 + 1 + 2)]])
