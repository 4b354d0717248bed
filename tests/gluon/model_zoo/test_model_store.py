"""gluon.model_zoo.model_store: pretrained weights are read from disk under MXNet's names, never downloaded."""
import hashlib
import os
import shutil

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.gluon.model_zoo import model_store, vision
from mixnet.gluon.utils import check_sha1

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "gluon")


def test_missing_file_says_where_to_put_it(tmp_path):
    with pytest.raises(model_store.PretrainedModelNotFound) as err:
        vision.resnet18_v1(pretrained=True, root=str(tmp_path))
    assert isinstance(err.value, MXNetError)
    message = str(err.value)
    assert str(tmp_path / "resnet18_v1-a0666292.params") in message
    assert "cannot download" in message and "resnet18_v1-a0666292.zip" in message


def test_default_root_is_mxnet_home_models(tmp_path, monkeypatch):
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    with pytest.raises(model_store.PretrainedModelNotFound, match="mobilenetv2_0.5-aabd26cd.params"):
        vision.get_model("mobilenetv2_0.5", pretrained=True)
    assert str(tmp_path / "models") in model_store.default_root()


def test_file_with_other_content_is_refused(tmp_path):
    (tmp_path / "alexnet-44335d1f.params").write_bytes(b"not the weights")
    with pytest.raises(model_store.PretrainedModelNotFound, match="SHA-1"):
        model_store.get_model_file("alexnet", root=str(tmp_path))


def test_unknown_pretrained_name():
    with pytest.raises(ValueError, match="not available"):
        model_store.get_model_file("resnet19_v1")


def test_pretrained_file_on_disk_is_loaded(tmp_path, monkeypatch):
    # A file from MXNet (a tiny ResNet standing in for resnet18_v1, its SHA-1 put in the table) is found under
    # MXNet's file name and loaded.
    src = os.path.join(DATA, "tiny_resnet_v1.params")
    with open(src, "rb") as f:
        sha1 = hashlib.sha1(f.read()).hexdigest()
    assert check_sha1(src, sha1)
    monkeypatch.setitem(model_store._model_sha1, "resnet18_v1", sha1)
    shutil.copy(src, tmp_path / f"resnet18_v1-{sha1[:8]}.params")
    net = vision.ResNetV1(vision.BasicBlockV1, [1, 1, 1, 1], [4, 8, 12, 16, 20], classes=10, thumbnail=True)
    model_store.load_pretrained(net, "resnet18_v1", ctx=mx.current_context(), root=str(tmp_path))  # the input's
    assert net(mx.nd.ones((1, 3, 8, 8))).shape == (1, 10)
    assert np.isfinite(net.output.weight.data().asnumpy()).all()
