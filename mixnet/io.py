"""`mx.io`: the data iterators of MXNet's Module API: `DataIter`, `NDArrayIter`, `DataBatch`, `DataDesc`.

Gluon code uses `mx.gluon.data.DataLoader` instead; these exist because a lot of MXNet 1.x code (and d2l's
early chapters) iterates with `mx.io.NDArrayIter`.

Differences from MXNet 1.9.1, on purpose:
* ``last_batch_handle='pad'`` with a batch larger than the whole data set wraps around as many times as needed
  (MXNet pads with at most one extra copy and returns a short batch).
* A length mismatch between arrays raises `MXNetError` naming the arrays (MXNet: AssertionError).
"""
from collections import OrderedDict

import numpy as np

from .base import MXNetError
from .context import cpu
from .io_base import DataBatch, DataDesc, DataIter
from .ndarray import sparse
from .ndarray.ndarray import NDArray, array
from .io_image_record import ImageRecordIter  # noqa: F401  (MXNet's file-reading iterators)
from .io_libsvm import LibSVMIter  # noqa: F401
from .io_native import CSVIter, MNISTIter  # noqa: F401

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter"]


def _init_data(data, allow_empty, default_name):
    """Normalises data/label arguments into a sorted list of (name, numpy array, dtype, ctx)."""
    if data is None:
        data = []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, (list, tuple)):
        if not data and not allow_empty:
            raise MXNetError(f"NDArrayIter: {default_name} must not be empty")
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict([(f"_{i}_{default_name}", d) for i, d in enumerate(data)])
    if not isinstance(data, dict):
        raise TypeError("NDArrayIter: input must be an NDArray, a numpy.ndarray, a list of them or a dict with "
                        f"them as values; got {type(data).__name__}")
    out = []
    for name, value in sorted(data.items()):
        value = _from_scipy(value)
        if isinstance(value, NDArray):
            out.append((name, value.asnumpy(), value.dtype, value.context, value.stype))
        else:
            try:
                arr = np.asarray(value, dtype=np.float32)  # mx.nd.array(numpy) is float32 in MXNet 1.x
            except (TypeError, ValueError) as err:
                raise TypeError(f"NDArrayIter: {name} cannot be converted to an array: {err}") from None
            if arr.ndim == 0:
                raise MXNetError(f"NDArrayIter: {name} must have a batch axis, got a scalar")
            out.append((name, arr, np.float32, cpu(), "default"))
    return out


def _from_scipy(value):
    """A scipy sparse matrix becomes a CSRNDArray (as MXNet's NDArrayIter converts it)."""
    if type(value).__module__.startswith("scipy.sparse"):
        return sparse.csr_matrix(value)
    return value


class NDArrayIter(DataIter):
    """Iterates over NDArrays / numpy arrays in mini-batches.

    data, label: an array, a list of arrays (named ``_0_data``, ``_1_data``, ...) or a dict name -> array.
    last_batch_handle: 'pad' (fill the last batch from the start; `getpad` says how many rows are filler),
    'discard' (drop the incomplete batch), 'roll_over' (carry the leftover rows into the next epoch's first
    batch). shuffle: permute the rows (numpy's global RNG, as MXNet) at creation and at every `reset`.
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle="pad", data_name="data",
                 label_name="softmax_label", layout="NCHW"):
        super().__init__(batch_size)
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError(f"last_batch_handle must be 'pad', 'discard' or 'roll_over', got "
                             f"{last_batch_handle!r}")
        if int(batch_size) <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.batch_size = int(batch_size)
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        if last_batch_handle != "discard" and any(src[4] == "csr" for src in self.data + self.label):
            raise NotImplementedError("`NDArrayIter` only supports ``CSRNDArray`` with `last_batch_handle` set to "
                                      "`discard`.")
        # The first data array sets the length, as in MXNet: longer arrays give their first n rows (MXNet code
        # pairs data[10:] with the whole label array and relies on it); shorter ones are an error.
        n = self.data[0][1].shape[0]
        for sources in (self.data, self.label):
            for i, (name, arr, dtype, ctx, stype) in enumerate(sources):
                if arr.shape[0] < n:
                    raise MXNetError(f"NDArrayIter: {name} has {arr.shape[0]} rows along axis 0, fewer than "
                                     f"the {n} of {self.data[0][0]}")
                sources[i] = (name, arr[:n], dtype, ctx, stype)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.idx = np.arange(n)
        if last_batch_handle == "discard":
            self.idx = self.idx[:n - n % self.batch_size]
        self.num_data = n  # as MXNet: the full length, also for 'discard'
        self.num_source = len(self.data)
        self.cursor = -self.batch_size
        self._cache = None
        self.layout = layout
        self.reset()  # shuffles once when shuffle=True (as MXNet)

    def _descs(self, sources):
        return [DataDesc(name, (self.batch_size,) + arr.shape[1:], dtype, layout=self.layout)
                for name, arr, dtype, _, _ in sources]

    @property
    def provide_data(self):
        return self._descs(self.data)

    @property
    def provide_label(self):
        return self._descs(self.label)

    def _shuffle_data(self):
        np.random.shuffle(self.idx)

    def hard_reset(self):
        """Starts over, dropping any rolled-over rows."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache = None

    def reset(self):
        if self.shuffle:
            self._shuffle_data()
        if self.last_batch_handle == "roll_over" and self._cache is not None:
            # The rows left over from the last epoch start the next one.
            self.cursor = -len(self._cache) - self.batch_size
        else:
            self.cursor = -self.batch_size
            self._cache = None

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < len(self.idx)

    def next(self):
        if not self.iter_next():
            raise StopIteration
        rows = self._rows()
        if self.last_batch_handle == "roll_over" and len(rows) < self.batch_size:
            self._cache = rows.copy()  # idx is shuffled in place at reset
            raise StopIteration
        return DataBatch(data=self._take(self.data, rows), label=self._take(self.label, rows), pad=self.getpad(),
                         index=None)

    def _rows(self):
        """The row indices (into the original arrays) of the batch at the cursor."""
        if self.cursor < 0:  # roll_over: the cached rows, then the start of this epoch
            head = self._cache if self._cache is not None else self.idx[:0]
            self._cache = None
            return np.concatenate([head, self.idx[:self.cursor + self.batch_size]])
        rows = self.idx[self.cursor:self.cursor + self.batch_size]
        if self.last_batch_handle == "pad" and len(rows) < self.batch_size:
            fill = np.resize(self.idx, self.batch_size - len(rows))  # wraps around as often as needed
            rows = np.concatenate([rows, fill])
        return rows

    @staticmethod
    def _take(sources, rows):
        return [array(arr[rows], ctx=ctx, dtype=dtype).tostype(stype) for _, arr, dtype, ctx, stype in sources]

    def getdata(self):
        return self._take(self.data, self._peek_rows())

    def getlabel(self):
        return self._take(self.label, self._peek_rows())

    def _peek_rows(self):
        cache = self._cache
        rows = self._rows()
        self._cache = cache
        return rows

    def getpad(self):
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > len(self.idx):
            return self.cursor + self.batch_size - len(self.idx)
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

