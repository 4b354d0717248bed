"""mx.test_utils.get_mnist_ubyte / get_cifar10: local files in ./data are used as they are (no download)."""
import os

import mixnet as mx


def test_local_files_are_used(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.makedirs("data/cifar")
    names = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
             "t10k-labels-idx1-ubyte", "cifar/train.rec", "cifar/test.rec", "cifar/train.lst", "cifar/test.lst"]
    for name in names:
        (tmp_path / "data" / name).write_bytes(b"x")

    def no_download(*args, **kwargs):
        raise AssertionError("must not download")
    monkeypatch.setattr(mx.gluon.utils, "download", no_download)
    mx.test_utils.get_mnist_ubyte()
    mx.test_utils.get_cifar10()
    assert sorted(os.listdir("data")) == sorted(["cifar"] + names[:4])


def test_offline_error_names_the_missing_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def offline(*args, **kwargs):
        raise OSError("Name or service not known")
    monkeypatch.setattr(mx.gluon.utils, "download", offline)
    try:
        mx.test_utils.get_cifar10()
    except ConnectionError as err:
        assert "offline" in str(err) and "data/cifar/train.rec" in str(err)
    else:
        raise AssertionError("expected a ConnectionError")
