"""`mx.test_utils`: the helpers MXNet's own tests (and users' tests) import, in plain numpy plus `.asnumpy()`.

Differences from MXNet, on purpose:
* `check_numeric_gradient` takes a Python callable (NDArrays in, NDArray or tuple of NDArrays out) instead of a
  Symbol, because mixnet has no Symbol API yet. Analytic gradients come from `mx.autograd`; both they and the
  central finite differences are computed in float64 by default.
* `rand_ndarray` only makes dense arrays (`stype='default'`): mixnet has no sparse storage.
* `effective_dtype` is the array's dtype: mixnet never computes float32 in reduced precision (no TF32).
* `np.bool_` is used where MXNet's file says `np.bool` (gone in NumPy >= 1.24).
"""
import contextlib
import numbers
import os
import sys

import numpy as np

from .base import MXNetError
from .context import Context, current_context

__all__ = ["default_context", "set_default_context", "default_dtype", "get_rtol", "get_atol", "get_tols",
           "assert_almost_equal", "assert_almost_equal_ignore_nan", "almost_equal", "almost_equal_ignore_nan",
           "same", "assert_exception", "rand_ndarray", "rand_shape_2d", "rand_shape_3d", "rand_shape_nd",
           "random_arrays", "random_uniform_arrays", "random_sample", "np_reduce", "effective_dtype",
           "environment", "check_numeric_gradient", "use_np", "discard_stderr"]

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
_RTOLS = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
_ATOLS = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}


def _dtype_of(x):
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    return np.asarray(x).dtype


def get_rtol(rtol=None, dtype=np.dtype(np.float32)):
    """rtol if given, else MXNet's default for dtype (float16 1e-2, float32 1e-4, float64 1e-5, exact types 0)."""
    return _RTOLS.get(np.dtype(dtype), 0) if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float32)):
    """atol if given, else MXNet's default for dtype (float16 1e-1, float32 1e-3, float64 1e-20, exact 0)."""
    return _ATOLS.get(np.dtype(dtype), 0) if atol is None else atol


def get_tols(x, y, rtol, atol):
    """Tolerances for comparing x and y: the looser default of the two dtypes."""
    dtypes = [_dtype_of(x), _dtype_of(y)]
    if rtol is None:
        rtol = max(get_rtol(None, d) for d in dtypes)
    if atol is None:
        atol = max(get_atol(None, d) for d in dtypes)
    return rtol, atol


def _as_numpy(x):
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    if isinstance(x, np.ndarray):
        return x
    return np.asarray(x)


def _prepare(a, b, use_broadcast):
    a, b = _as_numpy(a), _as_numpy(b)
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


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """True when |a - b| <= atol + rtol * |b| everywhere (NaNs equal only with equal_nan)."""
    rtol, atol = get_tols(a, b, rtol, atol)
    try:
        a, b = _prepare(a, b, use_broadcast)
    except AssertionError:
        return False
    return bool(np.all(_within(a, b, rtol, atol, equal_nan)))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False, use_broadcast=True,
                        mismatches=(10, 10)):
    """Raises AssertionError (with the worst mismatch: location, values, relative error) unless a ~= b.

    Tolerances default by dtype as in MXNet (float16 1e-2/1e-1, float32 1e-4/1e-3, float64 1e-5/1e-20, exact
    types 0); for two dtypes the looser default applies. `mismatches=(n_show, n_total)` bounds how many
    mismatching elements the message lists."""
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _prepare(a, b, use_broadcast)
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


def rand_ndarray(shape, stype="default", density=None, dtype=None, ctx=None, **kwargs):
    """A random dense NDArray (standard normal values). mixnet has no sparse storage, so stype must be
    'default'."""
    from .ndarray.ndarray import array
    if stype != "default":
        raise MXNetError(f"rand_ndarray: stype={stype!r} needs sparse storage, which mixnet does not have "
                         "(arrays are dense); use stype='default'")
    data = np.random.randn(*shape) if len(shape) else np.array(np.random.randn())
    return array(data, ctx=ctx or default_context(), dtype=dtype or np.float32)


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
def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=1e-3, rtol=1e-2, atol=None,
                           grad_nodes=None, use_forward_train=True, ctx=None, grad_stype_dict=None,
                           dtype=np.float64):
    """Compares autograd's gradients of `sym` with central finite differences.

    mixnet has no Symbol API yet, so `sym` is a Python callable taking NDArrays (positionally when `location` is
    a list, by keyword when it is a dict) and returning an NDArray or a tuple/list of them. The objective is
    sum(output * random projection) over the outputs; each input element is moved by +-numeric_eps/2.
    Computation is in `dtype` (float64 by default, so finite differences are accurate). grad_nodes: the
    names (dict location) or positions (list location) to check; default all. atol defaults to 1e-4.
    Raises AssertionError on a mismatch."""
    from . import autograd
    from .ndarray.ndarray import NDArray, array
    if not callable(sym) or (type(sym).__name__ == "Symbol"):
        raise MXNetError("check_numeric_gradient: mixnet has no Symbol API yet; pass a Python callable that "
                         "takes NDArrays and returns an NDArray (or a tuple of them)")
    if aux_states:
        raise MXNetError("check_numeric_gradient: aux_states needs the Symbol API; pass them to your callable "
                         "as ordinary inputs instead")
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
    from .ops.common import call
    return call("_sum_to", x, shape=(1,) * x.ndim).reshape((1,))


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

