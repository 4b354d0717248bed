"""numpy's functions and conversions on NDArrays. numpy's own protocol decides, as with MXNet: functions numpy
implements by calling the array's method (np.sum, np.mean, np.max, np.argmax, np.round, np.reshape, ...) run the
NDArray method, which takes numpy's dtype=/out=/keepdims=, and return an NDArray (MXNet's np.max(x) does; MXNet
code reads `np.argmax(pred, axis=1).asnumpy()`); the others (np.std, np.var, np.median, np.concatenate) and the
ufuncs compute in numpy and return numpy arrays. float()/int() of one-element arrays, operator.index() of 0-d
integer arrays, bool()."""
import operator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import mixnet as mx
from mixnet import autograd
from mixnet.base import MXNetError, ScalarConversionError

METHOD_PATH = [np.sum, np.mean, np.prod, np.max, np.min, np.argmax, np.argmin]      # -> NDArray
NUMPY_PATH = [np.std, np.var, np.median, np.ptp]                                      # -> numpy


@settings(max_examples=40, deadline=None)
@given(values=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
                         elements=st.floats(-8, 8, width=32)),
       func=st.sampled_from(METHOD_PATH + NUMPY_PATH), axis=st.sampled_from([None, 0, -1]), keepdims=st.booleans(),
       dtype=st.sampled_from([None, np.float64]))
def test_numpy_functions_match_numpy_on_the_same_data(values, func, axis, keepdims, dtype):
    kwargs = {"axis": axis}
    if func not in (np.argmax, np.argmin):
        kwargs["keepdims"] = keepdims
    if dtype is not None and func in (np.mean, np.sum, np.std, np.var, np.prod):
        kwargs["dtype"] = dtype
    got = func(mx.nd.array(values), **kwargs)
    want = func(values, **kwargs)
    if func in METHOD_PATH:
        assert isinstance(got, mx.nd.NDArray)
        got = got.asnumpy()
        if func in (np.argmax, np.argmin):       # MXNet's argmax gives float32 indices
            want = want.astype(np.float32)
        if axis is None and not keepdims:        # MXNet 1.x has no 0-d arrays: a full reduction is shape (1,)
            assert got.shape == (1,)
            got = got.reshape(())
    else:
        assert type(got) is type(want)
    assert got.dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if func in (np.prod, np.std, np.var) else 1e-6, atol=1e-5)


def test_the_calls_from_the_issue():
    x = mx.nd.array([[1.0, 2.0], [3.0, 5.0]])
    np.testing.assert_array_equal(np.mean(x, axis=0).asnumpy(), [2.0, 3.5])
    total = np.sum(x, dtype=np.float64)
    assert total.dtype == np.float64 and total.asnumpy().tolist() == [11.0]
    assert np.std(x) == np.std(x.asnumpy())
    out = np.empty(2, np.float32)
    assert np.max(x, axis=0, out=out) is out and out.tolist() == [3.0, 5.0]


def test_mxnet_code_reads_method_path_results_as_ndarrays():
    pred = mx.nd.array([[0.3, 0.7], [0, 1.0], [0.4, 0.6]])
    label = mx.nd.array([0, 1, 1])
    assert (np.argmax(pred, axis=1) == label).sum().asscalar() == 2
    assert np.round(pred).asnumpy().tolist() == [[0, 1], [0, 1], [0, 1]]
    assert np.transpose(pred).shape == (2, 3) and np.reshape(pred, (6,)).shape == (6,)
    assert np.clip(pred, 0.5, 0.6).asnumpy().max() == np.float32(0.6)


def test_method_path_results_are_recorded():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = np.sum(x * x, dtype=np.float32)
    y.backward()
    assert x.grad.asnumpy().tolist() == [2.0, 4.0, 6.0]


def test_out_may_be_an_ndarray_or_a_numpy_array():
    x = mx.nd.array([[1.0, 2.0], [3.0, 5.0]])
    target = mx.nd.zeros((2,))
    assert np.max(x, axis=0, out=target) is target and target.asnumpy().tolist() == [3.0, 5.0]
    host = np.zeros(2, np.float32)
    assert np.min(x, axis=1, out=host) is host and host.tolist() == [1.0, 3.0]
    result = mx.nd.zeros((2, 2))
    version = result._version
    assert np.add(x, 1, out=result) is result                                  # a ufunc's out
    assert result.asnumpy().tolist() == [[2.0, 3.0], [4.0, 6.0]] and result._version > version
    masked = mx.nd.zeros((2, 2))
    np.multiply(x, 2, out=masked, where=np.array([[True, False], [False, True]]))
    assert masked.asnumpy().tolist() == [[2.0, 0.0], [0.0, 10.0]]             # masked places keep out's values


def test_ufunc_out_ndarray_in_a_recorded_graph_is_refused():
    w = mx.nd.ones((2,))
    w.attach_grad()
    with autograd.record():
        y = w * 2
        with pytest.raises(MXNetError, match="computational graph"):
            np.exp(mx.nd.ones((2,)), out=y)


def test_numpy_path_functions_take_ndarrays_and_lists_of_them():
    a, b = mx.nd.array([[1.0, 2.0]]), mx.nd.array([[3.0, 4.0]])
    joined = np.concatenate([a, b])
    assert isinstance(joined, np.ndarray) and joined.tolist() == [[1, 2], [3, 4]]
    assert np.shape(a) == (1, 2) and np.ndim(a) == 2
    assert isinstance(np.exp(a), np.ndarray)


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
