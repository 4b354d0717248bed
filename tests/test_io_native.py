"""mx.io.CSVIter and mx.io.MNISTIter: batching as MXNet 1.9.1's C++ iterators do it (values observed with MXNet)."""
import struct

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


@pytest.fixture
def csv_files(tmp_path):
    data, label = tmp_path / "d.csv", tmp_path / "l.csv"
    np.savetxt(data, np.arange(7 * 4).reshape(7, 4), delimiter=",", fmt="%d")
    np.savetxt(label, np.arange(7), delimiter=",", fmt="%d")
    return str(data), str(label)


def test_csv_round_batch_wraps_and_the_next_epoch_starts_after_the_wrap(csv_files):
    it = mx.io.CSVIter(data_csv=csv_files[0], data_shape=(2, 2), label_csv=csv_files[1], batch_size=3)
    assert it.provide_data[0].shape == (3, 2, 2) and it.provide_label[0].name == "softmax_label"
    batches = list(it)
    assert [b.label[0].asnumpy().tolist() for b in batches] == [[0, 1, 2], [3, 4, 5], [6, 0, 1]]
    assert [b.pad for b in batches] == [0, 0, 2]
    np.testing.assert_array_equal(batches[1].data[0].asnumpy().ravel()[:4], [12, 13, 14, 15])
    it.reset()
    assert [(b.label[0].asnumpy().tolist(), b.pad) for b in it] == [([2, 3, 4], 0), ([5, 6, 0], 1)]


def test_csv_without_round_batch_or_labels(csv_files):
    it = mx.io.CSVIter(data_csv=csv_files[0], data_shape=(4,), batch_size=3, round_batch=False)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    assert all(b.label[0].asnumpy().tolist() == [0, 0, 0] for b in batches)
    it.reset()
    assert it.iter_next() and it.getdata().asnumpy()[0].tolist() == [0, 1, 2, 3]   # one NDArray, as MXNet


@pytest.mark.parametrize("dtype,value", [("int32", 200000001), ("int64", 2147483648), ("float32", 1)])
def test_csv_dtypes_keep_exact_values(tmp_path, dtype, value):
    path = tmp_path / "d.csv"
    path.write_text("\n".join(",".join([str(value)] * 4) for _ in range(5)) + "\n")
    it = mx.io.CSVIter(data_csv=str(path), data_shape=(2, 2), batch_size=2, dtype=dtype)
    batch = next(it)
    assert batch.data[0].dtype == np.dtype(dtype) and batch.label[0].dtype == np.dtype(dtype)
    assert (batch.data[0].asnumpy() == value).all()


def test_csv_errors(csv_files):
    with pytest.raises(MXNetError, match="size"):
        mx.io.CSVIter(data_csv=csv_files[0], data_shape=(3,), batch_size=2)
    with pytest.raises(MXNetError, match="unknown"):
        mx.io.CSVIter(data_csv=csv_files[0], data_shape=(4,), batch_size=2, shuffle=True)


def _idx(path, array):
    with open(path, "wb") as f:
        f.write(bytes([0, 0, 8, array.ndim]) + struct.pack(">" + "I" * array.ndim, *array.shape))
        f.write(array.astype(np.uint8).tobytes())


def test_mnist_iter(tmp_path):
    images = np.random.RandomState(0).randint(0, 256, (25, 28, 28))
    labels = np.arange(25) % 10
    _idx(tmp_path / "img", images)
    _idx(tmp_path / "lbl", labels)
    it = mx.io.MNISTIter(image=str(tmp_path / "img"), label=str(tmp_path / "lbl"), batch_size=10, shuffle=False,
                         flat=True, data_shape=(784,))
    batches = list(it)
    assert len(batches) == 2                                 # the incomplete last batch is dropped
    np.testing.assert_allclose(batches[0].data[0].asnumpy(), images[:10].reshape(10, 784) / 255.0, rtol=1e-6)
    assert batches[1].label[0].asnumpy().tolist() == labels[10:20].tolist()
    shuffled = mx.io.MNISTIter(image=str(tmp_path / "img"), label=str(tmp_path / "lbl"), batch_size=5, seed=3)
    assert shuffled.provide_data[0].shape == (5, 1, 28, 28)
    first = [b.label[0].asnumpy().tolist() for b in shuffled]
    shuffled.reset()
    assert [b.label[0].asnumpy().tolist() for b in shuffled] == first      # shuffled once, not per epoch
    assert sorted(sum(first, [])) == sorted(labels.tolist())
