"""Hostile `.params` / `nd.save` files: `nd.load` and `nd.load_frombuffer` on mutations (bit flips, truncations,
inserted huge length/shape/count fields, spliced chunks, random bytes) of files written by mixnet and by real
MXNet 1.9.1 give a result or an MXNetError - never another exception - within bounded memory and time; sparse
records never densify far beyond the file's size."""
import glob
import os
import struct
import tempfile

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mixnet as mx
from mixnet import serialization
from mixnet.base import MXNetError
from mixnet.ndarray import NDArray

from hostile_inputs import MUTATIONS, bounded_outcome, mutate, mutated, pack_field


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
MXNET_FILES = sorted(glob.glob(os.path.join(DATA, "mxnet", "*.nd")) + glob.glob(os.path.join(DATA, "mxnet", "*.params"))
                     + glob.glob(os.path.join(DATA, "gluon", "*.params"))
                     + glob.glob(os.path.join(DATA, "blocksave", "*.params")))


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _mixnet_files():
    """Files written by mx.nd.save: every dtype, dicts (unicode names) and lists, 0-d (V3), size-0, 5-d."""
    rng = np.random.default_rng(0)
    contents = {
        "dtypes": [mx.nd.array(rng.normal(size=(2, 3)).astype(dt), dtype=dt)
                   for dt in ("float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool")],
        "dict": {"conv0_weight": mx.nd.ones((4, 1, 3, 3)), "dense0_bias": mx.nd.zeros(5),
                 "π-ünïcode": mx.nd.ones(1)},
        "scalar_v3": {"step": mx.nd.array(3.0).reshape(()), "w": mx.nd.ones((2,))},
        "size0_5d": [mx.nd.array(np.zeros((0, 3))), mx.nd.ones((1, 2, 1, 2, 1))],
    }
    files = {}
    with tempfile.TemporaryDirectory() as d:
        for name, value in contents.items():
            mx.nd.save(os.path.join(d, name), value)
            files["mixnet/" + name] = _read(os.path.join(d, name))
    return files


SEEDS = {**_mixnet_files(), **{os.path.relpath(p, DATA): _read(p) for p in MXNET_FILES}}


def _check_result(result):
    if isinstance(result, MXNetError):
        return
    values = list(result.values()) if isinstance(result, dict) else result
    assert isinstance(values, list)
    assert all(v is None or isinstance(v, NDArray) for v in values)
    if isinstance(result, dict):
        assert all(isinstance(k, str) for k in result)


def test_the_seeds_load():
    assert len(MXNET_FILES) >= 12
    for name, buf in SEEDS.items():
        with mx.np_shape("npx_" in name):       # MXNet's npx.save output loads in np-shape mode
            _check_result(mx.nd.load_frombuffer(buf))


@settings(max_examples=250, deadline=None, derandomize=True)
@given(MUTATIONS)
def test_load_frombuffer_of_mutated_files(mutations):
    """Each generated list of mutations is applied to every seed (about 25 inputs per example)."""
    for name, seed in SEEDS.items():
        buf = mutate(seed, mutations)
        try:
            _check_result(bounded_outcome(mx.nd.load_frombuffer, buf))
        except BaseException:
            print(f"seed {name}, input {buf!r}")
            raise


@settings(max_examples=300, deadline=None, derandomize=True)
@given(mutated(SEEDS))
def test_load_of_mutated_files(buf):
    with tempfile.NamedTemporaryFile(suffix=".params") as f:
        f.write(buf)
        f.flush()
        result = bounded_outcome(mx.nd.load, f.name)
    _check_result(result)
    if isinstance(result, MXNetError):
        assert f.name in str(result)                                     # the error names the file


_HEADER = st.builds(lambda n: struct.pack("<QQQ", 0x112, 0, n), st.sampled_from([0, 1, 2, 3, 1 << 20, (1 << 64) - 1]))
_RECORD_START = st.builds(lambda magic, stype: struct.pack("<Ii", magic, stype),
                          st.sampled_from([0xF993FAC8, 0xF993FAC9, 0xF993FACA, 0, 1, 32]), st.integers(-1, 3))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.one_of(st.binary(max_size=300),
                 st.tuples(_HEADER, _RECORD_START, st.binary(max_size=200)).map(b"".join)))
def test_load_frombuffer_of_random_bytes(buf):
    _check_result(bounded_outcome(mx.nd.load_frombuffer, buf))


def test_a_huge_field_at_every_aligned_offset_of_mxnet_files():
    """Exhaustive where it is cheap: each 4-aligned offset of the small MXNet files overwritten with each hostile
    value, as a 4- and as an 8-byte field (the way a length, count, ndim, dim or dtype code would be forged)."""
    values = [-1, -(1 << 31), -(1 << 63), 13, 33, 1 << 30, (1 << 31) - 1, (1 << 32) - 1, 1 << 40, (1 << 63) - 1]
    count = 0
    for name in ("mxnet/csr.nd", "mxnet/row_sparse.nd", "mxnet/npx_v3.nd", "mxnet/dict.params"):
        seed = SEEDS[name]
        for pos in range(0, len(seed), 4):
            for value in values:
                for fmt in "iq":
                    field = pack_field(value, fmt)
                    buf = seed[:pos] + field + seed[pos + len(field):]
                    _check_result(bounded_outcome(mx.nd.load_frombuffer, buf))
                    count += 1
    assert count > 4000


# ---------------------------------------------------------------- sparse records: bounded densification
def _shape(*dims):
    return struct.pack("<i%dq" % len(dims), len(dims), *dims)


def _csr(rows, cols, values=(1.0,), dtype_code=0):
    """A V2 csr record whose first row holds `values` in its first columns."""
    nnz = len(values)
    data = np.asarray(values, np.uint16 if dtype_code == 12 else serialization.DTYPE_CODES[dtype_code]).tobytes()
    indptr = np.full(rows + 1, nnz, np.int64)
    indptr[0] = 0
    return (struct.pack("<Ii", 0xF993FAC9, 2) + _shape(nnz) + _shape(rows, cols) + struct.pack("<iii", 1, 0, dtype_code)
            + struct.pack("<i", 6) + _shape(rows + 1) + struct.pack("<i", 6) + _shape(nnz)
            + data + indptr.tobytes() + np.arange(nnz, dtype=np.int64).tobytes())


def _file(records, names=None):
    out = struct.pack("<QQQ", 0x112, 0, len(records)) + b"".join(records)
    names = names or []
    return out + struct.pack("<Q", len(names)) + b"".join(struct.pack("<Q", len(n)) + n.encode() for n in names)


def test_a_144_byte_csr_file_is_not_densified_into_4_gib(tmp_path):
    path = tmp_path / "csr.params"
    path.write_bytes(_file([_csr(1, 1 << 30)]))
    assert path.stat().st_size == 144
    err = bounded_outcome(mx.nd.load, str(path))
    assert isinstance(err, MXNetError)
    for part in (str(path), "record 0", "csr", "(1, 1073741824)", "float32", "4294967296", "144 bytes", "67108864"):
        assert part in str(err)


def test_the_dense_size_of_all_sparse_records_of_a_file_counts_together():
    cols = 10 << 20                               # 40 MiB of float32 each: one is within the limit, two are not
    [one] = bounded_outcome(mx.nd.load_frombuffer, _file([_csr(1, cols)]))
    assert one.shape == (1, cols) and one[0, 0].asscalar() == 1
    err = bounded_outcome(mx.nd.load_frombuffer, _file([_csr(1, cols), _csr(1, cols)], ["a", "b"]))
    assert isinstance(err, MXNetError)
    assert "record 1 ('b')" in str(err) and "with the earlier sparse records" in str(err)


def test_sparse_within_the_limit_loads_and_the_limit_can_be_raised(monkeypatch):
    buf = _file([_csr(3, 1 << 19, values=(2.5, -1.0))], ["w"])       # 6 MiB dense from a 180-byte file
    w = mx.nd.load_frombuffer(buf)["w"]
    assert w.shape == (3, 1 << 19) and w[0, :3].asnumpy().tolist() == [2.5, -1.0, 0] and w.sum().asscalar() == 1.5
    monkeypatch.setattr(serialization, "SPARSE_DENSE_MIN_BYTES", 1 << 20)
    with pytest.raises(MXNetError, match="raise mixnet.serialization.SPARSE_DENSE_MIN_BYTES"):
        mx.nd.load_frombuffer(buf)
    monkeypatch.setattr(serialization, "SPARSE_EXPANSION", 1 << 16)   # 1 << 16 x the file size
    assert mx.nd.load_frombuffer(buf)["w"].shape == (3, 1 << 19)


def test_bfloat16_sparse_counts_at_its_loaded_float32_size(monkeypatch):
    monkeypatch.setattr(serialization, "SPARSE_DENSE_MIN_BYTES", 3 << 20)
    ok = _file([_csr(1, 1 << 19, values=(0x3F80,), dtype_code=12)])       # 1.0 in bfloat16; 2 MiB as float32
    assert mx.nd.load_frombuffer(ok)[0][0, 0].asscalar() == 1.0
    with pytest.raises(MXNetError, match="bfloat16"):
        mx.nd.load_frombuffer(_file([_csr(1, 1 << 20, values=(0x3F80,), dtype_code=12)]))   # 4 MiB as float32
