"""Datasets: anything with ``__getitem__`` and ``__len__``, plus the lazy transforms Gluon chains on them."""
import os

from ...base import MXNetError
from ...ndarray import NDArray
from ... import recordio
from .sampler import FilterSampler

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """Abstract dataset: subclasses implement ``__getitem__(idx)`` and ``__len__()``."""

    def __getitem__(self, idx):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__()")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __len__()")

    def filter(self, fn):
        """A dataset of the samples for which fn(sample) is true (evaluated once, now)."""
        return _SampledDataset(self, list(FilterSampler(fn, self)))

    def shard(self, num_shards, index):
        """Shard `index` of `num_shards` contiguous shards; the first ``len % num_shards`` shards get one extra
        sample (as MXNet)."""
        if not 0 <= index < num_shards:
            raise ValueError(f"Shard index {index} out of bound: expected 0 <= index < num_shards ({num_shards})")
        length = len(self)
        size, extra = divmod(length, num_shards)
        start = index * size + min(index, extra)
        end = start + size + (1 if index < extra else 0)
        return _SampledDataset(self, list(range(start, end)))

    def take(self, count):
        """The first `count` samples (all when count is None or larger than the dataset)."""
        if count is None or count > len(self):
            count = len(self)
        return _SampledDataset(self, list(range(count)))

    def sample(self, sampler):
        """The samples at the indices `sampler` yields (a `Sampler` or any iterable of indices)."""
        return _SampledDataset(self, list(sampler))

    def transform(self, fn, lazy=True):
        """Applies fn to every sample; a tuple sample is passed as separate arguments.

        lazy=True applies fn on every access; lazy=False applies it to every sample now and returns a
        `SimpleDataset`."""
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn, lazy=True):
        """Applies fn to the first element of every sample (the data, leaving the label)."""
        return self.transform(_TransformFirstClosure(fn), lazy)


class _TransformFirstClosure:
    """A picklable ``lambda x, *args: (fn(x),) + args`` (so worker processes can receive it)."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _SampledDataset(Dataset):
    """A view of a dataset at a list of indices."""

    def __init__(self, dataset, indices):
        self._dataset = dataset
        self._indices = indices

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]


class SimpleDataset(Dataset):
    """Wraps anything indexable with a length (a list, a numpy array, ...)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class ArrayDataset(Dataset):
    """Zips arrays (numpy arrays, NDArrays, lists, datasets) of the same length: sample i is
    ``(a[i], b[i], ...)``, or just ``a[i]`` for a single array.

    As MXNet: a 1-D NDArray is converted to numpy first, so its samples are numpy scalars rather than
    1-element NDArrays.
    """

    def __init__(self, *args):
        if not args:
            raise MXNetError("ArrayDataset needs at least one array")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            try:
                length = len(data)
            except TypeError:
                raise MXNetError(f"ArrayDataset: argument {i} ({type(data).__name__}) has no length") from None
            if length != self._length:
                raise MXNetError(f"ArrayDataset: all arrays must have the same length; array 0 has length "
                                 f"{self._length} while array {i} has {length}")
            if isinstance(data, NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self):
        return self._length


class RecordFileDataset(Dataset):
    """The records of a RecordIO file as raw bytes; the index is ``filename`` with ``.idx`` for ``.rec``."""

    def __init__(self, filename):
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)

