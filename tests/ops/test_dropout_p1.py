"""Dropout with p=1 while training gives NaN outputs and gradients, as MXNet 1.9.1 does (it scales by
1/(1-p) = inf, and 0 * inf is NaN); outside training it stays the identity."""
import numpy as np

import mixnet as mx


def test_p1_training_is_nan():
    x = mx.nd.ones((2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=1.0)
    y.backward()
    assert np.isnan(y.asnumpy()).all() and np.isnan(x.grad.asnumpy()).all()
    assert np.isnan(mx.nd.Dropout(x, p=1.0, mode="always").asnumpy()).all()


def test_p1_inference_is_identity():
    np.testing.assert_array_equal(mx.nd.Dropout(mx.nd.ones((2, 3)), p=1.0).asnumpy(), np.ones((2, 3)))
