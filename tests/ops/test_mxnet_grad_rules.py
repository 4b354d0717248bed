"""Gradient rules where MXNet 1.9.1's result (what its tests check) is pinned: LeakyReLU selu and
SoftmaxOutput(multi_output=True) normalization."""
import numpy as np
import pytest

from mixnet import autograd, nd

ALPHA, LAMBDA = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def test_selu_gradient_is_mxnets_rule():
    x = nd.array([-2.0, -0.5, 0.5, 2.0])
    x.attach_grad()
    with autograd.record():
        y = nd.LeakyReLU(x, act_type="selu")
    y.backward()
    xs, ys = x.asnumpy().astype(np.float64), y.asnumpy().astype(np.float64)
    # lambda for x > 0, lambda * (y + alpha) otherwise (MXNet 1.9.1 gives 0.16085884 at x = -2)
    np.testing.assert_allclose(x.grad.asnumpy(), np.where(xs > 0, LAMBDA, LAMBDA * (ys + ALPHA)), rtol=1e-5)
    assert abs(x.grad.asnumpy()[0] - 0.16085884) < 1e-6


def _softmax_output_grad(data, label, **attrs):
    x = nd.array(data)
    x.attach_grad()
    with autograd.record():
        y = nd.SoftmaxOutput(x, nd.array(label), multi_output=True, **attrs)
    y.backward()
    return x.grad.asnumpy()


@pytest.mark.parametrize("normalization,use_ignore", [("null", False), ("batch", False), ("null", True),
                                                      ("valid", False), ("valid", True)])
def test_softmax_output_multi_output_normalization(normalization, use_ignore):
    rng = np.random.default_rng(0)
    data = rng.random((2, 3, 4)).astype(np.float32)
    label = np.array([[0, 1, 2, 1], [2, 2, 0, -1]], dtype=np.float32)
    got = _softmax_output_grad(data, label, normalization=normalization, use_ignore=use_ignore)
    e = np.exp(data - data.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    for n in range(2):
        for s in range(4):
            if label[n, s] >= 0:
                want[n, int(label[n, s]), s] -= 1
            elif use_ignore:
                want[n, :, s] = 0
    valid = (label != -1).sum()
    # MXNet divides by the spatial size (4) for 'null' and 'batch' too, and 'batch' by the batch size as well
    want /= {"null": 4, "batch": 2 * 4, "valid": valid}[normalization]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
