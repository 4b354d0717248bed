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
import functools
import math
import numbers
import os
import sys

import numpy as np

import mixnet as mx  # (mixnet is partly initialised here; its attributes are only read later, inside functions)

from .base import MXNetError
from .context import Context, current_context
from .ndarray import NDArray, array  # noqa: F401

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
