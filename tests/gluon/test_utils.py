"""gluon.utils against MXNet 1.9.1 (expected values/messages below were checked with mxnet.gluon.utils)."""
import hashlib
import os
import warnings

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.gluon import utils


def test_split_data_shapes():
    x = mx.nd.array(np.arange(14).reshape(7, 2))
    # MXNet 1.9.1: the first size % n slices get the extra row; empty slices when the batch is too small
    assert [s.shape for s in utils.split_data(x, 3, even_split=False)] == [(3, 2), (2, 2), (2, 2)]
    assert [s.shape for s in utils.split_data(x, 8, even_split=False)] == [(1, 2)] * 7 + [(0, 2)]
    parts = utils.split_data(mx.nd.array(np.arange(20).reshape(2, 10)), 4, batch_axis=1, even_split=False)
    assert [s.shape for s in parts] == [(2, 3), (2, 3), (2, 2), (2, 2)]
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts], axis=1), np.arange(20).reshape(2, 10))
    np.testing.assert_array_equal(utils.split_data(x, 7)[3].asnumpy(), [[6, 7]])


def test_split_data_errors():
    x = mx.nd.zeros((7, 2))
    msg = ("data with shape (7, 2) cannot be evenly split into 3 slices along axis 0. Use a batch size that's "
           "multiple of 3 or set even_split=False to allow uneven partitioning of data.")  # MXNet 1.9.1's text
    with pytest.raises(MXNetError) as info:
        utils.split_data(x, 3)
    assert str(info.value) == msg
    assert isinstance(info.value, ValueError)  # the type MXNet raises
    with pytest.raises(MXNetError, match="num_slice"):
        utils.split_data(x, 0, even_split=False)
    with pytest.raises(MXNetError, match="batch_axis 2"):
        utils.split_data(x, 1, batch_axis=2)


def test_split_and_load():
    ctxs = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    parts = utils.split_and_load(np.arange(6, dtype=np.float64).reshape(3, 2), ctxs)
    # MXNet 1.9.1: numpy input becomes float32 NDArrays, one row per context
    assert [(p.shape, p.dtype, p.context) for p in parts] == [((1, 2), np.float32, c) for c in ctxs]
    np.testing.assert_array_equal(parts[2].asnumpy(), [[4, 5]])
    x = mx.nd.ones((4, 3), ctx=mx.cpu(0))
    assert utils.split_and_load(x, [mx.cpu(0)])[0] is x  # one context, the batch's own: the batch itself
    parts = utils.split_and_load(x, [mx.cpu(0), mx.cpu(1)], batch_axis=1, even_split=False)
    assert [(p.shape, p.context) for p in parts] == [((4, 2), mx.cpu(0)), ((4, 1), mx.cpu(1))]
    with pytest.raises(MXNetError, match=r"shape \(3,\) cannot be evenly split into 2 slices"):
        utils.split_and_load(mx.nd.zeros((3,)), [mx.cpu(0), mx.cpu(1)])
    with pytest.raises(MXNetError, match="NDArray or a numpy array"):
        utils.split_and_load([1, 2], [mx.cpu(0), mx.cpu(1)])


def test_clip_global_norm():
    arrays = [mx.nd.array([3.0, 4.0]), mx.nd.array([[12.0]])]
    total = utils.clip_global_norm(arrays, 1.0)
    assert isinstance(total, float) and total == pytest.approx(13.0)
    # MXNet 1.9.1: [0.23076925, 0.30769232], [[0.923077]]
    np.testing.assert_allclose(arrays[0].asnumpy(), [0.23076925, 0.30769232], rtol=1e-6)
    np.testing.assert_allclose(arrays[1].asnumpy(), [[0.923077]], rtol=1e-6)
    small = [mx.nd.array([0.3, 0.4])]
    assert utils.clip_global_norm(small, 1.0) == pytest.approx(0.5)
    np.testing.assert_allclose(small[0].asnumpy(), [0.3, 0.4], rtol=1e-7)  # under max_norm: unchanged
    lazy = [mx.nd.array([3.0, 4.0])]
    total = utils.clip_global_norm(lazy, 1.0, check_isfinite=False)  # MXNet: an NDArray, no sync
    assert isinstance(total, mx.nd.NDArray) and total.shape == (1,)
    assert total.asscalar() == pytest.approx(5.0)
    np.testing.assert_allclose(lazy[0].asnumpy(), [0.6, 0.8], rtol=1e-6)
    half = [mx.nd.array([3.0, 4.0], dtype="float16")]  # MXNet 1.9.1 fails here on CPU (dot has no float16)
    assert utils.clip_global_norm(half, 1.0) == pytest.approx(5.0)
    assert half[0].dtype == np.float16
    np.testing.assert_allclose(half[0].asnumpy(), [0.6, 0.8], rtol=1e-3)


def test_clip_global_norm_non_finite_warns():
    arrays = [mx.nd.array([np.inf, 1.0]), mx.nd.array([1.0, 2.0])]
    with pytest.warns(UserWarning, match="nan or inf is detected"):
        total = utils.clip_global_norm(arrays, 1.0)
    assert total == np.inf
    # MXNet 1.9.1: [nan, 0.0] and [0.0, 0.0]
    np.testing.assert_array_equal(arrays[0].asnumpy(), [np.nan, 0.0])
    np.testing.assert_array_equal(arrays[1].asnumpy(), [0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        utils.clip_global_norm([mx.nd.array([np.nan])], 1.0, check_isfinite=False)  # no check, no warning
    with pytest.raises(MXNetError, match="empty"):
        utils.clip_global_norm([], 1.0)


def test_check_sha1(tmp_path):
    f = tmp_path / "f.txt"
    f.write_bytes(b"hello world\n")
    digest = "22596363b3de40b06f981fb85d82312e8c0ed511"
    assert utils.check_sha1(str(f), digest)
    assert not utils.check_sha1(str(f), digest[:8])  # MXNet 1.9.1: the full digest only
    assert not utils.check_sha1(str(f), digest.upper())


def test_download_file_url(tmp_path, monkeypatch, caplog):
    src = tmp_path / "src" / "data.bin"
    src.parent.mkdir()
    payload = b"\x00mixnet\x01" * 100
    src.write_bytes(payload)
    digest = hashlib.sha1(payload).hexdigest()
    url = src.as_uri()
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    # a folder path: the URL's file name inside it
    fname = utils.download(url, path=str(out_dir), sha1_hash=digest)
    assert fname == str(out_dir / "data.bin") and (out_dir / "data.bin").read_bytes() == payload
    assert os.listdir(out_dir) == ["data.bin"]  # no temporary file left behind
    # already there with the right hash: not downloaded again
    src.write_bytes(b"changed")
    caplog.set_level("INFO", logger="mixnet.gluon.utils")
    assert utils.download(url, path=str(out_dir), sha1_hash=digest) == fname
    assert "Downloading" not in caplog.text
    assert (out_dir / "data.bin").read_bytes() == payload
    # overwrite=True fetches again; a file path (in a folder that does not exist yet) is used as is
    assert utils.download(url, path=str(out_dir), overwrite=True) == fname
    assert [r.name for r in caplog.records] == ["mixnet.gluon.utils"] and "Downloading" in caplog.text
    assert (out_dir / "data.bin").read_bytes() == b"changed"
    target = tmp_path / "new" / "dir" / "x.bin"
    assert utils.download(url, path=str(target)) == str(target) and target.read_bytes() == b"changed"
    # no path: the current folder
    monkeypatch.chdir(tmp_path)
    assert utils.download(url) == "data.bin" and (tmp_path / "data.bin").exists()


def test_download_failures(tmp_path, caplog):
    src = tmp_path / "a.txt"
    src.write_bytes(b"abc")
    with pytest.raises(MXNetError, match="hash does not match"):
        utils.download(src.as_uri(), path=str(tmp_path / "b.txt"), sha1_hash="0" * 40, retries=1)
    assert not (tmp_path / "b.txt").exists()
    assert os.listdir(tmp_path) == ["a.txt"]
    caplog.clear()
    caplog.set_level("INFO", logger="mixnet.gluon.utils")
    with pytest.raises(OSError):
        utils.download((tmp_path / "missing.txt").as_uri(), path=str(tmp_path / "c.txt"), retries=2)
    assert [r.levelname for r in caplog.records] == ["INFO", "WARNING", "INFO", "WARNING", "INFO"]  # 3 attempts
    assert "retrying, 1 attempt left" in caplog.records[3].getMessage()
    with pytest.raises(MXNetError, match="retries"):
        utils.download(src.as_uri(), path=str(tmp_path / "d.txt"), retries=-1)
    with pytest.raises(MXNetError, match="file-name"):
        utils.download("http://example.com/dir/")
    with pytest.warns(UserWarning, match="verify_ssl"):
        utils.download(src.as_uri(), path=str(tmp_path / "e.txt"), verify_ssl=False)
