"""Text and HTML reprs of NDArray (dense and sparse), Optimizer, Trainer, DataLoader and Metric, read through
IPython's display formatter as Jupyter shows them; and the shared helpers in mixnet/_display.py."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import mixnet as mx
from mixnet import _display, gluon, nd

pytest.importorskip("IPython", reason="the reprs are read through IPython's display formatter")
from display_helpers import rich, rows, stats, text  # noqa: E402


def _here(expected):
    """`expected`, written for arrays on cpu(0), for arrays made on the default device (cpu(0), unless the suite
    runs on another one: tests/conftest.py)."""
    return expected.replace("@cpu(0)", f"@{mx.current_context()}")


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
    x, expected = make(), _here(expected)
    assert repr(x) == expected and str(x) == expected


def test_ndarray_text_repr_of_an_empty_array():
    with mx.np_shape(True):
        assert repr(nd.zeros((0, 3))) == _here("\n[]\n<NDArray 0x3 @cpu(0)>")
        assert repr(nd.zeros((0,), dtype="int32")) == _here("\n[]\n<NDArray 0 int32 @cpu(0)>")


def test_ndarray_text_repr_follows_numpy_print_options():
    x = nd.array(np.arange(30).reshape(3, 10), dtype="int32")
    with np.printoptions(threshold=5, edgeitems=1):
        assert repr(x) == _here("\n[[ 0 ...  9]\n ...\n [20 ... 29]]\n<NDArray 3x10 int32 @cpu(0)>")


@given(shape=st.lists(st.integers(0, 9), min_size=0, max_size=4), edge=st.integers(1, 3),
       threshold=st.integers(0, 40), dtype=st.sampled_from(["float32", "float16", "int32", "bool"]))
def test_preview_reads_the_corners_numpy_would_show(shape, edge, threshold, dtype):
    data = np.asarray(np.random.default_rng(len(shape)).standard_normal(shape) * 50).astype(dtype)
    with np.printoptions(threshold=threshold, edgeitems=edge):
        assert _display.preview(data) == str(data)


# ---------------------------------------------------------------- NDArray HTML
def test_ndarray_html_shows_shape_dtype_context_and_values():
    page = rich(nd.array([[1.5, 2], [3, 4]]))
    assert _here("<b>NDArray</b> 2x2 <code>float32</code> @cpu(0)") in page
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
    assert repr(dense.tostype("csr")) == _here("\n<CSRNDArray 2x3 @cpu(0)>")         # MXNet 1.9.1's text
    assert repr(dense.tostype("row_sparse")) == _here("\n<RowSparseNDArray 2x3 @cpu(0)>")
    assert repr(dense.astype("float16").tostype("csr")) == _here("\n<CSRNDArray 2x3 float16 @cpu(0)>")


def test_sparse_html_says_what_is_stored():
    dense = nd.array([[0, 1, 0], [0, 0, 0], [2, 0, 3]])
    page = rich(dense.tostype("csr"))
    assert "<b>CSRNDArray</b> 3x3 <code>float32</code>" in page and stats(page) == {"stored values": "3 of 9"}
    page = rich(dense.tostype("row_sparse"))
    assert "<b>RowSparseNDArray</b> 3x3" in page and stats(page) == {"stored rows": "2 of 3"}


# ---------------------------------------------------------------- Optimizer, Trainer, DataLoader, Metric
def test_optimizer_reprs():
    sgd = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    assert repr(sgd) == "SGD(learning_rate=0.1, wd=0.0, momentum=0.9, lazy_update=True)"
    assert repr(mx.optimizer.Adam(wd=1e-4)) == \
        "Adam(learning_rate=0.001, wd=0.0001, beta1=0.9, beta2=0.999, epsilon=1e-08, lazy_update=True)"
    scheduled = mx.optimizer.create("nag", lr_scheduler=mx.lr_scheduler.FactorScheduler(10, base_lr=0.5),
                                    clip_gradient=1.0, rescale_grad=1 / 32)
    assert repr(scheduled) == ("NAG(learning_rate=0.5, wd=0.0, momentum=0.0, lazy_update=True, "
                               "lr_scheduler='FactorScheduler', rescale_grad=0.03125, clip_gradient=1.0)")
    assert rows(rich(sgd)) == [["learning_rate", "0.1"], ["wd", "0.0"], ["momentum", "0.9"],
                               ["lazy_update", "True"], ["num_update", "0"]]


def _dense_trainer(**kwargs):
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize()
    return net, gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5}, **kwargs)


def test_trainer_reprs():
    net, trainer = _dense_trainer()
    assert repr(trainer) == ("Trainer(optimizer=SGD(learning_rate=0.5, wd=0.0, momentum=0.0, lazy_update=True), "
                             "parameters=2, kvstore='device')")
    page = rich(trainer)
    assert "<b>Trainer</b> 2 parameters, 15 values" in page
    assert ["kvstore", "device"] in rows(page) and ["learning_rate", "0.5"] in rows(page)
    with mx.autograd.record():
        loss = net(nd.ones((2, 4))).sum()
    loss.backward()
    trainer.step(2)
    assert ["update_on_kvstore", "False"] in rows(rich(trainer)) and ["num_update", "1"] in rows(rich(trainer))


def test_trainer_html_counts_deferred_parameters_with_a_question_mark():
    net = gluon.nn.Dense(3)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "adam")
    assert "2 parameters, 3? values" in rich(trainer)


def test_dataloader_reprs():
    data = gluon.data.ArrayDataset(np.zeros((10, 2)), np.arange(10))
    loader = gluon.data.DataLoader(data, batch_size=4, shuffle=True)
    assert repr(loader) == ("DataLoader(dataset=ArrayDataset, samples=10, batch_size=4, shuffle=True, "
                            "last_batch='keep', batches=3, num_workers=0)")
    assert rows(rich(loader)) == [["dataset", "ArrayDataset"], ["samples", "10"], ["batch_size", "4"],
                                  ["shuffle", "True"], ["last_batch", "keep"], ["batches", "3"],
                                  ["num_workers", "0"]]
    threads = gluon.data.DataLoader(data, batch_size=4, last_batch="discard", num_workers=2, thread_pool=True)
    assert repr(threads) == ("DataLoader(dataset=ArrayDataset, samples=10, batch_size=4, shuffle=False, "
                             "last_batch='discard', batches=2, num_workers=2, thread_pool=True, prefetch=4)")
    custom = gluon.data.DataLoader(data, batch_sampler=[[0, 1], [2]])
    assert repr(custom) == "DataLoader(dataset=ArrayDataset, samples=10, batch_sampler=list, batches=2, num_workers=0)"


def test_metric_reprs():
    acc = mx.metric.Accuracy()
    assert repr(acc) == "Accuracy(accuracy=nan, num_inst=0)"
    assert str(acc) == "EvalMetric: {'accuracy': nan}"                               # MXNet 1.9.1's str
    acc.update([nd.array([0, 1, 1])], [nd.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])])
    assert repr(acc) == "Accuracy(accuracy=0.666667, num_inst=3)"
    assert rows(rich(acc)) == [["accuracy", "0.666667"], ["num_inst", "3"]]
    composite = mx.metric.create(["acc", "mse"])
    assert repr(composite) == "CompositeEvalMetric(accuracy=nan, mse=nan)"
    acc.reset_local()                    # the global value differs from the local one now: the HTML shows both
    assert repr(acc) == "Accuracy(accuracy=nan, num_inst=0)"
    assert rows(rich(acc)) == [["accuracy", "nan"], ["num_inst", "0"], ["global accuracy", "0.666667"]]


# ---------------------------------------------------------------- the helpers
def test_helpers_escape_every_text_they_are_given():
    hostile = '<script>alert("x")</script>'
    page = _display.box(_display.heading(hostile, hostile, _display.badge(hostile, title=hostile)),
                        _display.table([[hostile, _display.Html("<i>kept</i>")]], [hostile]),
                        _display.pre(hostile))
    assert "<script" not in page and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "<i>kept</i>" in page                          # only fragments marked Html pass unescaped
    assert _display.call_text("X", [("a", "<b>"), ("n", _display.Name("Y")), ("f", 0.1 + 0.2)]) == \
        "X(a='<b>', n=Y, f=0.3)"
