"""Tests for mixnet.serialization: MXNet's binary NDArray list format (nd.save / nd.load).

Reference files in tests/data/mxnet/ were written by real MXNet 1.9.1 with
tests/data/make_mxnet_files.py; expected.json describes their contents, so these
tests need no MXNet.
"""
import json
import os
import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
import hypothesis.extra.numpy as hnp

from mixnet.base import MXNetError
from mixnet.serialization import DTYPE_CODES, dtype_code, encode, decode, save_file, load_file

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mxnet")
with open(os.path.join(DATA_DIR, "expected.json"), encoding="utf-8") as _f:
    EXPECTED = json.load(_f)["files"]

BF16 = np.dtype([("bfloat16", np.uint16)])
V1, V2, V3 = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


def ref_bytes(name):
    with open(os.path.join(DATA_DIR, name), "rb") as f:
        return f.read()


# ----------------------------------------------------------------------------------------
# Hand-built records (spec §2.3 / §2.4)
# ----------------------------------------------------------------------------------------

def header(n_arrays):
    return struct.pack("<QQQ", 0x112, 0, n_arrays)


def names_blob(names=None):
    if not names:
        return struct.pack("<Q", 0)
    out = struct.pack("<Q", len(names))
    for n in names:
        raw = n if isinstance(n, bytes) else n.encode("utf-8")
        out += struct.pack("<Q", len(raw)) + raw
    return out


def shape64(shape):
    return struct.pack("<i%dq" % len(shape), len(shape), *shape)


def ctx_dtype(code, dev_type=1, dev_id=0):
    return struct.pack("<iii", dev_type, dev_id, code)


def v2_record(arr, magic=V2):
    return (struct.pack("<Ii", magic, 0) + shape64(arr.shape)
            + ctx_dtype(dtype_code(arr.dtype)) + arr.tobytes())


def v1_record(arr):
    return struct.pack("<I", V1) + shape64(arr.shape) + ctx_dtype(dtype_code(arr.dtype)) + arr.tobytes()


def legacy_record(arr):
    """Pre-V1: no magic, u32 ndim, u32 dims, then ctx, dtype, data."""
    return (struct.pack("<I%dI" % arr.ndim, arr.ndim, *arr.shape)
            + ctx_dtype(dtype_code(arr.dtype)) + arr.tobytes())


def sparse_record(stype, storage_shape, shape, data, aux):
    """V2 sparse record; aux is a list of int64 numpy arrays (shape taken from each)."""
    out = struct.pack("<Ii", V2, stype) + shape64(storage_shape) + shape64(shape)
    out += ctx_dtype(dtype_code(data.dtype))
    for a in aux:
        out += struct.pack("<i", 6) + shape64(a.shape)
    out += data.tobytes() + b"".join(a.astype("<i8").tobytes() for a in aux)
    return out


def csr_record(dense_shape, data, indptr, indices):
    return sparse_record(2, (len(data),), dense_shape, np.asarray(data, np.float32),
                         [np.asarray(indptr, np.int64), np.asarray(indices, np.int64)])


def rsp_record(dense_shape, rows, idx):
    rows = np.asarray(rows, np.float32)
    return sparse_record(1, rows.shape, dense_shape, rows, [np.asarray(idx, np.int64)])


def file_of(records, names=None):
    return header(len(records)) + b"".join(records) + names_blob(names)


def assert_same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()  # exact, NaN-safe


def load_error(buf):
    """decode must fail with MXNetError (never another exception) and say where."""
    with pytest.raises(MXNetError) as info:
        decode(buf)
    assert "offset" in str(info.value)
    return str(info.value)


# ----------------------------------------------------------------------------------------
# dtypes
# ----------------------------------------------------------------------------------------

def test_dtype_table():
    assert sorted(DTYPE_CODES) == list(range(13))
    names = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool",
             "int16", "uint16", "uint32", "uint64"]
    for code, name in enumerate(names):
        assert DTYPE_CODES[code] == np.dtype(name)
        assert dtype_code(name) == code
        assert dtype_code(np.dtype(name)) == code
    assert DTYPE_CODES[12] == BF16 and DTYPE_CODES[12].itemsize == 2
    assert dtype_code(BF16) == 12
    assert dtype_code(np.float32) == 0
    assert dtype_code(">f8") == 1  # byte order does not matter, the writer swaps


@pytest.mark.parametrize("bad", [np.complex64, np.object_, "U3", "datetime64[s]",
                                 np.dtype([("x", np.float32)]), "not-a-dtype"])
def test_dtype_code_rejects_unsupported(bad):
    with pytest.raises(MXNetError):
        dtype_code(bad)


def test_encode_rejects_unsupported_dtype():
    with pytest.raises(MXNetError, match="unsupported dtype"):
        encode([np.zeros(2, np.complex128)])


# ----------------------------------------------------------------------------------------
# Round trips
# ----------------------------------------------------------------------------------------

def sample(code, shape, seed=0):
    rng = np.random.default_rng(seed)
    dt = DTYPE_CODES[code]
    if code == 12:
        return rng.integers(0, 1 << 16, size=shape, dtype=np.uint16).view(BF16)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("code", sorted(DTYPE_CODES))
def test_round_trip_every_dtype(code, version):
    arrays = [sample(code, s, seed=i) for i, s in enumerate([(2, 3), (0,), (0, 4), (1,), (2, 1, 3)])]
    for names in (None, ["a", "b.weight", "arg:c", "ü", ""]):
        buf = encode(arrays, names, version=version)
        got, got_names = decode(buf)
        assert got_names == names
        for a, b in zip(arrays, got):
            assert_same(a, b)
        assert encode(got, got_names, version=version) == buf


def test_decoded_arrays_are_fresh_writable_c_order():
    src = bytearray(encode([np.arange(6, dtype=np.float32).reshape(2, 3)]))
    (arr,), _ = decode(memoryview(src))
    src[-12:] = b"\xff" * 12  # mutating the input must not reach the array
    assert arr.flags.writeable and arr.flags.c_contiguous and arr.flags.owndata
    assert arr.tolist() == [[0, 1, 2], [3, 4, 5]]
    arr[0, 0] = 7


def test_decode_accepts_bytes_like_only():
    buf = encode([np.ones(2)])
    for b in (buf, bytearray(buf), memoryview(buf)):
        assert decode(b)[0][0].tolist() == [1.0, 1.0]
    with pytest.raises(MXNetError):
        decode(buf.hex())
    with pytest.raises(MXNetError):
        decode(None)


def test_encode_non_contiguous_and_big_endian_input():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for view in (a.T, a[:, ::2], np.asfortranarray(a), a.astype(">f4")):
        (got,), _ = decode(encode([view]))
        assert got.dtype == np.float32 and np.array_equal(got, view)
        assert got.flags.c_contiguous


def test_zero_d_needs_v3():
    with pytest.raises(MXNetError, match="0-d"):
        encode([np.array(1.5, np.float32)])
    with pytest.raises(MXNetError, match="0-d"):
        encode([np.float64(2.0)], version=2)
    for scalar in (np.array(1.5, np.float32), np.int64(-3), np.array(True)):
        (got,), _ = decode(encode([scalar], version=3))
        assert got.shape == () and got.dtype == np.asarray(scalar).dtype and got == scalar


def test_v3_scalar_bytes_from_spec():
    # spec §2.7: npx.save of the scalar 3.5
    rec = bytes.fromhex("cafa93f9 00000000 00000000 0100000000000000 00000000 00006040")
    buf = encode([np.array(3.5, np.float32)], version=3)
    assert buf == header(1) + rec + names_blob()
    (got,), names = decode(buf)
    assert got.shape == () and got == 3.5 and names is None


def test_encode_argument_errors():
    with pytest.raises(MXNetError, match="names"):
        encode([np.ones(1)], ["a", "b"])
    with pytest.raises(MXNetError, match="expected str"):
        encode([np.ones(1)], [b"a"])
    with pytest.raises(MXNetError, match="UTF-8"):
        encode([np.ones(1)], ["\ud800"])
    with pytest.raises(MXNetError, match="version"):
        encode([np.ones(1)], version=1)
    with pytest.raises(MXNetError, match="numpy"):
        encode([[1.0, 2.0]])
    with pytest.raises(MXNetError, match="numpy"):
        encode([None])
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":      # numpy 1.x cannot even make a 33-d array
        with pytest.raises(MXNetError, match="dimensions"):
            encode([np.zeros((1,) * 33)])


def test_single_array_and_empty_list():
    assert encode(np.ones(2)) == encode([np.ones(2)])
    buf = encode([])
    assert buf == header(0) + names_blob() and decode(buf) == ([], None)
    assert decode(encode([], names=[])) == ([], None)  # like MXNet: an empty dict loads as a list


NUMERIC = [np.float32, np.float64, np.float16, np.uint8, np.int32, np.int8, np.int64, np.bool_,
           np.int16, np.uint16, np.uint32, np.uint64]


@st.composite
def array_lists(draw, min_dims):
    n = draw(st.integers(0, 4))
    arrays = [draw(hnp.arrays(st.sampled_from(NUMERIC),
                              hnp.array_shapes(min_dims=min_dims, max_dims=4, min_side=0, max_side=4)))
              for _ in range(n)]
    names = draw(st.none() | st.lists(st.text(max_size=8), min_size=n, max_size=n))
    return arrays, (names if n else None)


@SETTINGS
@given(array_lists(min_dims=1), st.sampled_from([2, 3]))
def test_round_trip_property(data, version):
    arrays, names = data
    buf = encode(arrays, names, version=version)
    got, got_names = decode(buf)
    assert got_names == names and len(got) == len(arrays)
    for a, b in zip(arrays, got):
        assert_same(a, b)


@SETTINGS
@given(array_lists(min_dims=0))
def test_round_trip_property_v3_scalars(data):
    arrays, names = data
    got, got_names = decode(encode(arrays, names, version=3))
    assert got_names == names
    for a, b in zip(arrays, got):
        assert_same(a, b)


# ----------------------------------------------------------------------------------------
# Exact bytes from the spec
# ----------------------------------------------------------------------------------------

SPEC_136 = bytes.fromhex(
    "1201000000000000" "0000000000000000" "0200000000000000"
    "c9fa93f9" "00000000" "02000000" "0200000000000000" "0300000000000000"
    "01000000" "00000000" "00000000"
    "0000803f" "00000040" "00004040" "00008040" "0000a040" "0000c040"
    "c9fa93f9" "00000000" "01000000" "0200000000000000" "01000000" "00000000" "04000000"
    "01000000" "02000000"
    "0000000000000000")


def test_spec_hexdump_136_bytes():
    assert len(SPEC_136) == 136
    arrays = [np.arange(1, 7, dtype=np.float32).reshape(2, 3), np.array([1, 2], np.int32)]
    assert encode(arrays) == SPEC_136
    assert SPEC_136 == ref_bytes("ndlist.params")  # and MXNet agrees
    got, names = decode(SPEC_136)
    assert names is None
    for a, b in zip(arrays, got):
        assert_same(a, b)


def test_spec_zero_size_73_bytes():
    expected = (header(1) + struct.pack("<Ii", V2, 0) + shape64((0,)) + ctx_dtype(0)
                + names_blob(["s"]))
    buf = encode([np.zeros((0,), np.float32)], ["s"])
    assert len(buf) == 73 and buf == expected == ref_bytes("zero_size.nd")
    (got,), names = decode(buf)
    assert got.shape == (0,) and got.dtype == np.float32 and names == ["s"]


# ----------------------------------------------------------------------------------------
# Files written by MXNet 1.9.1
# ----------------------------------------------------------------------------------------

def test_reference_data_is_small():
    total = sum(os.path.getsize(os.path.join(DATA_DIR, n)) for n in os.listdir(DATA_DIR))
    assert total < 50 * 1024


def check_expected(arr, exp):
    assert list(arr.shape) == exp["shape"]
    if exp["dtype"] == "bfloat16":
        assert arr.dtype == BF16
        assert arr["bfloat16"].ravel().tolist() == exp["bits"]
        as_f32 = (arr["bfloat16"].astype(np.uint32) << 16).view(np.float32)
        assert as_f32.ravel().tolist() == exp["values"]
    else:
        assert arr.dtype == np.dtype(exp["dtype"])
        assert arr.ravel().tolist() == exp["values"]


@pytest.mark.parametrize("fname", sorted(EXPECTED))
def test_mxnet_reference_file(fname):
    exp = EXPECTED[fname]
    buf = ref_bytes(fname)
    arrays, names = decode(buf)
    assert names == exp["names"]
    assert len(arrays) == len(exp["arrays"])
    for arr, e in zip(arrays, exp["arrays"]):
        check_expected(arr, e)
    if exp["reencode_identical"]:
        assert encode(arrays, names, version=exp["version"]) == buf
    # and through the file API
    arrays2, names2 = load_file(os.path.join(DATA_DIR, fname))
    assert names2 == names and all(a.tobytes() == b.tobytes() for a, b in zip(arrays, arrays2))


def test_mxnet_reference_coverage():
    dtypes = {a["dtype"] for e in EXPECTED.values() for a in e["arrays"]}
    assert {"float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool",
            "bfloat16"} <= dtypes
    stypes = {a["stype"] for e in EXPECTED.values() for a in e["arrays"]}
    assert stypes == {"default", "row_sparse", "csr"}
    assert EXPECTED["gluon_dense.params"]["names"] == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_sparse_reference_densified():
    (rsp,), _ = decode(ref_bytes("row_sparse.nd"))
    assert rsp.tolist() == [[0, 0], [5, 6], [0, 0]]
    (csr, dense), names = decode(ref_bytes("csr.nd"))
    assert csr.tolist() == [[0, 1, 0], [2, 0, 3]] and names == ["c", "d"]
    # writing sparse back as dense V2 records is the documented behaviour
    assert decode(encode([csr]))[0][0].tolist() == csr.tolist()


# ----------------------------------------------------------------------------------------
# Older records (§2.4) and "none" records
# ----------------------------------------------------------------------------------------

def test_legacy_record():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([-1, 5], np.int64)
    rec = legacy_record(a)
    assert rec[:4] == b"\x02\x00\x00\x00" and len(rec) == 4 + 8 + 12 + 24  # u32 dims
    got, names = decode(file_of([rec, legacy_record(b)], ["a", "b"]))
    assert names == ["a", "b"]
    assert_same(got[0], a)
    assert_same(got[1], b)


def test_v1_record():
    a = np.array([[1.5, -2.0]], np.float64)
    got, names = decode(file_of([v1_record(a), v2_record(np.ones(3, np.uint8))]))
    assert names is None
    assert_same(got[0], a)
    assert_same(got[1], np.ones(3, np.uint8))


def test_none_records_every_version():
    # (MXNet 1.9.1 itself reads a V1/legacy ndim 0 as a 0-d array and cannot load V3
    # "none" records; the spec follows the writers, which wrote nothing after a none shape.)
    recs = [
        struct.pack("<I", 0),                                 # legacy, ndim 0
        struct.pack("<Ii", V1, 0),                            # V1, ndim 0
        struct.pack("<Iii", V2, 0, 0),                        # V2 dense, ndim 0
        struct.pack("<Iii", V3, 0, -1),                       # V3, ndim -1
        struct.pack("<Iiiqq", V3, 0, 2, 3, -1),               # V3, a dim of -1
        struct.pack("<Iiiqqq", V3, 0, 3, 2, -1, 4),           # V3, -1 mid-shape: all dims read
        struct.pack("<Iii", V2, 1, 1) + struct.pack("<q", 0) + struct.pack("<i", 0),  # V2 sparse none
        v2_record(np.ones(2, np.float32)),
    ]
    got, _ = decode(file_of(recs))
    assert got[:7] == [None] * 7
    assert got[7].tolist() == [1, 1]


def test_v2_ndim0_is_none_but_v3_ndim0_is_scalar():
    rec_v2 = struct.pack("<Iii", V2, 0, 0)
    rec_v3 = struct.pack("<Iii", V3, 0, 0) + ctx_dtype(4) + struct.pack("<i", 42)
    got, _ = decode(file_of([rec_v2, rec_v3]))
    assert got[0] is None and got[1].shape == () and got[1] == 42


def test_bool_bytes_are_canonicalised():
    rec = struct.pack("<Ii", V2, 0) + shape64((3,)) + ctx_dtype(7) + b"\x00\x02\xff"
    (got,), _ = decode(file_of([rec]))
    assert got.dtype == np.bool_ and got.tolist() == [False, True, True]
    assert got.view(np.uint8).tolist() == [0, 1, 1]


def test_gpu_context_loads_on_host():
    a = np.ones(2, np.float32)
    rec = struct.pack("<Ii", V2, 0) + shape64((2,)) + ctx_dtype(0, dev_type=2, dev_id=3) + a.tobytes()
    assert decode(file_of([rec]))[0][0].tolist() == [1, 1]


def test_sparse_hand_built():
    got, _ = decode(file_of([
        csr_record((2, 3), [1, 2, 3], [0, 1, 3], [1, 0, 2]),
        rsp_record((3, 2), [[5, 6]], [1]),
        csr_record((0, 4), [], [0], []),
        rsp_record((4, 1), np.zeros((0, 1)), []),
        csr_record((3, 2), [4, 5], [0, 0, 2, 2], [1, 0]),  # unsorted columns are fine
    ]))
    assert got[0].tolist() == [[0, 1, 0], [2, 0, 3]]
    assert got[1].tolist() == [[0, 0], [5, 6], [0, 0]]
    assert got[2].shape == (0, 4)
    assert got[3].tolist() == [[0]] * 4
    assert got[4].tolist() == [[0, 0], [5, 4], [0, 0]]


@pytest.mark.parametrize("rec, msg", [
    (csr_record((2, 3), [1, 2, 3], [0, 2, 1], [1, 0, 2]), "indptr"),
    (csr_record((2, 3), [1, 2, 3], [1, 1, 3], [1, 0, 2]), "indptr"),
    (csr_record((2, 3), [1, 2, 3], [0, 1, 4], [1, 0, 2]), "indptr"),
    (csr_record((2, 3), [1, 2, 3], [0, 1, 3], [1, 0, 3]), "column index"),
    (csr_record((2, 3), [1, 2, 3], [0, 1, 3], [1, -1, 2]), "column index"),
    (csr_record((2, 3), [1, 2, 3], [0, 1, 3], [1, 2, 2]), "duplicate"),
    (csr_record((2, 3), [1, 2], [0, 1, 2, 2], [1, 0]), "inconsistent"),
    (sparse_record(2, (2,), (2, 3, 1), np.ones(2, np.float32),
                   [np.array([0, 1, 2]), np.array([0, 0])]), "inconsistent"),
    (rsp_record((3, 2), [[5, 6]], [3]), "out of range"),
    (rsp_record((3, 2), [[5, 6], [1, 1]], [1, 1]), "unique"),
    (rsp_record((1, 2), [[5, 6], [1, 1]], [0, 1]), "inconsistent"),
    (sparse_record(1, (1, 3), (3, 2), np.ones((1, 3), np.float32), [np.array([0])]), "inconsistent"),
    (sparse_record(1, (1, 2), (3, 2), np.ones((1, 2), np.float32), [np.array([0, 1])]), "inconsistent"),
])
def test_sparse_validation(rec, msg):
    assert msg in load_error(file_of([rec]))


def test_sparse_aux_dtype_must_be_integer():
    rec = bytearray(rsp_record((3, 2), [[5, 6]], [1]))
    pos = rec.index(struct.pack("<i", 6) + shape64((1,)))
    rec[pos:pos + 4] = struct.pack("<i", 0)  # float32 indices
    assert "non-integer" in load_error(file_of([bytes(rec)]))


def test_sparse_huge_dense_shape_refused_without_allocating():
    # A few bytes can describe an empty (2**20, 2**20) row_sparse array; densifying it
    # would need 4 TiB, so the reader refuses before allocating.
    rec = (struct.pack("<Ii", V2, 1) + shape64((0, 1 << 20)) + shape64((1 << 20, 1 << 20))
           + ctx_dtype(0) + struct.pack("<i", 6) + shape64((0,)))
    with no_big_allocation():
        assert "limit" in load_error(file_of([rec]))


def test_v3_sparse_rejected():
    rec = bytearray(rsp_record((3, 2), [[5, 6]], [1]))
    rec[:4] = struct.pack("<I", V3)
    assert "sparse" in load_error(file_of([bytes(rec)]))


# ----------------------------------------------------------------------------------------
# Malformed input: always MXNetError, quickly, without big allocations
# ----------------------------------------------------------------------------------------

class no_big_allocation:
    """Fail if the block allocates more than ``limit`` bytes through Python/numpy."""

    def __init__(self, limit=1 << 20):
        self.limit = limit

    def __enter__(self):
        tracemalloc.start()

    def __exit__(self, *exc):
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < self.limit, "peak allocation %d bytes" % peak
        return False


MALFORMED_SOURCES = ["list_mixed.nd", "npx_v3.nd", "csr.nd", "row_sparse.nd", "dict.params",
                     "gluon_dense.params"]


@pytest.mark.parametrize("fname", MALFORMED_SOURCES)
def test_every_truncation_fails_cleanly(fname):
    buf = ref_bytes(fname)
    for n in range(len(buf)):
        load_error(buf[:n])


@SETTINGS
@given(st.sampled_from(MALFORMED_SOURCES + ["legacy+v1"]), st.data())
def test_prefix_truncation_property(fname, data):
    buf = legacy_v1_file() if fname == "legacy+v1" else ref_bytes(fname)
    n = data.draw(st.integers(0, len(buf) - 1))
    msg = load_error(buf[:n])
    assert "truncated" in msg or "cannot fit" in msg


def legacy_v1_file():
    return file_of([legacy_record(np.arange(4, dtype=np.int32)),
                    v1_record(np.ones((2, 2), np.float64))], ["x", "y"])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sampled_from(MALFORMED_SOURCES + ["legacy+v1"]),
       st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), min_size=1, max_size=4))
def test_random_byte_flips(fname, flips):
    buf = bytearray(legacy_v1_file() if fname == "legacy+v1" else ref_bytes(fname))
    for pos, val in flips:
        buf[pos % len(buf)] = val
    try:
        arrays, names = decode(bytes(buf))
    except MXNetError as e:
        assert "offset" in str(e)
    else:
        assert all(a is None or isinstance(a, np.ndarray) for a in arrays)
        assert names is None or len(names) == len(arrays)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.binary(max_size=200))
def test_random_garbage_after_header(tail):
    for n in (0, 1, 2, 5):
        try:
            decode(header(n) + tail)
        except MXNetError:
            pass


def test_absurd_sizes_fail_fast_without_allocating():
    cases = [
        # ndim=1 with dim 2**62
        file_of([struct.pack("<Ii", V2, 0) + shape64((2 ** 62,)) + ctx_dtype(0)]),
        file_of([struct.pack("<Ii", V2, 0) + shape64((2 ** 40, 2 ** 40)) + ctx_dtype(1)]),
        file_of([struct.pack("<Ii", V2, 0) + shape64((2 ** 63 - 1,) * 3) + ctx_dtype(1)]),
        file_of([struct.pack("<Ii", V2, 0) + shape64((0, 2 ** 62)) + ctx_dtype(0)]),
        file_of([struct.pack("<I", V1) + shape64((2 ** 62,)) + ctx_dtype(6)]),
        file_of([struct.pack("<Ii", V3, 0) + shape64((2 ** 61, 8)) + ctx_dtype(6)]),
        # legacy u32 dims: 4 x 0xFFFFFFFF
        file_of([struct.pack("<5I", 4, *[0xFFFFFFFF] * 4) + ctx_dtype(1)]),
        # n_arrays 2**60
        struct.pack("<QQQ", 0x112, 0, 2 ** 60) + v2_record(np.ones(1)),
        struct.pack("<QQQ", 0x112, 0, 2 ** 64 - 1),
        # names: huge count / huge length
        header(0) + struct.pack("<Q", 2 ** 60),
        header(1) + v2_record(np.ones(1)) + struct.pack("<QQ", 1, 2 ** 63) + b"abc",
    ]
    with no_big_allocation():
        for buf in cases:
            load_error(buf)


def test_truncated_data_message():
    buf = file_of([v2_record(np.ones(3)), v2_record(np.zeros((32, 32), np.float32))])
    msg = load_error(buf[:-100])
    assert "record 1 needs 4096 data bytes at offset" in msg and "truncated" in msg


@pytest.mark.parametrize("buf, msg", [
    (b"", "truncated"),
    (struct.pack("<QQQ", 0x113, 0, 0) + names_blob(), "Invalid NDArray file format"),
    (b"\x89PNG\r\n\x1a\n" + bytes(40), "Invalid NDArray file format"),
    (file_of([struct.pack("<Ii", V2, 0) + shape64((2,)) + ctx_dtype(13) + bytes(8)]), "dtype code 13"),
    (file_of([struct.pack("<Ii", V2, 0) + shape64((2,)) + ctx_dtype(-1) + bytes(8)]), "dtype code -1"),
    (file_of([struct.pack("<Ii", V2, 3) + shape64((2,)) + ctx_dtype(0) + bytes(8)]), "storage type 3"),
    (file_of([struct.pack("<Ii", V2, -1) + shape64((2,)) + ctx_dtype(0) + bytes(8)]), "storage type -1"),
    (file_of([struct.pack("<Ii", V2, 0) + shape64((2,)) + ctx_dtype(0, dev_type=9) + bytes(8)]),
     "device type 9"),
    (file_of([struct.pack("<Iii", V2, 0, 33) + bytes(33 * 8) + ctx_dtype(0)]), "ndim 33"),
    (file_of([struct.pack("<Iii", V2, 0, -1) + ctx_dtype(0)]), "ndim -1"),       # -1 is V3 only
    (file_of([struct.pack("<Iii", V2, 0, -7) + ctx_dtype(0)]), "ndim -7"),
    (file_of([struct.pack("<Iiiq", V2, 0, 1, -2) + ctx_dtype(0)]), "negative"),
    (file_of([struct.pack("<Iiiq", V2, 0, 1, -1) + ctx_dtype(0)]), "negative"),  # V2: no -1 marker
    (file_of([struct.pack("<Iiiq", V3, 0, 1, -3) + ctx_dtype(0)]), "negative"),
    (file_of([struct.pack("<I", 0xDEADBEEF) + bytes(64)]), "unknown record magic"),
    (file_of([v2_record(np.ones(2))], ["a", "b"]), "name count 2"),
    (file_of([v2_record(np.ones(2)), v2_record(np.ones(2))], ["a"]), "name count 1"),
    (file_of([v2_record(np.ones(2))], [b"\xff\xfe"]), "UTF-8"),
    (file_of([v2_record(np.ones(2))], [b"a\xc3"]), "UTF-8"),
    (file_of([v2_record(np.ones(2))]) + b"\x00", "trailing garbage"),
    (file_of([v2_record(np.ones(2))], ["w"]) + b"junk", "trailing garbage"),
])
def test_malformed_inputs(buf, msg):
    assert msg in load_error(buf)


# ----------------------------------------------------------------------------------------
# Files: atomic save, load errors
# ----------------------------------------------------------------------------------------

def test_save_and_load_file(tmp_path):
    path = tmp_path / "net.params"
    arrays = [np.arange(4, dtype=np.float32), np.array(2.0)]
    save_file(path, arrays, ["w", "s"], version=3)
    assert path.read_bytes() == encode(arrays, ["w", "s"], version=3)
    got, names = load_file(str(path))
    assert names == ["w", "s"] and got[0].tolist() == [0, 1, 2, 3] and got[1] == 2.0
    save_file(str(path), [np.ones(1)])  # overwrite
    got, names = load_file(path)
    assert names is None and got[0].tolist() == [1.0]
    assert os.listdir(tmp_path) == ["net.params"]


def test_load_file_errors(tmp_path):
    missing = tmp_path / "nope.params"
    with pytest.raises(MXNetError, match="nope.params"):
        load_file(missing)
    bad = tmp_path / "bad.params"
    bad.write_bytes(ref_bytes("ndlist.params")[:50])
    with pytest.raises(MXNetError, match="bad.params"):
        load_file(bad)
    with pytest.raises(MXNetError):
        load_file(tmp_path)  # a directory


ORIGINAL = encode([np.arange(3, dtype=np.int32)], ["old"])


@pytest.fixture
def existing(tmp_path):
    path = tmp_path / "model.params"
    path.write_bytes(ORIGINAL)
    return path


def assert_untouched(path):
    assert path.read_bytes() == ORIGINAL
    assert os.listdir(path.parent) == [path.name], "temporary file left behind"


def test_atomic_save_crash_in_replace(existing, monkeypatch):
    def boom(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(MXNetError, match="No space left"):
        save_file(existing, [np.zeros((100, 100))], ["new"])
    monkeypatch.undo()
    assert_untouched(existing)


def test_atomic_save_crash_mid_write(existing, monkeypatch):
    real_fdopen = os.fdopen

    class HalfWriter:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            self.f.write(data[: len(data) // 2])
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: HalfWriter(real_fdopen(fd, mode)))
    with pytest.raises(MXNetError, match="Input/output error"):
        save_file(existing, [np.zeros((100, 100))])
    monkeypatch.undo()
    assert_untouched(existing)


def test_atomic_save_interrupted_in_fsync(existing, monkeypatch):
    def interrupt(fd):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):  # not swallowed, but cleaned up
        save_file(existing, [np.zeros(10)])
    monkeypatch.undo()
    assert_untouched(existing)


def test_save_encode_error_touches_nothing(existing, tmp_path):
    with pytest.raises(MXNetError, match="0-d"):
        save_file(existing, [np.array(1.0)])
    assert_untouched(existing)
    with pytest.raises(MXNetError):
        save_file(tmp_path / "no_such_dir" / "x.params", [np.ones(1)])
    assert_untouched(existing)


def test_saved_file_respects_umask(tmp_path):
    old = os.umask(0o022)
    try:
        save_file(tmp_path / "m.params", [np.ones(1)])
    finally:
        os.umask(old)
    assert (tmp_path / "m.params").stat().st_mode & 0o777 == 0o644
