"""The `_random_pdf_*` densities and their gradients against numbers from real MXNet 1.9.1
(tests/data/random_pdf_ref.json, made by tests/data/make_random_pdf_ref.py), and their shape rules."""
import json
import os

import numpy as np
import pytest

import mixnet as mx

with open(os.path.join(os.path.dirname(__file__), "..", "data", "random_pdf_ref.json")) as _f:
    REF = json.load(_f)


@pytest.mark.parametrize("key", sorted(REF))
def test_density_and_gradients_match_mxnet(key):
    name, is_log = key.split("/")
    case = REF[key]
    arrays = [mx.nd.array(x, dtype="float64") for x in case["inputs"]]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, "random_pdf_" + name)(*arrays, is_log=is_log == "True")
    y.backward(mx.nd.ones_like(y))
    np.testing.assert_allclose(y.asnumpy(), case["output"], rtol=1e-6, atol=1e-9)
    for a, want in zip(arrays, case["grads"]):
        np.testing.assert_allclose(a.grad.asnumpy(), want, rtol=1e-6, atol=1e-9)


def test_symbolic_density_is_the_same_op():
    x, mu, sigma = mx.sym.var("x"), mx.sym.var("mu"), mx.sym.var("sigma")
    y = mx.sym.random_pdf_normal(x, mu, sigma, is_log=True)
    assert "_random_pdf_normal" in y.tojson()
    out = y.eval(x=mx.nd.array([[0.0, 1.0]]), mu=mx.nd.array([0.0]), sigma=mx.nd.array([1.0]))[0]
    np.testing.assert_allclose(out.asnumpy(), [[-0.5 * np.log(2 * np.pi), -0.5 - 0.5 * np.log(2 * np.pi)]],
                               rtol=1e-6)


def test_dirichlet_shapes():
    alpha = mx.nd.ones((2, 3))
    assert mx.nd.random_pdf_dirichlet(mx.nd.ones((2, 5, 3)) / 3, alpha).shape == (2, 5)
    assert mx.nd.random_pdf_dirichlet(mx.nd.ones((3,)) / 3, mx.nd.ones((3,))).shape == (1,)
    with pytest.raises(mx.MXNetError, match="last"):
        mx.nd.random_pdf_dirichlet(mx.nd.ones((2, 5, 4)), alpha)


def test_parameters_must_lead_the_samples():
    with pytest.raises(mx.MXNetError, match="leading"):
        mx.nd.random_pdf_normal(mx.nd.ones((3, 2)), mx.nd.ones((2,)), mx.nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match="same shape"):
        mx.nd.random_pdf_normal(mx.nd.ones((2, 2)), mx.nd.ones((2,)), mx.nd.ones((1,)))
