"""MXNet 1.x's legacy NDArray functions and options that old scripts still call (issue 11): reshape-family
`inplace=`, choose/fill_element_0index, onehot_encode, crop / _crop_assign, concatenate, nd._internal,
from_numpy's zero-copy hand-over, broadcast_like's empty axes."""
import numpy as np
import pytest

from mixnet import autograd, nd
from mixnet.base import MXNetError


def test_reshape_family_inplace_returns_views():
    t = (nd.arange(30) + 1).reshape(2, 3, 5)
    copy, view = t.flatten(), t.flatten(inplace=True)
    d = nd.zeros((1, 5, 1))
    squeezed, expanded = d.squeeze(axis=(0, 2), inplace=True), d.expand_dims(axis=-1, inplace=True)
    t[0] = -1
    d[0] = 7
    assert view.shape == (2, 15) and view.asnumpy()[0, 0] == -1 and copy.asnumpy()[0, 0] == 1
    assert squeezed.shape == (5,) and expanded.shape == (1, 5, 1, 1)
    assert squeezed.asnumpy().tolist() == [7] * 5 and expanded.asnumpy().sum() == 35
    with pytest.raises(MXNetError, match="squeeze"):
        d.squeeze(axis=1, inplace=True)


def test_choose_and_fill_element_0index():
    a = nd.array(np.arange(12).reshape(3, 4))
    idx = nd.array([0, 3, 1])
    assert nd.choose_element_0index(a, idx).asnumpy().tolist() == [0, 7, 9]
    a.attach_grad()
    vals = nd.array([-1, -2, -3])
    vals.attach_grad()
    with autograd.record():
        out = nd.fill_element_0index(a, vals, idx)
        (out * nd.array(np.arange(12).reshape(3, 4) + 1)).sum().backward()
    want = np.arange(12.0).reshape(3, 4)
    want[[0, 1, 2], [0, 3, 1]] = [-1, -2, -3]
    np.testing.assert_array_equal(out.asnumpy(), want)
    weights = np.arange(12.0).reshape(3, 4) + 1
    grad = weights.copy()
    grad[[0, 1, 2], [0, 3, 1]] = 0
    np.testing.assert_array_equal(a.grad.asnumpy(), grad)
    assert vals.grad.asnumpy().tolist() == [1, 8, 10]
    with pytest.raises(MXNetError, match="one per row"):
        nd.fill_element_0index(a, vals, nd.array([0, 1]))


def test_onehot_encode_writes_into_out():
    out = nd.zeros((3, 4))
    assert nd.onehot_encode(nd.array([0, 3, 1]), out) is out
    np.testing.assert_array_equal(out.asnumpy(), np.eye(4)[[0, 3, 1]])


def test_crop_and_crop_assign():
    x = nd.ones((2, 3, 4))
    assert nd.crop(x, begin=(0, 0, 0), end=(2, 1, 3)).shape == (2, 1, 3)
    nd._internal._crop_assign(x, nd.zeros((2, 1, 3)), begin=(0, 0, 0), end=(2, 1, 3), out=x)
    want = np.ones((2, 3, 4))
    want[:, :1, :3] = 0
    np.testing.assert_array_equal(x.asnumpy(), want)
    y = nd._internal._crop_assign_scalar(nd.ones((2, 3)), scalar=5, begin=(0, 1), end=(1, 3))
    assert y.asnumpy().tolist() == [[1, 5, 5], [1, 1, 1]]
    with pytest.raises(MXNetError, match="sliced region"):
        nd._internal._slice_assign(nd.ones((2, 3)), nd.ones((2, 2)), begin=(0, 0), end=(1, 2))


def test_slice_assign_gradient():
    lhs, rhs = nd.ones((2, 3)), nd.ones((1, 2))
    lhs.attach_grad()
    rhs.attach_grad()
    with autograd.record():
        out = nd._internal._slice_assign(lhs, rhs, begin=(0, 1), end=(1, 3))
    out.backward(nd.array([[1, 2, 3], [4, 5, 6]]))
    assert lhs.grad.asnumpy().tolist() == [[1, 0, 0], [4, 5, 6]]
    assert rhs.grad.asnumpy().tolist() == [[2, 3]]


def test_concatenate():
    a, b = nd.ones((2, 1)), nd.zeros((2, 2))
    assert nd.concatenate([a, b], axis=1).asnumpy().tolist() == [[1, 0, 0], [1, 0, 0]]
    assert nd.concatenate([a], always_copy=False) is a
    with pytest.raises(MXNetError):
        nd.concatenate([])


def test_from_numpy_hands_the_buffer_over():
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    m = nd.from_numpy(a)
    with pytest.raises(ValueError):
        a[0, 0] = 5                  # the numpy array is read-only now, as in MXNet
    m[2, 1] = 100                    # the NDArray writes through to the shared memory
    assert a[2, 1] == 100
    again = nd.from_numpy(a)          # handing the same array over again works too
    again[0, 0] = -1
    assert a[0, 0] == -1
    with pytest.raises(ValueError, match="C-contiguous"):
        nd.from_numpy(np.ones((3, 2)).T)
    assert nd.from_numpy(np.ones((3, 2)).T, zero_copy=False).shape == (2, 3)


def test_shape_attributes_accept_ranges_and_numpy_arrays():
    x = nd.zeros((1, 3))
    assert nd.broadcast_to(x, shape=np.array([2, 3])).shape == (2, 3)
    assert nd.moveaxis(nd.zeros((2, 3, 4)), range(0, 2), (1, 0)).shape == (3, 2, 4)


def test_broadcast_like_refuses_empty_axes():
    with pytest.raises(MXNetError, match="Empty axes"):
        nd.broadcast_like(nd.ones((1, 2)), nd.ones((3, 2)), lhs_axes=(), rhs_axes=())


def test_fill_element_0index_refuses_out_of_range_indices():
    with pytest.raises(MXNetError, match="out of bound"):
        nd.fill_element_0index(nd.zeros((2, 3)), nd.ones((2,)), nd.array([0, 3]))
