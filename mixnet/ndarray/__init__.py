"""`mx.nd`: NDArray and one function per registry op, with MXNet 1.x names and semantics."""
import numbers as _numbers

from .._shape_mode import legacy_shape_error as _legacy_shape_error
from ..base import MXNetError as _MXNetError
from . import ndarray  # noqa: F401  (mixnet.ndarray.ndarray is a module path MXNet code imports)
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
        return sparse.zeros(stype, shape, ctx=ctx, dtype=dtype)
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


def _scalar_or_array(array_op, scalar_op, rscalar_op, python_fn):
    """The functional forms (nd.add, nd.maximum, ...) accept NDArrays and Python scalars on either side."""
    def function(lhs, rhs):
        lhs_nd, rhs_nd = isinstance(lhs, NDArray), isinstance(rhs, NDArray)
        if lhs_nd and rhs_nd:
            return globals()[array_op](lhs, rhs)
        if lhs_nd:
            return globals()[scalar_op](lhs, scalar=float(rhs))
        if rhs_nd:
            return globals()[rscalar_op](rhs, scalar=float(lhs))
        if isinstance(lhs, _numbers.Number) and isinstance(rhs, _numbers.Number):
            return python_fn(lhs, rhs)
        raise TypeError(f"{array_op}: expected NDArrays or numbers, got {type(lhs).__name__} and "
                        f"{type(rhs).__name__}")
    function.__name__ = array_op.replace("broadcast_", "")
    return function


from ..ops.histogram import histogram_function as _histogram_function  # noqa: E402

histogram = _histogram_function(NDArray, globals()["_histogram"])

import builtins as _builtins  # noqa: E402  (the op functions above shadow max and min)
import operator as _operator  # noqa: E402

add = _scalar_or_array("broadcast_add", "_plus_scalar", "_plus_scalar", _operator.add)
subtract = _scalar_or_array("broadcast_sub", "_minus_scalar", "_rminus_scalar", _operator.sub)
multiply = _scalar_or_array("broadcast_mul", "_mul_scalar", "_mul_scalar", _operator.mul)
divide = true_divide = _scalar_or_array("broadcast_div", "_div_scalar", "_rdiv_scalar", _operator.truediv)
modulo = _scalar_or_array("broadcast_mod", "_mod_scalar", "_rmod_scalar", _operator.mod)
power = _scalar_or_array("broadcast_power", "_power_scalar", "_rpower_scalar", _operator.pow)
maximum = _scalar_or_array("broadcast_maximum", "_maximum_scalar", "_maximum_scalar", _builtins.max)
minimum = _scalar_or_array("broadcast_minimum", "_minimum_scalar", "_minimum_scalar", _builtins.min)
hypot = _scalar_or_array("broadcast_hypot", "_hypot_scalar", "_hypot_scalar", lambda a, b: (a * a + b * b) ** .5)
equal = _scalar_or_array("broadcast_equal", "_equal_scalar", "_equal_scalar", _operator.eq)
not_equal = _scalar_or_array("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar", _operator.ne)
greater = _scalar_or_array("broadcast_greater", "_greater_scalar", "_lesser_scalar", _operator.gt)
greater_equal = _scalar_or_array("broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar",
                                 _operator.ge)
lesser = _scalar_or_array("broadcast_lesser", "_lesser_scalar", "_greater_scalar", _operator.lt)
lesser_equal = _scalar_or_array("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar",
                                _operator.le)
logical_and = _scalar_or_array("broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar",
                               lambda a, b: float(bool(a) and bool(b)))
logical_or = _scalar_or_array("broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar",
                              lambda a, b: float(bool(a) or bool(b)))
logical_xor = _scalar_or_array("broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar",
                               lambda a, b: float(bool(a) != bool(b)))

from . import random, linalg, contrib, sparse, _internal  # noqa: E402,F401
from .cached_op import CachedOp  # noqa: E402,F401
from .reset import reset_arrays  # noqa: E402,F401
from ..optimizer.update_ops import (sgd_update, sgd_mom_update, nag_mom_update, mp_sgd_update,  # noqa: E402,F401
                                    mp_sgd_mom_update, mp_nag_mom_update, adam_update, ftrl_update, ftml_update,
                                    signsgd_update, signum_update, rmsprop_update, rmspropalex_update)
from . import image  # noqa: E402,F401
from .fluent import attach_fluent_methods as _attach  # noqa: E402

_attach(globals())
from . import op  # noqa: E402,F401  (mxnet.ndarray.op: the public op functions)
