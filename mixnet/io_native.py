"""`mx.io.CSVIter` and `mx.io.MNISTIter`: MXNet 1.x's file-reading iterators (C++ in MXNet), over data held in
memory.

Batching follows MXNet's BatchLoader: with ``round_batch`` (CSVIter's default) the last batch of an epoch is
completed with examples from the start, ``pad`` says how many, and the next epoch starts after them; without it
the last batch is still full size and ``pad`` counts its filler examples. MNISTIter drops the last incomplete
batch, as MXNet's does. Labels of shape ``(1,)`` come as a ``(batch_size,)`` array, named ``softmax_label``. As with
MXNet's C++-backed iterators, ``getdata()`` / ``getlabel()`` return one NDArray (a batch holds lists of them).
"""
import numpy as np

from .base import MXNetError, dtype_np
from .io_base import DataBatch, DataDesc, DataIter
from .ndarray.ndarray import array

__all__ = ["CSVIter", "MNISTIter"]

# Threading and prefetch knobs of MXNet's C++ iterators: they change speed, never results.
_SPEED_KNOBS = {"prefetch_buffer", "preprocess_threads", "ctx", "silent", "verbose"}


def _check_knobs(name, kwargs):
    unknown = sorted(set(kwargs) - _SPEED_KNOBS)
    if unknown:
        raise MXNetError(f"{name}: unknown arguments {unknown}")


class NativeIter(DataIter):
    """MXNet's C++ iterators' convention (CSVIter, MNISTIter, LibSVMIter): getdata / getlabel give one array each,
    and a batch carries them as one-element lists together with provide_data / provide_label."""

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=self.getpad(), index=self.getindex(),
                         provide_data=self.provide_data, provide_label=self.provide_label)


class _InMemoryIter(NativeIter):
    """Batches of rows of `data` and `label` (numpy arrays with the example axis first)."""

    def __init__(self, data, label, batch_size, last):
        super().__init__(batch_size)
        if batch_size <= 0:
            raise MXNetError(f"{type(self).__name__}: batch_size must be positive, got {batch_size}")
        if len(data) == 0:
            raise MXNetError(f"{type(self).__name__}: the data holds no examples")
        self._data, self._label, self._last = data, label, last
        self._start = 0           # where the next epoch begins (after a round_batch wrap)
        self._pos = 0
        self._rows = None
        self._pad = 0
        label_shape = label.shape[1:] if label.shape[1:] != (1,) else ()
        self.provide_data = [DataDesc("data", (batch_size,) + data.shape[1:], data.dtype.type)]
        self.provide_label = [DataDesc("softmax_label", (batch_size,) + label_shape, label.dtype.type)]

    def reset(self):
        self._pos = self._start
        self._rows = None

    def iter_next(self):
        n, bs = len(self._data), self.batch_size
        if self._pos >= n or (self._last == "discard" and self._pos + bs > n):
            return False
        rows = np.arange(self._pos, self._pos + bs) % n
        self._pad = max(0, self._pos + bs - n)
        self._pos += bs
        if self._pos >= n:
            self._start = self._pad if self._last == "round" else 0
        self._rows = rows
        return True

    def _batch(self, source, shape):
        if self._rows is None:
            raise MXNetError(f"{type(self).__name__}: call iter_next() (or next()) before reading a batch")
        return array(source[self._rows].reshape(shape), dtype=source.dtype)

    # one NDArray each, not a list, as MXNet's C++-backed iterators return
    def getdata(self):
        return self._batch(self._data, self.provide_data[0].shape)

    def getlabel(self):
        return self._batch(self._label, self.provide_label[0].shape)

    def getindex(self):
        return None if self._rows is None else self._rows.astype(np.uint64)

    def getpad(self):
        return self._pad


def _read_csv(path, width, dtype, what):
    """Rows of a CSV file of numbers, each of `width` values, as a (rows, width) array of dtype."""
    parse = np.int64 if np.issubdtype(dtype, np.integer) else np.float64
    try:
        values = np.loadtxt(path, delimiter=",", dtype=parse, ndmin=2)
    except OSError as err:
        raise MXNetError(f"CSVIter: cannot read {what} file {path!r}: {err}") from None
    except ValueError as err:
        raise MXNetError(f"CSVIter: {what} file {path!r} is not a CSV of numbers: {err}") from None
    if values.shape[1] != width:
        raise MXNetError(f"CSVIter: the data size in CSV do not match size of shape: {what} file {path!r} has rows "
                         f"of {values.shape[1]} values, the shape asks for {width}")
    return values.astype(dtype)


class CSVIter(_InMemoryIter):
    """Batches of rows of a CSV file reshaped to data_shape, with labels from label_csv (zeros without one)."""

    def __init__(self, data_csv, data_shape, label_csv=None, label_shape=(1,), batch_size=1, round_batch=True,
                 dtype="float32", **kwargs):
        _check_knobs("CSVIter", kwargs)
        dtype = dtype_np(dtype)
        if dtype not in (np.float32, np.int32, np.int64):
            raise MXNetError(f"CSVIter: dtype must be float32, int32 or int64, got {dtype}")
        data_shape, label_shape = tuple(data_shape), tuple(label_shape)
        data = _read_csv(data_csv, int(np.prod(data_shape)), dtype, "data")
        if label_csv is None:
            label = np.zeros((len(data),) + label_shape, dtype=dtype)
        else:
            label = _read_csv(label_csv, int(np.prod(label_shape)), dtype, "label")
            if len(label) != len(data):
                raise MXNetError(f"CSVIter: {data_csv!r} has {len(data)} rows but {label_csv!r} has {len(label)}")
        super().__init__(data.reshape((-1,) + data_shape), label.reshape((-1,) + label_shape), batch_size,
                         "round" if round_batch else "pad")


class MNISTIter(_InMemoryIter):
    """Batches of MNIST's idx-ubyte files (gzipped or not): images scaled to [0, 1] as (batch, 1, 28, 28), or
    (batch, 784) with flat; float32 labels. shuffle permutes the examples once, with seed; num_parts and
    part_index take one contiguous part of the data. data_shape / input_shape, when given, must hold one image.
    """

    def __init__(self, image="./train-images-idx3-ubyte", label="./train-labels-idx1-ubyte", batch_size=128,
                 shuffle=True, flat=False, seed=0, num_parts=1, part_index=0, data_shape=None, input_shape=None,
                 **kwargs):
        _check_knobs("MNISTIter", kwargs)
        # the idx reader lives with the MNIST dataset; imported here because gluon sits above io
        from .gluon.data.vision.datasets import _read_idx  # lazy: the gluon package imports this module
        images = _read_idx(image, 3)
        labels = _read_idx(label, 1)
        if len(images) != len(labels):
            raise MXNetError(f"MNISTIter: {image!r} has {len(images)} images but {label!r} has {len(labels)} labels")
        if not 0 <= part_index < num_parts:
            raise MXNetError(f"MNISTIter: part_index {part_index} is not in [0, num_parts={num_parts})")
        if shuffle:
            order = np.random.RandomState(seed).permutation(len(images))
            images, labels = images[order], labels[order]
        shape = input_shape if input_shape is not None else data_shape
        if shape is not None and int(np.prod(shape)) != int(np.prod(images.shape[1:])):
            raise MXNetError(f"MNISTIter: a shape of {tuple(shape)} does not hold one {images.shape[1:]} image")
        step = len(images) // num_parts
        part = slice(part_index * step, (part_index + 1) * step)
        images, labels = images[part], labels[part]
        data = images.astype(np.float32) * np.float32(1.0 / 255.0)
        data = data.reshape(len(data), -1) if flat else data.reshape(len(data), 1, *images.shape[1:])
        super().__init__(data, labels.astype(np.float32).reshape(-1, 1), batch_size, "discard")
