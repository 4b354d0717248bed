"""numpy's functions and conversions on NDArrays: np.mean/np.sum/np.std/np.max... with dtype=/out=/keepdims=
give numpy's own results (numpy arrays and scalars, as numpy's ufuncs on NDArrays do); out= may be an NDArray;
float()/int() of one-element arrays, operator.index() of 0-d integer arrays, bool()."""
import operator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import mixnet as mx
from mixnet import autograd
from mixnet.base import MXNetError, ScalarConversionError

REDUCTIONS = [np.mean, np.sum, np.std, np.var, np.max, np.min, np.prod, np.argmax, np.median, np.ptp]


@settings(max_examples=30, deadline=None)
@given(values=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
                         elements=st.floats(-100, 100, width=32)),
       func=st.sampled_from(REDUCTIONS), axis=st.sampled_from([None, 0, -1]), keepdims=st.booleans(),
       dtype=st.sampled_from([None, np.float64]))
def test_reductions_match_numpy_on_the_same_data(values, func, axis, keepdims, dtype):
    kwargs = {"axis": axis}
    if func is not np.argmax:
        kwargs["keepdims"] = keepdims
    if dtype is not None and func in (np.mean, np.sum, np.std, np.var, np.prod):
        kwargs["dtype"] = dtype
    got = func(mx.nd.array(values), **kwargs)
    want = func(values, **kwargs)
    assert type(got) is type(want)                       # numpy's types: ndarray or a numpy scalar
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


def test_the_calls_from_the_issue():
    x = mx.nd.array([[1.0, 2.0], [3.0, 5.0]])
    np.testing.assert_array_equal(np.mean(x, axis=0), [2.0, 3.5])
    total = np.sum(x, dtype=np.float64)
    assert total == 11.0 and total.dtype == np.float64
    assert np.std(x) == np.std(x.asnumpy())
    out = np.empty(2, np.float32)
    assert np.max(x, axis=0, out=out) is out and out.tolist() == [3.0, 5.0]


def test_out_may_be_an_ndarray_for_functions_and_ufuncs():
    x = mx.nd.array([[1.0, 2.0], [3.0, 5.0]])
    target = mx.nd.zeros((2,))
    version = target._version
    assert np.max(x, axis=0, out=target) is target
    assert target.asnumpy().tolist() == [3.0, 5.0] and target._version > version   # an in-place write
    result = mx.nd.zeros((2, 2))
    assert np.add(x, 1, out=result) is result
    assert result.asnumpy().tolist() == [[2.0, 3.0], [4.0, 6.0]]
    mixed = mx.nd.zeros((2, 2))
    np.multiply(x, 2, out=mixed, where=np.array([[True, False], [False, True]]))
    assert mixed.asnumpy().tolist() == [[2.0, 0.0], [0.0, 10.0]]          # masked places keep out's values


def test_out_ndarray_in_a_recorded_graph_is_refused():
    w = mx.nd.ones((2,))
    w.attach_grad()
    with autograd.record():
        y = w * 2
        with pytest.raises(MXNetError, match="computational graph"):
            np.max(mx.nd.ones((2, 2)), axis=0, out=y)


def test_other_numpy_functions_take_ndarrays_and_lists_of_them():
    a, b = mx.nd.array([[1.0, 2.0]]), mx.nd.array([[3.0, 4.0]])
    joined = np.concatenate([a, b])
    assert isinstance(joined, np.ndarray) and joined.tolist() == [[1, 2], [3, 4]]
    assert np.shape(a) == (1, 2) and np.ndim(a) == 2
    np.testing.assert_array_equal(np.where(a > 1, a, b), [[3.0, 2.0]])
    assert np.allclose(a, a.asnumpy())


def test_results_are_not_recorded():
    x = mx.nd.ones((2,))
    x.attach_grad()
    with autograd.record():
        m = np.mean(x)
    assert isinstance(m, np.floating)


# ------------------------------------------------------------------------------------------ conversions
@pytest.mark.parametrize("shape", [(1,), (1, 1), ()])
def test_float_and_int_of_one_element(shape):
    x = mx.nd.array(np.full(shape, 2.75))
    assert float(x) == 2.75 and int(x) == 2 and isinstance(int(x), int)
    assert bool(x) is True and bool(mx.nd.array(np.zeros(shape))) is False


@pytest.mark.parametrize("conversion", [float, int])
def test_float_and_int_of_several_elements_name_the_shape(conversion):
    with pytest.raises(ScalarConversionError, match=r"exactly one element.*shape \(2, 3\)") as info:
        conversion(mx.nd.ones((2, 3)))
    assert isinstance(info.value, TypeError) and isinstance(info.value, MXNetError)


def test_bool_of_several_elements_is_ambiguous_as_in_mxnet():
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mx.nd.ones((2,)))


def test_index_of_a_0d_integer_array():
    n = mx.nd.array(np.array(3), dtype="int64")
    assert n.shape == () and list(range(n)) == [0, 1, 2] and operator.index(n) == 3
    assert ["a", "b", "c", "d"][n] == "d"


@pytest.mark.parametrize("value, dtype", [([3], "int32"), (np.array(3.0), "float32")])
def test_index_refuses_shape_1_and_float_arrays(value, dtype):
    with pytest.raises(ScalarConversionError, match=r"int\(x\)"):
        operator.index(mx.nd.array(value, dtype=dtype))


def test_numpy_indexing_with_a_shape_1_index_keeps_numpy_shapes():
    # a (1,) NDArray is not an __index__, so numpy indexes with it as an array, as with np.array([1])
    np.testing.assert_array_equal(np.arange(5)[mx.nd.array([1], dtype="int32")], np.arange(5)[np.array([1])])
