"""pick and its gradient (_put_along_axis_add) on (batch, classes) numpy arrays take a short path (ops/indexing.py:
_class_positions); it must agree with the general path (`_fastpath.ENABLED = False`) for every index dtype, shape,
mode and out-of-range value, and fall back to it (with its errors) where it does not apply."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.ops import registry

from .recipes import fast_and_generic as _both


def _kernel(name, *arrays, **attrs):
    op = registry.get(name)
    return op.kernel(np, *arrays, **op.parse(attrs))


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 9), n=st.integers(1, 6), seed=st.integers(0, 2 ** 16),
       index_dtype=st.sampled_from(["float32", "float64", "int32", "int64"]), column=st.booleans(),
       mode=st.sampled_from(["clip", "wrap"]), keepdims=st.booleans(), axis=st.sampled_from([1, -1]))
def test_pick_fast_equals_generic(rows, n, seed, index_dtype, column, mode, keepdims, axis):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((rows, n)).astype(np.float32)
    index = rng.uniform(-2 * n, 2 * n, rows)                    # negative, fractional and out-of-range positions
    index = index.astype(index_dtype).reshape((rows, 1) if column else (rows,))
    fast, slow = _both(lambda: _kernel("pick", data, index, axis=axis, keepdims=keepdims, mode=mode))
    assert fast.shape == slow.shape and fast.dtype == slow.dtype
    np.testing.assert_array_equal(fast, slow)
    g = rng.standard_normal((rows, 1)).astype(np.float32)
    col = index.reshape(rows, 1)
    fast, slow = _both(lambda: _kernel("_put_along_axis_add", g, col, shape=(rows, n), axis=axis, mode=mode))
    assert fast.shape == slow.shape == (rows, n) and fast.dtype == slow.dtype
    np.testing.assert_array_equal(fast, slow)


def test_pick_short_path_leaves_index_and_coordinates_alone():
    """The positions are clipped in a copy: an int64 index (which the general path would use as it is) is not
    modified, and the memoized row coordinates are read-only."""
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    index = np.array([-1, 5, 1, 2], np.int64)
    out = _kernel("pick", data, index, axis=1, keepdims=False, mode="clip")
    np.testing.assert_array_equal(out, [0, 5, 7, 11])
    np.testing.assert_array_equal(index, [-1, 5, 1, 2])
    from mixnet.ops import indexing
    assert not indexing._row_coords(4).flags.writeable


def test_pick_errors_come_from_the_general_path():
    x = mx.nd.array(np.ones((3, 4)))
    with pytest.raises(MXNetError, match="index shape"):
        mx.nd.pick(x, mx.nd.array([0, 1]), axis=1)
    with pytest.raises(MXNetError):
        mx.nd.pick(x, mx.nd.array([0, 1, 2]), axis=None)


def test_softmax_cross_entropy_gradient_fast_equals_generic():
    """The gluon loss that benchmarks/mlp.py trains with: log_softmax + pick + mean forward and their gradients,
    hybridized, with and without the short paths."""
    rng = np.random.default_rng(0)
    pred = rng.standard_normal((6, 4)).astype(np.float32)
    label = np.array([0, 3, 1, 7, -2, 2], np.float32)           # out of range: clipped, as MXNet
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    loss_fn.hybridize()

    def run():
        x = mx.nd.array(pred)
        x.attach_grad()
        with mx.autograd.record():
            loss = loss_fn(x, mx.nd.array(label))
        loss.backward()
        return loss.asnumpy(), x.grad.asnumpy()
    (lf, gf), (ls, gs) = _both(run)
    np.testing.assert_allclose(lf, ls, rtol=1e-6)
    np.testing.assert_allclose(gf, gs, rtol=1e-5, atol=1e-7)
    p = np.exp(pred - pred.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    onehot = np.eye(4)[np.clip(label.astype(int), 0, 3)]
    np.testing.assert_allclose(gf, p - onehot, rtol=1e-5, atol=1e-6)
