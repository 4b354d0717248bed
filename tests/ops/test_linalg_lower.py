"""linalg.potrf / potri with lower=False (the upper Cholesky factor U, A = U^T U) against MXNet 1.9.1's numbers,
forward and gradient through potri(potrf(A))."""
import numpy as np
import pytest

import mixnet as mx

_A = np.array([[4.0, 2.0, 0.4], [2.0, 5.0, 1.0], [0.4, 1.0, 3.0]])
_L = [[2.0, 0.0, 0.0], [1.0, 2.0, 0.0], [0.2, 0.4, 1.673320053068]]
_INV = [[0.3125, -0.125, 0.0], [-0.125, 0.264285714286, -0.071428571429], [0.0, -0.071428571429, 0.357142857143]]
_GRAD = {  # d/dA of sum(potrf(A) * W) + sum(potri(potrf(A)) * W), W = arange(9).reshape(3, 3) / 4, in MXNet
    True: [[-0.0234375, 0.055357142857, 0.113839285714], [0.055357142857, 0.178164776268, 0.278818975801],
           [0.113839285714, 0.278818975801, 0.413940835279]],
    False: [[0.0578125, -0.069642857143, -0.073660714286], [-0.069642857143, 0.203164776268, 0.153818975801],
            [-0.073660714286, 0.153818975801, 0.413940835279]],
}


@pytest.mark.parametrize("lower", [True, False])
def test_potrf_potri_lower_matches_mxnet(lower):
    x = mx.nd.array(_A, dtype="float64")
    x.attach_grad()
    w = mx.nd.array(np.arange(9).reshape(3, 3) / 4.0, dtype="float64")
    with mx.autograd.record():
        f = mx.nd.linalg.potrf(x, lower=lower)
        inv = mx.nd.linalg.potri(f, lower=lower)
        loss = (f * w).sum() + (inv * w).sum()
    loss.backward()
    np.testing.assert_allclose(f.asnumpy(), _L if lower else np.array(_L).T, atol=1e-11)
    np.testing.assert_allclose(inv.asnumpy(), _INV, atol=1e-11)
    np.testing.assert_allclose(x.grad.asnumpy(), _GRAD[lower], atol=1e-11)
