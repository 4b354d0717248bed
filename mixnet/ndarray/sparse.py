"""`mx.nd.sparse`: mixnet stores every array dense. The constructors MXNet code calls accept MXNet's sparse
layouts and return the equivalent dense NDArray (its `stype` is 'default')."""
import numpy as np

from ..base import MXNetError
from .ndarray import NDArray, array


def _host(x):
    return x.asnumpy() if isinstance(x, NDArray) else np.asarray(x)


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """`(data, indices, indptr)` with `shape`, or any dense array-like -> a dense NDArray."""
    if isinstance(arg1, tuple) and len(arg1) == 3:
        data, indices, indptr = (_host(a) for a in arg1)
        if shape is None:
            raise MXNetError("csr_matrix: shape is required with (data, indices, indptr)")
        rows, cols = shape
        if len(indptr) != rows + 1 or np.any(np.diff(indptr) < 0) or indptr[-1] != len(data) \
                or len(indices) != len(data) or (len(indices) and (indices.min() < 0 or indices.max() >= cols)):
            raise MXNetError(f"csr_matrix: inconsistent (data, indices, indptr) for shape {shape}")
        dense = np.zeros(shape, dtype=data.dtype if dtype is None else dtype)
        row_of = np.repeat(np.arange(rows), np.diff(indptr).astype(np.int64))
        dense[row_of, indices.astype(np.int64)] = data
        return array(dense, ctx=ctx, dtype=dense.dtype)
    return array(_host(arg1), ctx=ctx, dtype=dtype)


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """`(data, row_indices)` with `shape`, or any dense array-like -> a dense NDArray."""
    if isinstance(arg1, tuple) and len(arg1) == 2:
        data, rows = _host(arg1[0]), _host(arg1[1]).astype(np.int64)
        if shape is None:
            raise MXNetError("row_sparse_array: shape is required with (data, indices)")
        if data.shape[1:] != tuple(shape[1:]) or len(rows) != len(data) or \
                (len(rows) and (rows.min() < 0 or rows.max() >= shape[0])):
            raise MXNetError(f"row_sparse_array: data {data.shape} / indices {rows.shape} do not fit shape {shape}")
        dense = np.zeros(shape, dtype=data.dtype if dtype is None else dtype)
        dense[rows] = data
        return array(dense, ctx=ctx, dtype=dense.dtype)
    return array(_host(arg1), ctx=ctx, dtype=dtype)


# MXNet generates every operator into mx.nd.sparse as well (nd.sparse.elemwise_mul, nd.sparse.square); here they
# take and give dense arrays. Names defined above keep their meaning.
from .register import build_functions as _build_functions  # noqa: E402

_build_functions(globals())
