"""Generate the reference RecordIO files in tests/data/recordio/ with real MXNet 1.9.1.

Run it with MXNet 1.9.1's Python (NOT mixnet's), from anywhere:

    ~/.venvs/mxref/bin/python tests/data/make_recordio.py

It is not run by the test suite. It (re)writes:

* ``plain.rec``: records written with ``MXRecordIO.write`` (see RECORDS below): empty, unaligned lengths,
  a record holding the magic number at 4-byte-aligned offsets (so dmlc splits it into a multi-part record),
  one holding it at an unaligned offset (not split), and a 1 KiB one.
* ``indexed.rec`` + ``indexed.idx``: ``MXIndexedRecordIO`` with integer keys written out of order, each record
  made by ``recordio.pack`` (scalar labels and array labels).
* ``expected.json``: what the files hold, so ``tests/test_recordio.py`` needs no MXNet.
"""
import json
import os
import struct

import mxnet as mx
from mxnet import recordio

assert mx.__version__ == "1.9.1", mx.__version__

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "recordio")
os.makedirs(OUT, exist_ok=True)

MAGIC = struct.pack("<I", 0xced7230a)
RECORDS = [
    b"",
    b"a",
    b"abc",
    b"abcd",
    b"hello world",
    MAGIC + b"xyz",                               # magic at offset 0: split
    b"1234" + MAGIC + b"5678" + MAGIC,            # magic at offsets 4 and 12: split in three
    b"12" + MAGIC + b"34",                        # unaligned magic: not split
    bytes(range(256)) * 4,
]


def main():
    path = os.path.join(OUT, "plain.rec")
    writer = recordio.MXRecordIO(path, "w")
    for rec in RECORDS:
        writer.write(rec)
    writer.close()

    items = {}
    idx_path, rec_path = os.path.join(OUT, "indexed.idx"), os.path.join(OUT, "indexed.rec")
    writer = recordio.MXIndexedRecordIO(idx_path, rec_path, "w")
    for key in [3, 0, 7, 1]:
        if key % 2:
            label = [float(key), 0.5, -2.0]
        else:
            label = float(key) + 0.25
        payload = ("payload-%d" % key).encode() * (key + 1)
        header = recordio.IRHeader(0, label, key * 10, key * 100 + 1)
        writer.write_idx(key, recordio.pack(header, payload))
        items[str(key)] = {"label": label, "id": key * 10, "id2": key * 100 + 1, "payload": payload.hex()}
    writer.close()

    expected = {
        "mxnet_version": mx.__version__,
        "plain": [rec.hex() for rec in RECORDS],
        "indexed_keys_in_write_order": [3, 0, 7, 1],
        "indexed": items,
    }
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
