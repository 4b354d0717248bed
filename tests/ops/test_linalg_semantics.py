"""dot / batch_dot / linalg semantics, checked against values computed with MXNet 1.9.1 (the oracle), and the
gradients OpTest cannot generate data for (SPD inputs, well-conditioned matrices)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.test_utils import assert_almost_equal, check_numeric_gradient

nd = mx.nd


def arange(*shape):
    return nd.array(np.arange(int(np.prod(shape))).reshape(shape))


# Expected values below were computed with MXNet 1.9.1 (mx.nd.dot / batch_dot / linalg.gemm / linalg.potrf on the
# same inputs) and hard-coded.
def test_dot_nd_transpose_a_contracts_first_axis():
    out = nd.dot(arange(3, 2, 2), arange(3, 2), transpose_a=True)
    assert out.shape == (2, 2, 2)
    assert_almost_equal(out, np.array([[[40, 52], [46, 61]], [[52, 70], [58, 79]]], dtype=np.float32))


def test_dot_nd_transpose_b_contracts_last_axis():
    out = nd.dot(arange(2, 3), arange(2, 2, 3), transpose_b=True)
    assert out.shape == (2, 2, 2)
    assert_almost_equal(out, np.array([[[5, 14], [23, 32]], [[14, 50], [86, 122]]], dtype=np.float32))


def test_dot_nd_plain():
    out = nd.dot(arange(1, 2, 3), arange(3, 2))
    assert_almost_equal(out, np.array([[[10, 13], [28, 40]]], dtype=np.float32))


def test_dot_shapes_match_mxnet():
    # shapes MXNet 1.9.1 returns
    assert nd.dot(nd.ones((4, 3, 2)), nd.ones((4, 5)), transpose_a=True).shape == (3, 2, 5)
    assert nd.dot(nd.ones((2, 3)), nd.ones((4, 5, 3)), transpose_b=True).shape == (2, 4, 5)
    assert nd.dot(nd.ones((4, 3, 2)), nd.ones((4, 2, 5)), transpose_a=True).shape == (3, 2, 2, 5)
    assert nd.dot(nd.ones((3,)), nd.ones((3,))).shape == (1,)
    assert nd.dot(nd.ones((3, 1)), nd.ones((3,)), transpose_a=True).shape == (1,)
    assert nd.dot(nd.ones((3,)), nd.ones((3, 2)), transpose_a=True).shape == (2,)


def test_dot_errors():
    with pytest.raises(mx.MXNetError, match="transpose vectors"):
        nd.dot(nd.ones((3,)), nd.ones((3,)), transpose_a=True)
    with pytest.raises(mx.MXNetError, match="dot"):
        nd.dot(nd.ones((3, 4)), nd.ones((3, 4)))
    with pytest.raises(mx.MXNetError):
        nd.dot(nd.ones((3,), dtype="int32"), nd.ones((3,), dtype="int32"))
    with pytest.raises(mx.MXNetError):
        nd.dot(nd.ones((3,)), nd.ones((3,), dtype="float64"))


def test_batch_dot_transposes():
    out = nd.batch_dot(arange(2, 3, 2), arange(2, 2, 3), transpose_a=True, transpose_b=True)
    assert_almost_equal(out, np.array([[[10, 28], [13, 40]], [[172, 244], [193, 274]]], dtype=np.float32))
    assert nd.batch_dot(nd.ones((2, 3, 4, 5)), nd.ones((2, 3, 5, 6))).shape == (2, 3, 4, 6)
    with pytest.raises(mx.MXNetError):
        nd.batch_dot(nd.ones((1, 4, 5)), nd.ones((2, 5, 6)))       # no broadcasting of batch dims


def test_gemm_alpha_beta():
    out = nd.linalg.gemm(nd.array([[1, 2], [3, 4]]), nd.array([[0, 1], [1, 0]]), nd.array([[1, 1], [1, 1]]),
                         alpha=2, beta=-3, transpose_b=True)
    assert_almost_equal(out, np.array([[1, -1], [5, 3]], dtype=np.float32))


def test_gemm2_axis():
    a, b = np.random.rand(4, 2, 3).astype(np.float32), np.random.rand(3, 2, 5).astype(np.float32)
    out = nd.linalg.gemm2(nd.array(a), nd.array(b), axis=0)
    assert_almost_equal(out, np.einsum("iaj,jak->iak", a, b), rtol=1e-5, atol=1e-5)


def _spd(n, seed=0, batch=()):
    rng = np.random.RandomState(seed)
    m = rng.rand(*batch, n, n)
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def test_potrf_forward():
    assert_almost_equal(nd.linalg.potrf(nd.array([[4, 2], [2, 5]])), np.array([[2, 0], [1, 2]], np.float32))
    s = _spd(3, batch=(2,))
    L = nd.linalg.potrf(nd.array(s)).asnumpy()
    assert_almost_equal(L @ np.swapaxes(L, -1, -2), s.astype(np.float32), rtol=1e-4, atol=1e-4)
    assert np.all(np.triu(L[0], 1) == 0)
    with pytest.raises(mx.MXNetError, match="positive definite"):
        nd.linalg.potrf(nd.array(-s))


def _sym(x):
    return 0.5 * (x + mx.nd._swap_last2(x))


def test_potrf_gradient_symmetric_directions():
    # potrf reads the lower triangle; its gradient (like MXNet's) is the symmetric one, so check along
    # symmetric perturbations.
    check_numeric_gradient(lambda x: nd.linalg.potrf(_sym(x)), [_spd(3)], numeric_eps=1e-4, rtol=1e-3)


def test_potrf_second_order():
    x = nd.array(_spd(3), dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = nd.linalg.potrf(x)
        g = mx.autograd.grad(y * y, [x], create_graph=True)[0]
        z = g * g
    z.backward()
    assert np.all(np.isfinite(x.grad.asnumpy())) and np.abs(x.grad.asnumpy()).sum() > 0


@pytest.mark.parametrize("name", ["inverse", "det", "slogdet"])
def test_inverse_det_gradients(name):
    a = _spd(3) + np.triu(np.ones((3, 3)), 1)        # well conditioned, not symmetric
    fn = {"inverse": nd.linalg.inverse, "det": nd.linalg.det,
          "slogdet": lambda x: nd.linalg.slogdet(x)[1]}[name]
    check_numeric_gradient(fn, [a], numeric_eps=1e-4, rtol=1e-3)
    check_numeric_gradient(fn, [np.stack([a, a.T + np.eye(3)])], numeric_eps=1e-4, rtol=1e-3)


def test_syevd_gradient():
    check_numeric_gradient(lambda x: nd.linalg.syevd(_sym(x)), [np.diag([1.0, 2.5, 4.0]) + 0.3 * _spd(3) / 3],
                           numeric_eps=1e-4, rtol=1e-3)


def test_syevd_sign_convention():
    u, lam = nd.linalg.syevd(nd.array(_spd(3)))
    u = u.asnumpy()
    rows = np.arange(3)
    assert np.all(u[rows, np.argmax(np.abs(u), axis=1)] > 0)
    assert np.all(np.diff(lam.asnumpy()) > 0)


def test_gelqf_gradient():
    a = np.array([[2.0, 0.5, -0.3, 0.1], [0.2, 1.5, 0.4, -0.6]])
    check_numeric_gradient(nd.linalg.gelqf, [a], numeric_eps=1e-4, rtol=1e-3)


def test_potri_trsm_gradients():
    L = np.linalg.cholesky(_spd(3))
    check_numeric_gradient(nd.linalg.potri, [L], numeric_eps=1e-4, rtol=1e-3)
    check_numeric_gradient(lambda a, b: nd.linalg.trsm(a, b, rightside=True, alpha=2.0), [L, np.ones((2, 3))],
                           numeric_eps=1e-4, rtol=1e-3)


def test_dot_second_order():
    x = nd.array([[1.0, 2.0], [3.0, 4.0]])
    w = nd.array([[0.5, -1.0], [2.0, 1.0]])
    x.attach_grad()
    w.attach_grad()
    with mx.autograd.record():
        y = nd.dot(x, w)
        y = y * y
        gx = mx.autograd.grad(y, [x], create_graph=True)[0]     # 2 (x w) w^T
        z = gx * gx
    z.backward()
    xn, wn = x.asnumpy().astype(np.float64), w.asnumpy().astype(np.float64)

    def f(w_):
        g = 2 * (xn @ w_) @ w_.T
        return (g * g).sum()
    eps, num = 1e-6, np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            d = np.zeros((2, 2))
            d[i, j] = eps
            num[i, j] = (f(wn + d) - f(wn - d)) / (2 * eps)
    assert_almost_equal(w.grad, num, rtol=1e-3, atol=1e-2)


def test_khatri_rao_and_gradient():
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 0.0], [2.0, 1.0], [0.0, 3.0]])
    out = nd.khatri_rao(nd.array(a), nd.array(b))
    assert_almost_equal(out, np.array([[1, 0], [2, 2], [0, 6], [3, 0], [6, 4], [0, 12]], np.float32))
    check_numeric_gradient(lambda x, y: nd.khatri_rao(x, y), [a, b])


def test_trian_packing_order():
    # MXNet 1.9.1: upper triangles pack column by column, lower ones row by row
    a = arange(4, 4)
    assert nd.linalg.extracttrian(a, offset=1).asnumpy().tolist() == [1, 2, 6, 3, 7, 11]
    assert nd.linalg.extracttrian(a, offset=-1).asnumpy().tolist() == [4, 8, 9, 12, 13, 14]
    assert nd.linalg.extracttrian(arange(3, 3), lower=False).asnumpy().tolist() == [0, 1, 4, 2, 5, 8]
    assert nd.linalg.maketrian(nd.array([1, 2, 3, 4, 5, 6]), lower=False).asnumpy().tolist() == \
        [[1, 2, 4], [0, 3, 5], [0, 0, 6]]
    assert nd.linalg.det(nd.array(_spd(2))).shape == (1,)
