"""MXNet-specific semantics of the reduction and layout ops that the generated tests cannot express.

Expected values were computed with MXNet 1.9.1 (the oracle at ~/.venvs/mxref) and hard-coded here; where mixnet
deliberately differs from MXNet (zero-safe prod gradient), the test says so.
"""
import numpy as np
import pytest

import mixnet as mx

nd = mx.nd


def arange(*shape, dtype="float32"):
    return nd.array(np.arange(int(np.prod(shape))).reshape(shape), dtype=dtype)


def grad_of(fn, x):
    x = nd.array(x, dtype="float64") if not isinstance(x, nd.NDArray) else x
    x.attach_grad()
    with mx.autograd.record():
        y = fn(x)
    y.backward()
    return x.grad.asnumpy()


# ---------------------------------------------------------------------------------------------------------
# reductions
def test_full_reduction_has_shape_1():
    x = arange(2, 3, 4)
    # MXNet 1.9.1: nd.sum(x) -> [276.] shape (1,); nd.argmax(x) -> [23.]; nd.norm(x) -> [65.75713]
    for out, want in ((nd.sum(x), 276.0), (x.sum(), 276.0), (nd.argmax(x), 23.0), (nd.norm(x), 65.75713),
                      (nd.sum(x, axis=()), 276.0), (nd.sum(x, axis=(0, 1, 2)), 276.0), (x.max(), 23.0)):
        assert out.shape == (1,)
        np.testing.assert_allclose(out.asnumpy(), [want], rtol=1e-6)
    assert nd.sum(x, keepdims=True).shape == (1, 1, 1)
    assert nd.argmax(x, keepdims=True).shape == (1, 1, 1)


def test_exclude_reduces_the_other_axes():
    x = arange(2, 3, 4)
    # MXNet 1.9.1 values
    np.testing.assert_array_equal(nd.sum(x, axis=(0, 2), exclude=True).asnumpy(),
                                  [[12, 15, 18, 21], [48, 51, 54, 57]])
    out = nd.mean(x, axis=1, exclude=True, keepdims=True)
    assert out.shape == (1, 3, 1)
    np.testing.assert_array_equal(out.asnumpy().ravel(), [7.5, 11.5, 15.5])
    # every axis excluded: nothing reduced; axis=() with exclude: everything reduced (both as MXNet)
    assert nd.sum(x, axis=(0, 1, 2), exclude=True).shape == (2, 3, 4)
    assert nd.sum(x, axis=(), exclude=True).asnumpy().tolist() == [276.0]


def test_aliases_and_positional_attributes():
    x = arange(2, 3, 4)
    np.testing.assert_array_equal(nd.sum_axis(x, 1).asnumpy(), nd.sum(x, axis=1).asnumpy())
    assert nd.sum(x, 1, True).shape == (2, 1, 4)           # axis, keepdims in MXNet's order
    assert nd.max_axis(x, axis=0).shape == nd.min_axis(x, axis=0).shape == (3, 4)


def test_argmax_indices_in_input_dtype():
    x = arange(2, 3, 4)
    out = nd.argmax(x, axis=1)
    assert out.dtype == np.float32 and out.shape == (2, 4)
    assert out.asnumpy().tolist() == [[2.0] * 4] * 2        # MXNet 1.9.1
    assert nd.argmax(x.astype("int32"), axis=1).dtype == np.int32
    assert nd.argmin(nd.array([[3, 1, 1]]), axis=1).asnumpy().tolist() == [1.0]    # first of ties
    assert nd.argmax_channel(nd.array([[3, 3, 1], [0, 5, 5]])).asnumpy().tolist() == [0.0, 1.0]


def test_int_reductions_keep_dtype():
    # MXNet 1.9.1: mean of int32 [-1, -2] is int32 [-1] (truncation toward zero)
    out = nd.mean(nd.array([-1, -2], dtype="int32"))
    assert out.dtype == np.int32 and out.asnumpy().tolist() == [-1]
    assert nd.sum(nd.array([1, 2], dtype="int32")).dtype == np.int32


def test_max_gradient_goes_to_every_tie():
    # MXNet 1.9.1: each element equal to the max receives the full gradient (not split)
    g = grad_of(lambda x: nd.max(x, axis=1), np.array([[1, 3, 3], [2, 2, 2]], dtype=np.float64))
    np.testing.assert_array_equal(g, [[0, 1, 1], [1, 1, 1]])


def test_prod_gradient_is_zero_safe_and_twice_differentiable():
    # MXNet 1.9.1 returns NaN at the zero here ([[-6,-3,-2],[0,nan,0]]); mixnet gives the product of the others.
    x0 = np.array([[1, 2, 3], [2, 0, 4]], dtype=np.float64)
    g = grad_of(lambda x: (nd.prod(x, axis=1) * nd.array([-1, 1], dtype="float64")).sum(), x0)
    np.testing.assert_array_equal(g, [[-6, -3, -2], [0, 8, 0]])
    # second order with one zero in the group: d/dx_j sum_i v_i prod_{k != i} x_k
    x0 = np.array([[1.0, 0.0, 3.0, 2.0]])
    x = nd.array(x0, dtype="float64")
    x.attach_grad()
    v = np.array([[1.0, 2.0, 3.0, 4.0]])
    with mx.autograd.record():
        g1 = mx.autograd.grad(nd.prod(x, axis=1).sum(), [x], create_graph=True)[0]
        t = (g1 * nd.array(v, dtype="float64")).sum()
    g2 = mx.autograd.grad(t, [x])[0].asnumpy()
    want = [[sum(v[0, i] * np.prod([x0[0, k] for k in range(4) if k not in (i, j)]) for i in range(4) if i != j)
             for j in range(4)]]
    np.testing.assert_allclose(g2, want)


def test_nan_reductions():
    x = nd.array([1, np.nan, 2])
    assert nd.nansum(x).asnumpy().tolist() == [3.0]
    assert nd.nanprod(x).asnumpy().tolist() == [2.0]
    # MXNet 1.9.1: gradient of nanprod over [1, nan, 3] is [3, 0, 1]
    g = grad_of(lambda x: nd.nanprod(x), np.array([1, np.nan, 3]))
    np.testing.assert_array_equal(g, [3, 0, 1])


def test_norm_and_moments():
    x = arange(2, 3, 4)
    np.testing.assert_allclose(nd.norm(x, axis=(0, 1), keepdims=True).asnumpy().ravel(),
                               [29.664795, 31.717503, 33.82307, 35.97221], rtol=1e-6)    # MXNet 1.9.1
    assert nd.norm(x, ord=1).asnumpy().tolist() == [276.0]
    mean, var = nd.moments(x, axes=(0, 2))
    assert mean.shape == var.shape == (3,)
    with pytest.raises(mx.MXNetError, match="moments"):
        nd.moments(x)                                   # MXNet: "Empty axes is not supported"
    with pytest.raises(mx.MXNetError, match="norm"):
        nd.norm(x, ord=3)
    # gradient at a zero norm: 0 (MXNet gives NaN)
    assert np.all(grad_of(lambda x: nd.norm(x), np.zeros((2, 2))) == 0)


@pytest.mark.parametrize("call,op", [
    (lambda x: nd.sum(x, axis=3), "sum"),
    (lambda x: nd.mean(x, axis=(0, -3)), "mean"),             # duplicate after normalisation
    (lambda x: nd.argmax(x, axis=5), "argmax"),
    (lambda x: nd.transpose(x, axes=(-1, 0, 1)), "transpose"),    # MXNet rejects negative axes here
    (lambda x: nd.expand_dims(x, axis=4), "expand_dims"),
    (lambda x: nd.flip(x, axis=-1), "flip"),
    (lambda x: nd.concat(x, x, dim=3), "Concat"),
    (lambda x: nd.split(x, num_outputs=5, axis=2), "SliceChannel"),
    (lambda x: nd.slice_axis(x, axis=1, begin=2, end=1), "slice_axis"),
    (lambda x: nd.squeeze(x, axis=1), "squeeze"),
    (lambda x: nd.diag(x, k=-3), "diag"),
])
def test_bad_axes_are_mxnet_errors_naming_the_op(call, op):
    with pytest.raises(mx.MXNetError, match=op):
        call(arange(2, 3, 4))


# ---------------------------------------------------------------------------------------------------------
# layout ops
def test_concat_split_round_trip():
    x = arange(2, 6, 4)
    parts = nd.split(x, num_outputs=3, axis=1)
    assert isinstance(parts, (list, tuple)) and [p.shape for p in parts] == [(2, 2, 4)] * 3
    np.testing.assert_array_equal(nd.concat(*parts, dim=1).asnumpy(), x.asnumpy())
    np.testing.assert_array_equal(nd.concat(*nd.split(x, 2, 2), dim=-1).asnumpy(), x.asnumpy())
    # num_outputs=1 gives a single NDArray (MXNet)
    assert isinstance(nd.split(x, num_outputs=1), nd.NDArray)
    # stack / split with squeeze_axis are inverse
    y = nd.stack(x, x * 2, axis=1)
    a, b = nd.split(y, num_outputs=2, axis=1, squeeze_axis=True)
    np.testing.assert_array_equal(b.asnumpy(), (x * 2).asnumpy())


def test_split_squeeze_axis():
    x = arange(2, 3, 4)
    assert [p.shape for p in nd.split(x, num_outputs=3, squeeze_axis=True)] == [(2, 4)] * 3
    with pytest.raises(mx.MXNetError, match="SliceChannel"):
        nd.split(x, num_outputs=2, axis=2, squeeze_axis=True)   # parts of size 2 cannot be squeezed
    # MXNet 1.9.1: squeezing a 1-D input gives 0-d pieces
    assert [p.shape for p in nd.split(nd.array([1, 2, 3]), num_outputs=3, axis=0, squeeze_axis=True)] == [()] * 3
    # split_v2 (MXNet's Python wrapper over _split_v2)
    assert [p.shape for p in nd.split_v2(x, (1, 3), axis=2)] == [(2, 3, 1), (2, 3, 2), (2, 3, 1)]
    assert [p.shape for p in nd.split_v2(x, 3, axis=1, squeeze_axis=True)] == [(2, 4)] * 3


def test_split_gradient_is_concat():
    x = nd.array(np.arange(12.0).reshape(3, 4), dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        a, b = nd.split(x, num_outputs=2, axis=1)
        y = (a * 2).sum() + (b * 3).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[2, 2, 3, 3]] * 3)


def test_slice_with_none_and_negative_steps():
    x = arange(2, 3, 4)
    # MXNet 1.9.1 values
    np.testing.assert_array_equal(
        nd.slice(x, begin=(None, None, None), end=(None, None, None), step=(-1, -1, -2)).asnumpy(),
        [[[23, 21], [19, 17], [15, 13]], [[11, 9], [7, 5], [3, 1]]])
    np.testing.assert_array_equal(
        nd.slice(x, begin=(0, -1), end=(2, -3), step=(1, -1)).asnumpy(),
        [[[8, 9, 10, 11], [4, 5, 6, 7]], [[20, 21, 22, 23], [16, 17, 18, 19]]])
    np.testing.assert_array_equal(
        nd.slice(x, begin=(1, None), end=(None, 0), step=(None, -1)).asnumpy(),
        [[[20, 21, 22, 23], [16, 17, 18, 19]]])
    assert nd.slice(x, begin=(0, 5), end=(2, 6)).shape == (2, 0, 4)
    assert nd.slice(x, begin="(None, 1)", end="(None, 3)").shape == (2, 2, 4)     # JSON string form
    with pytest.raises(mx.MXNetError, match="slice"):
        nd.slice(x, begin=(0, 0), end=(2, 2), step=(1, 0))


def test_slice_gradient_scatters():
    g = grad_of(lambda x: nd.slice(x, begin=(None, 3), end=(None, 0), step=(None, -2)) * 1,
                np.zeros((2, 4)))
    np.testing.assert_array_equal(g, [[0, 1, 0, 1]] * 2)


def test_reshape_like():
    x = arange(2, 3, 4)
    out = nd.reshape_like(x, nd.array(np.zeros((6, 2))), lhs_begin=0, lhs_end=2, rhs_begin=0, rhs_end=1)
    assert out.shape == (6, 4)                                    # MXNet 1.9.1
    np.testing.assert_array_equal(out.asnumpy(), np.arange(24).reshape(6, 4))
    assert nd.reshape_like(x, nd.array(np.zeros(12)), lhs_begin=1).shape == (2, 12)
    with pytest.raises(mx.MXNetError, match="reshape_like"):
        nd.reshape_like(x, nd.array(np.zeros((3, 4))), lhs_begin=3)


def test_clip_gradient_at_bounds_and_swapped_bounds():
    # MXNet 1.9.1: grad of clip(x, 0, 1) at [-1, 0, 0.5, 1, 2] is [0, 1, 1, 1, 0] (bounds included)
    g = grad_of(lambda x: nd.clip(x, 0, 1), np.array([-1, 0, 0.5, 1, 2]))
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 0])
    # MXNet 1.9.1 with a_min > a_max: x > a_max -> a_max, else x < a_min -> a_min
    out = nd.clip(nd.array([0, 1, 2, 3, 4, 5, 6]), 5, 2)
    assert out.asnumpy().tolist() == [5, 5, 5, 2, 2, 2, 2]
    with pytest.raises(mx.MXNetError, match="clip"):
        nd.clip(nd.array([1.0]), a_min=2)


def test_pad_restrictions():
    x4 = nd.array(np.arange(6.0).reshape(1, 1, 2, 3))
    # MXNet 1.9.1 reflect padding, first row
    out = nd.pad(x4, mode="reflect", pad_width=(0, 0, 0, 0, 1, 1, 2, 2))
    assert out.shape == (1, 1, 4, 7)
    assert out.asnumpy()[0, 0, 0].tolist() == [5, 4, 3, 4, 5, 4, 3]
    for kwargs in (dict(pad_width=(0, 0, 1, 0, 1, 1, 2, 2)),                        # pads axis 1
                   dict(pad_width=(0, 0, 0, 0, 1, 1))):                             # wrong length
        with pytest.raises(mx.MXNetError, match="Pad"):
            nd.pad(x4, mode="constant", **kwargs)
    with pytest.raises(mx.MXNetError, match="Pad"):
        nd.pad(nd.array(np.ones((1, 2, 2))), mode="constant", pad_width=(0, 0, 0, 0, 1, 1))     # 3-D
    with pytest.raises(mx.MXNetError, match="Pad"):
        nd.pad(x4, mode="reflect", pad_width=(0, 0, 0, 0, 2, 2, 2, 2))             # pad >= size


def test_layout_values_from_mxnet():
    # MXNet 1.9.1 values
    d2s = nd.depth_to_space(nd.array(np.arange(16.0).reshape(1, 4, 2, 2)), 2)
    np.testing.assert_array_equal(d2s.asnumpy()[0, 0], [[0, 4, 1, 5], [8, 12, 9, 13], [2, 6, 3, 7],
                                                        [10, 14, 11, 15]])
    np.testing.assert_array_equal(nd.space_to_depth(d2s, 2).asnumpy(), np.arange(16.0).reshape(1, 4, 2, 2))
    np.testing.assert_array_equal(nd.diag(arange(2, 3, 4), k=1).asnumpy(), [[4, 20], [5, 21], [6, 22], [7, 23]])
    assert nd.squeeze(nd.array(np.zeros((1, 1)))).shape == (1,)
    assert nd.flatten(nd.array([1, 2, 3])).shape == (3, 1)
    assert nd.flip(arange(2, 3), axis=(0, 0)).asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]   # flips twice
    s = nd.shape_array(arange(2, 3, 4))
    assert s.dtype == np.int64 and s.asnumpy().tolist() == [2, 3, 4]
    z = nd.size_array(arange(2, 3, 4))
    assert z.dtype == np.int64 and z.shape == (1,) and z.asnumpy().tolist() == [24]
    assert nd.moveaxis(nd.array(np.zeros((3, 4, 5))), [0, 1], [-1, -2]).shape == (5, 4, 3)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "bool"])
def test_mean_over_length_one_axes_is_a_copy_of_x(dtype):
    """mean over axes of length 1 (a per-sample loss of shape (batch, 1)) is x itself, reshaped, in a new array:
    the same values as the sum / count path, also for integer and bool data, and a gradient without a division."""
    rng = np.random.default_rng(0)
    data = rng.uniform(-3, 3, (5, 1, 2))
    data[0, 0, 0] = np.nan if dtype.startswith("float") else data[0, 0, 0]
    x = nd.array(data.astype(dtype), dtype=dtype)
    for attrs, shape in (({"axis": 1}, (5, 2)), ({"axis": (0, 2), "exclude": True}, (5, 2)),
                         ({"axis": 1, "keepdims": True}, (5, 1, 2))):
        out = nd.mean(x, **attrs)
        want = x.asnumpy().astype(np.float64 if dtype != "bool" else bool).reshape(shape).astype(dtype)
        assert out.shape == shape and out.dtype == x.dtype
        np.testing.assert_array_equal(out.asnumpy(), want)
        out[:] = 0                                       # a new array: x is untouched
        np.testing.assert_array_equal(x.asnumpy(), data.astype(dtype))
    g = grad_of(lambda v: nd.mean(v, axis=1) * nd.array(np.arange(10.0).reshape(5, 2), dtype="float64"),
                data.copy())
    np.testing.assert_array_equal(g, np.arange(10.0).reshape(5, 1, 2))
