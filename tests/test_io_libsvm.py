"""mx.io.LibSVMIter: batches as MXNet 1.9.1 yields them (tests/data/libsvm_reference.json, written by
tests/data/make_libsvm_reference.py with real MXNet), the errors MXNet raises, and a clear MXNetError naming
file:line, never garbage or another exception, for malformed input."""
import json
import os
import random

import numpy as np
import pytest
from hypothesis import given

import mixnet as mx
from mixnet.base import MXNetError

from hostile_inputs import RNGS, bounded_outcome, fuzz_settings, mutate_bytes

with open(os.path.join(os.path.dirname(__file__), "data", "libsvm_reference.json")) as _f:
    REFERENCE = json.load(_f)

DOC_DATA = REFERENCE["doc_bs3"]["files"]["d.t"]


def _write(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())


def _iter(root, kwargs):
    kwargs = dict(kwargs)
    for key in ("data_libsvm", "label_libsvm"):
        if key in kwargs:
            kwargs[key] = str(root / kwargs[key])
    return mx.io.LibSVMIter(**kwargs)


def _check_csr(arr, expected):
    assert isinstance(arr, mx.nd.sparse.CSRNDArray)
    assert arr.dtype == np.float32
    np.testing.assert_array_equal(arr.indices.asnumpy(), expected["indices"])
    np.testing.assert_array_equal(arr.indptr.asnumpy(), expected["indptr"])
    # MXNet's string-to-float32 is not correctly rounded: it can be 1 ulp off Python's
    np.testing.assert_array_max_ulp(arr.data.asnumpy(), np.float32(expected["values"]), maxulp=1)
    dense = np.zeros(arr.shape, np.float32)  # the dense view agrees with the stored structure
    for row in range(arr.shape[0]):
        lo, hi = expected["indptr"][row], expected["indptr"][row + 1]
        dense[row, expected["indices"][lo:hi]] = expected["values"][lo:hi]
    np.testing.assert_array_max_ulp(arr.asnumpy(), dense, maxulp=1)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_batches_match_mxnet(tmp_path, name):
    case = REFERENCE[name]
    _write(tmp_path, case["files"])
    it = _iter(tmp_path, case["kwargs"])
    expected = case["expected"]
    assert [[d.name, list(d.shape)] for d in it.provide_data] == expected["provide_data"]
    assert [[d.name, list(d.shape)] for d in it.provide_label] == expected["provide_label"]
    for epoch, batches in enumerate(expected["epochs"]):
        if epoch:
            it.reset()
        for want in batches:
            batch = next(it)
            assert batch.pad == want["pad"] == it.getpad()
            assert batch.index.tolist() == want["index"]
            _check_csr(batch.data[0], want["data"])
            if isinstance(want["label"], dict):
                _check_csr(batch.label[0], want["label"])
            else:
                assert batch.label[0].stype == "default"
                np.testing.assert_array_max_ulp(batch.label[0].asnumpy(), np.float32(want["label"]), maxulp=1)
        with pytest.raises(StopIteration):
            next(it)


def test_getdata_getlabel_are_single_arrays_of_the_current_batch(tmp_path):
    _write(tmp_path, {"d.t": DOC_DATA})
    it = _iter(tmp_path, dict(data_libsvm="d.t", data_shape=(3,), batch_size=3))
    with pytest.raises(MXNetError, match="iter_next"):
        it.getdata()
    assert it.iter_next()
    assert it.getdata().shape == (3, 3) and it.getlabel().asnumpy().tolist() == [1, -2, -3]
    it.getdata().check_format(True)
    assert it.getpad() == 0 and it.getindex().tolist() == [0, 1, 2]


def test_reset_mid_epoch_starts_over(tmp_path):
    _write(tmp_path, {"d.t": DOC_DATA})
    it = _iter(tmp_path, dict(data_libsvm="d.t", data_shape=(3,), batch_size=2))
    next(it)
    it.reset()
    assert next(it).index.tolist() == [0, 1]


def test_a_wrap_that_needs_more_than_one_pass_is_an_error(tmp_path):
    # 4 rows, batch 7: epoch 1 borrows rows 0-2; after reset, epoch 2 starts at row 3 and would need 6 more (MXNet:
    # "number of input must be bigger than batch size")
    _write(tmp_path, {"d.t": DOC_DATA})
    it = _iter(tmp_path, dict(data_libsvm="d.t", data_shape=(3,), batch_size=7))
    assert [b.pad for b in it] == [3]
    it.reset()
    with pytest.raises(MXNetError, match="batch_size 7"):
        next(it)


@pytest.mark.parametrize("kwargs,match", [
    (dict(data_shape=(3, 1)), "data_shape"),
    (dict(round_batch=False), "round_batch"),
    (dict(label_shape=(2,)), "label_shape must be"),
    (dict(label_libsvm="d.t"), r"label_shape must not be \(1,\)"),
    (dict(num_parts=2, part_index=2), "part_index"),
    (dict(dtype="float64"), "dtype"),
    (dict(batch_size=0), "batch_size"),
    (dict(shuffle=True), "unknown arguments"),
    (dict(data_libsvm="missing.t"), "neither a file nor a directory"),
])
def test_bad_arguments(tmp_path, kwargs, match):
    _write(tmp_path, {"d.t": DOC_DATA})
    args = dict(dict(data_libsvm="d.t", data_shape=(3,), batch_size=2), **kwargs)
    with pytest.raises(MXNetError, match=match):
        _iter(tmp_path, args)


def test_speed_knobs_are_accepted(tmp_path):
    _write(tmp_path, {"d.t": DOC_DATA})
    it = mx.io.LibSVMIter(data_libsvm=str(tmp_path / "d.t"), data_shape=(3,), batch_size=2, prefetch_buffer=4,
                          dtype="float32", label_libsvm="NULL")
    assert len(list(it)) == 2


def test_a_batch_too_large_for_memory_is_an_mxnet_error(tmp_path):
    _write(tmp_path, {"d.t": DOC_DATA})
    it = _iter(tmp_path, dict(data_libsvm="d.t", data_shape=(10 ** 14,), batch_size=2))
    assert it.iter_next()
    with pytest.raises(MXNetError, match="out of memory"):
        it.getdata()


def test_a_label_file_with_fewer_rows_is_an_error(tmp_path):
    _write(tmp_path, {"d.t": DOC_DATA, "l.t": "1 0:1\n"})
    with pytest.raises(MXNetError, match="fewer than"):
        _iter(tmp_path, dict(data_libsvm="d.t", label_libsvm="l.t", data_shape=(3,), label_shape=(2,)))


def test_an_empty_input_is_an_error_and_an_empty_part_yields_nothing(tmp_path):
    _write(tmp_path, {"e.t": "", "one.t": "1 0:1\n"})
    with pytest.raises(MXNetError, match="holds no data"):
        _iter(tmp_path, dict(data_libsvm="e.t", data_shape=(3,)))
    it = _iter(tmp_path, dict(data_libsvm="one.t", data_shape=(3,), num_parts=4, part_index=3))
    assert list(it) == []


@pytest.mark.parametrize("line,match", [
    ("-3.0 -1:0.6 1:2.4", "-1:0.6"),           # a negative index (MXNet: a failed check in its number parser)
    ("1 0 2:1", "index:value"),                 # a feature without a value
    ("1 0:1:2", "index:value"),
    ("1 0:abc", "index:value"),
    ("1 x:1", "index:value"),
    ("1 0:1,2 1:3", "index:value"),
    ("1 0:1_0", "index:value"),                 # Python's float() would take it
    ("1 0:nan", "index:value"),
    ("abc 0:1", "label"),
    ("1:2:3 0:1", "label"),
    ("1 5:1", "out of range"),                  # MXNet stores it and gives an invalid csr array
    ("1 99999999999999999999999999 0:1", "index:value"),
    ("1 123456789012345678901234:1", "out of range"),
    ("1 2:1 0:1", "ascending"),                 # MXNet stores it unsorted (an invalid csr array)
    ("1 1:1 1:2", "ascending"),
])
def test_malformed_lines_name_file_and_line(tmp_path, line, match):
    _write(tmp_path, {"d.t": "1 0:1\n\n" + line + "\n2 1:1\n"})
    with pytest.raises(MXNetError, match=match) as err:
        _iter(tmp_path, dict(data_libsvm="d.t", data_shape=(5,)))
    assert "d.t:3:" in str(err.value)


def test_leading_zeros_of_an_index_are_allowed(tmp_path):
    _write(tmp_path, {"d.t": "1 " + "0" * 30 + "2:5\n"})
    it = _iter(tmp_path, dict(data_libsvm="d.t", data_shape=(3,)))
    assert next(it).data[0].asnumpy().tolist() == [[0, 0, 5]]


def test_line_numbers_count_from_the_file_start_in_later_parts(tmp_path):
    lines = [f"{i} {i}:1" for i in range(9)] + ["1 bad"]
    _write(tmp_path, {"d.t": "\n".join(lines) + "\n"})
    with pytest.raises(MXNetError, match=r"d\.t:10:"):
        _iter(tmp_path, dict(data_libsvm="d.t", data_shape=(10,), num_parts=2, part_index=1))


def test_parts_cover_every_row_once(tmp_path):
    rng = random.Random(0)
    text = "".join(f"{r} " + " ".join(f"{c}:1" for c in sorted(rng.sample(range(30), rng.randint(0, 8)))) + "\n"
                   for r in range(53))
    _write(tmp_path, {"d.t": text})
    for parts in (1, 2, 3, 7, 60):
        labels = []
        for index in range(parts):
            it = mx.io.LibSVMIter(data_libsvm=str(tmp_path / "d.t"), data_shape=(30,), num_parts=parts,
                                  part_index=index, batch_size=1)
            labels += [b.label[0].asnumpy()[0] for b in it]
        assert labels == list(range(53)), parts


@fuzz_settings(max_examples=60)
@given(rng=RNGS)
def test_mutated_files_give_batches_or_mxnet_errors(tmp_path_factory, rng):
    root = tmp_path_factory.mktemp("fuzz")
    seed = REFERENCE["random_bs4"]["files"]["r.t"].encode()
    (root / "d.t").write_bytes(mutate_bytes(seed, rng))

    def read():
        it = mx.io.LibSVMIter(data_libsvm=str(root / "d.t"), data_shape=(50,), batch_size=8)
        for batch in it:
            assert batch.data[0].shape == (8, 50)
            batch.data[0].check_format(True)

    bounded_outcome(read)
