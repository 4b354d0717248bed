"""`mx.recordio`: MXNet's RecordIO files (``.rec`` + optional ``.idx``), byte-compatible with MXNet/dmlc-core.

Layout of one record in a ``.rec`` file (all integers little-endian uint32)::

    magic = 0xced7230a | lrecord = (cflag << 29) | length | length bytes of data | zero padding to 4 bytes

``cflag`` is 0 for a whole record. A payload that contains the magic number at a 4-byte-aligned offset is
written in parts (dmlc-core does this so a reader can resynchronise on the magic): the magic itself is dropped
and each part gets its own header, cflag 1 for the first part, 2 for middle parts and 3 for the last; a reader
joins the parts with the magic between them. A ``.idx`` file is text, one ``key<TAB>byte offset`` line per
record.

Reading never trusts the file: every length is checked against the bytes left in the file before anything is
allocated, and a bad magic, a bad part sequence or a truncated record raise `MXNetError` naming the offset. An
index that is not UTF-8 text, has a malformed line or an offset outside the ``.rec`` file raises `MXNetError`
naming the line; a key that is not in the index raises `MissingKeyError` (an `MXNetError` and, as in MXNet, a
`KeyError`).

`pack_img` / `unpack_img` (JPEG/PNG coding through OpenCV in MXNet) are not provided: mixnet has no image codec
dependency. `pack` / `unpack` (the `IRHeader` label header) are.
"""
import numbers
import os
import struct
import threading
from collections import namedtuple

import numpy as np

from .base import MXNetError

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "MissingKeyError", "IRHeader", "pack", "unpack"]

_MAGIC = 0xced7230a
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_HEADER = struct.Struct("<II")
_MAX_LENGTH = (1 << 29) - 1


class MXRecordIO:
    """Reads or writes a sequence of byte records in MXNet's RecordIO format.

    uri: path of the ``.rec`` file. flag: ``'r'`` to read, ``'w'`` to write (truncates).
    """

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        self.flag = flag
        self.handle = None
        self.is_open = False
        self.pid = None
        self._lock = threading.Lock()
        self.open()

    # ---------------------------------------------------------------- life cycle
    def open(self):
        if self.flag == "w":
            mode = "wb"
            self.writable = True
        elif self.flag == "r":
            mode = "rb"
            self.writable = False
        else:
            raise ValueError(f"Invalid flag {self.flag!r}: expected 'r' or 'w'")
        try:
            # Writers are unbuffered (one write per record) so a forked child can never flush a copy of
            # the parent's buffer into the file.
            self.handle = open(self.uri, mode, buffering=0 if self.writable else -1)
        except OSError as err:
            raise MXNetError(f"RecordIO: cannot open {self.uri!r} for {'writing' if self.writable else 'reading'}: "
                             f"{err}") from None
        self.pid = os.getpid()
        self.is_open = True

    def close(self):
        if not self.is_open:
            return
        try:
            if self.pid == os.getpid() or not self.writable:
                self.handle.close()
        finally:
            self.is_open = False
            self.pid = None
            self.handle = None

    def reset(self):
        """Closes and reopens the file: a reader starts again from the first record."""
        self.close()
        self.open()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001  (interpreter shutdown)
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getstate__(self):
        # A pickled reader/writer reopens its file where it is unpickled (e.g. in a worker process).
        state = self.__dict__.copy()
        state["is_open"] = state["handle"] is not None
        state["handle"] = None
        state["pid"] = None
        state["_lock"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
        was_open = self.is_open
        self.is_open = False
        if was_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        """After a fork the child shares the parent's file offset: readers reopen, writers refuse."""
        if self.pid == os.getpid():
            return
        if allow_reset:
            # Closing the child's copy of the descriptor leaves the parent's open.
            try:
                self.handle.close()
            except OSError:
                pass
            self.handle = None
            self.is_open = False
            self.open()
        else:
            raise MXNetError("RecordIO: a writer cannot be used from a process other than the one that opened it")

    def _require_open(self):
        if not self.is_open:
            raise MXNetError(f"RecordIO: {self.uri!r} is closed")

    # ---------------------------------------------------------------- writing
    def write(self, buf):
        """Appends one record (bytes-like)."""
        self._require_open()
        if not self.writable:
            raise MXNetError(f"RecordIO: {self.uri!r} was opened for reading ('r'); cannot write")
        self._check_pid(allow_reset=False)
        buf = bytes(buf)
        if len(buf) > _MAX_LENGTH:
            raise MXNetError(f"RecordIO: a record holds at most {_MAX_LENGTH} bytes, got {len(buf)}")
        data = memoryview(_encode(buf))
        while data:
            data = data[self.handle.write(data):]

    def tell(self):
        self._require_open()
        return self.handle.tell()

    # ---------------------------------------------------------------- reading
    def read(self):
        """Returns the next record as bytes, or None at the end of the file."""
        self._require_open()
        if self.writable:
            raise MXNetError(f"RecordIO: {self.uri!r} was opened for writing ('w'); cannot read")
        self._check_pid(allow_reset=True)
        return _read_record(self.handle, self.uri)


def _encode(buf):
    """The bytes dmlc-core's RecordIOWriter writes for one record (split at aligned magic numbers)."""
    out = []
    length = len(buf)
    start = 0
    pos = buf.find(_MAGIC_BYTES)
    lower_align = length & ~3
    while pos != -1 and pos < lower_align:
        if pos % 4 == 0:
            cflag = 1 if start == 0 else 2
            out.append(_HEADER.pack(_MAGIC, (cflag << 29) | (pos - start)))
            out.append(buf[start:pos])
            start = pos + 4
            pos = buf.find(_MAGIC_BYTES, start)
        else:
            pos = buf.find(_MAGIC_BYTES, pos + 1)
    cflag = 3 if start != 0 else 0
    out.append(_HEADER.pack(_MAGIC, (cflag << 29) | (length - start)))
    out.append(buf[start:])
    pad = (-length) % 4
    if pad:
        out.append(b"\0" * pad)
    return b"".join(out)


def _file_size(handle):
    return os.fstat(handle.fileno()).st_size


def _read_record(handle, uri):
    size = _file_size(handle)
    parts = []
    first = True
    while True:
        offset = handle.tell()
        head = handle.read(_HEADER.size)
        if not head and first:
            return None
        if len(head) != _HEADER.size:
            raise MXNetError(f"Invalid RecordIO file {uri!r}: truncated record header at byte {offset}")
        magic, lrec = _HEADER.unpack(head)
        if magic != _MAGIC:
            raise MXNetError(f"Invalid RecordIO file {uri!r}: bad magic number 0x{magic:08x} at byte {offset} "
                             f"(expected 0x{_MAGIC:08x})")
        cflag, length = lrec >> 29, lrec & _MAX_LENGTH
        if first and cflag not in (0, 1):
            raise MXNetError(f"Invalid RecordIO file {uri!r}: record at byte {offset} is a continuation part "
                             f"(cflag {cflag}) with no start part")
        if not first and cflag not in (2, 3):
            raise MXNetError(f"Invalid RecordIO file {uri!r}: expected a continuation part at byte {offset}, "
                             f"got cflag {cflag}")
        padded = (length + 3) & ~3
        left = size - offset - _HEADER.size
        if padded > left:
            raise MXNetError(f"Invalid RecordIO file {uri!r}: record at byte {offset} claims {length} bytes but "
                             f"only {max(left, 0)} are left in the file")
        data = handle.read(padded)
        if len(data) != padded:
            raise MXNetError(f"Invalid RecordIO file {uri!r}: truncated record at byte {offset}")
        parts.append(data[:length])
        if cflag in (0, 3):
            break
        first = False
    return _MAGIC_BYTES.join(parts)


class MissingKeyError(MXNetError, KeyError):
    """`seek` / `read_idx` of a key the index does not hold (a KeyError, as in MXNet)."""

    __str__ = MXNetError.__str__  # the message as written, not KeyError's repr of it


class MXIndexedRecordIO(MXRecordIO):
    """RecordIO with random access through an index file (``key<TAB>offset`` lines).

    idx_path: the ``.idx`` file; uri: the ``.rec`` file; flag 'r' or 'w'; key_type converts keys read from
    the index (int by default).
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx = {}
        self.keys = []
        if self.writable:
            try:
                self.fidx = open(self.idx_path, "w", buffering=1)
            except OSError as err:
                raise MXNetError(f"RecordIO: cannot open index {self.idx_path!r} for writing: {err}") from None
            return
        self.fidx = None
        try:
            with open(self.idx_path, "rb") as f:
                raw = f.read()
        except OSError as err:
            raise MXNetError(f"RecordIO: cannot read index {self.idx_path!r}: {err}") from None
        try:
            lines = raw.decode("utf-8").split("\n")
        except UnicodeDecodeError as err:
            raise MXNetError(f"Invalid RecordIO index {self.idx_path!r}: not UTF-8 text at byte {err.start}") from None
        size = _file_size(self.handle)
        for lineno, line in enumerate(lines, 1):
            fields = line.strip().split("\t")
            if fields == [""]:
                continue
            try:
                if len(fields) != 2:
                    raise ValueError("expected 'key<TAB>offset'")
                key, pos = self.key_type(fields[0]), int(fields[1])
            except (ValueError, TypeError) as err:
                raise MXNetError(f"Invalid RecordIO index {self.idx_path!r} line {lineno}: {line.strip()!r} "
                                 f"({err})") from None
            if not 0 <= pos < max(size, 1):
                raise MXNetError(f"Invalid RecordIO index {self.idx_path!r} line {lineno}: offset {pos} is "
                                 f"outside {self.uri!r} ({size} bytes)")
            self.idx[key] = pos
            self.keys.append(key)

    def close(self):
        if not self.is_open:
            return
        try:
            super().close()
        finally:
            if self.fidx is not None:
                self.fidx.close()
                self.fidx = None

    def __getstate__(self):
        state = super().__getstate__()
        state["fidx"] = None
        return state

    def seek(self, idx):
        """Moves the reader to the record with key idx."""
        self._require_open()
        if self.writable:
            raise MXNetError("RecordIO: cannot seek in a writer")
        self._check_pid(allow_reset=True)
        try:
            pos = self.idx[idx]
        except (KeyError, TypeError):  # TypeError: an unhashable key
            raise MissingKeyError(f"RecordIO: key {idx!r} is not in the index {self.idx_path!r}") from None
        self.handle.seek(pos)

    def read_idx(self, idx):
        """Returns the record with key idx."""
        with self._lock:
            self.seek(idx)
            return self.read()

    def write_idx(self, idx, buf):
        """Appends a record under key idx and records its offset in the index."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """The header `pack` puts before a record's payload.

flag: 0 when label is one number, else the number of float32 labels stored after the header;
label: a number or an array of numbers; id, id2: two unsigned 64-bit ids."""
_IR_FORMAT = struct.Struct("<IfQQ")
_IR_SIZE = _IR_FORMAT.size


def pack(header, s):
    """Prefixes bytes s with an `IRHeader` (and with the float32 labels when label is an array)."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + bytes(s)
    try:
        head = _IR_FORMAT.pack(int(header.flag), float(header.label), int(header.id), int(header.id2))
    except struct.error as err:
        raise MXNetError(f"recordio.pack: bad header {header}: {err}") from None
    return head + bytes(s)


def unpack(s):
    """Splits a packed record into (IRHeader, payload bytes); an array label comes back as float32 numpy."""
    s = bytes(s)
    if len(s) < _IR_SIZE:
        raise MXNetError(f"recordio.unpack: record of {len(s)} bytes is shorter than the {_IR_SIZE}-byte header")
    header = IRHeader(*_IR_FORMAT.unpack(s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        nbytes = header.flag * 4
        if nbytes > len(s):
            raise MXNetError(f"recordio.unpack: header says {header.flag} float32 labels but only {len(s)} bytes "
                             f"follow it")
        header = header._replace(label=np.frombuffer(s[:nbytes], dtype=np.float32).copy())
        s = s[nbytes:]
    return header, s
