"""mx.nd.save / load / load_frombuffer on NDArrays, against files written by MXNet 1.9.1 (tests/data/mxnet)."""
import json
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet import nd

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "mxnet")
EXPECTED = json.load(open(os.path.join(DATA, "expected.json")))["files"]


def _values(a):
    return a.asnumpy().astype(np.float64).ravel().tolist() if a.dtype is not np.bool_ else \
        a.asnumpy().ravel().astype(np.float64).tolist()


def _np_shape_file(name):
    """Files MXNet wrote in np-shape mode (npx.save), which MXNet and mixnet load in that mode."""
    return name.startswith("npx_")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_mxnet_files_load_to_expected_values(name):
    spec = EXPECTED[name]
    with mx.np_shape(_np_shape_file(name)):
        loaded = nd.load(os.path.join(DATA, name))
    arrays = list(loaded.values()) if isinstance(loaded, dict) else loaded
    if spec["names"]:
        assert list(loaded) == spec["names"]
    else:
        assert isinstance(loaded, list)
    for got, want in zip(arrays, spec["arrays"]):
        assert got.shape == tuple(want["shape"])
        want_dtype = "float32" if want["dtype"] == "bfloat16" else want["dtype"]   # widened exactly on load
        assert np.dtype(got.dtype).name == want_dtype
        np.testing.assert_allclose(_values(got), want["values"], rtol=1e-6)


# bfloat16 loads widened to float32 (mixnet has no bfloat16 arrays), so files holding it cannot re-encode.
@pytest.mark.parametrize("name", sorted(n for n, s in EXPECTED.items() if s.get("reencode_identical")
                                        and all(a["dtype"] != "bfloat16" for a in s["arrays"])))
def test_saving_loaded_files_is_byte_identical_to_mxnet(name, tmp_path):
    out = tmp_path / "again"
    with mx.np_shape(_np_shape_file(name)):
        loaded = nd.load(os.path.join(DATA, name))
        nd.save(str(out), loaded)
    assert out.read_bytes() == open(os.path.join(DATA, name), "rb").read()


def test_list_dict_single_round_trip(tmp_path):
    f = str(tmp_path / "x.params")
    x = nd.array([[1, 2, 3], [4, 5, 6]])
    y = nd.array([1, 2], dtype="int32")
    nd.save(f, [x, y])
    a, b = nd.load(f)
    assert a.asnumpy().tolist() == x.asnumpy().tolist() and b.dtype is np.int32
    nd.save(f, {"w": x, "b": y})
    d = nd.load(f)
    assert list(d) == ["w", "b"] and d["b"].asnumpy().tolist() == [1, 2]
    nd.save(f, x)
    (only,) = nd.load(f)
    assert only.shape == (2, 3)


def test_zero_size_and_0d(tmp_path):
    """A 0-d array needs np-shape (V3) records; with a zero-size one as well, they load only in np-shape mode."""
    f = str(tmp_path / "z")
    nd.save(f, [nd.array(np.zeros((0, 4))), nd.array(3.5)])
    with pytest.raises(mx.MXNetError, match="np shape semantics"):
        nd.load(f)
    with mx.np_shape(True):
        z, s = nd.load(f)
    assert z.shape == (0, 4) and s.shape == () and s.asscalar() == 3.5
    nd.save(f, [nd.array(3.5)])
    assert nd.load(f)[0].shape == ()


def test_save_load_follow_the_shape_mode(tmp_path):
    """As MXNet 1.9.1: np-shape mode writes V3 records and reads only them; legacy mode the reverse."""
    legacy, np_file = str(tmp_path / "legacy"), str(tmp_path / "np")
    nd.save(legacy, [nd.array(np.zeros((2, 0)))])
    with mx.np_shape(True):
        nd.save(np_file, [nd.zeros((2, 0)), nd.ones(())])
        with pytest.raises(mx.MXNetError, match="not saved in np shape"):
            nd.load(legacy)
        z, s = nd.load(np_file)
    assert z.shape == (2, 0) and s.shape == ()
    assert nd.load(legacy)[0].shape == (2, 0)
    with pytest.raises(mx.MXNetError, match="saved in np shape"):
        nd.load_frombuffer(open(np_file, "rb").read())


def test_load_frombuffer_matches_load():
    path = os.path.join(DATA, "ndlist.params")
    buf = open(path, "rb").read()
    a = nd.load_frombuffer(buf)
    b = nd.load(path)
    assert [x.asnumpy().tolist() for x in a] == [x.asnumpy().tolist() for x in b]


def test_load_onto_context():
    loaded = nd.load(os.path.join(DATA, "ndlist.params"), ctx=mx.cpu(1))
    assert all(x.context == mx.cpu(1) for x in loaded)


def test_bad_input_is_mxnet_error(tmp_path):
    with pytest.raises(mx.MXNetError, match="dict keys must be strings"):
        nd.save(str(tmp_path / "b"), {1: nd.ones((1,))})
    with pytest.raises(mx.MXNetError, match="every value must be an NDArray"):
        nd.save(str(tmp_path / "b"), [np.ones(2)])
    with pytest.raises(mx.MXNetError):
        nd.load(str(tmp_path / "missing"))
    with pytest.raises(mx.MXNetError):
        nd.load_frombuffer(b"\x12\x01\x00\x00\x00\x00\x00\x00garbage")
