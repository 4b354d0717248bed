"""softmax_cross_entropy against MXNet 1.9.1's numbers (loss and gradient), and its input checks."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError

_X = np.arange(12).reshape(3, 4) / 3.0
_GRAD = [[-1.7167792, 0.39526647, 0.5516388, 0.7698739], [0.28322083, 0.39526647, 0.55163884, -1.2301261],
         [0.28322083, -1.6047336, 0.5516388, 0.76987404]]     # head gradient 2


def test_matches_mxnet():
    x = mx.nd.array(_X)
    x.attach_grad()
    with mx.autograd.record():
        loss = mx.nd.softmax_cross_entropy(x, mx.nd.array([0, 3, 1]))
    loss.backward(mx.nd.array([2.0]))
    assert loss.shape == (1,)
    np.testing.assert_allclose(loss.asnumpy(), [4.530694], rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), _GRAD, rtol=1e-5)


@pytest.mark.parametrize("data,label", [((2, 3, 4), (2,)), ((3, 4), (1, 3)), ((3, 4), (2,))])
def test_bad_shapes_raise(data, label):
    with pytest.raises(MXNetError, match="softmax_cross_entropy"):
        mx.nd.softmax_cross_entropy(mx.nd.ones(data), mx.nd.zeros(label))


def test_out_of_range_label_raises():
    with pytest.raises(MXNetError, match="class indices"):
        mx.nd.softmax_cross_entropy(mx.nd.array(_X), mx.nd.array([5, 0, 0]))
