"""`nd.save` / `nd.load` / `nd.load_frombuffer`: NDArrays <-> MXNet's binary list format (serialization.py)."""
import struct

import numpy as np

from .._shape_mode import is_np_shape
from ..base import MXNetError
from ..context import cpu
from .. import serialization
from .ndarray import NDArray, _wrap, array


def _flatten(data):
    if isinstance(data, NDArray):
        return [data], None
    if isinstance(data, dict):
        names = list(data)
        for key in names:
            if not isinstance(key, str):
                raise MXNetError(f"nd.save: dict keys must be strings, got {type(key).__name__}")
        arrays = [data[k] for k in names]
    elif isinstance(data, (list, tuple)):
        names, arrays = None, list(data)
    else:
        raise MXNetError(f"nd.save: expected an NDArray, a list or a dict of NDArrays, got {type(data).__name__}")
    for a in arrays:
        if not isinstance(a, NDArray):
            raise MXNetError(f"nd.save: every value must be an NDArray, got {type(a).__name__}")
    return arrays, names


def save(fname, data):
    """Saves an NDArray, a list or a str->NDArray dict in MXNet's format (byte-identical to MXNet 1.9.1).
    The file is written to a temporary name and renamed, so a crash never leaves a torn file."""
    arrays, names = _flatten(data)
    # np-shape mode writes MXNet's V3 records (0-d arrays exist there); a 0-d array needs them anyway
    version = 3 if is_np_shape() or any(a.ndim == 0 for a in arrays) else 2
    serialization.save_file(fname, [a.asnumpy() for a in arrays], names, version=version)


def _widen_bfloat16(a):
    """bfloat16 records (MXNet's structured uint16 dtype) load as float32, exactly: bfloat16 is float32's top half."""
    if a.dtype != serialization.DTYPE_CODES[12]:
        return a
    wide = a.view(np.uint16).astype(np.uint32)
    wide <<= 16     # in place: a load's peak memory stays the file's arrays plus one float32 copy
    return wide.view(np.float32)


def _wrap_loaded(arrays, names, ctx):
    ctx = ctx or cpu()
    result = []
    for a in arrays:
        if a is not None:
            a = _widen_bfloat16(a)
            # serialization returns fresh C-order arrays: on the host they become NDArrays without another copy
            a = _wrap(a, ctx) if ctx.device_type != "gpu" else array(a, ctx=ctx, dtype=a.dtype)
        result.append(a)
    if names is None:
        return result
    return dict(zip(names, result))


def _check_shape_semantics(head, arrays, what):
    """MXNet loads older records only outside np-shape mode, and np-shape (V3) records only in it: the two read
    a 0 dim and ndim 0 differently. mixnet reads V3 records in legacy mode too where nothing depends on that (no
    zero-size dimension: its legacy arrays may be 0-d). `head` is the file's first 28 bytes (list header and the
    first record's magic)."""
    if len(head) < 28 or struct.unpack_from("<Q", head)[0] != serialization.LIST_MAGIC:
        return
    v3 = struct.unpack_from("<I", head, 24)[0] == serialization.V3_MAGIC
    if v3 and not is_np_shape() and any(a is not None and 0 in a.shape for a in arrays):
        raise MXNetError(f"{what}: the arrays were saved in np shape semantics (with zero-size dimensions) and "
                         "must be loaded in them: use `with mx.np_shape(True):` (or the decorator "
                         "mx.use_np_shape) around the load")
    if not v3 and is_np_shape():
        raise MXNetError(f"{what}: the arrays were not saved in np shape semantics but are being loaded in them: "
                         "use `with mx.np_shape(False):` around the load")


def load(fname, ctx=None):
    """Loads a list (file without names) or a dict (with names) of NDArrays."""
    arrays, names = serialization.load_file(fname)
    with open(fname, "rb") as f:
        _check_shape_semantics(f.read(28), arrays, f"nd.load({fname!r})")
    return _wrap_loaded(arrays, names, ctx)


def load_frombuffer(buf, ctx=None):
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise MXNetError(f"nd.load_frombuffer: expected bytes, got {type(buf).__name__}")
    arrays, names = serialization.decode(buf)
    _check_shape_semantics(bytes(memoryview(buf).cast("B")[:28]), arrays, "nd.load_frombuffer")
    return _wrap_loaded(arrays, names, ctx)
