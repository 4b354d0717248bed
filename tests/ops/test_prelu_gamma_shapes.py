"""LeakyReLU(act_type='prelu') broadcasts gamma as MXNet does: its dims line up with data's axes 0 and 1
(per channel, per sample and channel, or one value); other gamma shapes are refused. Numbers from MXNet 1.9.1."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError

_X = np.arange(-12, 12).reshape(2, 3, 4) / 4.0
_FIRST_COLUMN = {  # LeakyReLU(x, gamma, 'prelu')[:, :, 0] in MXNet 1.9.1
    (3,): [[-0.3, -0.4, -0.3], [0.0, 1.0, 2.0]],
    (2, 3): [[-0.3, -0.4, -0.3], [0.0, 1.0, 2.0]],
    (1,): [[-1.5, -1.0, -0.5], [0.0, 1.0, 2.0]],
}
_GAMMA = {(3,): [.1, .2, .3], (2, 3): [[.1, .2, .3], [.4, .5, .6]], (1,): [.5]}


@pytest.mark.parametrize("shape", sorted(_GAMMA))
def test_prelu_gamma_broadcast_matches_mxnet(shape):
    out = mx.nd.LeakyReLU(mx.nd.array(_X), gamma=mx.nd.array(_GAMMA[shape]), act_type="prelu")
    np.testing.assert_allclose(out.asnumpy()[:, :, 0], _FIRST_COLUMN[shape], rtol=1e-6)


def test_prelu_gamma_gradient_keeps_its_shape():
    x, gamma = mx.nd.array(_X), mx.nd.array(_GAMMA[(2, 3)])
    gamma.attach_grad()
    with mx.autograd.record():
        y = mx.nd.LeakyReLU(x, gamma=gamma, act_type="prelu")
    y.backward()
    np.testing.assert_allclose(gamma.grad.asnumpy(), np.minimum(_X, 0).sum(axis=2), rtol=1e-6)


def test_prelu_gamma_that_does_not_line_up_is_refused():
    with pytest.raises(MXNetError, match="gamma"):
        mx.nd.LeakyReLU(mx.nd.array(_X), gamma=mx.nd.ones((4,)), act_type="prelu")
