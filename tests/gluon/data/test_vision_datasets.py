"""MNIST / FashionMNIST / CIFAR10 / CIFAR100 read from tiny files written here (sample types as MXNet 1.9.1:
HWC uint8 NDArray image, numpy int32 label)."""
import gzip
import struct

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.gluon.data import DataLoader
from mixnet.gluon.data.vision import CIFAR10, FashionMNIST, MNIST
from mixnet.gluon.data.vision.datasets import CIFAR100


def _write_idx(path, arr, gz):
    arr = np.asarray(arr, dtype=np.uint8)
    head = struct.pack(">BBBB", 0, 0, 8, arr.ndim) + struct.pack(">" + "I" * arr.ndim, *arr.shape)
    with (gzip.open if gz else open)(path, "wb") as f:
        f.write(head + arr.tobytes())


IMAGES = (np.arange(3 * 28 * 28).reshape(3, 28, 28) % 256).astype(np.uint8)
LABELS = [7, 2, 1]


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("cls", [MNIST, FashionMNIST])
def test_mnist_like(tmp_path, gz, cls):
    suffix = ".gz" if gz else ""
    _write_idx(tmp_path / f"t10k-images-idx3-ubyte{suffix}", IMAGES, gz)
    _write_idx(tmp_path / f"t10k-labels-idx1-ubyte{suffix}", LABELS, gz)
    ds = cls(root=str(tmp_path), train=False)
    assert len(ds) == 3
    img, label = ds[1]
    assert isinstance(img, mx.nd.NDArray) and img.shape == (28, 28, 1) and img.dtype == np.uint8
    assert isinstance(label, np.int32) and label == 2
    np.testing.assert_array_equal(img.asnumpy()[:, :, 0], IMAGES[1])
    scaled = cls(root=str(tmp_path), train=False, transform=lambda x, y: (x.astype("float32") / 255, y))
    assert scaled[0][0].dtype == np.float32
    data, labels = next(iter(DataLoader(ds, batch_size=2)))
    assert data.shape == (2, 28, 28, 1) and data.dtype == np.uint8 and labels.dtype == np.int32
    with pytest.raises(MXNetError, match="train-images-idx3-ubyte"):
        cls(root=str(tmp_path), train=True)


def test_mnist_corrupt_files(tmp_path):
    _write_idx(tmp_path / "t10k-images-idx3-ubyte", IMAGES, False)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte", LABELS[:2], False)
    with pytest.raises(MXNetError, match="3 images but"):
        MNIST(root=str(tmp_path), train=False)
    # a header announcing a huge array in a tiny file: an error, not an allocation
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(struct.pack(">BBBBI", 0, 0, 8, 1, 2 ** 31))
    with pytest.raises(MXNetError, match="truncated"):
        MNIST(root=str(tmp_path), train=False)
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(b"PK\x03\x04junk")
    with pytest.raises(MXNetError, match="idx"):
        MNIST(root=str(tmp_path), train=False)


def _cifar_records(n, label_bytes):
    recs = []
    for i in range(n):
        labels = bytes([i % 10, (3 * i) % 100][:label_bytes])
        recs.append(labels + (np.arange(3072) * (i + 1) % 256).astype(np.uint8).tobytes())
    return b"".join(recs)


@pytest.mark.parametrize("subdir", ["", "cifar-10-batches-bin"])
def test_cifar10_binary(tmp_path, subdir):
    base = tmp_path / subdir
    base.mkdir(exist_ok=True)
    (base / "test_batch.bin").write_bytes(_cifar_records(4, 1))
    ds = CIFAR10(root=str(tmp_path), train=False)
    assert len(ds) == 4
    img, label = ds[1]
    assert img.shape == (32, 32, 3) and img.dtype == np.uint8
    assert isinstance(label, np.int32) and label == 1
    # MXNet 1.9.1 on the same bytes: pixel (0, 1) = [2, 2, 2], pixel (1, 0) = [64, 64, 64]
    assert img.asnumpy()[0, 1].tolist() == [2, 2, 2] and img.asnumpy()[1, 0].tolist() == [64, 64, 64]
    for i in range(1, 6):
        (base / f"data_batch_{i}.bin").write_bytes(_cifar_records(2, 1))
    assert len(CIFAR10(root=str(tmp_path), train=True)) == 10


def test_cifar10_refuses_the_pickled_python_version(tmp_path):
    (tmp_path / "cifar-10-batches-py").mkdir()
    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(b"\x80\x04not read")
    with pytest.raises(MXNetError, match="does not unpickle"):
        CIFAR10(root=str(tmp_path), train=False)
    with pytest.raises(MXNetError, match="test_batch.bin"):
        CIFAR10(root=str(tmp_path / "nothing"), train=False)
    (tmp_path / "test_batch.bin").write_bytes(b"\0" * 3000)
    with pytest.raises(MXNetError, match="not a multiple"):
        CIFAR10(root=str(tmp_path), train=False)


def test_cifar100_labels(tmp_path):
    (tmp_path / "test.bin").write_bytes(_cifar_records(3, 2))
    assert CIFAR100(root=str(tmp_path), train=False)[2][1] == 2
    assert CIFAR100(root=str(tmp_path), train=False, fine_label=True)[2][1] == 6
