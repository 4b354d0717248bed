"""Hostile RecordIO files: reading mutations (bit flips, truncations, forged length/flag/count fields, spliced
chunks) of `.rec` / `.idx` files written by real MXNet 1.9.1 (tests/data/recordio) and by mixnet with
MXRecordIO, MXIndexedRecordIO and `unpack` gives records or an MXNetError - never another exception, never a
hang - within bounded memory and time."""
import contextlib
import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mixnet import recordio
from mixnet.base import MXNetError

from hostile_inputs import INTERESTING, MUTATIONS, bounded_outcome, mutate


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "recordio")
MAGIC = struct.pack("<I", 0xced7230a)


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _packed():
    """Records made by recordio.pack: scalar and array labels, payloads holding the magic number."""
    return [recordio.pack(recordio.IRHeader(0, 1.5, 7, 8), b"img"),
            recordio.pack(recordio.IRHeader(0, np.arange(5, dtype=np.float32), 1, 2), MAGIC * 2 + b"x"),
            recordio.pack(recordio.IRHeader(0, [0.5], 2 ** 64 - 1, 0), b"")]


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    """name -> (rec bytes, idx bytes or None), from MXNet and from mixnet's writers."""
    d = tmp_path_factory.mktemp("recordio-seeds")
    with recordio.MXIndexedRecordIO(str(d / "m.idx"), str(d / "m.rec"), "w") as writer:
        for key, rec in zip((5, 0, 2), _packed()):
            writer.write_idx(key, rec)
    with recordio.MXRecordIO(str(d / "plain.rec"), "w") as writer:
        for rec in (b"", b"abc", MAGIC + b"123", b"12" + MAGIC + b"34" + MAGIC + b"5678", bytes(300)):
            writer.write(rec)
    return {"mxnet-plain": (_read(os.path.join(DATA, "plain.rec")), None),
            "mxnet-indexed": (_read(os.path.join(DATA, "indexed.rec")), _read(os.path.join(DATA, "indexed.idx"))),
            "mixnet-plain": (_read(d / "plain.rec"), None),
            "mixnet-indexed": (_read(d / "m.rec"), _read(d / "m.idx"))}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("recordio-fuzz")


def _write(path, data):
    # A new file each time: truncating a written one makes ext4 flush it to disk (auto_da_alloc), ~5 ms a write.
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def read_all(path):
    """Every record of a .rec file; fails the test if the reader does not stop (each record takes >= 8 bytes)."""
    size = os.path.getsize(path)
    out = []
    with recordio.MXRecordIO(path, "r") as reader:
        for _ in range(size // 8 + 2):
            rec = reader.read()
            if rec is None:
                return out
            assert isinstance(rec, bytes) and len(rec) <= size
            out.append(rec)
    raise AssertionError(f"the reader returned more records than {path} can hold")


def read_indexed(idx, rec):
    """Every record by key through the index, each unpacked when it can be."""
    with recordio.MXIndexedRecordIO(idx, rec, "r") as reader:
        for key in reader.keys:
            data = reader.read_idx(key)
            assert len(data) <= os.path.getsize(rec)
            try:
                header, payload = recordio.unpack(data)
            except MXNetError:
                continue
            if header.flag > 0:
                assert header.label.shape == (header.flag,) and header.label.dtype == np.float32
    return reader.keys


def test_the_seeds_read(seeds, scratch):
    for rec, idx in seeds.values():
        assert len(read_all(_write(scratch / "s.rec", rec))) >= 3
        if idx is not None:
            assert len(read_indexed(_write(scratch / "s.idx", idx), str(scratch / "s.rec"))) >= 3


@settings(max_examples=300, deadline=None, derandomize=True)
@given(MUTATIONS)
def test_reading_mutated_rec_files(seeds, scratch, mutations):
    """Each generated list of mutations is applied to every seed's .rec file."""
    for rec, _ in seeds.values():
        path = _write(scratch / "r.rec", mutate(rec, mutations))
        bounded_outcome(read_all, path)


_NUMBER = st.one_of(st.sampled_from(INTERESTING), st.integers(-(1 << 70), 1 << 70)).map(str)
_LINE = st.one_of(st.tuples(_NUMBER, _NUMBER).map("\t".join),
                  st.tuples(_NUMBER, st.sampled_from(["0", "80", "124", "240"])).map("\t".join),
                  st.text(max_size=12))
_INDEX_EDIT = st.one_of(st.just(None), MUTATIONS, st.lists(_LINE, max_size=4))


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.sampled_from(["mxnet-indexed", "mixnet-indexed"]), st.one_of(st.just([]), MUTATIONS), _INDEX_EDIT)
def test_indexed_reading_of_mutated_files(seeds, scratch, name, rec_mutations, index_edit):
    rec, idx = seeds[name]
    if isinstance(index_edit, list) and index_edit and isinstance(index_edit[0], str):
        idx = idx + "\n".join(index_edit).encode("utf-8", "surrogatepass")   # hostile lines after the good ones
    elif index_edit:
        idx = mutate(idx, index_edit)
    rec_path = _write(scratch / "i.rec", mutate(rec, rec_mutations))
    bounded_outcome(read_indexed, _write(scratch / "i.idx", idx), rec_path)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(MUTATIONS)
def test_unpack_of_mutated_records(seeds, scratch, mutations):
    """Each generated list of mutations is applied to every packed record (MXNet's and mixnet's)."""
    records = read_all(_write(scratch / "u.rec", seeds["mxnet-indexed"][0])) + _packed()
    for packed in records:
        result = bounded_outcome(recordio.unpack, mutate(packed, mutations))
        if not isinstance(result, MXNetError):
            header, payload = result
            assert isinstance(payload, bytes)
            if header.flag > 0:
                assert header.label.shape == (header.flag,)


def test_forged_fields_name_the_problem(scratch):
    rec = _write(scratch / "f.rec", MAGIC + struct.pack("<I", (1 << 29) - 1) + b"abcd")
    with pytest.raises(MXNetError, match="claims 536870911 bytes but only 4 are left"):
        read_all(rec)
    idx = _write(scratch / "f.idx", b"0\t0\n\xff\xfe\t4\n")
    with pytest.raises(MXNetError, match="not UTF-8 text at byte 4"):
        recordio.MXIndexedRecordIO(idx, rec, "r")
    with pytest.raises(MXNetError, match="line 1"):
        recordio.MXIndexedRecordIO(_write(scratch / "g.idx", b"0\t" + b"9" * 5000), rec, "r")
    reader = recordio.MXIndexedRecordIO(_write(scratch / "h.idx", b"0\t0\n"), rec, "r")
    with pytest.raises(KeyError, match="key 3 is not in the index"):   # still a KeyError, as in MXNet
        reader.read_idx(3)
    with pytest.raises(recordio.MissingKeyError):
        reader.read_idx([1])
    reader.close()
    with pytest.raises(MXNetError, match="4294967295 float32 labels"):
        recordio.unpack(struct.pack("<IfQQ", (1 << 32) - 1, 0.0, 0, 0) + b"abcd")
