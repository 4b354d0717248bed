"""Text and HTML reprs of NDArray (dense and sparse), read through IPython's display formatter as Jupyter shows
them; and the shared helpers in mixnet/_display.py."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import mixnet as mx
from mixnet import _display, nd

pytest.importorskip("IPython", reason="the reprs are read through IPython's display formatter")
from display_helpers import rich, stats, text  # noqa: E402


# ---------------------------------------------------------------- NDArray text repr
# MXNet 1.9.1 prints the first, fourth and last forms exactly; mixnet adds the dtype when it is not float32
# (MXNet prints float16, float64 and int32 [1, 2] alike) and says 'scalar' where MXNet prints '<NDArray  @cpu(0)>'.
@pytest.mark.parametrize("make, expected", [
    (lambda: nd.ones((2, 3)), "\n[[1. 1. 1.]\n [1. 1. 1.]]\n<NDArray 2x3 @cpu(0)>"),
    (lambda: nd.array([1, 2], dtype="int32"), "\n[1 2]\n<NDArray 2 int32 @cpu(0)>"),
    (lambda: nd.array([1, 2], dtype="float16"), "\n[1. 2.]\n<NDArray 2 float16 @cpu(0)>"),
    (lambda: nd.array(np.arange(2000)),
     "\n[0.000e+00 1.000e+00 2.000e+00 ... 1.997e+03 1.998e+03 1.999e+03]\n<NDArray 2000 @cpu(0)>"),
    (lambda: nd.array([1, 2], dtype="float64"), "\n[1. 2.]\n<NDArray 2 float64 @cpu(0)>"),
    (lambda: nd.array([True, False], dtype="bool"), "\n[ True False]\n<NDArray 2 bool @cpu(0)>"),
    (lambda: nd.array(3), "\n3.0\n<NDArray scalar @cpu(0)>"),
    (lambda: nd.array(7, dtype="int64"), "\n7\n<NDArray scalar int64 @cpu(0)>"),
    (lambda: nd.array([[1, 2, 3]], dtype="uint8"), "\n[[1 2 3]]\n<NDArray 1x3 uint8 @cpu(0)>"),
], ids=["float32", "int32", "float16", "summarised", "float64", "bool", "0-d", "0-d int64", "uint8"])
def test_ndarray_text_repr(make, expected):
    x = make()
    assert repr(x) == expected and str(x) == expected


def test_ndarray_text_repr_of_an_empty_array():
    with mx.np_shape(True):
        assert repr(nd.zeros((0, 3))) == "\n[]\n<NDArray 0x3 @cpu(0)>"
        assert repr(nd.zeros((0,), dtype="int32")) == "\n[]\n<NDArray 0 int32 @cpu(0)>"


def test_ndarray_text_repr_follows_numpy_print_options():
    x = nd.array(np.arange(30).reshape(3, 10), dtype="int32")
    with np.printoptions(threshold=5, edgeitems=1):
        assert repr(x) == "\n[[ 0 ...  9]\n ...\n [20 ... 29]]\n<NDArray 3x10 int32 @cpu(0)>"


@given(shape=st.lists(st.integers(0, 9), min_size=0, max_size=4), edge=st.integers(1, 3),
       threshold=st.integers(0, 40), dtype=st.sampled_from(["float32", "float16", "int32", "bool"]))
def test_preview_reads_the_corners_numpy_would_show(shape, edge, threshold, dtype):
    data = np.asarray(np.random.default_rng(len(shape)).standard_normal(shape) * 50).astype(dtype)
    with np.printoptions(threshold=threshold, edgeitems=edge):
        assert _display.preview(data) == str(data)


# ---------------------------------------------------------------- NDArray HTML
def test_ndarray_html_shows_shape_dtype_context_and_values():
    page = rich(nd.array([[1.5, 2], [3, 4]]))
    assert "<b>NDArray</b> 2x2 <code>float32</code> @cpu(0)" in page
    assert "<pre" in page and "[[1.5 2. ]\n [3.  4. ]]</pre>" in page
    assert stats(page) == {}                     # four values are all on screen: no statistics


def test_ndarray_html_statistics_of_a_float_array_with_nan_and_inf():
    values = np.arange(20, dtype=np.float32)
    values[3], values[7], values[8] = np.nan, np.inf, -np.inf
    page = rich(nd.array(values))
    assert stats(page) == {"min": "-inf", "max": "inf", "mean": "nan", "NaN": "1", "inf": "2"}
    values[7] = values[8] = 1.0                     # mean of the 19 numbers: 174 / 19
    assert stats(rich(nd.array(values))) == {"min": "0.0", "max": "19.0", "mean": "9.15789", "NaN": "1", "inf": "0"}


def test_ndarray_html_statistics_do_not_overflow_float16_or_int32():
    # sums in the array's own dtype overflow: float16 at 65504, int32 at 2**31
    assert stats(rich(nd.full((40,), 60000, dtype="float16"))) == \
        {"min": "60000.0", "max": "60000.0", "mean": "60000.0", "NaN": "0", "inf": "0"}
    assert stats(rich(nd.full((40,), 2**31 - 1, dtype="int32"))) == \
        {"min": "2147483647", "max": "2147483647", "mean": "2147483647.0"}


def test_ndarray_html_statistics_of_bool_and_all_nan_arrays():
    assert stats(rich(nd.array([True, False, False, False] * 4, dtype="bool"))) == \
        {"min": "False", "max": "True", "mean": "0.25"}
    assert stats(rich(nd.full((4, 4), np.nan))) == {"min": "nan", "max": "nan", "mean": "nan", "NaN": "16",
                                                     "inf": "0"}


def test_ndarray_html_of_scalar_and_empty_arrays():
    page = rich(nd.array(2.5, dtype="float64"))
    assert "<b>NDArray</b> scalar <code>float64</code>" in page and ">2.5</pre>" in page
    with mx.np_shape(True):
        page = rich(nd.zeros((0, 4), dtype="int32"))
    assert "<b>NDArray</b> 0x4 <code>int32</code>" in page and "<i>empty</i>" in page and "<pre" not in page


def test_ndarray_html_of_a_large_array_is_summarised():
    page = rich(nd.array(np.arange(5000).reshape(50, 100), dtype="int32"))
    assert "..." in text(page) and "4999" in text(page) and "2500" not in text(page).split("min")[0]
    assert stats(page) == {"min": "0", "max": "4999", "mean": "2499.5"}


def test_ndarray_html_of_an_array_on_the_autograd_tape():
    x = nd.ones((4, 4))
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
    assert stats(rich(y))["mean"] == "2.0" and stats(rich(x.grad))["max"] == "0.0"


# ---------------------------------------------------------------- sparse
def test_sparse_text_repr_is_mxnet_s_with_the_dtype_rule():
    dense = nd.array([[0, 1, 0], [0, 0, 0]])
    assert repr(dense.tostype("csr")) == "\n<CSRNDArray 2x3 @cpu(0)>"                 # MXNet 1.9.1's text
    assert repr(dense.tostype("row_sparse")) == "\n<RowSparseNDArray 2x3 @cpu(0)>"
    assert repr(dense.astype("float16").tostype("csr")) == "\n<CSRNDArray 2x3 float16 @cpu(0)>"


def test_sparse_html_says_what_is_stored():
    dense = nd.array([[0, 1, 0], [0, 0, 0], [2, 0, 3]])
    page = rich(dense.tostype("csr"))
    assert "<b>CSRNDArray</b> 3x3 <code>float32</code>" in page and stats(page) == {"stored values": "3 of 9"}
    page = rich(dense.tostype("row_sparse"))
    assert "<b>RowSparseNDArray</b> 3x3" in page and stats(page) == {"stored rows": "2 of 3"}


# ---------------------------------------------------------------- the helpers
def test_helpers_escape_every_text_they_are_given():
    hostile = '<script>alert("x")</script>'
    page = _display.box(_display.heading(hostile, hostile, _display.badge(hostile, title=hostile)),
                        _display.table([[hostile, _display.Html("<i>kept</i>")]], [hostile]),
                        _display.pre(hostile))
    assert "<script" not in page and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "<i>kept</i>" in page                          # only fragments marked Html pass unescaped
