"""Foundations shared by every layer: errors, the dtype table, small helpers MXNet code imports.

Nothing here imports the rest of mixnet.
"""
import ctypes
import numbers
import os

import numpy as np

__all__ = ["MXNetError", "MXNetWarning", "InputDtypeWarning", "ScalarConversionError", "DTYPES", "dtype_np", "dtype_name", "py_str", "integer_types", "numeric_types",
           "string_types", "_as_list"]


class MXNetError(RuntimeError):
    """Every error mixnet raises on purpose derives from this (the name MXNet code catches)."""


# Error classes by name, as MXNet's `register_error` keeps them (code that maps error names to classes reads it).
error_types = {}


def register_error(func_name=None, cls=None):
    """Records an error class under its name (MXNet's decorator); returns the class unchanged."""
    if callable(func_name):
        func_name, cls = func_name.__name__, func_name

    def register(err_cls):
        error_types[func_name if isinstance(func_name, str) else err_cls.__name__] = err_cls
        return err_cls
    return register if cls is None else register(cls)


def _unsupported_message(function, alias, args, where):
    name = getattr(function, "__name__", function)
    msg = f"Function {name}"
    if alias:
        msg += f' (namely operator "{alias}")'
    if args:
        msg += " with arguments ({})".format(", ".join(str(type(a)) for a in args))
    return msg + where


@register_error
class NotImplementedForSymbol(MXNetError):
    """A call that needs array values (bool(), asnumpy(), ...) made on a Symbol, which has none.

    Signature as MXNet's: (function or its name, operator alias or None, *the arguments); `hint` adds advice."""

    def __init__(self, function, alias=None, *args, hint=""):
        self.function = getattr(function, "__name__", function)
        self.alias = alias
        super().__init__(_unsupported_message(function, alias, args,
                                              " is not implemented for Symbol and only available in NDArray."
                                              + (f" {hint}" if hint else "")))


@register_error
class NotSupportedForSparseNDArray(MXNetError):
    """A dense-only function called on a sparse NDArray (MXNet's signature: function, alias, *args)."""

    def __init__(self, function, alias=None, *args):
        self.function = getattr(function, "__name__", function)
        self.alias = alias
        super().__init__(_unsupported_message(function, alias, args,
                                              " is not supported for SparseNDArray and only available in NDArray."))


class _NullType:
    """The placeholder MXNet's generated op signatures use for "argument not given"."""

    def __repr__(self):
        return "_Null"


_Null = _NullType()

# MXNet's C-API scalar types and default real type; Python code written for MXNet imports these names.
mx_int = ctypes.c_int
mx_uint = ctypes.c_uint
mx_float = ctypes.c_float
mx_real_t = np.float32

# Operator-name prefixes of MXNet's registry (the mx.np / mx.npx families; see mixnet.numpy).
_OP_NAME_PREFIX_LIST = ["_contrib_", "_linalg_", "_sparse_", "_image_", "_random_"]
_NP_OP_PREFIX = "_np_"
_NP_OP_SUBMODULE_LIST = ["_random_", "_linalg_"]
_NP_EXT_OP_PREFIX = "_npx_"
_NP_EXT_OP_SUBMODULE_LIST = ["_image_", "_random_"]
_NP_INTERNAL_OP_PREFIX = "_npi_"


def data_dir_default():
    """Where MXNet keeps downloaded models and datasets unless MXNET_HOME says otherwise."""
    if os.name == "nt" and os.environ.get("APPDATA"):
        return os.path.join(os.environ["APPDATA"], "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir():
    """$MXNET_HOME, else data_dir_default()."""
    return os.getenv("MXNET_HOME", data_dir_default())


class OpError(MXNetError, ValueError):
    """Bad input to an operator: names the op, the shapes/dtypes involved and the user's source line."""


class OpIndexError(OpError, IndexError):
    """An operator's index out of bounds (gather_nd, take with mode='raise'): also an IndexError, the class
    MXNet raises for these."""


class MXNetWarning(UserWarning):
    """Every warning mixnet issues on purpose about its own state derives from this (filter it as a whole)."""


class InputDtypeWarning(MXNetWarning):
    """A float64 input to a block whose parameters are float32 (it then computes in float64), or attach_grad()
    on an integer array (its gradient is truncated to integers): MXNet's behaviour, kept, but said aloud."""


class ScalarConversionError(MXNetError, TypeError):
    """float()/int()/operator.index() of an NDArray that is not exactly one element (or, for an index, not an
    integer array): also a TypeError, what Python's conversions raise."""


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


_DTYPE_NAMES = {}


def dtype_name(dtype):
    """np.dtype(dtype).name, memoized: numpy computes `.name` in Python (~20 us on this machine), and the hot paths
    (call signatures, fast-path checks) ask for it on every call."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = np.dtype(dtype).name
    return name


def is_number(x):
    return isinstance(x, numbers.Number) or (isinstance(x, np.generic) and x.ndim == 0)
