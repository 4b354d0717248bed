"""`mx.nd.sparse`: constructors of MXNet's sparse arrays (`csr_matrix`, `row_sparse_array`, `zeros`, `empty`,
`array`), `retain`, `dot`, and the storage classes (see `_storage.py` for how they are stored).

Any other op name reached through this namespace is the dense op of `mx.nd`: it takes sparse inputs and returns a
dense result (MXNet's storage fallback)."""
import numpy as np

from ..base import MXNetError
from ..context import current_context
from ._storage import (BaseSparseNDArray, CSRNDArray, RowSparseNDArray, check_stype, csr as _csr,  # noqa: F401
                       retain, row_sparse as _row_sparse, zeros as _zeros)
from . import _namespace, op as _op
from .ndarray import NDArray, array as _dense_array

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix", "row_sparse_array", "zeros",
           "empty", "array", "retain", "dot"]


def _host(x):
    return x.asnumpy() if isinstance(x, NDArray) else np.asarray(x)


def _dtype_of(source, dtype):
    """MXNet's default: the source's dtype for an NDArray / numpy array, float32 for anything else."""
    if dtype is not None:
        return dtype
    if isinstance(source, NDArray):
        return source.dtype
    if isinstance(source, np.ndarray):
        return source.dtype
    return np.float32


def _is_shape(arg):
    return isinstance(arg, tuple) and all(isinstance(d, (int, np.integer)) for d in arg)


def _scipy_csr(arg):
    try:
        import scipy.sparse as spsp
    except ImportError:
        return None
    return arg.tocsr() if spsp.issparse(arg) else None


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """A CSRNDArray from `(data, indices, indptr)`, `(data, (row, col))`, a shape `(M, N)` (all zeros), a
    scipy sparse matrix, a CSRNDArray or any 2-D dense array-like."""
    ctx = ctx or current_context()
    if _is_shape(arg1) and len(arg1) == 2:
        return _zeros("csr", arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        if shape is None:
            raise MXNetError("csr_matrix: shape is required with (data, indices, indptr)")
        data, indices, indptr = (_host(a) for a in arg1)
        return _csr(data, indices, indptr, shape, ctx, _dtype_of(arg1[0], dtype))
    if isinstance(arg1, tuple) and len(arg1) == 2:          # COO: (data, (row, col))
        data, (row, col) = _host(arg1[0]), arg1[1]
        row, col = _host(row).astype(np.int64), _host(col).astype(np.int64)
        if shape is None:
            shape = (int(row.max()) + 1 if row.size else 0, int(col.max()) + 1 if col.size else 0)
        dense = np.zeros(shape, dtype=_dtype_of(arg1[0], dtype))
        np.add.at(dense, (row, col), data)
        return _dense_array(dense, ctx=ctx, dtype=dense.dtype).tostype("csr")
    sp = _scipy_csr(arg1)
    if sp is not None:
        sp.sort_indices()
        return _csr(sp.data, sp.indices, sp.indptr, sp.shape, ctx, dtype if dtype is not None else sp.dtype)
    return _from_array(arg1, CSRNDArray, "csr", "csr_matrix", ctx, dtype)


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A RowSparseNDArray from `(data, indices)` (rows `indices` hold `data`), a shape (all zeros), a
    RowSparseNDArray or any dense array-like (its nonzero rows are stored)."""
    ctx = ctx or current_context()
    if _is_shape(arg1):
        return _zeros("row_sparse", arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        if shape is None:
            raise MXNetError("row_sparse_array: shape is required with (data, indices)")
        return _row_sparse(_host(arg1[0]), _host(arg1[1]), shape, ctx, _dtype_of(arg1[0], dtype))
    return _from_array(arg1, RowSparseNDArray, "row_sparse", "row_sparse_array", ctx, dtype)


def _from_array(arg1, cls, stype, what, ctx, dtype):
    """csr_matrix / row_sparse_array of an array: one of that storage type is copied, another sparse one refused,
    a dense array-like converted."""
    if isinstance(arg1, cls):
        out = arg1.copyto(ctx)
        return out if dtype is None else out.astype(dtype)
    if isinstance(arg1, BaseSparseNDArray):
        raise MXNetError(f"{what}: cannot make a {stype} array from a {arg1.stype} array")
    return _dense_array(_host(arg1), ctx=ctx, dtype=_dtype_of(arg1, dtype)).tostype(stype)


def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """All zeros in storage `stype` (nothing stored for a sparse one)."""
    return _zeros(stype, shape, ctx=ctx, dtype=dtype)


def empty(stype, shape, ctx=None, dtype=None):
    """As zeros: an empty sparse array stores nothing."""
    return _zeros(stype, shape, ctx=ctx, dtype=dtype)


def array(source_array, ctx=None, dtype=None):
    """A sparse copy of a CSRNDArray / RowSparseNDArray or a scipy sparse matrix (csr)."""
    if isinstance(source_array, CSRNDArray):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, RowSparseNDArray):
        return row_sparse_array(source_array, ctx=ctx, dtype=dtype)
    if _scipy_csr(source_array) is not None:
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    raise MXNetError(f"sparse.array: expected a sparse NDArray or a scipy sparse matrix, got "
                     f"{type(source_array).__name__}")


def dot(lhs, rhs, transpose_a=False, transpose_b=False, forward_stype=None):
    """`nd.dot` (sparse inputs read as the dense arrays they stand for); `forward_stype` picks the result's
    storage."""
    out = _op.dot(lhs, rhs, transpose_a=transpose_a, transpose_b=transpose_b)
    stype = check_stype(forward_stype, "sparse.dot")
    return out if stype == "default" else out.tostype(stype)


def __getattr__(name):
    """The other ops: the dense `mx.nd` op of that name (MXNet's storage fallback). `_namespace` holds all of
    `mx.nd` but this module, looked up at call time (so `Custom` / `CachedOp`, set on both from above, too)."""
    if name.startswith("__") or not hasattr(_namespace, name):
        raise AttributeError(f"module 'mixnet.ndarray.sparse' has no attribute {name!r}")
    return getattr(_namespace, name)
