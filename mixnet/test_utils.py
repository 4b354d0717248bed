"""`mx.test_utils`: the helpers MXNet's own tests (and users' tests) import, in plain numpy plus `.asnumpy()`.

The Symbol checks (check_symbolic_forward/backward, check_numeric_gradient, check_consistency, simple_forward)
bind Symbols with mixnet's executor (mixnet/symbol/executor.py) as MXNet's do.

Differences from MXNet, on purpose:
* `check_numeric_gradient` also takes a Python callable instead of a Symbol (NDArrays in, NDArray or tuple of
  NDArrays out), differentiated with `mx.autograd` in float64 by default.
* `check_symbolic_backward` and `check_numeric_gradient` check grad_req='add' in the gradient buffer's dtype
  (MXNet subtracts the float64 initial values, so a float32 buffer's rounding counts against the check).
* `check_consistency` refuses a ctx_list entry whose context is not available here (a GPU on a machine without
  one) with an MXNetError naming the entry; MXNet fails inside simple_bind.
* Sparse generators (`rand_ndarray`/`rand_sparse_ndarray` with 'row_sparse'/'csr') draw csr positions with
  numpy (MXNet calls scipy.sparse.rand: same distribution, other numbers); only the 'uniform' distribution.
  Sparse `grad_stypes` in the Symbol checks still raise MXNetError.
* `effective_dtype` is the array's dtype: mixnet never computes float32 in reduced precision (no TF32).
* `np.bool_` is used where MXNet's file says `np.bool` (gone in NumPy >= 1.24).
"""
import contextlib
import functools
import math
import numbers
import os
import sys

import numpy as np
import numpy.random as rnd  # noqa: F401  (MXNet's test_utils exports `rnd`; its tests use it after `import *`)

import mixnet as mx

from .base import MXNetError
from .context import Context, array_module, current_context, num_gpus
from .ndarray import NDArray, array  # noqa: F401
from .ops import _fastpath
from . import autograd
from .ops.common import call
from .symbol.symbol import Symbol

# No __all__, as in MXNet: test files do `from mxnet.test_utils import *` and then use `mx`, `np`, `NDArray`,
# `array`, ... straight from this module's namespace.

_DEFAULT_CTX = None


def default_context():
    """The context tests run on: the one set by set_default_context, else the current context."""
    return _DEFAULT_CTX if _DEFAULT_CTX is not None else current_context()


def set_default_context(ctx):
    global _DEFAULT_CTX
    if ctx is not None and not isinstance(ctx, Context):
        raise MXNetError(f"set_default_context: expected a Context, got {type(ctx).__name__}")
    _DEFAULT_CTX = ctx


def default_dtype():
    return np.float32


# ---------------------------------------------------------------------------------------------------------
# tolerances
_FLOATS = (np.float16, np.float32, np.float64)
_EXACT = (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)


def default_rtols():
    """Relative tolerance per dtype: float16 1e-2, float32 1e-4, float64 1e-5, exact types 0."""
    return {**{np.dtype(t): 0 for t in _EXACT},
            np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}


def default_atols():
    """Absolute tolerance per dtype: float16 1e-1, float32 1e-3, float64 1e-20, exact types 0."""
    return {**{np.dtype(t): 0 for t in _EXACT},
            np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}


def default_numeric_eps():
    """Finite-difference step per float dtype (powers of two, so adding one to an input drops no bits)."""
    return {np.dtype(np.float16): 1.0 / 2 ** 6, np.dtype(np.float32): 1.0 / 2 ** 9,
            np.dtype(np.float64): 1.0 / 2 ** 14}


def _dtype_of(x):
    if isinstance(x, numbers.Number):
        return np.asarray(x).dtype
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    return np.asarray(x).dtype


def get_tolerance(dat, tol, default_tol):
    """tol itself when it is a number; else tol[dtype] (tol a dict dtype -> float) falling back to
    default_tol[dtype], for dat's effective dtype (a dtype without an entry gets 0: exact comparison)."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat) if hasattr(dat, "dtype") else _dtype_of(dat)
    tol = {np.dtype(k): v for k, v in (tol or {}).items()}
    return tol.get(dtype, default_tol.get(dtype, 0))


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    """rtol if given, else the default for dtype (see default_rtols)."""
    return default_rtols().get(np.dtype(dtype), 0) if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    """atol if given, else the default for dtype (see default_atols)."""
    return default_atols().get(np.dtype(dtype), 0) if atol is None else atol


def get_etol(etol=None):
    """The tolerated fraction of mismatching elements: etol, else 0."""
    return 0 if etol is None else etol


def get_tols(x, y, rtol, atol):
    """Tolerances for comparing x and y: a number as given; None or a dict dtype -> float picks per dtype,
    and the looser of x's and y's applies."""
    rtol = max(get_tolerance(v, rtol, default_rtols()) for v in (x, y))
    atol = max(get_tolerance(v, atol, default_atols()) for v in (x, y))
    return rtol, atol


def _as_numpy(x):
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    if isinstance(x, np.ndarray):
        return x
    return np.asarray(x)


def _host_view(x):
    """x's values as a numpy array only to be read: a CPU NDArray's own buffer, read-only (a comparison needs no
    copy of it), else _as_numpy's."""
    data = getattr(x, "_data", None) if isinstance(x, NDArray) else None
    if isinstance(data, np.ndarray):
        view = data.view()
        view.flags.writeable = False
        return view
    return _as_numpy(x)


def _prepare(a, b, use_broadcast):
    a, b = _host_view(a), _host_view(b)
    if not use_broadcast and a.shape != b.shape:
        raise AssertionError(f"shapes differ: {a.shape} vs {b.shape} (use_broadcast=False)")
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise AssertionError(f"shapes {a.shape} and {b.shape} cannot be broadcast together") from None
    return a, b


def _within(a, b, rtol, atol, equal_nan):
    a64 = a.astype(np.float64) if a.dtype != np.bool_ else a.astype(np.float64)
    b64 = b.astype(np.float64) if b.dtype != np.bool_ else b.astype(np.float64)
    return np.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=equal_nan)


# _all_close_fast works through equal-shaped arrays in blocks of this many elements, so its temporaries stay in
# cache: optimizer tests compare millions of elements per call, and whole-array temporaries are memory-bound
_CLOSE_BLOCK = 1 << 15


def _all_close_fast(a, b, rtol, atol):
    """True when two float arrays are close everywhere, computed in their own dtype without float64 copies
    (large arrays compare several times faster). False also for NaN, inf or float16 overflow: then _within
    decides."""
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        return False
    if a.shape != b.shape or a.size <= _CLOSE_BLOCK:
        return _all_close_block(a, b, rtol, atol)
    a, b = a.reshape(-1), b.reshape(-1)
    nk = _fastpath.numba_kernels(np, a, b)          # one Numba pass (float32 / float64), when its loops are ready
    if nk is not None:
        return nk.all_close(_frozen(a), _frozen(b), a.dtype.type(rtol), a.dtype.type(atol))
    return all(_all_close_block(a[i:i + _CLOSE_BLOCK], b[i:i + _CLOSE_BLOCK], rtol, atol)
               for i in range(0, a.size, _CLOSE_BLOCK))


def _frozen(flat):
    """A read-only C-contiguous view (or copy) of a 1-d array: the one array type all_close is compiled for."""
    view = np.ascontiguousarray(flat).view()
    view.flags.writeable = False
    return view


def _all_close_block(a, b, rtol, atol):
    # numpy computes float16 in software, ~10x slower than float32, which holds every float16 value exactly
    a = a.astype(np.float32) if a.dtype == np.float16 else a
    b = b.astype(np.float32) if b.dtype == np.float16 else b
    with np.errstate(all="ignore"):
        diff = np.asarray(a - b)               # two temporaries, reused in place; asarray: 0-d inputs give
        np.abs(diff, out=diff)                 # numpy scalars
        bound = np.asarray(np.abs(b))
        bound *= rtol
        bound += atol
        return bool(np.all(diff <= bound))


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """True when |a - b| <= atol + rtol * |b| everywhere (NaNs equal only with equal_nan)."""
    rtol, atol = get_tols(a, b, rtol, atol)
    try:
        a, b = _prepare(a, b, use_broadcast)
    except AssertionError:
        return False
    return _all_close_fast(a, b, rtol, atol) or bool(np.all(_within(a, b, rtol, atol, equal_nan)))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False, use_broadcast=True,
                        mismatches=(10, 10)):
    """Raises AssertionError (with the worst mismatch: location, values, relative error) unless a ~= b.

    Tolerances default by dtype as in MXNet (float16 1e-2/1e-1, float32 1e-4/1e-3, float64 1e-5/1e-20, exact
    types 0); for two dtypes the looser default applies. `mismatches=(n_show, n_total)` bounds how many
    mismatching elements the message lists."""
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _prepare(a, b, use_broadcast)
    if _all_close_fast(a, b, rtol, atol):
        return
    ok = _within(a, b, rtol, atol, equal_nan)
    if np.all(ok):
        return
    shape = np.broadcast_shapes(a.shape, b.shape)
    a_b, b_b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    bad = ~np.broadcast_to(ok, shape)
    a64, b64 = a_b.astype(np.float64), b_b.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = np.abs(a64 - b64) / (atol + rtol * np.abs(b64))
    excess = np.where(np.isnan(excess), np.inf, excess)
    excess = np.where(bad, excess, -1.0)
    worst = np.unravel_index(int(np.argmax(excess)), shape) if shape else ()
    n_bad = int(bad.sum())
    total = max(int(np.prod(shape)), 1)
    n_show = mismatches[0] if mismatches else 10
    locations = np.argwhere(bad)[:n_show]
    listing = "\n".join(f"  {tuple(int(i) for i in loc)}: {names[0]}={a_b[tuple(loc)]!r}, "
                        f"{names[1]}={b_b[tuple(loc)]!r}" for loc in locations)
    err = excess[worst] if shape else excess
    msg = (f"\nItems are not equal:\nError {float(err):.6f} exceeds tolerance rtol={rtol:e}, atol={atol:e} "
           f"(mismatch {100.0 * n_bad / total:.6f}%: {n_bad} of {total} elements).\n"
           f"Location of maximum error: {tuple(int(i) for i in worst)}, {names[0]}={a_b[worst]!r}, "
           f"{names[1]}={b_b[worst]!r}\n"
           f"First mismatches:\n{listing}\n"
           f" {names[0]}: {np.array2string(a, threshold=50)}\n {names[1]}: {np.array2string(b, threshold=50)}")
    raise AssertionError(msg)


def almost_equal_ignore_nan(a, b, rtol=None, atol=None):
    a, b = np.copy(_as_numpy(a)), np.copy(_as_numpy(b))
    nan = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan], b[nan] = 0, 0
    return almost_equal(a, b, rtol, atol)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    a, b = np.copy(_as_numpy(a)), np.copy(_as_numpy(b))
    nan = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan], b[nan] = 0, 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"), equal_nan=False,
                                 mismatches=(10, 10)):
    """assert_almost_equal that tolerates a fraction etol of mismatching elements (etol None or 0: none)."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol, atol, names, equal_nan, mismatches=mismatches)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a_np, b_np = _prepare(a, b, use_broadcast=True)
    ok = _within(a_np, b_np, rtol, atol, equal_nan)
    error_rate = 1.0 - float(np.mean(ok)) if ok.size else 0.0
    if error_rate > etol:
        try:
            assert_almost_equal(a_np, b_np, rtol, atol, names, equal_nan, mismatches=mismatches)
        except AssertionError as err:
            raise AssertionError(f"error rate {error_rate:.6f} exceeds etol={etol}:{err}") from None


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """numpy.testing.assert_allclose's defaults on assert_almost_equal."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def same(a, b):
    """Exact equality of values and shapes."""
    return np.array_equal(_as_numpy(a), _as_numpy(b))


def assert_exception(f, exception_type, *args, **kwargs):
    """Asserts that f(*args, **kwargs) raises exception_type."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)!s} did not raise {exception_type.__name__}")


# ---------------------------------------------------------------------------------------------------------
# random data
def random_arrays(*shapes):
    """Standard-normal float32 numpy arrays, one per shape (a scalar for shape (); the array itself for one
    shape)."""
    arrays = [np.array(np.random.randn(), dtype=np.float32) if len(s) == 0 else
              np.random.randn(*s).astype(np.float32) for s in shapes]
    arrays = [a[()] if a.ndim == 0 else a for a in arrays]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, **kwargs):
    """Uniform arrays in [low, high) (keywords low=0.0, high=1.0, dtype=float32), always a list."""
    low = kwargs.pop("low", 0.0)
    high = kwargs.pop("high", 1.0)
    dtype = kwargs.pop("dtype", np.float32)
    if kwargs:
        raise TypeError(f"random_uniform_arrays: unexpected arguments {sorted(kwargs)}")
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """k distinct elements of population, in random order (numpy's RNG, so np.random.seed applies)."""
    population = list(population)
    if not 0 <= k <= len(population):
        raise ValueError(f"random_sample: k={k} is out of range for a population of {len(population)}")
    idx = np.random.permutation(len(population))[:k]
    return [population[i] for i in idx]


def _check_grad_stypes(function, grad_stypes):
    """Gradient storage types asked for by name: sparse ones are compared by their values (what MXNet's check
    reads of them too), an unknown one is an error."""
    for name, stype in (grad_stypes or {}).items():
        if stype not in (None, "default", "row_sparse", "csr"):
            raise MXNetError(f"{function} (gradient of {name!r}): unknown stype {stype!r} "
                             "(expected 'default', 'row_sparse' or 'csr')")


def assign_each(the_input, function):
    """`function` applied to every element of a numpy array (a float64 copy; a copy as is without function)."""
    if function is None:
        return np.array(the_input)
    return np.vectorize(function, otypes=[np.float64])(the_input)


def _uniform_csr_arrays(num_rows, num_cols, density, dtype):
    """(data, indices, indptr) of a random csr matrix: round(density*rows*cols) distinct positions chosen
    uniformly (as scipy.sparse.rand does, which MXNet's generator calls), values uniform in [0, 1)."""
    if not 0 <= density <= 1:
        raise MXNetError(f"rand_sparse_ndarray: density must lie in [0, 1], got {density}")
    nnz = int(round(density * num_rows * num_cols))
    flat = np.sort(np.random.choice(num_rows * num_cols, size=nnz, replace=False))
    rows, cols = np.divmod(flat, num_cols) if num_cols else (flat, flat)
    indptr = np.zeros(num_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=num_rows), out=indptr[1:])
    return rnd.rand(nnz).astype(dtype), cols.astype(np.int64), indptr


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None, data_init=None,
                        rsp_indices=None, modifier_func=None, shuffle_csr_indices=False, ctx=None):
    """A random sparse array and its parts, as MXNet's generator: row_sparse -> (arr, (values, row indices)),
    each row stored with probability `density` (random when None), values uniform in [0, 1); csr ->
    (arr, (indptr, indices, data)) with round(density*size) stored elements. Only the uniform distribution."""
    ctx = ctx or default_context()
    density = rnd.rand() if density is None else density
    dtype = default_dtype() if dtype is None else dtype
    if distribution not in (None, "uniform"):
        raise MXNetError(f"rand_sparse_ndarray: distribution {distribution!r} is not supported (only 'uniform')")
    if stype == "row_sparse":
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices)
            if len(indices) > shape[0]:
                raise MXNetError(f"rand_sparse_ndarray: {len(indices)} row indices for {shape[0]} rows")
        else:
            indices = np.argwhere(rnd.rand(shape[0]) < density).flatten()
        if indices.shape[0] == 0:
            return mx.nd.zeros(shape, stype="row_sparse", dtype=dtype, ctx=ctx), \
                (np.array([], dtype=dtype), np.array([]))
        val = rnd.rand(indices.shape[0], *shape[1:]).astype(dtype)
        if data_init is not None:
            val.fill(data_init)
        if modifier_func is not None:
            val = assign_each(val, modifier_func)
        arr = mx.nd.sparse.row_sparse_array((val, indices), shape=shape, dtype=dtype, ctx=ctx)
        return arr, (val, indices)
    if stype == "csr":
        if len(shape) != 2:
            raise MXNetError(f"rand_sparse_ndarray: a csr array is 2-D, got shape {shape}")
        data, indices, indptr = _uniform_csr_arrays(shape[0], shape[1], density, dtype)
        if data_init is not None:
            data.fill(data_init)
        if modifier_func is not None:
            data = assign_each(data, modifier_func).astype(dtype)
        if shuffle_csr_indices:
            for r in range(shape[0]):
                np.random.shuffle(indices[indptr[r]:indptr[r + 1]])
        arr = mx.nd.sparse.csr_matrix((data, indices, indptr), shape=shape, dtype=dtype, ctx=ctx)
        return arr, (arr.indptr, arr.indices, arr.data)
    raise MXNetError(f"rand_sparse_ndarray: unknown storage type {stype!r}")


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A random NDArray: dense standard-normal values (float32 unless dtype says otherwise), or for
    stype 'row_sparse' / 'csr' rand_sparse_ndarray's array."""
    if stype != "default":
        return rand_sparse_ndarray(shape, stype, density=density, modifier_func=modifier_func, dtype=dtype,
                                   shuffle_csr_indices=shuffle_csr_indices, distribution=distribution, ctx=ctx)[0]
    data = np.random.randn(*shape) if len(shape) else np.array(np.random.randn())
    return array(data, ctx=ctx or default_context(), dtype=dtype or np.float32)


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None, modifier_func=None,
                        density=.5, shuffle_csr_indices=False):
    """rand_sparse_ndarray's array (row_sparse indices sorted)."""
    if stype not in ("row_sparse", "csr"):
        raise AssertionError(f"Unknown storage type: {stype}")
    if stype == "row_sparse" and rsp_indices is not None:
        rsp_indices = np.sort(np.asarray(rsp_indices))
    return rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                               rsp_indices=rsp_indices if stype == "row_sparse" else None, dtype=dtype,
                               modifier_func=modifier_func, shuffle_csr_indices=shuffle_csr_indices)[0]


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None, dtype=None,
                           modifier_func=None, shuffle_csr_indices=False):
    """create_sparse_array where a row_sparse array's rows are exactly rsp_indices (density 0 otherwise)."""
    if stype == "row_sparse":
        density = 0.0
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices, dtype=dtype,
                               modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random integer point (x, y) with x_low <= x <= x_high, y_low <= y <= y_high."""
    return int(np.random.randint(x_low, x_high + 1)), int(np.random.randint(y_low, y_high + 1))


def _rand_dim(dim, allow_zero_size):
    low = 0 if allow_zero_size else 1
    return int(np.random.randint(low, dim + 1))


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    return _rand_dim(dim0, allow_zero_size), _rand_dim(dim1, allow_zero_size)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    return _rand_dim(dim0, allow_zero_size), _rand_dim(dim1, allow_zero_size), _rand_dim(dim2, allow_zero_size)


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return tuple(int(d) for d in np.random.randint(low, dim + 1, size=num_dim))


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduces dat over axis (None, an int or a tuple) with numpy_reduce_func(x, axis=int), one axis at a time
    from the last, keeping dims when asked (MXNet's helper for checking reductions)."""
    if isinstance(axis, numbers.Integral):
        axis = [axis]
    elif axis is None:
        axis = list(range(dat.ndim))
    else:
        axis = list(axis)
    axis = sorted(a % dat.ndim if dat.ndim else a for a in axis)
    ret = dat
    for a in reversed(axis):
        ret = numpy_reduce_func(ret, axis=a)
    if keepdims:
        shape = list(dat.shape)
        for a in axis:
            shape[a] = 1
        ret = np.reshape(ret, shape)
    return ret


def effective_dtype(dat):
    """The precision dat's values are computed in: its dtype (mixnet has no reduced-precision float32 path)."""
    return np.dtype(dat.dtype)


@contextlib.contextmanager
def environment(*args):
    """Sets environment variables for the scope, restoring them after: environment('NAME', 'value') or
    environment({'A': '1', 'B': None}) (None unsets). Also usable as a decorator."""
    if len(args) == 2:
        changes = {args[0]: args[1]}
    elif len(args) == 1 and isinstance(args[0], dict):
        changes = dict(args[0])
    else:
        raise ValueError("environment() takes a (name, value) pair or a dict of them")
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ---------------------------------------------------------------------------------------------------------
# gradients
def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None, atol=None,
                           grad_nodes=None, use_forward_train=True, ctx=None, grad_stype_dict=None,
                           dtype=None):
    """Compares the analytic gradients of `sym` with central finite differences; AssertionError on a mismatch.

    For a Symbol, as MXNet does: `location` holds the arguments' values (a list in list_arguments() order or
    a dict by name), `aux_states` the auxiliary states' (restored before every forward). The objective is
    make_loss(sym * random projection) (sym must have one output); each input element is moved by
    +-numeric_eps/2. `dtype` defaults to float32, numeric_eps to default_numeric_eps()[dtype], rtol/atol to
    the dtype's defaults. grad_nodes: names to check (default all arguments), or a dict name -> grad_req
    ('write', 'add' or 'null', each checked accordingly).

    mixnet also takes a Python callable for `sym` (NDArrays in, positionally for a list location or by
    keyword for a dict, an NDArray or a tuple of them out): it is differentiated with mx.autograd, by default
    in float64 with numeric_eps 1e-3, rtol 1e-2, atol 1e-4; grad_nodes are then names or list positions."""
    if _is_symbol(sym):
        return _check_numeric_gradient_symbol(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                                              use_forward_train, ctx, grad_stype_dict, dtype)
    return _check_numeric_gradient_callable(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                                            use_forward_train, ctx, dtype)


def _check_numeric_gradient_callable(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                                     use_forward_train, ctx, dtype):
    if not callable(sym):
        raise MXNetError(f"check_numeric_gradient: expected a Symbol or a Python callable that takes NDArrays "
                         f"and returns an NDArray (or a tuple of them), got {type(sym).__name__}")
    if aux_states:
        raise MXNetError("check_numeric_gradient: aux_states are for a Symbol; pass them to your callable "
                         "as ordinary inputs instead")
    numeric_eps = 1e-3 if numeric_eps is None else numeric_eps
    rtol = 1e-2 if rtol is None else rtol
    dtype = np.float64 if dtype is None else dtype
    ctx = ctx or default_context()
    dtype = np.dtype(dtype)
    if isinstance(location, dict):
        names = list(location)
        values = [location[k] for k in names]
    elif isinstance(location, (list, tuple)):
        names = list(range(len(location)))
        values = list(location)
    else:
        names, values = [0], [location]
    values = [(v.asnumpy() if isinstance(v, NDArray) else np.asarray(v)).astype(dtype) for v in values]
    check = names if grad_nodes is None else list(grad_nodes)
    for n in check:
        if n not in names:
            raise MXNetError(f"check_numeric_gradient: grad node {n!r} is not an input (inputs: {names})")
    atol = 1e-4 if atol is None else atol

    def call(arrays):
        if isinstance(location, dict):
            out = sym(**dict(zip(names, arrays)))
        else:
            out = sym(*arrays)
        outs = [out] if isinstance(out, NDArray) else list(out)
        for o in outs:
            if not isinstance(o, NDArray):
                raise MXNetError(f"check_numeric_gradient: the callable must return NDArrays, got "
                                 f"{type(o).__name__}")
        return outs

    with autograd.pause(train_mode=use_forward_train):
        outs0 = call([array(v, ctx=ctx, dtype=dtype) for v in values])
    projections = [np.random.normal(0, 1, size=o.shape).astype(dtype) for o in outs0]

    def objective(arrays):
        outs = call(arrays)
        total = None
        for o, p in zip(outs, projections):
            term = _sum_all(o * array(p, ctx=ctx, dtype=o.dtype))
            total = term if total is None else total + term
        return total

    inputs = [array(v, ctx=ctx, dtype=dtype) for v in values]
    for name, x in zip(names, inputs):
        if name in check:
            x.attach_grad()
    with autograd.record(train_mode=use_forward_train):
        head = objective(inputs)
    head.backward()
    analytic = {n: x.grad.asnumpy() for n, x in zip(names, inputs) if n in check}

    def numeric_value(arrays):
        with autograd.pause(train_mode=use_forward_train):
            return float(_as_numpy(objective(arrays)).sum())

    for n in check:
        i = names.index(n)
        base = values[i]
        fd = np.zeros_like(base, dtype=np.float64)
        flat = base.reshape(-1)
        for j in range(flat.size):
            orig = flat[j]
            flat[j] = orig + numeric_eps / 2
            plus = numeric_value([array(v, ctx=ctx, dtype=dtype) for v in values])
            flat[j] = orig - numeric_eps / 2
            minus = numeric_value([array(v, ctx=ctx, dtype=dtype) for v in values])
            flat[j] = orig
            fd.reshape(-1)[j] = (plus - minus) / numeric_eps
        assert_almost_equal(fd, analytic[n], rtol=rtol, atol=atol,
                            names=(f"NUMERICAL_{n}", f"BACKWARD_{n}"))


def _sum_all(x):
    return call("_sum_to", x, shape=(1,) * x.ndim).reshape((1,))


# ---------------------------------------------------------------------------------------------------------
# checking Symbols: forward, backward, numeric gradients, consistency across contexts and dtypes
def _is_symbol(x):
    return isinstance(x, Symbol)


def _check_dtype(function, dtype, allow_asnumpy=True):
    """dtype as given ('asnumpy': each array keeps its numpy dtype) or an error naming the function."""
    if allow_asnumpy and isinstance(dtype, str) and dtype == "asnumpy":
        return dtype
    try:
        if np.dtype(dtype) in (np.dtype(t) for t in _FLOATS):
            return np.dtype(dtype)
    except TypeError:
        pass
    also = " or 'asnumpy'" if allow_asnumpy else ""
    raise MXNetError(f"{function}: dtype must be float16, float32 or float64{also}, got {dtype!r}")


def _nd(value, ctx, dtype):
    """An NDArray as it is, anything else as an NDArray of dtype (its own dtype for 'asnumpy')."""
    if isinstance(value, NDArray):
        return value
    value = np.asarray(value)
    return array(value, ctx=ctx, dtype=value.dtype if isinstance(dtype, str) else dtype)


def _by_name(function, names, values, what):
    """{name: value} from a list in `names`' order or a dict that has exactly `names` as keys."""
    if isinstance(values, dict):
        if set(values) != set(names):
            raise MXNetError(f"{function}: the {what} given {sorted(values)} do not match the symbol's "
                             f"{names}")
        return {n: values[n] for n in names}
    if isinstance(values, (list, tuple)):
        if len(values) != len(names):
            raise MXNetError(f"{function}: {len(values)} {what} given for the symbol's {len(names)} {names}")
        return dict(zip(names, values))
    raise MXNetError(f"{function}: {what} must be a list or a dict, got {type(values).__name__}")


def _parse_location(function, sym, location, ctx, dtype):
    values = _by_name(function, sym.list_arguments(), location, "arguments")
    return {k: _nd(v, ctx, dtype) for k, v in values.items()}


def _parse_aux_states(function, sym, aux_states, ctx, dtype):
    names = sym.list_auxiliary_states()
    if aux_states is None:
        if names:
            raise MXNetError(f"{function}: the symbol has auxiliary states {names}; pass their values as "
                             "aux_states")
        return {}
    values = _by_name(function, names, aux_states, "auxiliary states")
    return {k: _nd(v, ctx, dtype) for k, v in values.items()}


def _grad_reqs(function, names, grad_req):
    """grad_req (a string, a list in `names`' order or a dict) as a dict over names; a name a dict leaves
    out gets 'null'."""
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in names}
    elif isinstance(grad_req, dict):
        reqs = {n: grad_req.get(n, "null") for n in names}
    elif isinstance(grad_req, (list, tuple)):
        reqs = dict(zip(names, grad_req))
    else:
        raise MXNetError(f"{function}: grad_req must be a string, a list or a dict, got {grad_req!r}")
    for name, req in reqs.items():
        if req not in ("write", "add", "null"):
            raise MXNetError(f"{function}: invalid grad_req {req!r} for argument {name!r} "
                             "(expected 'write', 'add' or 'null')")
    return reqs


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Runs sym on numpy inputs given by name; returns its output as a numpy array (a list of them for
    several outputs)."""
    ctx = ctx or default_context()
    exe = sym.bind(ctx, args={k: _nd(v, ctx, np.float32) for k, v in inputs.items()})
    outputs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    return outputs[0] if len(outputs) == 1 else outputs


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None, ctx=None,
                           equal_nan=False, dtype=np.float32):
    """Binds sym at `location` (a list in list_arguments() order or a dict), runs forward(is_train=False)
    and compares each output with `expected` (a list in output order or a dict by output name). Values that
    are not NDArrays become NDArrays of dtype ('asnumpy': their own dtype). Returns the outputs."""
    function = "check_symbolic_forward"
    dtype = _check_dtype(function, dtype)
    ctx = ctx or default_context()
    args = _parse_location(function, sym, location, ctx, dtype)
    aux = _parse_aux_states(function, sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    exe = sym.bind(ctx, args=args, aux_states=aux)
    outputs = exe.forward(is_train=False)
    for name, want, got in zip(sym.list_outputs(), expected, outputs):
        assert_almost_equal(want, got, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"), equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None, aux_states=None,
                            grad_req="write", ctx=None, grad_stypes=None, equal_nan=False, dtype=np.float32):
    """Binds sym at `location`, runs forward(is_train=True) and backward(out_grads) (None: ones) and compares
    the argument gradients with `expected` (a list in list_arguments() order, possibly shorter, or a dict by
    name: only those arguments get gradient buffers). Buffers start with random values, so grad_req='write'
    must overwrite them, 'add' must add to them (the check subtracts them) and 'null' must leave them.
    Returns {name: gradient NDArray}."""
    function = "check_symbolic_backward"
    dtype = _check_dtype(function, dtype)
    ctx = ctx or default_context()
    names = sym.list_arguments()
    args = _parse_location(function, sym, location, ctx, dtype)
    aux = _parse_aux_states(function, sym, aux_states, ctx, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(names, expected))
    unknown = sorted(set(expected) - set(names))
    if unknown:
        raise MXNetError(f"{function}: expected gradients for {unknown}, which are not arguments of the symbol "
                         f"{names}")
    _check_grad_stypes(function, grad_stypes)
    # random initial buffers (drawn in sorted order, for reproducibility) show what each grad_req did; 'add'
    # is checked in the buffer's dtype, so the rounding of the initial values does not count as an error
    initial = {k: np.random.normal(size=np.shape(_as_numpy(expected[k]))) for k in sorted(expected)}
    grads = {k: _nd(v, ctx, _dtype_of(expected[k]) if isinstance(dtype, str) else dtype)
             for k, v in initial.items()}
    reqs = _grad_reqs(function, names, grad_req)
    exe = sym.bind(ctx, args=args, args_grad=grads, grad_req=reqs, aux_states=aux)
    exe.forward(is_train=True)
    if isinstance(out_grads, dict):
        out_grads = [out_grads[k] for k in sym.list_outputs()]
    if out_grads is not None:
        out_grads = [_nd(g, ctx, dtype) for g in out_grads]
    exe.backward(out_grads)
    for name in expected:
        label = (f"EXPECTED_{name}", f"BACKWARD_{name}")
        got = grads[name].asnumpy()
        start = initial[name].astype(got.dtype)
        if reqs[name] == "write":
            assert_almost_equal(expected[name], got, rtol, atol, label, equal_nan=equal_nan)
        elif reqs[name] == "add":
            assert_almost_equal(expected[name], got - start, rtol, atol, label, equal_nan=equal_nan)
        else:
            assert_almost_equal(start, got, rtol, atol, label, equal_nan=equal_nan)
    return grads


def _check_numeric_gradient_symbol(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                                   use_forward_train, ctx, grad_stype_dict, dtype):
    function = "check_numeric_gradient"
    dtype = _check_dtype(function, np.float32 if dtype is None else dtype, allow_asnumpy=False)
    ctx = ctx or default_context()
    names = sym.list_arguments()
    args = _parse_location(function, sym, location, ctx, dtype)
    aux = _parse_aux_states(function, sym, aux_states, ctx, dtype)
    if grad_nodes is None:
        reqs = {k: "write" for k in names}
    elif isinstance(grad_nodes, dict):
        reqs = dict(grad_nodes)
    elif isinstance(grad_nodes, (list, tuple)):
        reqs = {k: "write" for k in grad_nodes}
    else:
        raise MXNetError(f"{function}: grad_nodes must be a list of argument names or a dict name -> grad_req, "
                         f"got {grad_nodes!r}")
    unknown = [k for k in reqs if k not in names]
    if unknown:
        raise MXNetError(f"{function}: grad_nodes {unknown} are not arguments of the symbol {names}")
    reqs = _grad_reqs(function, list(reqs), reqs)
    _check_grad_stypes(function, grad_stype_dict)
    outputs = sym.list_outputs()
    if len(outputs) != 1:
        raise MXNetError(f"{function}: the symbol must have one output, it has {len(outputs)}: {outputs}")
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in args.items()})
    proj_name = "__random_proj"
    # the scalar objective sum(sym * proj); projection elements are kept away from 0 so no input's
    # influence is lost in rounding
    loss = mx.sym.make_loss(sym * mx.sym.Variable(proj_name))
    values = {**args, proj_name: _nd(np.random.rand(*out_shapes[0]) + 0.1, ctx, dtype)}
    initial = {k: np.random.normal(0, 0.01, size=values[k].shape) for k in reqs}
    grads = {k: _nd(v, ctx, dtype) for k, v in initial.items()}
    exe = loss.bind(ctx, args=values, args_grad=grads, grad_req=reqs, aux_states=aux)
    aux_np = {k: v.asnumpy() for k, v in aux.items()}
    exe.forward(is_train=True)
    eps = get_tolerance(exe.outputs[0], numeric_eps, default_numeric_eps())
    if dtype != np.float64 and eps < 1e-5:
        raise MXNetError(f"{function}: numeric_eps={eps} is too small for finite differences in {dtype} "
                         "(use at least 1e-5, or dtype=np.float64)")
    exe.backward()
    numeric = _numeric_grad(exe, {k: args[k].asnumpy() for k in reqs if reqs[k] != "null"}, aux_np, eps,
                            use_forward_train, dtype)
    for name, req in reqs.items():
        label = (f"NUMERICAL_{name}", f"BACKWARD_{name}")
        got = grads[name].asnumpy()
        start = initial[name].astype(got.dtype)
        if req == "write":
            assert_almost_equal(numeric[name], got, rtol, atol, label)
        elif req == "add":
            assert_almost_equal(numeric[name], got - start, rtol, atol, label)
        else:
            assert_almost_equal(start, got, rtol, atol, label)


def _numeric_grad(exe, location, aux_states, eps, use_forward_train, dtype):
    """Central finite differences of sum(exe's first output) for each element of each array in location
    ({name: numpy array}); arguments of an integer dtype are not differentiable and get zeros. The aux states
    are restored before every forward, since a training forward may update them."""
    def objective(name, value):
        exe.arg_dict[name][:] = value
        for key, aux in aux_states.items():
            exe.aux_dict[key][:] = aux
        return exe.forward(is_train=use_forward_train)[0].asnumpy()

    grads = {}
    for name, value in location.items():
        grads[name] = np.zeros(value.shape, dtype=dtype)
        if value.dtype.kind != "f":
            continue
        value = np.array(value, dtype=dtype)
        flat, flat_grad = value.reshape(-1), grads[name].reshape(-1)      # views: writing them moves value
        for i in range(flat.size):
            orig = flat[i]
            flat[i] = orig + eps / 2.0
            plus = objective(name, value)
            flat[i] = orig - eps / 2.0
            minus = objective(name, value)
            flat[i] = orig
            flat_grad[i] = (plus - minus).sum() / eps
        exe.arg_dict[name][:] = value
    return grads


def _smaller_dtype(dt1, dt2):
    """The less precise of two dtypes (dt1 when dt2 is None)."""
    return dt1 if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else dt2


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None, aux_params=None, rtol=None,
                      atol=None, raise_on_err=True, ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Runs sym (or one symbol per entry) once per ctx_list entry - a dict of simple_bind's keywords: 'ctx',
    'type_dict' and the input shapes - on the same random inputs (normal with std `scale`, or uniform in
    +-0.92 scale; arg_params/aux_params fix some; aux states default to 0), and checks that every run's
    outputs, and after a training forward and backward its argument gradients, match those of the most
    precise run (or ground_truth). A context that is not available here (a GPU on a machine without one)
    raises MXNetError naming the entry. Returns the reference values {name: array}."""
    function = "check_consistency"
    if len(ctx_list) < 2:
        raise MXNetError(f"{function}: ctx_list needs at least 2 entries to compare, got {len(ctx_list)}")
    syms = [sym] * len(ctx_list) if _is_symbol(sym) else list(sym)
    if len(syms) != len(ctx_list):
        raise MXNetError(f"{function}: {len(syms)} symbols for {len(ctx_list)} ctx_list entries")
    output_names, arg_names = syms[0].list_outputs(), syms[0].list_arguments()
    exes = []
    for i, (s, entry) in enumerate(zip(syms, ctx_list)):
        if s.list_arguments() != arg_names or s.list_outputs() != output_names:
            raise MXNetError(f"{function}: symbol {i} has arguments {s.list_arguments()} and outputs "
                             f"{s.list_outputs()}; symbol 0 has {arg_names} and {output_names}")
        entry = dict(entry)
        ctx = entry.pop("ctx", None) or default_context()
        try:
            array_module(ctx)
        except MXNetError as err:
            raise MXNetError(f"{function}: ctx_list[{i}] runs on {ctx}, which is not available: {err}") from None
        exes.append(s.simple_bind(ctx, grad_req=grad_req, **entry))

    arg_params = dict(arg_params or {})
    aux_params = dict(aux_params or {})
    for name in sorted(exes[0].arg_dict):        # a fixed order, so a seed reproduces the inputs
        if name not in arg_params:
            shape = exes[0].arg_dict[name].shape
            if use_uniform:
                arg_params[name] = np.random.uniform(-0.92 * scale, 0.92 * scale, size=shape).astype(rand_type)
            else:
                arg_params[name] = np.random.normal(size=shape, scale=scale).astype(rand_type)
    for name in exes[0].aux_dict:
        aux_params.setdefault(name, 0)
    for exe in exes:
        for name, arr in exe.arg_dict.items():
            arr[:] = _as_numpy(arg_params[name])
        for name, arr in exe.aux_dict.items():
            arr[:] = _as_numpy(aux_params[name])
        for arr in exe.grad_arrays:
            if arr is not None and grad_req == "add":
                arr[:] = 0

    def report(phase, i, name, detail):
        message = f"{phase} error: ctx_list[{i}] vs ctx_list[{gt_idx}] at {name!r}:{detail}"
        if raise_on_err:
            raise AssertionError(message)
        print(message)

    def compare(phase, i, name, arr, ref, rt, at):
        try:
            assert_almost_equal(arr, ref, rtol=rt, atol=at, equal_nan=equal_nan)
        except AssertionError as err:
            report(phase, i, name, err)

    # inference
    for exe in exes:
        exe.forward(is_train=False)
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exes]
    gt_idx = max(range(len(exes)), key=lambda i: (dtypes[i].itemsize, -i))   # the first most precise run
    gt = ground_truth if ground_truth is not None else dict(zip(output_names, exes[gt_idx].outputs))
    for i, exe in enumerate(exes):
        if i != gt_idx:
            for name, arr in zip(output_names, exe.outputs):
                compare("Predict", i, name, arr, gt[name], rtol, atol)
    if grad_req == "null":
        return gt

    # training: every run gets the same head gradient, run 0's outputs in the least precise output dtype
    for exe in exes:
        exe.forward(is_train=True)
    least = [None] * len(output_names)
    for exe in exes:
        least = [_smaller_dtype(out.dtype, dt) for out, dt in zip(exe.outputs, least)]
    heads = [out.asnumpy().astype(dt) for out, dt in zip(exes[0].outputs, least)]
    for exe in exes:
        exe.backward([_nd(h.astype(out.dtype), out.context, out.dtype) for h, out in zip(heads, exe.outputs)])
    if ground_truth is None:
        gt = dict(zip(output_names, exes[gt_idx].outputs))
        gt.update(zip(arg_names, exes[gt_idx].grad_arrays))
    for i, exe in enumerate(exes):
        if i == gt_idx:
            continue
        for name, arr in zip(output_names + arg_names, exe.outputs + exe.grad_arrays):
            ref = gt.get(name)
            if ref is None or arr is None:
                if (ref is None) != (arr is None):
                    report("Train", i, name, f" one run has a gradient and the other none (grad_req {grad_req!r})")
                continue
            rt, at = rtol, atol
            # a float32 gradient (e.g. BatchNorm's gamma) of a float16 run is only as precise as float16
            small_arr = _smaller_dtype(arr.dtype, dtypes[i])
            small_ref = _smaller_dtype(ref.dtype, dtypes[gt_idx])
            if small_arr != arr.dtype or small_ref != ref.dtype:
                rt, at = get_tols(np.empty(0, small_arr), np.empty(0, small_ref), rtol, atol)
            compare("Train", i, name, arr, ref, rt, at)
    return gt


def same_symbol_structure(sym1, sym2):
    """True when the two symbols' graphs have the same operator at every node position."""
    import json
    nodes1, nodes2 = json.loads(sym1.tojson())["nodes"], json.loads(sym2.tojson())["nodes"]
    return all(n1["op"] == n2["op"] for n1, n2 in zip(nodes1, nodes2))


# ---------------------------------------------------------------------------------------------------------
# optimizers
def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """assert_almost_equal over two (nested) tuples of arrays; None on either side compares as nothing."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default", rtol=1e-4, atol=1e-5,
                      compare_states=True, ntensors=1):
    """Applies one update of opt1 and of opt2 to the same random weight and gradient (uniform in [0, 1))
    and asserts the weights (and the states, with compare_states) agree. shape a list of shapes: opt2
    updates all `ntensors` weights in one multi-tensor call, opt1 each on its own."""
    ctx = default_context()

    def uniform(s):
        return mx.random.uniform(shape=s, ctx=ctx, dtype=dtype)

    def pair(stype, density):
        """(for opt1, for opt2): opt2 gets the array in storage `stype`, opt1 its dense copy."""
        if stype == "default":
            second = uniform(shape)
            return second.copy(), second
        if stype not in ("row_sparse", "csr"):
            raise MXNetError(f"compare_optimizer: unknown storage type {stype!r}")
        second = rand_ndarray(shape, stype, density=density, dtype=dtype)
        return second.copyto(ctx).tostype("default"), second

    if not isinstance(shape, list):
        if ntensors != 1:
            raise MXNetError(f"compare_optimizer: ntensors={ntensors} needs a list of shapes, got {shape!r}")
        w1, w2 = pair(w_stype, 1)
        g1, g2 = pair(g_stype, None)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1, g1 = [], []
    for s in shape:
        w1.append(uniform(s))
        g1.append(uniform(s))
    w2, g2 = [w.copy() for w in w1], [g.copy() for g in g1]
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def list_gpus():
    """The ids of the GPUs mixnet can use here (empty without cupy and a CUDA device)."""
    return list(range(num_gpus()))


# ---------------------------------------------------------------------------------------------------------
def use_np(func):
    """MXNet's decorator that turns on NumPy semantics. mixnet has no mx.np mode yet, so this returns func
    (a function or a class) unchanged."""
    return func


@contextlib.contextmanager
def discard_stderr():
    """Silences everything written to file descriptor 2 (including C-level output) inside the scope."""
    try:
        stderr_fd = sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(stderr_fd)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stderr_fd)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, stderr_fd)
        os.close(saved)
        os.close(devnull)



# ---------------------------------------------------------------------------------------------------------
# statistical checks of random generators (numpy only: scipy is not needed)
def retry(n):
    """Decorator: runs a stochastic test up to n times; only its last AssertionError propagates."""
    if not isinstance(n, numbers.Integral) or n < 1:
        raise MXNetError(f"retry: n must be a positive integer, got {n!r}")

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
        return wrapper
    return decorate


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """nbuckets equal-probability buckets [(ppf(i/n), ppf((i+1)/n)), ...] and their probabilities [1/n] * n,
    from a quantile function ppf (the inverse CDF)."""
    if not isinstance(nbuckets, numbers.Integral) or nbuckets < 1:
        raise MXNetError(f"gen_buckets_probs_with_ppf: nbuckets must be a positive integer, got {nbuckets!r}")
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets))) for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """True when the mean of generator(nsamples) lies within mu +- 3 sigma / sqrt(nsamples)."""
    mean = np.asarray(generator(nsamples), dtype=np.float64).mean()
    half = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - half < mean < mu + half)


def var_check(generator, sigma, nsamples=1000000):
    """True when the sample variance of generator(nsamples) lies within sigma^2 +- 3 sqrt(2 sigma^4 / (n-1))."""
    var = np.asarray(generator(nsamples), dtype=np.float64).var(ddof=1)
    half = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - half < var < sigma ** 2 + half)


def _gamma_prefactor(a, x):
    return math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_q(a, x):
    """The regularised upper incomplete gamma function Q(a, x) = Gamma(a, x) / Gamma(a), for a > 0, x >= 0:
    its power series below x = a + 1, its continued fraction (modified Lentz) above, both to 1e-14."""
    if x <= 0:
        return 1.0
    eps, tiny = 1e-14, 1e-300
    if x < a + 1:
        term = total = 1.0 / a
        denom = a
        for _ in range(100000):
            denom += 1
            term *= x / denom
            total += term
            if abs(term) < abs(total) * eps:
                break
        return max(0.0, 1.0 - total * _gamma_prefactor(a, x))
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 100000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < eps:
            break
    return min(1.0, _gamma_prefactor(a, x) * h)


def chi2_sf(stat, dof):
    """P(X >= stat) for X chi-square distributed with dof degrees of freedom (scipy.stats.chi2.sf)."""
    return _gamma_q(dof / 2.0, float(stat) / 2.0)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Pearson's chi-square test of generator(nsamples) against the expected bucket probabilities.

    buckets: a list of (low, high) ranges, ascending and disjoint (a sample counts in [low, high)), for
    continuous and discrete generators alike; or a list of the values a discrete generator can produce.
    Returns (p value, observed counts, expected counts); a sample in no bucket counts against the fit."""
    if not isinstance(buckets, list) or len(buckets) != len(probs) or len(buckets) < 2:
        raise MXNetError(f"chi_square_check: buckets must be a list of at least 2 entries, as many as probs "
                         f"(got {len(buckets) if hasattr(buckets, '__len__') else buckets!r} buckets and "
                         f"{len(probs)} probs)")
    samples = _as_numpy(generator(nsamples)).ravel()
    if isinstance(buckets[0], (list, tuple)):
        edges = np.asarray(buckets, dtype=np.float64).ravel()      # low0, high0, low1, high1, ...
        if np.any(np.diff(edges) < 0):
            raise MXNetError(f"chi_square_check: buckets must be ascending and disjoint, got {buckets}")
        pos = np.searchsorted(edges, samples.astype(np.float64), side="right")
        inside = pos % 2 == 1                                       # low_i <= s < high_i  <=>  pos == 2i + 1
        obs = np.bincount(pos[inside] // 2, minlength=len(buckets))[:len(buckets)]
    else:
        obs = np.array([(samples == b).sum() for b in buckets])
    expected = nsamples * np.asarray(probs, dtype=np.float64)
    if np.any(expected <= 0):
        raise MXNetError(f"chi_square_check: every bucket needs a positive probability, got {list(probs)}")
    stat = float((((obs - expected) ** 2) / expected).sum())
    return chi2_sf(stat, len(buckets) - 1), obs, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2, alpha=0.05):
    """Runs chi_square_check nrepeat times; raises AssertionError unless at least nrepeat * success_rate of the
    p values exceed alpha. Returns the p values."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    pvalues = [p for p, _, _ in results]
    if sum(p > alpha for p in pvalues) < nrepeat * success_rate:
        raise AssertionError(f"Generator test fails, chi-square p={pvalues}, "
                             f"obs_freq={[list(o) for _, o, _ in results]}, expected_freq={list(results[0][2])}"
                             f"\nbuckets={buckets}, probs={probs}")
    return pvalues


from ._test_data import download, get_cifar10, get_mnist, get_mnist_ubyte  # noqa: E402,F401  (local files first)
from ._test_data import get_bz2_data  # noqa: E402,F401


# padding invariance of a whole model (mixnet addition; docs/sequences.md)
from ._padding_check import PaddingInvarianceError, check_padding_invariance  # noqa: E402,F401
