"""What `mx.nd` holds, but for its `sparse` submodule: NDArray and one function per registry op, with MXNet 1.x
names and semantics. It is built here, below the package, so that `mx.nd.sparse` can fall back to it (MXNet's
storage fallback: `nd.sparse.add` is `nd.add`) without importing the package that imports it."""
import numbers as _numbers

from .._shape_mode import legacy_shape_error as _legacy_shape_error
from ..base import MXNetError as _MXNetError
from . import _storage, ndarray  # noqa: F401  (mixnet.ndarray.ndarray is a module path MXNet code imports)
from .ndarray import (NDArray, array, empty, from_numpy, from_dlpack, to_dlpack_for_read,  # noqa: F401
                      to_dlpack_for_write, waitall, _STORAGE_TYPE_STR_TO_ID)
from .register import build_functions as _build_functions
from .utils import save, load, load_frombuffer  # noqa: F401

_build_functions(globals())

# MXNet's creation functions are the registry's hidden creation ops under their public names.
for _public, _op_name in {"arange": "_arange", "linspace": "_linspace", "eye": "_eye"}.items():
    globals()[_public] = globals()[_op_name]


def zeros(shape, ctx=None, dtype=None, stype=None, out=None, **kwargs):
    """An array of zeros (float32 unless dtype is given); `stype` 'row_sparse' / 'csr' gives an empty sparse one."""
    _check_legacy_shape("zeros", shape)
    if stype not in (None, "default"):
        if out is not None or kwargs:
            raise _MXNetError(f"zeros: stype={stype!r} takes no out= or other arguments")
        return _storage.zeros(stype, shape, ctx=ctx, dtype=dtype)
    return globals()["_zeros"](shape=shape, ctx=ctx, dtype=dtype, out=out, **kwargs)


def ones(shape, ctx=None, dtype=None, stype=None, out=None, **kwargs):
    _check_dense(stype)
    _check_legacy_shape("ones", shape)
    return globals()["_ones"](shape=shape, ctx=ctx, dtype=dtype, out=out, **kwargs)


def full(shape, val, ctx=None, dtype=None, out=None):
    """An array filled with `val` (MXNet's positional order: shape, val, ctx, dtype)."""
    _check_legacy_shape("full", shape)
    return globals()["_full"](shape=shape, value=val, ctx=ctx, dtype=dtype, out=out)


def _check_legacy_shape(what, shape):
    """MXNet 1.x's creation functions refuse a scalar or zero-size shape outside np-shape mode (there it reads
    as unknown); arrays of those shapes still come from nd.array, nd.empty and ops."""
    message = _legacy_shape_error(_np_shape_tuple(shape))
    if message:
        raise _MXNetError(f"nd.{what}: {message}")


def _np_shape_tuple(shape):
    return (shape,) if isinstance(shape, _numbers.Integral) else tuple(shape)


def onehot_encode(indices, out):
    """One-hot rows of `indices` written into `out` (n, depth) and returned (MXNet's deprecated form of one_hot)."""
    return globals()["_onehot_encode"](indices, out, out=out)


def concatenate(arrays, axis=0, always_copy=True):
    """Joins a list of arrays along `axis` (MXNet's deprecated form of concat); with always_copy=False a single
    array is returned as is."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise _MXNetError("concatenate: expected a non-empty list of NDArrays")
    if not always_copy and len(arrays) == 1:
        return arrays[0]
    return globals()["concat"](*arrays, dim=axis)


def _check_dense(stype):
    if stype not in (None, "default"):
        raise _MXNetError(f"stype {stype!r}: mixnet stores every array dense (use stype='default')")


from ..ops.histogram import histogram_function as _histogram_function  # noqa: E402

histogram = _histogram_function(NDArray, globals()["_histogram"])

from .._operator_table import BINARY as _BINARY, functional as _functional  # noqa: E402

for _name in _BINARY:       # nd.add, nd.maximum, nd.greater, ...: NDArrays or numbers on either side
    globals()[_name] = _functional(_name, NDArray, globals())
true_divide = globals()["divide"]

from . import random, linalg, contrib, _internal  # noqa: E402,F401
from .reset import reset_arrays  # noqa: E402,F401
from ..optimizer.update_ops import (sgd_update, sgd_mom_update, nag_mom_update, mp_sgd_update,  # noqa: E402,F401
                                    mp_sgd_mom_update, mp_nag_mom_update, adam_update, ftrl_update, ftml_update,
                                    signsgd_update, signum_update, rmsprop_update, rmspropalex_update)
from . import image  # noqa: E402,F401
from .fluent import attach_fluent_methods as _attach  # noqa: E402

_attach(globals())
from . import op  # noqa: E402,F401  (mxnet.ndarray.op: the public op functions)
