"""Sparse storage (row_sparse / csr): structure, conversions, gradients and lazy optimizer updates.
Expected values are MXNet 1.9.1's (checked there by hand: structures, stypes, lazy-update rows)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mixnet as mx
from mixnet import nd

DENSE = np.array([[0, 1, 0], [0, 0, 0], [2, 0, 3]], dtype=np.float32)


def test_tostype_structure():
    rsp = nd.array(DENSE).tostype("row_sparse")
    assert rsp.stype == "row_sparse" and isinstance(rsp, nd.sparse.RowSparseNDArray)
    assert rsp.indices.asnumpy().tolist() == [0, 2] and rsp.data.shape == (2, 3)
    csr = nd.array(DENSE).tostype("csr")
    assert csr.indptr.asnumpy().tolist() == [0, 1, 1, 3] and csr.indices.asnumpy().tolist() == [1, 0, 2]
    assert csr.data.asnumpy().tolist() == [1, 2, 3]
    assert csr.tostype("default").stype == "default" and np.array_equal(csr.asnumpy(), DENSE)
    assert (rsp + csr).stype == "default"           # MXNet's storage fallback: a dense result
    with pytest.raises(mx.MXNetError, match="storage type"):
        nd.array(DENSE).tostype("invalid")


def test_explicit_rows_are_kept_until_written():
    r = nd.sparse.row_sparse_array((np.zeros((1, 2)), [1]), shape=(3, 2))
    assert r.indices.asnumpy().tolist() == [1]      # a stored row of zeros is still stored
    assert r.copy().indices.asnumpy().tolist() == [1] and r.copyto(mx.cpu(1)).indices.asnumpy().tolist() == [1]
    r[:] = nd.array([[1, 1], [0, 0], [0, 0]])
    assert r.indices.asnumpy().tolist() == [0]      # a dense write: the nonzero rows
    assert nd.zeros((2, 2), stype="row_sparse").indices.shape == (0,)
    with pytest.raises(mx.MXNetError, match="unique"):
        nd.sparse.row_sparse_array((np.ones((2, 2)), [1, 1]), shape=(3, 2))


def test_retain_and_csr_slice():
    r = nd.array(DENSE).tostype("row_sparse")
    kept = nd.sparse.retain(r, nd.array([1, 2]))
    assert kept.indices.asnumpy().tolist() == [2] and kept.asnumpy()[0].tolist() == [0, 0, 0]
    csr = nd.sparse.csr_matrix((np.array([5., 6.]), [2, 0], [0, 1, 1, 2]), shape=(3, 3))
    part = csr[1:3]
    assert part.stype == "csr" and part.indptr.asnumpy().tolist() == [0, 0, 1]


def test_attach_grad_stype_and_detach():
    for stype in ("default", "row_sparse", "csr"):
        x = nd.zeros((2, 2), stype=stype)
        x.attach_grad()
        assert x.grad.stype == stype and x.detach().stype == stype
        x.attach_grad(stype="row_sparse")
        assert x.grad.stype == "row_sparse"


def test_dot_gradient_into_row_sparse_buffer():
    lhs = nd.sparse.csr_matrix(([1., 2.], [1, 3], [0, 1, 2]), shape=(2, 5))
    w = nd.ones((5, 2))
    w.attach_grad(stype="row_sparse")
    with mx.autograd.record():
        y = nd.dot(lhs, w)
    y.backward()
    assert w.grad.stype == "row_sparse" and w.grad.indices.asnumpy().tolist() == [1, 3]
    assert np.allclose(w.grad.asnumpy(), lhs.asnumpy().T @ np.ones((2, 2)))


def _sgd_lazy_reference(w, g, rows, lr, wd, mom, m):
    w, m = w.copy(), m.copy()
    for r in rows:
        m[r] = mom * m[r] - lr * (g[r] + wd * w[r])
        w[r] += m[r]
    return w, m


@settings(max_examples=15, deadline=None)
@given(st.lists(st.booleans(), min_size=4, max_size=4), st.booleans())
def test_lazy_sgd_updates_only_stored_rows(stored, lazy):
    rng = np.random.RandomState(0)
    w0, g0 = rng.rand(4, 3).astype(np.float32), rng.rand(4, 3).astype(np.float32)
    rows = [i for i, s in enumerate(stored) if s]
    grad = nd.sparse.row_sparse_array((g0[rows], rows), shape=(4, 3))
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.05, lazy_update=lazy)
    weight = nd.array(w0)
    state = opt.create_state(0, weight)
    opt.update(0, weight, grad, state)
    dense_g = grad.asnumpy()
    want_w, want_m = _sgd_lazy_reference(w0, dense_g, rows if lazy else range(4), 0.1, 0.05, 0.9,
                                         np.zeros_like(w0))
    assert np.allclose(weight.asnumpy(), want_w, atol=1e-6) and np.allclose(state.asnumpy(), want_m, atol=1e-6)


def test_embedding_sparse_grad_and_trainer_rows():
    layer = mx.gluon.nn.Embedding(6, 2, sparse_grad=True)
    layer.initialize(mx.init.One())
    trainer = mx.gluon.Trainer(layer.collect_params(), "sgd", {"learning_rate": 1.0, "wd": 0.5})
    with mx.autograd.record():
        layer(nd.array([1, 4, 4])).sum().backward()
    grad = layer.weight.grad()
    assert grad.stype == "row_sparse" and grad.indices.asnumpy().tolist() == [1, 4]
    trainer.step(1)
    w = layer.weight.data().asnumpy()
    # rows 1 and 4: 1 - (g + 0.5*1); the others keep their value (no weight decay: lazy update)
    assert w[1].tolist() == [-0.5, -0.5] and w[4].tolist() == [-1.5, -1.5] and (w[[0, 2, 3, 5]] == 1).all()


def test_row_sparse_parameter_needs_trainer():
    p = mx.gluon.Parameter("w", shape=(4, 2), stype="row_sparse")
    p.initialize(init=mx.init.One())
    with pytest.raises(RuntimeError):
        p.data()
    with pytest.raises(RuntimeError):
        p.row_sparse_data(nd.array([0]))
    mx.gluon.Trainer([p], "sgd")
    part = p.row_sparse_data(nd.array([2, 0]))
    assert part.stype == "row_sparse" and part.indices.asnumpy().tolist() == [0, 2]
    assert part.asnumpy()[1].tolist() == [0, 0]
    with pytest.raises(AssertionError):
        mx.gluon.Parameter("w", shape=(4, 2), grad_stype="invalid")
