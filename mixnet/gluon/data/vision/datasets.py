"""Image datasets read from local files: MNIST, FashionMNIST, CIFAR10, CIFAR100.

mixnet never downloads. Put the files where ``root`` points (MXNet's default roots under
``$MXNET_HOME/datasets``, ``~/.mxnet/datasets`` when unset, are kept) or pass ``root``; a missing file raises
`MXNetError` that lists the expected files and where to get them.

Samples are ``(image, label)``: the image an HWC uint8 NDArray, the label a numpy int32 scalar, as in MXNet
1.x. ``transform(image, label)`` is applied on access when given.
"""
import gzip
import os
import struct
import zlib

import numpy as np

from ....base import MXNetError
from ..dataset import Dataset
from ....ndarray import array

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100"]


def _data_dir():
    return os.environ.get("MXNET_HOME", os.path.join(os.path.expanduser("~"), ".mxnet"))


def _read_limited(f, nbytes, path):
    """Reads exactly nbytes in chunks (never allocating more than what the file really holds)."""
    chunks, got = [], 0
    while got < nbytes:
        chunk = f.read(min(1 << 24, nbytes - got))
        if not chunk:
            raise MXNetError(f"{path}: truncated: expected {nbytes} bytes of data, found {got}")
        chunks.append(chunk)
        got += len(chunk)
    if f.read(1):
        raise MXNetError(f"{path}: has bytes after the {nbytes} bytes its header announces")
    return b"".join(chunks)


def _read_idx(path, expected_ndim):
    """An idx-ubyte file (the MNIST format: big-endian header, uint8 data), gzip-compressed or not."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            head = f.read(4)
            if len(head) != 4 or head[0] != 0 or head[1] != 0:
                raise MXNetError(f"{path}: not an idx-ubyte file (bad magic {head.hex()})")
            if head[2] != 0x08:
                raise MXNetError(f"{path}: idx data type 0x{head[2]:02x} is not unsigned byte (0x08)")
            ndim = head[3]
            if ndim != expected_ndim:
                raise MXNetError(f"{path}: expected {expected_ndim} dimensions, the header says {ndim}")
            dims_raw = f.read(4 * ndim)
            if len(dims_raw) != 4 * ndim:
                raise MXNetError(f"{path}: truncated idx header")
            dims = struct.unpack(">" + "I" * ndim, dims_raw)
            nbytes = int(np.prod(dims, dtype=np.int64))
            data = _read_limited(f, nbytes, path)
    except (OSError, EOFError, zlib.error) as err:
        raise MXNetError(f"{path}: cannot read: {err}") from None
    return np.frombuffer(data, dtype=np.uint8).reshape(dims)


def _find(root, names):
    for name in names:
        path = os.path.join(root, name)
        if os.path.isfile(path):
            return path
    return None


class _ImageDataset(Dataset):
    def __init__(self, root, transform):
        self._root = os.path.expanduser(root)
        self._transform = transform
        self._data = None
        self._label = None
        self._get_data()

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _set(self, data, label):
        self._data = array(data, dtype=data.dtype)
        self._label = label.astype(np.int32)


class MNIST(_ImageDataset):
    """MNIST handwritten digits: 28x28x1 uint8 images, int32 labels.

    root must hold ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte`` (train=True) or
    ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte`` (train=False), each optionally ``.gz``
    (the files from http://yann.lecun.com/exdb/mnist/ or a mirror)."""

    _name = "MNIST"
    _source = "the MNIST files (e.g. from https://ossci-datasets.s3.amazonaws.com/mnist/)"

    def __init__(self, root=os.path.join(_data_dir(), "datasets", "mnist"), train=True, transform=None):
        self._train = train
        super().__init__(root, transform)

    def _get_data(self):
        prefix = "train" if self._train else "t10k"
        files = {kind: f"{prefix}-{kind}-idx{nd}-ubyte" for kind, nd in (("images", 3), ("labels", 1))}
        paths = {kind: _find(self._root, [name, name + ".gz"]) for kind, name in files.items()}
        missing = [name for kind, name in files.items() if paths[kind] is None]
        if missing:
            raise MXNetError(f"{self._name}: missing {', '.join(n + '[.gz]' for n in missing)} in {self._root!r}. "
                             f"mixnet does not download data: put {self._source} there (gzip-compressed or not) "
                             f"or pass root=")
        label = _read_idx(paths["labels"], 1)
        data = _read_idx(paths["images"], 3)
        if data.shape[0] != label.shape[0]:
            raise MXNetError(f"{self._name}: {paths['images']} has {data.shape[0]} images but "
                             f"{paths['labels']} has {label.shape[0]} labels")
        self._set(data.reshape(data.shape + (1,)), label)


class FashionMNIST(MNIST):
    """Fashion-MNIST: same file names and format as `MNIST` (from
    https://github.com/zalandoresearch/fashion-mnist), default root ``datasets/fashion-mnist``."""

    _name = "FashionMNIST"
    _source = "the Fashion-MNIST files (https://github.com/zalandoresearch/fashion-mnist)"

    def __init__(self, root=os.path.join(_data_dir(), "datasets", "fashion-mnist"), train=True, transform=None):
        super().__init__(root, train, transform)


class CIFAR10(_ImageDataset):
    """CIFAR-10: 32x32x3 uint8 images, int32 labels, read from the **binary version** of the data set.

    root must hold ``data_batch_1.bin`` ... ``data_batch_5.bin`` (train=True) or ``test_batch.bin``
    (train=False), directly or in ``root/cifar-10-batches-bin/`` (how ``cifar-10-binary.tar.gz`` from
    https://www.cs.toronto.edu/~kriz/cifar.html unpacks). Each record is 1 label byte and 3072 pixel bytes
    (the R, G and B planes of 32x32).

    The "python version" (``cifar-10-batches-py``) is a set of pickles; mixnet does not unpickle data files
    (unpickling can run arbitrary code), so it is refused with an error pointing to the binary version.
    """

    _archive_dir = "cifar-10-batches-bin"
    _python_dir = "cifar-10-batches-py"
    _label_bytes = 1
    _archive = "cifar-10-binary.tar.gz"

    def __init__(self, root=os.path.join(_data_dir(), "datasets", "cifar10"), train=True, transform=None):
        self._train = train
        super().__init__(root, transform)

    def _files(self):
        if self._train:
            return [f"data_batch_{i}.bin" for i in range(1, 6)]
        return ["test_batch.bin"]

    def _python_files(self):
        return [name[:-4] for name in self._files()]

    def _label_of(self, labels):
        return labels[:, 0]

    def _get_data(self):
        names = self._files()
        paths = None
        for base in (self._root, os.path.join(self._root, self._archive_dir)):
            found = [os.path.join(base, n) for n in names if os.path.isfile(os.path.join(base, n))]
            if len(found) == len(names):
                paths = found
                break
        if paths is None:
            py_dirs = [self._root, os.path.join(self._root, self._python_dir)]
            has_python = any(os.path.isfile(os.path.join(d, n)) for d in py_dirs for n in self._python_files())
            hint = (f" Found the pickled python version ({self._python_dir}); mixnet does not unpickle data files. "
                    f"Download the binary version ({self._archive}) instead." if has_python else "")
            raise MXNetError(f"{type(self).__name__}: missing {', '.join(names)} in {self._root!r} (or in "
                             f"{os.path.join(self._root, self._archive_dir)!r}). mixnet does not download data: "
                             f"unpack the binary version {self._archive} from "
                             f"https://www.cs.toronto.edu/~kriz/cifar.html there or pass root=.{hint}")
        record = self._label_bytes + 3072
        datas, labels = [], []
        for path in paths:
            try:
                with open(path, "rb") as f:
                    raw = f.read()
            except OSError as err:
                raise MXNetError(f"{path}: cannot read: {err}") from None
            if len(raw) % record:
                raise MXNetError(f"{path}: size {len(raw)} is not a multiple of the {record}-byte record of the "
                                 f"{type(self).__name__} binary format")
            arr = np.frombuffer(raw, dtype=np.uint8).reshape(-1, record)
            datas.append(arr[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            labels.append(self._label_of(arr[:, :self._label_bytes]))
        data = np.ascontiguousarray(np.concatenate(datas))
        self._set(data, np.concatenate(labels))


class CIFAR100(CIFAR10):
    """CIFAR-100 from its binary version: ``train.bin`` / ``test.bin`` in root or ``root/cifar-100-binary/``.
    Each record has a coarse and a fine label byte; fine_label picks which one is the label."""

    _archive_dir = "cifar-100-binary"
    _python_dir = "cifar-100-python"
    _label_bytes = 2
    _archive = "cifar-100-binary.tar.gz"

    def __init__(self, root=os.path.join(_data_dir(), "datasets", "cifar100"), fine_label=False, train=True,
                 transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _files(self):
        return ["train.bin"] if self._train else ["test.bin"]

    def _label_of(self, labels):
        return labels[:, 1 if self._fine_label else 0]
