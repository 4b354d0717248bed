"""mx.test_utils.get_mnist / download / list_gpus: local files first, clear errors offline."""
import gzip
import os
import struct

import numpy as np
import pytest

import mixnet as mx


def _write_mnist(folder, n, gz):
    rng = np.random.default_rng(0)
    images = {p: rng.integers(0, 256, (n, 28, 28), dtype=np.uint8) for p in ("train", "t10k")}
    labels = {p: rng.integers(0, 10, n, dtype=np.uint8) for p in ("train", "t10k")}
    os.makedirs(folder, exist_ok=True)
    opener = gzip.open if gz else open
    suffix = ".gz" if gz else ""
    for p in ("train", "t10k"):
        with opener(os.path.join(folder, f"{p}-images-idx3-ubyte{suffix}"), "wb") as f:
            f.write(struct.pack(">IIII", 0x0803, n, 28, 28) + images[p].tobytes())
        with opener(os.path.join(folder, f"{p}-labels-idx1-ubyte{suffix}"), "wb") as f:
            f.write(struct.pack(">II", 0x0801, n) + labels[p].tobytes())
    return images, labels


def _no_network(monkeypatch):
    def offline(*args, **kwargs):
        raise OSError("Name or service not known")
    monkeypatch.setattr(mx.gluon.utils, "download", offline)


@pytest.mark.parametrize("folder, gz", [(".", True), ("data", False)])
def test_get_mnist_reads_local_files(tmp_path, monkeypatch, folder, gz):
    monkeypatch.chdir(tmp_path)
    _no_network(monkeypatch)
    images, labels = _write_mnist(folder, 3, gz)
    mnist = mx.test_utils.get_mnist()
    assert sorted(mnist) == ["test_data", "test_label", "train_data", "train_label"]
    # MXNet 1.9.1's layout: float32 (N, 1, 28, 28) in [0, 1], int8 labels
    assert mnist["train_data"].dtype == np.float32 and mnist["train_data"].shape == (3, 1, 28, 28)
    assert mnist["test_label"].dtype == np.int8
    np.testing.assert_array_equal(mnist["train_data"][:, 0], images["train"].astype(np.float32) / 255)
    np.testing.assert_array_equal(mnist["test_label"], labels["t10k"].astype(np.int8))


def test_get_mnist_offline_error_names_url_and_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _no_network(monkeypatch)
    with pytest.raises(ConnectionError, match=r"data\.mxnet\.io/data/mnist/train-labels-idx1-ubyte\.gz.*offline.*"
                                              r"train-labels-idx1-ubyte\[\.gz\]"):
        mx.test_utils.get_mnist()


def test_download_uses_existing_file_then_fetches(tmp_path, monkeypatch):
    source = tmp_path / "src" / "weights.bin"
    source.parent.mkdir()
    source.write_bytes(b"new")
    url = source.as_uri()                            # a file:// URL: urllib fetches it without a network
    out = tmp_path / "out"
    out.mkdir()
    (out / "weights.bin").write_bytes(b"old")
    path = mx.test_utils.download(url, dirname=str(out))
    assert path == os.path.join(str(out), "weights.bin") and (out / "weights.bin").read_bytes() == b"old"
    assert mx.test_utils.download(url, dirname=str(out), overwrite=True) == path
    assert (out / "weights.bin").read_bytes() == b"new"
    monkeypatch.chdir(tmp_path)
    assert mx.test_utils.download(url, fname="sub/copy.bin") == "sub/copy.bin"
    assert (tmp_path / "sub" / "copy.bin").read_bytes() == b"new"


def test_download_failure_is_a_clear_error(tmp_path):
    url = (tmp_path / "nowhere.bin").as_uri()
    with pytest.raises(ConnectionError, match=r"nowhere\.bin.*offline.*put the file at .*got\.bin"):
        mx.test_utils.download(url, fname="got.bin", dirname=str(tmp_path), retries=0)
    assert not (tmp_path / "got.bin").exists()


def test_list_gpus_counts_usable_devices():
    assert list(mx.test_utils.list_gpus()) == list(range(mx.context.num_gpus()))
