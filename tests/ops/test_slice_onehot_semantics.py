"""slice, slice_axis and one_hot follow MXNet 1.9.1's rules for out-of-range arguments, eagerly and in inference.

Read from MXNet 1.9.1's C++ shape functions (src/operator/tensor/matrix_op-inl.h, indexing_op.h):
* slice (GetIndexRange): begin and end are clipped to the axis as a Python slice clips them, so a begin past the
  end gives a size-0 axis, not an error; a 0-d input, a step of 0, more begin entries than axes, or begin/end/step
  of different lengths are errors.
* slice_axis (GetSliceAxisParams): nothing is clipped: end past the axis, begin not before end, or a begin before
  the start is an error; an axis of size 0 slices to size 0 whatever begin and end are.
* one_hot: a negative depth is an error (its output shape would have a negative dimension); depth 0 is allowed.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mixnet as mx
from mixnet import nd
from mixnet import symbol as sym
from mixnet.ops import common, registry


def _mxnet_slice_length(length, begin, end, step):
    """The length MXNet's GetIndexRange gives one axis, written out from its rules (an oracle independent of
    Python's slice.indices, which mixnet uses)."""
    s = 1 if step is None else step
    if length == 0:
        return 0
    b = begin if begin is not None else (length - 1 if s < 0 else 0)
    e = end if end is not None else (-1 if s < 0 else length)
    b += length if b < 0 else 0
    e += length if end is not None and e < 0 else 0
    if b < 0 and s > 0:
        b = 0
    if b > length - 1 and s < 0:
        b = length - 1
    if b < 0 or b > length - 1:
        return 0
    e = min(max(e, -1), length)
    if s > 0:
        return (e - b - 1) // s + 1 if e > b else 0
    return (b - e - 1) // -s + 1 if e < b else 0


_BOUND = st.none() | st.integers(-7, 7)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple), data=st.data())
def test_slice_clips_begin_and_end_like_mxnet(shape, data):
    n = data.draw(st.integers(0, len(shape)))
    begin = data.draw(st.lists(_BOUND, min_size=n, max_size=n).map(tuple))
    end = data.draw(st.lists(_BOUND, min_size=n, max_size=n).map(tuple))
    step = data.draw(st.just(()) | st.lists(st.none() | st.integers(-3, 3).filter(bool), min_size=n,
                                            max_size=n).map(tuple))
    want = tuple(_mxnet_slice_length(shape[i], begin[i], end[i], step[i] if step else None) for i in range(n)) \
        + shape[n:]
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    out = nd.slice(nd.array(x), begin=begin, end=end, step=step)
    assert out.shape == want
    np.testing.assert_array_equal(out.asnumpy(), x[tuple(slice(b, e, s) for b, e, s in
                                                         zip(begin, end, step or (None,) * n))])
    op = registry.get("slice")
    assert common.infer(op, [shape], [np.float32], op.parse({"begin": begin, "end": end, "step": step}))[0] == [want]


def test_slice_begin_past_the_end_is_an_empty_axis_as_in_mxnet():
    x = nd.ones((3, 4))
    assert nd.slice(x, begin=(5,), end=(6,)).shape == (0, 4)
    assert nd.slice(x, begin=(1, 10), end=(3, 20)).shape == (2, 0)
    assert nd.slice(x, begin=(2,), end=(1,)).shape == (0, 4)


@pytest.mark.parametrize("x, kwargs, message", [
    (nd.array(np.ones(())), {"begin": (), "end": ()}, "ndim > 0"),
    (nd.ones((3, 4)), {"begin": (0, 0, 0), "end": (1, 1, 1)}, "exceeds data dimensions"),
    (nd.ones((3, 4)), {"begin": (0,), "end": (1, 1)}, "same length"),
    (nd.ones((3, 4)), {"begin": (0, 0), "end": (1, 1), "step": (1,)}, "step"),
    (nd.ones((3, 4)), {"begin": (0,), "end": (2,), "step": (0,)}, "cannot be 0"),
])
def test_slice_errors(x, kwargs, message):
    with pytest.raises(mx.MXNetError, match=f"slice.*{message}"):
        nd.slice(x, **kwargs)
    with pytest.raises(mx.MXNetError, match=f"slice.*{message}"):
        sym.slice(sym.var("x"), **kwargs).infer_shape(x=x.shape)


@pytest.mark.parametrize("begin, end, want", [
    (1, 3, 2), (0, None, 5), (-3, -1, 2), (-5, None, 5), (4, 5, 1), (0, -4, 1),
])
def test_slice_axis_in_range(begin, end, want):
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    out = nd.slice_axis(nd.array(x), axis=1, begin=begin, end=end)
    np.testing.assert_array_equal(out.asnumpy(), x[:, begin:end])
    _, outs, _ = sym.slice_axis(sym.var("x"), axis=1, begin=begin, end=end).infer_shape(x=(2, 5))
    assert out.shape == outs[0] == (2, want)


@pytest.mark.parametrize("begin, end, message", [
    (5, None, "Invalid begin, end"),         # begin past the end
    (7, 9, "Invalid end"),
    (0, 6, "Invalid end"),
    (3, 3, "Invalid begin, end"),
    (3, 1, "Invalid begin, end"),
    (-7, 2, "Invalid begin"),                 # before the start
    (0, -6, "Invalid begin, end"),
])
def test_slice_axis_out_of_range_raises(begin, end, message):
    with pytest.raises(mx.MXNetError, match=f"slice_axis.*{message}"):
        nd.slice_axis(nd.ones((2, 5)), axis=1, begin=begin, end=end)
    with pytest.raises(mx.MXNetError, match=f"slice_axis.*{message}"):
        sym.slice_axis(sym.var("x"), axis=1, begin=begin, end=end).infer_shape(x=(2, 5))


def test_slice_axis_of_an_empty_axis_is_empty_as_in_mxnet():
    assert nd.slice_axis(nd.array(np.ones((2, 0))), axis=1, begin=0, end=None).shape == (2, 0)
    assert nd.slice_axis(nd.array(np.ones((2, 0))), axis=-1, begin=3, end=7).shape == (2, 0)
    with pytest.raises(mx.MXNetError, match="slice_axis.*axis 2"):
        nd.slice_axis(nd.array(np.ones((2, 0))), axis=2, begin=0, end=1)


def test_one_hot_negative_depth_raises():
    for depth in (-3, -1):
        with pytest.raises(mx.MXNetError, match="one_hot.*depth must be non-negative"):
            nd.one_hot(nd.array([1, 2]), depth=depth)
        with pytest.raises(mx.MXNetError, match="one_hot.*depth must be non-negative"):
            sym.one_hot(sym.var("x"), depth=depth).infer_shape(x=(2,))
    assert nd.one_hot(nd.array([1, 2]), depth=0).shape == (2, 0)
