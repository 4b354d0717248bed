"""Foundations shared by every layer: errors, the dtype table, small helpers MXNet code imports.

Nothing here imports the rest of mixnet.
"""
import numbers

import numpy as np

__all__ = ["MXNetError", "MXNetWarning", "DTYPES", "dtype_np", "dtype_name", "py_str", "integer_types", "numeric_types",
           "string_types", "_as_list"]


class MXNetError(RuntimeError):
    """Every error mixnet raises on purpose derives from this (the name MXNet code catches)."""


class OpError(MXNetError, ValueError):
    """Bad input to an operator: names the op, the shapes/dtypes involved and the user's source line."""


class MXNetWarning(UserWarning):
    """Every warning mixnet issues on purpose about its own state derives from this (filter it as a whole)."""


integer_types = (int, np.integer)
numeric_types = (float, int, np.generic)
string_types = (str,)


def py_str(x):
    return x.decode("utf-8") if isinstance(x, bytes) else x


def _as_list(obj):
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


# MXNet's dtype codes (mshadow TypeFlag): the order is the file format's and the symbol JSON's.
DTYPES = {
    "float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5, "int64": 6, "bool": 7,
    "int16": 8, "uint16": 9, "uint32": 10, "uint64": 11,
}
_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "int": "int32", "long": "int64",
            "bool_": "bool"}
DEFAULT_DTYPE = np.dtype(np.float32)
_DTYPE_CACHE = {}


def dtype_np(dtype):
    """Any dtype spelling users pass (np.float32, 'float32', np.dtype, 'float', None) -> np.dtype, cached."""
    if dtype is None:
        return DEFAULT_DTYPE
    try:
        return _DTYPE_CACHE[dtype]
    except (KeyError, TypeError):
        pass
    name = _ALIASES.get(dtype, dtype) if isinstance(dtype, str) else dtype
    try:
        result = np.dtype(name)
    except TypeError as err:
        raise MXNetError(f"unknown dtype {dtype!r}") from err
    if result.name not in DTYPES:
        raise MXNetError(f"dtype {result.name} is not supported (supported: {', '.join(DTYPES)})")
    try:
        _DTYPE_CACHE[dtype] = result
    except TypeError:
        pass
    return result


def dtype_name(dtype):
    return dtype_np(dtype).name


def is_number(x):
    return isinstance(x, numbers.Number) or (isinstance(x, np.generic) and x.ndim == 0)
