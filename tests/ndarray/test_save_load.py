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


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_mxnet_files_load_to_expected_values(name):
    spec = EXPECTED[name]
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
    loaded = nd.load(os.path.join(DATA, name))
    out = tmp_path / "again"
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
    f = str(tmp_path / "z")
    nd.save(f, [nd.zeros((0, 4)), nd.array(3.5)])
    z, s = nd.load(f)
    assert z.shape == (0, 4) and s.shape == () and s.asscalar() == 3.5


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
