"""MXNet's binary NDArray list format (``nd.save`` / ``nd.load`` / ``.params`` files), in numpy.

The byte layout (MXNet's ``NDArray::Save`` / ``Load``, src/ndarray/ndarray.cc)::

    u64 0x112 | u64 0 | u64 n_arrays | record * n_arrays | u64 n_names | string * n_names

and each record is (V2 / V3)::

    u32 magic | i32 stype | [shape storage_shape] | shape | i32 dev_type | i32 dev_id
    | i32 dtype | [(i32 aux_dtype, shape aux_shape) * n_aux] | data | [aux data * n_aux]

with ``shape = i32 ndim, i64 dims[ndim]``, everything little-endian and unpadded.

The reader treats its input as hostile: every read is bounds-checked, every size is
checked against the bytes that are actually left before anything is allocated, and
every failure is an :class:`MXNetError` that says what is wrong and at which offset.
Nothing here unpickles or evaluates anything.

What a load allocates is bounded by the file: dense records are copies of bytes that
are in it; sparse (row_sparse / csr) records load as dense arrays, and since their dense
size is not bounded by the bytes they hold, the dense sizes of all sparse records of a
file may add up to at most ``max(SPARSE_DENSE_MIN_BYTES, SPARSE_EXPANSION x file bytes)``
(64 MiB, 1024 x) - a file asking for more is refused, naming the record and the sizes.
"""
import os
import struct

import numpy as np

from ._atomic import write_atomic
from .base import MXNetError

__all__ = ["DTYPE_CODES", "dtype_code", "encode", "decode", "save_file", "load_file"]

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8   # i64 dims, no stype
V2_MAGIC = 0xF993FAC9   # + stype; ndim 0 means "none"   (nd.save)
V3_MAGIC = 0xF993FACA   # np-shape: ndim 0 is a scalar, -1 is "none"   (npx.save)
_VERSION_OF_MAGIC = {V1_MAGIC: 1, V2_MAGIC: 2, V3_MAGIC: 3}
_MAGIC_OF_VERSION = {2: V2_MAGIC, 3: V3_MAGIC}

STYPE_DENSE, STYPE_ROW_SPARSE, STYPE_CSR = 0, 1, 2
_STYPE_NAMES = {STYPE_DENSE: "default", STYPE_ROW_SPARSE: "row_sparse", STYPE_CSR: "csr"}
_N_AUX = {STYPE_DENSE: 0, STYPE_ROW_SPARSE: 1, STYPE_CSR: 2}

DEV_CPU = 1
_DEV_TYPES = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}

MAX_NDIM = 32
# mixnet stores every array dense.  A sparse record's stored data is bounded by the file
# size, but its dense form is not: 144 bytes can describe a (1, 2**30) csr matrix.  So the
# dense bytes of all sparse records of one file together may be at most
#     max(SPARSE_DENSE_MIN_BYTES, SPARSE_EXPANSION * file bytes)
# and a file that asks for more is refused before anything is densified.  Both are module
# attributes, so a program that trusts its files can raise them.
SPARSE_DENSE_MIN_BYTES = 64 << 20
SPARSE_EXPANSION = 1024

# MXNet 1.x Python represents bfloat16 as this structured dtype (raw 16-bit patterns).
BFLOAT16 = np.dtype([("bfloat16", np.uint16)])

# mshadow TypeFlag -> numpy dtype (all little-endian, as in the file).
DTYPE_CODES = {
    0: np.dtype("<f4"),
    1: np.dtype("<f8"),
    2: np.dtype("<f2"),
    3: np.dtype("u1"),
    4: np.dtype("<i4"),
    5: np.dtype("i1"),
    6: np.dtype("<i8"),
    7: np.dtype("?"),
    8: np.dtype("<i2"),
    9: np.dtype("<u2"),
    10: np.dtype("<u4"),
    11: np.dtype("<u8"),
    12: BFLOAT16,
}
_CODE_OF_DTYPE = {dt: code for code, dt in DTYPE_CODES.items()}
_INTEGER_CODES = {3, 4, 5, 6, 8, 9, 10, 11}  # allowed as sparse index (aux) types

_I64_MAX = (1 << 63) - 1


def dtype_code(np_dtype):
    """The MXNet dtype code of a numpy dtype; raises MXNetError if MXNet has none."""
    try:
        dt = np.dtype(np_dtype)
    except (TypeError, ValueError) as e:
        raise MXNetError("unsupported dtype %r: %s" % (np_dtype, e)) from None
    if dt.byteorder == ">":  # same type, other byte order: the writer converts it
        dt = dt.newbyteorder("<")
    code = _CODE_OF_DTYPE.get(dt)
    if code is None and dt.name == "bfloat16" and dt.itemsize == 2:
        code = 12  # e.g. ml_dtypes.bfloat16: same bits as MXNet's bfloat16
    if code is None:
        raise MXNetError("unsupported dtype %s: MXNet files hold only %s" % (
            dt, ", ".join(str(d) if c != 12 else "bfloat16" for c, d in DTYPE_CODES.items())))
    return code


# --------------------------------------------------------------------------------------
# Writer
# --------------------------------------------------------------------------------------

def _pack_shape(shape):
    return struct.pack("<i%dq" % len(shape), len(shape), *shape)


def _encode_record(index, arr, version):
    """One dense V2/V3 record, byte-identical to MXNet's NDArray::Save."""
    if not isinstance(arr, (np.ndarray, np.generic)):
        raise MXNetError("nd.save: item %d is %s, expected a numpy.ndarray"
                         % (index, type(arr).__name__))
    arr = np.asarray(arr)
    code = dtype_code(arr.dtype)
    if arr.ndim == 0 and version == 2:
        # In V2 records ndim 0 is the "none" marker, so a scalar would load as None.
        raise MXNetError("nd.save: item %d is a 0-d array, which the V2 format (nd.save) "
                         "cannot represent; reshape it to (1,) or save with version=3 "
                         "(npx.save)" % index)
    if arr.ndim > MAX_NDIM:
        raise MXNetError("nd.save: item %d has %d dimensions, more than %d"
                         % (index, arr.ndim, MAX_NDIM))
    # The file is little-endian; byte-swap big-endian input (bfloat16 is kept as raw bits).
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    header = struct.pack("<Ii", _MAGIC_OF_VERSION[version], STYPE_DENSE)
    ctx_dtype = struct.pack("<iii", DEV_CPU, 0, code)
    return b"".join((header, _pack_shape(arr.shape), ctx_dtype, arr.tobytes(order="C")))


def _encode_name(index, name):
    if not isinstance(name, str):
        raise MXNetError("nd.save: name %d is %s, expected str" % (index, type(name).__name__))
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError as e:
        raise MXNetError("nd.save: name %d (%r) cannot be encoded as UTF-8: %s"
                         % (index, name, e)) from None
    return struct.pack("<Q", len(raw)) + raw


def encode(arrays, names=None, version=2):
    """Serialize numpy arrays as an MXNet NDArray list file and return the bytes.

    ``names=None`` writes a list file; a list of str writes a dict file (names in
    order).  ``version=2`` is ``mx.nd.save``; ``version=3`` is ``mx.npx.save`` and is
    needed for 0-d arrays.  Only dense records are written.
    """
    if version not in _MAGIC_OF_VERSION:
        raise MXNetError("nd.save: version must be 2 (nd.save) or 3 (npx.save), got %r"
                         % (version,))
    if isinstance(arrays, (np.ndarray, np.generic)):
        arrays = [arrays]  # like nd.save: a single array is a list of one
    arrays = list(arrays)
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    parts.extend(_encode_record(i, a, version) for i, a in enumerate(arrays))
    if names is None:
        parts.append(struct.pack("<Q", 0))
    else:
        names = list(names)
        if len(names) != len(arrays):
            raise MXNetError("nd.save: %d names for %d arrays" % (len(names), len(arrays)))
        parts.append(struct.pack("<Q", len(names)))
        parts.extend(_encode_name(i, n) for i, n in enumerate(names))
    return b"".join(parts)


# --------------------------------------------------------------------------------------
# Reader
# --------------------------------------------------------------------------------------

class _Reader:
    """A cursor over the input bytes; every read checks that the bytes are there."""

    def __init__(self, buf):
        self.buf = buf
        self.pos = 0

    @property
    def left(self):
        return len(self.buf) - self.pos

    def fail(self, msg, at=None):
        raise MXNetError("nd.load: %s at offset %d" % (msg, self.pos if at is None else at))

    def take(self, n, what):
        """The next ``n`` bytes (a memoryview, no copy)."""
        if n > self.left:
            raise MXNetError("nd.load: truncated file: %s needs %d bytes at offset %d, "
                             "only %d remain" % (what, n, self.pos, self.left))
        view = self.buf[self.pos:self.pos + n]
        self.pos += n
        return view

    def _unpack(self, fmt, size, what):
        return struct.unpack("<" + fmt, self.take(size, what))[0]

    def u32(self, what):
        return self._unpack("I", 4, what)

    def i32(self, what):
        return self._unpack("i", 4, what)

    def u64(self, what):
        return self._unpack("Q", 8, what)

    def i64(self, what):
        return self._unpack("q", 8, what)


def _read_shape(r, what, allow_none_marker=False):
    """``i32 ndim, i64 dims``.  Returns (dims, is_none): V3 marks "none" with ndim -1 or
    with any dim -1 (the whole shape is still written, so all dims are read)."""
    at = r.pos
    ndim = r.i32(what + " ndim")
    if ndim == -1 and allow_none_marker:
        return None, True
    if not 0 <= ndim <= MAX_NDIM:
        r.fail("%s has ndim %d, expected 0..%d" % (what, ndim, MAX_NDIM), at)
    dims = []
    for i in range(ndim):
        at = r.pos
        d = r.i64("%s dim %d" % (what, i))
        if d < 0 and not (d == -1 and allow_none_marker):
            r.fail("%s dim %d is negative (%d)" % (what, i, d), at)
        dims.append(d)
    if -1 in dims:
        return None, True
    return tuple(dims), False


def _read_legacy_shape(r, ndim, what, at):
    """Pre-V1 records: the ndim (already read) is followed by u32 dims."""
    if ndim > MAX_NDIM:
        r.fail("%s: unknown record magic 0x%08X (read as a legacy ndim it exceeds %d)"
               % (what, ndim, MAX_NDIM), at)
    return tuple(r.u32("%s dim %d" % (what, i)) for i in range(ndim))


def _checked_nbytes(r, shape, dtype, what, at):
    """``itemsize * prod(shape)``, refusing sizes numpy could not even describe."""
    nonzero = 1
    for d in shape:
        if d:
            nonzero *= d
            if nonzero * dtype.itemsize > _I64_MAX:
                r.fail("%s shape %s is too large" % (what, shape), at)
    return 0 if 0 in shape else nonzero * dtype.itemsize


def _read_dtype(r, what):
    at = r.pos
    code = r.i32(what)
    if code not in DTYPE_CODES:
        r.fail("%s: unknown dtype code %d (known: 0..12)" % (what, code), at)
    return code


def _read_ctx(r, what):
    """The record's device, as (type name, id): only a hint; files always load on the host."""
    at = r.pos
    dev_type = r.i32(what + " dev_type")
    dev_id = r.i32(what + " dev_id")
    if dev_type not in _DEV_TYPES:
        r.fail("%s: unknown device type %d" % (what, dev_type), at)
    return _DEV_TYPES[dev_type], dev_id


def _read_data(r, shape, dtype, what, at):
    """Copy ``prod(shape)`` items out of the buffer into a fresh C-order array."""
    nbytes = _checked_nbytes(r, shape, dtype, what, at)
    if nbytes > r.left:
        raise MXNetError("nd.load: truncated file: %s needs %d data bytes at offset %d, "
                         "only %d remain" % (what, nbytes, r.pos, r.left))
    raw = r.take(nbytes, what + " data")
    if dtype.kind == "b":  # any non-zero byte is True; keep numpy bools canonical (0/1)
        return np.frombuffer(raw, dtype=np.uint8).reshape(shape) != 0
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _read_dense_body(r, shape, what, at):
    _read_ctx(r, what)
    dtype = DTYPE_CODES[_read_dtype(r, what + " dtype")]
    return _read_data(r, shape, dtype, what, at)


class _SparseRecord:
    """A validated sparse record, densified by :func:`decode` once the whole file has been
    read and the total dense size of its sparse records is known to be within bounds."""

    def __init__(self, stype, shape, data, aux, what, at):
        self.stype, self.shape, self.data, self.aux, self.what, self.at = stype, shape, data, aux, what, at
        # nd.load widens bfloat16 to float32, so count what that allocates.  (< 2**64: the
        # reader checked prod(shape) * itemsize < 2**63.)
        self.dense_nbytes = _prod(shape) * (4 if data.dtype == BFLOAT16 else data.dtype.itemsize)

    def densify(self, r):
        if self.stype == STYPE_ROW_SPARSE:
            return _densify_row_sparse(r, self.data, self.aux[0], self.shape, self.what, self.at)
        return _densify_csr(r, self.data, self.aux[0], self.aux[1], self.shape, self.what, self.at)


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _read_sparse_body(r, stype, storage_shape, shape, what, at):
    """row_sparse / csr: read data and aux arrays; returns a :class:`_SparseRecord`."""
    _read_ctx(r, what)
    dtype = DTYPE_CODES[_read_dtype(r, what + " dtype")]
    aux_info = []
    for k in range(_N_AUX[stype]):
        aux_at = r.pos
        code = _read_dtype(r, "%s aux %d dtype" % (what, k))
        if code not in _INTEGER_CODES:
            r.fail("%s aux %d has non-integer dtype %s" % (what, k, DTYPE_CODES[code]), aux_at)
        aux_shape, _ = _read_shape(r, "%s aux %d shape" % (what, k))
        aux_info.append((DTYPE_CODES[code], aux_shape, aux_at))
    _check_sparse_shapes(r, stype, storage_shape, shape, aux_info, what, at)
    _checked_nbytes(r, shape, dtype, what, at)  # the dense shape must at least be describable
    data = _read_data(r, storage_shape, dtype, what, at)
    aux = [_read_data(r, s, dt, "%s aux %d" % (what, k), a)
           for k, (dt, s, a) in enumerate(aux_info)]
    return _SparseRecord(stype, shape, data, aux, what, at)


def _check_sparse_budget(records, names, file_nbytes):
    """Refuse a file whose sparse records would densify far beyond its own size (see
    SPARSE_DENSE_MIN_BYTES), before any of them is densified."""
    limit = max(SPARSE_DENSE_MIN_BYTES, SPARSE_EXPANSION * file_nbytes)
    total = 0
    for i, rec in enumerate(records):
        if not isinstance(rec, _SparseRecord):
            continue
        total += rec.dense_nbytes
        if total > limit:
            name = " (%r)" % names[i] if names else ""
            earlier = total - rec.dense_nbytes
            raise MXNetError(
                "nd.load: %s%s at offset %d: the %s array of shape %s and dtype %s needs %d bytes "
                "dense (mixnet stores every array dense)%s; the limit for a file of %d bytes is %d "
                "bytes (max(%d, %d x file size); raise mixnet.serialization.SPARSE_DENSE_MIN_BYTES "
                "to load it)" % (rec.what, name, rec.at, _STYPE_NAMES[rec.stype], rec.shape,
                                 _dtype_name(rec.data.dtype), rec.dense_nbytes,
                                 ", %d with the earlier sparse records" % total if earlier else "",
                                 file_nbytes, limit, SPARSE_DENSE_MIN_BYTES, SPARSE_EXPANSION))


def _dtype_name(dt):
    return "bfloat16" if dt == BFLOAT16 else str(dt)


def _check_sparse_shapes(r, stype, storage_shape, shape, aux_info, what, at):
    aux_shapes = [s for _, s, _ in aux_info]
    if stype == STYPE_ROW_SPARSE:
        ok = (len(shape) >= 1 and len(storage_shape) == len(shape)
              and storage_shape[1:] == shape[1:] and storage_shape[0] <= shape[0]
              and aux_shapes[0] == storage_shape[:1])
        expect = "storage_shape (nnz_rows,) + shape[1:] and indices (nnz_rows,)"
    else:
        ok = (len(shape) == 2 and len(storage_shape) == 1
              and aux_shapes[0] == (shape[0] + 1,) and aux_shapes[1] == storage_shape)
        expect = "a 2-d shape, storage_shape (nnz,), indptr (rows+1,) and indices (nnz,)"
    if not ok:
        r.fail("%s: inconsistent %s layout: shape %s, storage_shape %s, aux shapes %s; "
               "expected %s" % (what, _STYPE_NAMES[stype], shape, storage_shape,
                                aux_shapes, expect), at)


def _densify_row_sparse(r, data, indices, shape, what, at):
    rows = shape[0]
    idx = indices.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= rows):
        r.fail("%s: row_sparse row index out of range [0, %d)" % (what, rows), at)
    if np.unique(idx).size != idx.size:
        r.fail("%s: row_sparse row indices are not unique" % what, at)
    out = np.zeros(shape, dtype=data.dtype)
    out[idx] = data
    return out


def _densify_csr(r, data, indptr, indices, shape, what, at):
    rows, cols = shape
    nnz = data.shape[0]
    ptr = indptr.astype(np.int64)
    if ptr[0] != 0 or ptr[-1] != nnz or np.any(np.diff(ptr) < 0):
        r.fail("%s: csr indptr must rise monotonically from 0 to nnz=%d" % (what, nnz), at)
    col = indices.astype(np.int64)
    if col.size and (col.min() < 0 or col.max() >= cols):
        r.fail("%s: csr column index out of range [0, %d)" % (what, cols), at)
    row = np.repeat(np.arange(rows, dtype=np.int64), np.diff(ptr))
    flat = row * cols + col
    if np.unique(flat).size != flat.size:
        r.fail("%s: csr has duplicate (row, column) entries" % what, at)
    out = np.zeros(shape, dtype=data.dtype)
    out.reshape(-1)[flat] = data
    return out


def _read_record(r, index):
    """One record of any version; returns a numpy array, or None for a "none" record."""
    what = "record %d" % index
    at = r.pos
    magic = r.u32(what + " magic")
    version = _VERSION_OF_MAGIC.get(magic, 0)
    if version == 0:  # legacy (pre-V1): the first u32 was ndim, dims are u32
        shape = _read_legacy_shape(r, magic, what, at)
        return None if not shape else _read_dense_body(r, shape, what, at)
    stype = STYPE_DENSE
    if version >= 2:
        stype_at = r.pos
        stype = r.i32(what + " stype")
        if stype not in _STYPE_NAMES:
            r.fail("%s: unknown storage type %d" % (what, stype), stype_at)
        if stype != STYPE_DENSE and version == 3:
            r.fail("%s: V3 (np-shape) records cannot be sparse" % what, stype_at)
    storage_shape = None
    if stype != STYPE_DENSE:
        storage_shape, _ = _read_shape(r, what + " storage_shape")
    shape, none_marker = _read_shape(r, what + " shape", allow_none_marker=(version == 3))
    # "none" arrays stop right after the shape.  Only V3 has real 0-d arrays: V2 says
    # ndim 0 for "none", and so did the V1 and legacy writers (which wrote nothing after
    # the shape of a none array).  MXNet 1.9.1's reader instead reads a V1/legacy ndim 0
    # as a 0-d array; no writer ever produced that, so we follow the writers.
    if none_marker or (version < 3 and not shape):
        return None
    if stype == STYPE_DENSE:
        return _read_dense_body(r, shape, what, at)
    return _read_sparse_body(r, stype, storage_shape, shape, what, at)


def _read_names(r, n_arrays):
    at = r.pos
    n_names = r.u64("name count")
    if n_names not in (0, n_arrays):
        r.fail("name count %d must be 0 or the array count %d" % (n_names, n_arrays), at)
    names = []
    for i in range(n_names):
        at = r.pos
        length = r.u64("name %d length" % i)
        raw = r.take(length, "name %d" % i)
        try:
            names.append(bytes(raw).decode("utf-8"))
        except UnicodeDecodeError as e:
            r.fail("name %d is not valid UTF-8 (%s)" % (i, e.reason), at)
    return names if n_names else None


def _as_bytes_view(buf):
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise MXNetError("nd.load: expected bytes, bytearray or memoryview, got %s"
                         % type(buf).__name__)
    view = memoryview(buf)
    if not view.c_contiguous:
        raise MXNetError("nd.load: the input buffer is not contiguous")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def decode(buf):
    """Parse an MXNet NDArray list file.

    Returns ``(arrays, names)``: a list of fresh numpy arrays (``None`` for a "none"
    record; sparse records come back dense, within the bound in the module docstring) and
    a list of str, or ``None`` for a list file.  Reads legacy, V1, V2 and V3 records.
    Raises MXNetError on any malformed input.
    """
    r = _Reader(_as_bytes_view(buf))
    magic = r.u64("header magic")
    if magic != LIST_MAGIC:
        r.fail("Invalid NDArray file format: magic 0x%X, expected 0x112" % magic, 0)
    r.u64("header reserved field")  # MXNet ignores it too
    at = r.pos
    n_arrays = r.u64("array count")
    if n_arrays * 4 > r.left:  # every record is at least its 4-byte magic / ndim
        r.fail("array count %d cannot fit in the %d bytes left" % (n_arrays, r.left), at)
    try:
        records = [_read_record(r, i) for i in range(n_arrays)]
        names = _read_names(r, n_arrays)
        if r.left:
            r.fail("%d bytes of trailing garbage after the names" % r.left)
        _check_sparse_budget(records, names, len(r.buf))
        arrays = [rec.densify(r) if isinstance(rec, _SparseRecord) else rec for rec in records]
    except MemoryError:  # sizes are checked first, so this means the host is short
        raise MXNetError("nd.load: out of memory loading the arrays of %d bytes of input"
                         % len(r.buf)) from None
    return arrays, names


# --------------------------------------------------------------------------------------
# One array as raw bytes (MXNDArraySaveRawBytes): what MXNet's NDArray pickles hold
# --------------------------------------------------------------------------------------

def encode_raw(arr, device=("cpu", 0)):
    """One dense record (no list header, no names): the bytes MXNet pickles as an NDArray's 'handle'.
    V2 as nd.save writes, V3 for a 0-d array (V2's ndim 0 means "none")."""
    record = _encode_record(0, arr, 3 if np.ndim(arr) == 0 else 2)
    dev_code = {name: code for code, name in _DEV_TYPES.items()}[device[0]]
    at = 8 + 4 + 8 * np.ndim(arr)  # magic + stype, then the shape: the device follows
    return record[:at] + struct.pack("<ii", dev_code, device[1]) + record[at + 8:]


def decode_raw(buf):
    """Parse one dense record made by `encode_raw` or by MXNet; returns (numpy array, (device type, id))."""
    r = _Reader(_as_bytes_view(buf))
    at = r.pos
    magic = r.u32("record magic")
    if magic not in (V2_MAGIC, V3_MAGIC):
        r.fail("an NDArray's raw bytes must start with the V2/V3 magic, got 0x%X" % magic, at)
    if r.i32("record stype") != STYPE_DENSE:
        r.fail("only dense arrays can be restored from raw bytes", at + 4)
    shape, none_marker = _read_shape(r, "record shape", allow_none_marker=(magic == V3_MAGIC))
    if none_marker or (magic == V2_MAGIC and not shape):
        r.fail("the raw bytes hold an empty ('none') array", at)
    device = _read_ctx(r, "record")
    dtype = DTYPE_CODES[_read_dtype(r, "record dtype")]
    data = _read_data(r, shape, dtype, "record", at)
    if r.left:
        r.fail("%d bytes of trailing garbage after the array" % r.left)
    return data, device


# --------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------

def save_file(path, arrays, names=None, version=2):
    """Write ``encode(arrays, names, version)`` to ``path`` atomically and durably.

    The bytes go to a temporary file in the same directory, which is fsynced and renamed
    over ``path`` (mixnet/_atomic.py, which also removes temporary files that killed
    writers left behind); on any error an existing ``path`` is left untouched.
    """
    path = os.fspath(path)
    data = encode(arrays, names, version)  # fail before touching the file system
    try:
        write_atomic(path, data, durable=True)
    except OSError as e:
        raise MXNetError("nd.save: cannot write %r: %s" % (path, e)) from e


def load_file(path):
    """Read an MXNet NDArray list file; returns ``(arrays, names)`` as :func:`decode`."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read(8)
            # Check the magic before reading on, so that a device or pipe that never ends
            # (nd.load("/dev/zero")) fails at once instead of filling the memory.
            if data == struct.pack("<Q", LIST_MAGIC):
                data += f.read()
    except FileNotFoundError:
        raise MXNetError("nd.load: no such file: %r" % path) from None
    except OSError as e:
        raise MXNetError("nd.load: cannot read %r: %s" % (path, e)) from e
    try:
        return decode(data)
    except MXNetError as e:
        raise MXNetError("%s (in %r)" % (e, path)) from None
