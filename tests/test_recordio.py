"""mx.recordio: byte-identical with files MXNet 1.9.1 wrote (tests/data/recordio/, made by
tests/data/make_recordio.py), round trips, and corrupt files."""
import json
import os
import struct

import numpy as np
import pytest

from mixnet import recordio
from mixnet.base import MXNetError

DATA = os.path.join(os.path.dirname(__file__), "data", "recordio")
with open(os.path.join(DATA, "expected.json")) as _f:
    EXPECTED = json.load(_f)
PLAIN = [bytes.fromhex(h) for h in EXPECTED["plain"]]


def _read_all(reader):
    out = []
    while True:
        rec = reader.read()
        if rec is None:
            return out
        out.append(rec)


def test_reads_mxnet_file():
    reader = recordio.MXRecordIO(os.path.join(DATA, "plain.rec"), "r")
    assert _read_all(reader) == PLAIN           # includes multi-part records (payloads holding the magic)
    assert reader.read() is None
    reader.reset()
    assert reader.read() == PLAIN[0]
    reader.close()


def test_writes_the_same_bytes_as_mxnet(tmp_path):
    path = str(tmp_path / "out.rec")
    with recordio.MXRecordIO(path, "w") as writer:
        for rec in PLAIN:
            writer.write(rec)
    with open(path, "rb") as a, open(os.path.join(DATA, "plain.rec"), "rb") as b:
        assert a.read() == b.read()


def test_indexed_mxnet_file_and_pack():
    reader = recordio.MXIndexedRecordIO(os.path.join(DATA, "indexed.idx"), os.path.join(DATA, "indexed.rec"), "r")
    assert reader.keys == EXPECTED["indexed_keys_in_write_order"]
    for key in (7, 0, 3, 1):                     # random access
        header, payload = recordio.unpack(reader.read_idx(key))
        item = EXPECTED["indexed"][str(key)]
        assert payload == bytes.fromhex(item["payload"])
        assert (header.id, header.id2) == (item["id"], item["id2"])
        if isinstance(item["label"], list):
            assert header.flag == len(item["label"])
            assert header.label.dtype == np.float32 and header.label.tolist() == item["label"]
        else:
            assert header.flag == 0 and header.label == item["label"]
    with pytest.raises(KeyError):
        reader.read_idx(42)
    reader.close()


def test_indexed_writes_the_same_bytes_as_mxnet(tmp_path):
    idx, rec = str(tmp_path / "x.idx"), str(tmp_path / "x.rec")
    writer = recordio.MXIndexedRecordIO(idx, rec, "w")
    for key in EXPECTED["indexed_keys_in_write_order"]:
        item = EXPECTED["indexed"][str(key)]
        header = recordio.IRHeader(0, item["label"], item["id"], item["id2"])
        writer.write_idx(key, recordio.pack(header, bytes.fromhex(item["payload"])))
    writer.close()
    for mine, theirs in ((rec, "indexed.rec"), (idx, "indexed.idx")):
        with open(mine, "rb") as a, open(os.path.join(DATA, theirs), "rb") as b:
            assert a.read() == b.read()


def test_round_trip_random_payloads(tmp_path):
    rng = np.random.RandomState(0)
    magic = struct.pack("<I", 0xced7230a)
    payloads = [rng.bytes(n) for n in rng.randint(0, 300, size=30)]
    payloads += [magic * 5, b"x" + magic * 3, magic + b"\0" * 7 + magic]
    path = str(tmp_path / "r.rec")
    writer = recordio.MXRecordIO(path, "w")
    for p in payloads:
        writer.write(p)
    writer.close()
    assert os.path.getsize(path) % 4 == 0
    assert _read_all(recordio.MXRecordIO(path, "r")) == payloads


def _corrupt(tmp_path, data):
    path = str(tmp_path / "bad.rec")
    with open(path, "wb") as f:
        f.write(data)
    return recordio.MXRecordIO(path, "r")


def test_corrupt_files_raise(tmp_path):
    good = open(os.path.join(DATA, "plain.rec"), "rb").read()
    with pytest.raises(MXNetError, match="bad magic"):
        _read_all(_corrupt(tmp_path, b"\x00" * 16))
    with pytest.raises(MXNetError, match="truncated record header"):
        _read_all(_corrupt(tmp_path, good[:4]))
    with pytest.raises(MXNetError, match="claims"):
        _read_all(_corrupt(tmp_path, good[:-3]))
    # a header claiming ~512 MiB in a 12-byte file: an error, not an allocation
    huge = struct.pack("<II", 0xced7230a, (1 << 29) - 1) + b"abcd"
    with pytest.raises(MXNetError, match="claims 536870911 bytes"):
        _read_all(_corrupt(tmp_path, huge))
    # a continuation part with no start, and a start part with no continuation
    with pytest.raises(MXNetError, match="continuation"):
        _read_all(_corrupt(tmp_path, struct.pack("<II", 0xced7230a, 3 << 29)))
    with pytest.raises(MXNetError, match="continuation"):
        _read_all(_corrupt(tmp_path, struct.pack("<II", 0xced7230a, 1 << 29) * 2))
    with pytest.raises(MXNetError, match="shorter than"):
        recordio.unpack(b"short")
    with pytest.raises(MXNetError, match="float32 labels"):
        recordio.unpack(struct.pack("<IfQQ", 1000, 0.0, 0, 0))


def test_bad_index_and_modes(tmp_path):
    rec = os.path.join(DATA, "indexed.rec")
    idx = tmp_path / "bad.idx"
    idx.write_text("0\tnot-a-number\n")
    with pytest.raises(MXNetError, match="line 1"):
        recordio.MXIndexedRecordIO(str(idx), rec, "r")
    idx.write_text("0\t999999\n")
    with pytest.raises(MXNetError, match="outside"):
        recordio.MXIndexedRecordIO(str(idx), rec, "r")
    with pytest.raises(MXNetError, match="cannot open"):
        recordio.MXRecordIO(str(tmp_path / "missing.rec"), "r")
    with pytest.raises(ValueError):
        recordio.MXRecordIO(str(tmp_path / "x.rec"), "a")
    writer = recordio.MXRecordIO(str(tmp_path / "w.rec"), "w")
    with pytest.raises(MXNetError, match="for writing"):
        writer.read()
    writer.close()
    with pytest.raises(MXNetError, match="closed"):
        writer.write(b"x")
