"""Sparse storage types: `RowSparseNDArray` ('row_sparse') and `CSRNDArray` ('csr'), MXNet 1.x's sparse NDArrays.

Representation: a sparse array keeps a dense buffer (`_data`, as every NDArray) plus its sparse structure: the
stored row indices (row_sparse) or `(indices, indptr)` (csr). Every op therefore reads a sparse input as the dense
array it stands for, and returns a dense result, which is MXNet's storage fallback. What only a sparse array has
is the structure, which is observable (`.indices`, `.data`, `.indptr`) and drives lazy optimizer updates and
`row_sparse_data`. Invariant: everything outside the structure is zero in the buffer.

The structure is explicit while the array is unchanged since it was set (a constructor, `retain`, a lazy update);
after an in-place write (`x[:] = ...`, a gradient written by backward, a dense optimizer update) it is what the
buffer holds: the rows (row_sparse) or the elements (csr) that are nonzero. That is what MXNet's cast from dense
storage gives, which is how MXNet writes a dense result into a sparse array.
"""
import numpy as np

from .. import _display
from ..base import MXNetError, dtype_np
from ..context import Context, array_module, current_context
from .ndarray import NDArray, _wrap

STYPES = ("default", "row_sparse", "csr")


def check_stype(stype, what):
    """Validates a storage type name (None means 'default')."""
    if stype is None:
        return "default"
    if stype not in STYPES:
        raise MXNetError(f"{what}: unknown storage type {stype!r}; expected one of {list(STYPES)}")
    return stype


def _host(x):
    """numpy view of a buffer (a copy for a GPU one)."""
    return x if isinstance(x, np.ndarray) else x.get()


def _index_array(values, ctx):
    return _wrap(array_module(ctx).asarray(np.asarray(values, dtype=np.int64)), ctx)


class BaseSparseNDArray(NDArray):
    """What both sparse storage types share: an explicit structure valid until the next in-place write."""
    _aux = None           # the explicit structure (numpy int64 arrays), or None
    _aux_version = -1     # the _version at which _aux was set

    def _set_aux(self, aux):
        self._aux = aux
        self._aux_version = self._version

    def _explicit_aux(self):
        return self._aux if self._aux is not None and self._aux_version == self._version else None

    def __repr__(self):
        """MXNet's form, '\\n<CSRNDArray 2x3 @cpu(0)>' (no values), with the dtype when it is not float32."""
        return "\n" + _display.array_tag(type(self).__name__, self.shape, self._data.dtype, self._ctx)

    def _repr_html_(self):
        """As NDArray's, plus how much is stored: the rows (row_sparse) or the nonzeros (csr)."""
        return _display.array_html(self, type(self).__name__, self._stored())

    def _same_kind(self, data, ctx):
        out = _wrap_as(type(self), data, ctx)
        aux = self._explicit_aux()
        if aux is not None:
            out._set_aux(aux)
        return out

    def copy(self):
        return self._same_kind(self._data.copy(), self._ctx)

    def copyto(self, other):
        """Onto a Context: a sparse copy there. Into an NDArray: its values (a sparse target keeps the source's
        structure)."""
        if isinstance(other, Context):
            xp = array_module(other)
            return self._same_kind(xp.asarray(_host(self._data)).copy(), other)
        if isinstance(other, NDArray) and other is not self:
            super().copyto(other)
            aux = self._explicit_aux()
            if isinstance(other, type(self)) and aux is not None:
                other._set_aux(aux)
            return other
        return super().copyto(other)

    def as_in_context(self, context):
        return self if self._ctx == context else self.copyto(context)

    as_in_ctx = as_in_context

    def detach(self):
        out = _wrap_as(type(self), self._data, self._ctx)
        aux = self._explicit_aux()
        if aux is not None:
            out._set_aux(aux)
        return out

    def astype(self, dtype, copy=True):
        if not copy and dtype_np(dtype) == self._data.dtype:
            return self
        return self._same_kind(self._data.astype(dtype_np(dtype)), self._ctx)

    def check_format(self, full_check=True):
        """The structure is valid by construction (constructors check their input): nothing to raise."""

    def __getstate__(self):
        raise MXNetError(f"pickling a {type(self).__name__} is not supported; convert it with tostype('default')")


class RowSparseNDArray(BaseSparseNDArray):
    """MXNet's row_sparse NDArray: a subset of rows (`indices`, sorted) holds values (`data`), the others are 0."""

    @property
    def stype(self):
        return "row_sparse"

    def _rows(self):
        aux = self._explicit_aux()
        if aux is not None:
            return aux[0]
        dense = _host(self._data)
        if dense.ndim == 0 or dense.shape[0] == 0:
            return np.zeros((0,), dtype=np.int64)
        flat = dense.reshape(dense.shape[0], -1)
        return np.flatnonzero((flat != 0).any(axis=1)).astype(np.int64)

    def _stored(self):
        return [("stored rows", f"{len(self._rows())} of {self.shape[0] if self.ndim else 0}")]

    @property
    def indices(self):
        """The stored row indices (int64, ascending)."""
        return _index_array(self._rows(), self._ctx)

    @property
    def data(self):
        """The stored rows, shape (len(indices),) + shape[1:]."""
        rows = self._rows()
        xp = array_module(self._ctx)
        return _wrap(self._data[xp.asarray(rows)], self._ctx)

    def _set_rows(self, rows):
        self._set_aux((np.unique(np.asarray(rows, dtype=np.int64)),))

    def retain(self, row_ids):
        return retain(self, row_ids)

    def tostype(self, stype):
        stype = check_stype(stype, "tostype")
        if stype == "default":
            return _wrap(self._data.copy(), self._ctx)
        if stype == "csr":
            raise MXNetError("tostype('csr'): casting a row_sparse array to csr is not supported (as in MXNet); "
                             "go through tostype('default')")
        return self.copy()


class CSRNDArray(BaseSparseNDArray):
    """MXNet's csr NDArray (2-D): row i's stored columns are `indices[indptr[i]:indptr[i+1]]`, values `data`."""

    @property
    def stype(self):
        return "csr"

    def _structure(self):
        aux = self._explicit_aux()
        if aux is not None:
            return aux
        dense = _host(self._data)
        rows, cols = np.nonzero(dense)
        indptr = np.zeros(dense.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=dense.shape[0]), out=indptr[1:])
        return cols.astype(np.int64), indptr

    def _stored(self):
        return [("stored values", f"{len(self._structure()[0])} of {self.size}")]

    @property
    def indices(self):
        return _index_array(self._structure()[0], self._ctx)

    @property
    def indptr(self):
        return _index_array(self._structure()[1], self._ctx)

    @property
    def data(self):
        indices, indptr = self._structure()
        rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        xp = array_module(self._ctx)
        return _wrap(self._data[xp.asarray(rows), xp.asarray(indices)], self._ctx)

    def __getitem__(self, key):
        """A basic slice of rows stays csr (as in MXNet); any other index gives a dense result."""
        if isinstance(key, slice) and key.step in (None, 1):
            start, stop, _ = key.indices(self.shape[0])
            stop = max(start, stop)
            out = _wrap_as(CSRNDArray, self._data[start:stop].copy(), self._ctx)
            indices, indptr = self._structure()
            out._set_aux((indices[indptr[start]:indptr[stop]].copy(), indptr[start:stop + 1] - indptr[start]))
            return out
        return super().__getitem__(key)

    def asscipy(self):
        import scipy.sparse as spsp
        indices, indptr = self._structure()
        return spsp.csr_matrix((self.data.asnumpy(), indices, indptr), shape=self.shape)

    def tostype(self, stype):
        stype = check_stype(stype, "tostype")
        if stype == "default":
            return _wrap(self._data.copy(), self._ctx)
        if stype == "row_sparse":
            raise MXNetError("tostype('row_sparse'): casting a csr array to row_sparse is not supported (as in "
                             "MXNet); go through tostype('default')")
        return self.copy()


_CLASSES = {"row_sparse": RowSparseNDArray, "csr": CSRNDArray}


def _wrap_as(cls, data, ctx):
    arr = cls.__new__(cls)
    arr._data = data
    arr._ctx = ctx
    return arr


def from_dense(arr, stype):
    """`arr.tostype(stype)` for a dense NDArray: a copy in the given storage (structure = its nonzeros)."""
    stype = check_stype(stype, "tostype")
    if stype == "default":
        return arr
    if stype == "csr" and arr.ndim != 2:
        raise MXNetError(f"tostype('csr'): a csr array must be 2-D, got shape {arr.shape}")
    if stype == "row_sparse" and arr.ndim < 1:
        raise MXNetError("tostype('row_sparse'): a row_sparse array needs at least one dimension")
    return _wrap_as(_CLASSES[stype], arr._data.copy(), arr._ctx)


def zeros(stype, shape, ctx=None, dtype=None):
    """An all-zero array of the storage type (a sparse one stores nothing)."""
    stype = check_stype(stype, "zeros")
    ctx = ctx or current_context()
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    data = array_module(ctx).zeros(shape, dtype=dtype_np(dtype))
    if stype == "default":
        return _wrap(data, ctx)
    if stype == "csr" and len(shape) != 2:
        raise MXNetError(f"zeros: a csr array must be 2-D, got shape {shape}")
    out = _wrap_as(_CLASSES[stype], data, ctx)
    out._set_aux((np.zeros(0, np.int64),) if stype == "row_sparse"
                 else (np.zeros(0, np.int64), np.zeros(shape[0] + 1, np.int64)))
    return out


def row_sparse(data, rows, shape, ctx, dtype):
    """A RowSparseNDArray storing `data` (numpy, (len(rows),) + shape[1:]) at `rows`."""
    rows = np.asarray(rows).astype(np.int64).reshape(-1)
    data = np.asarray(data)
    shape = tuple(int(d) for d in shape)
    if data.shape[1:] != shape[1:] or len(rows) != data.shape[0]:
        raise MXNetError(f"row_sparse_array: data {data.shape} and indices {rows.shape} do not fit shape {shape}")
    if len(rows) and (rows.min() < 0 or rows.max() >= shape[0]):
        raise MXNetError(f"row_sparse_array: row indices must lie in [0, {shape[0]}), got {rows.tolist()}")
    if len(np.unique(rows)) != len(rows):
        raise MXNetError(f"row_sparse_array: row indices must be unique, got {rows.tolist()}")
    dense = np.zeros(shape, dtype=dtype_np(dtype) if dtype is not None else data.dtype)
    dense[rows] = data
    out = _wrap_as(RowSparseNDArray, array_module(ctx).asarray(dense), ctx)
    out._set_rows(rows)
    return out


def csr(data, indices, indptr, shape, ctx, dtype):
    """A CSRNDArray from its three arrays (numpy), checked."""
    data, indices, indptr = np.asarray(data), np.asarray(indices).astype(np.int64), np.asarray(indptr).astype(np.int64)
    rows, cols = (int(d) for d in shape)
    if len(indptr) != rows + 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != len(data) \
            or len(indices) != len(data) or (len(indices) and (indices.min() < 0 or indices.max() >= cols)):
        raise MXNetError(f"csr_matrix: inconsistent (data {data.shape}, indices {indices.shape}, indptr "
                         f"{indptr.shape}) for shape {tuple(shape)}")
    row_of = np.repeat(np.arange(rows), np.diff(indptr))
    dense = np.zeros((rows, cols), dtype=dtype_np(dtype) if dtype is not None else data.dtype)
    dense[row_of, indices] = data
    out = _wrap_as(CSRNDArray, array_module(ctx).asarray(dense), ctx)
    out._set_aux((indices, indptr))
    return out


def retain(arr, row_ids):
    """The rows of a row_sparse array whose indices are in row_ids (the others become unstored)."""
    if not isinstance(arr, RowSparseNDArray):
        raise MXNetError(f"sparse.retain: expected a row_sparse array, got stype {getattr(arr, 'stype', None)!r}")
    wanted = np.asarray(row_ids.asnumpy() if isinstance(row_ids, NDArray) else row_ids).astype(np.int64).reshape(-1)
    keep = np.intersect1d(arr._rows(), wanted)
    xp = array_module(arr._ctx)
    dense = xp.zeros_like(arr._data)
    dense[xp.asarray(keep)] = arr._data[xp.asarray(keep)]
    out = _wrap_as(RowSparseNDArray, dense, arr._ctx)
    out._set_rows(keep)
    return out
