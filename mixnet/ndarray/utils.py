"""`nd.save` / `nd.load` / `nd.load_frombuffer`: NDArrays <-> MXNet's binary list format (serialization.py)."""
import numpy as np

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
    version = 3 if any(a.ndim == 0 for a in arrays) else 2
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


def load(fname, ctx=None):
    """Loads a list (file without names) or a dict (with names) of NDArrays."""
    arrays, names = serialization.load_file(fname)
    return _wrap_loaded(arrays, names, ctx)


def load_frombuffer(buf, ctx=None):
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise MXNetError(f"nd.load_frombuffer: expected bytes, got {type(buf).__name__}")
    arrays, names = serialization.decode(buf)
    return _wrap_loaded(arrays, names, ctx)
