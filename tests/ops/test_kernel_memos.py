"""The kernels' per-step shortcuts (W2's per-step Python): the memos of pure per-(shape, attrs) results
(common.Memo: Reshape, _sum_to, mean), the memoized result_dtype, and the paths written in line (the scalar ops
without a buffer, the softmax rows along the last axis, _act_bwd_bias's checks). Each must give what the general
computation gives, bit for bit, memo hit or not."""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mixnet.ops import _fastpath, basic, common, elemwise, nn_act, reduce, registry


def _kernel(name, *arrays, **attrs):
    op = registry.get(name)
    return op.kernel(np, *arrays, **op.parse(attrs))


def _same(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)


def test_memo_keeps_up_to_its_limit(monkeypatch):
    memo = common.Memo()
    monkeypatch.setattr(common.Memo, "LIMIT", 2)
    assert [memo.keep(k, k * 10) for k in range(4)] == [0, 10, 20, 30]     # every value is returned
    assert memo == {0: 0, 1: 10}                                            # only LIMIT of them kept


_SHAPES = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(shape=_SHAPES, data=st.data())
def test_reshape_memo_equals_the_shape_rule(shape, data):
    """Reshape through its memo (first call: computed and kept; second: read) is x.reshape of _reshape_to."""
    spec = tuple(data.draw(st.lists(st.sampled_from([0, -1, -2, -3, 1, 2, 3, 4, 6]), min_size=1, max_size=4)))
    reverse = data.draw(st.booleans())
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    key = (shape, spec, reverse, (), False)
    basic._RESHAPES.pop(key, None)
    try:
        want = x.reshape(basic._reshape_to(*key))
    except ValueError as err:
        with pytest.raises(ValueError, match=re.escape(str(err))):
            basic._reshape(np, x, spec, reverse)
        assert key not in basic._RESHAPES                 # an error stores nothing
        return
    for _ in range(2):
        _same(basic._reshape(np, x, spec, reverse), want)
        assert basic._RESHAPES[key] == want.shape


@settings(max_examples=40, deadline=None, derandomize=True)
@given(shape=_SHAPES, data=st.data())
def test_sum_to_memo_equals_the_axes_rule(shape, data):
    to = tuple(data.draw(st.sampled_from([1, d])) for d in shape[data.draw(st.integers(0, len(shape) - 1)):])
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    basic._SUM_TO_AXES.pop((shape, to), None)
    axes = basic._sum_to_axes(shape, to)
    want = x.sum(axis=axes, keepdims=True, dtype=x.dtype).reshape(to) if axes else x.copy()
    for _ in range(2):
        _same(basic._sum_to(np, x, to), want)
        assert basic._SUM_TO_AXES[(shape, to)] == axes


@settings(max_examples=60, deadline=None, derandomize=True)
@given(shape=_SHAPES, data=st.data(), keepdims=st.booleans(), exclude=st.booleans(),
       dtype=st.sampled_from(["float32", "float16", "int32"]))
def test_mean_memo_equals_the_axis_rules(shape, data, keepdims, exclude, dtype):
    """mean through its memo gives what it gives with the memo emptied, on every axis form (None, int, tuple,
    negative, exclude), including the copy for reduced axes of length 1."""
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1),
                               st.lists(st.integers(0, len(shape) - 1), max_size=len(shape), unique=True)
                               .map(tuple)))
    x = (np.random.default_rng(7).standard_normal(shape) * 10).astype(dtype)
    key = (shape, axis, keepdims, exclude)
    reduce._MEAN_PLANS.pop(key, None)
    first = reduce._mean_kernel(np, x, axis, keepdims, exclude)
    axes = common.reduce_axes(shape, axis, exclude)
    assert reduce._MEAN_PLANS[key] == (axes, int(np.prod([shape[a] for a in axes])),
                                       common.reduced_shape(shape, axes, keepdims))
    _same(reduce._mean_kernel(np, x, axis, keepdims, exclude), first)
    assert first.shape == common.reduced_shape(shape, axes, keepdims)


def test_mean_memo_keeps_no_error():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError):
        reduce._mean_kernel(np, x, 5, False, False)
    assert ((2, 3), 5, False, False) not in reduce._MEAN_PLANS


_DTYPES = [np.dtype(s) for s in ("float16", "float32", "float64", ">f4", "int8", "uint8", "int32", ">i8",
                                 "bool", "complex64")]


def test_result_dtype_is_numpys():
    for a in _DTYPES:
        for b in _DTYPES:
            assert common.result_dtype(a, b) == np.result_type(a, b)
            assert common.result_dtype(a, b) == np.result_type(a, b)        # a hit: the same answer


@settings(max_examples=60, deadline=None, derandomize=True)
@given(name=st.sampled_from(sorted(elemwise._SCALAR_UFUNC)), shape=_SHAPES,
       dtype=st.sampled_from(["float32", "float16", "float64", "int32", "int64", "uint8"]),
       scalar=st.one_of(st.floats(-5, 5), st.sampled_from([0.0, 2.0, -1.5, float("inf"), float("nan")])))
def test_scalar_op_without_buffer_equals_its_fn(name, shape, dtype, scalar):
    """A scalar op that writes out= runs its ufunc also without a buffer: the same as its fn (x + s, ...) with
    the scalar cast (_operand) and the dtype kept (_keep_dtype), as the op ran before."""
    fn = next(f for n, f, *_ in elemwise._SCALAR if n == name)
    x = (np.random.default_rng(3).standard_normal(shape) * 4 + 1).astype(dtype)
    with np.errstate(all="ignore"):
        try:
            want = elemwise._keep_dtype(x, fn(np, x, elemwise._operand(x, scalar)))
        except (ZeroDivisionError, OverflowError, ValueError) as err:
            with pytest.raises(type(err)):
                _kernel(name, x, scalar=scalar)
            return
        _same(_kernel(name, x, scalar=scalar), want)


@pytest.mark.parametrize("kind", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("shape,axis", [((4, 5), -1), ((3, 4, 5), 2), ((3, 4, 5), 1), ((6,), 0)])
def test_softmax_rows_in_line_equal_rows_last(kind, shape, axis):
    """The forward and backward loops on rows along the last axis of contiguous arrays (the view taken in
    line) give what the same loops give on a strided copy of the data (rows_last's copy, rows_back)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    assert _fastpath.numba_kernels(np, x) is not None            # the loops run, not the generic code
    strided = np.asfortranarray(x)
    y = _kernel(kind, x, axis=axis)
    _same(_kernel(kind, strided, axis=axis), y)
    if kind == "softmin":
        return
    g = rng.standard_normal(shape).astype(np.float32)
    bwd = "_log_softmax_bwd" if kind == "log_softmax" else "_softmax_bwd"
    _same(_kernel(bwd, np.asfortranarray(y), np.asfortranarray(g), axis=axis), _kernel(bwd, y, g, axis=axis))


def test_softmax_axis_check_in_line():
    with pytest.raises(ValueError, match="out of range"):
        _kernel("softmax", np.zeros((2, 3), np.float32), axis=2)
    assert nn_act._check_softmax_axis((2, 3), -2) is None


@pytest.mark.parametrize("shape,ok", [((1, 3), True), ((3,), True), ((1, 1, 3), False), ((2, 3), False),
                                      ((1, 4), False)])
def test_act_bwd_bias_shape_check(shape, ok):
    g = np.ones((4, 3), np.float32)
    if ok:
        dz, db = _kernel("_act_bwd_bias", g, g, act_type="relu", shape=shape)
        assert db.shape == shape and float(db.ravel()[0]) == 4.0
    else:
        with pytest.raises(ValueError, match="cannot sum"):
            _kernel("_act_bwd_bias", g, g, act_type="relu", shape=shape)

