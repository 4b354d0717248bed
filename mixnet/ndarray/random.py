"""`mx.nd.random`: the registry ops named `_random_*` (uniform_like, ...), and MXNet's hand-written samplers.

`uniform(low, high, shape, dtype, ctx, out)` & co. take either numbers (-> `_random_<dist>`, a new array of
`shape`, default shape (1,)) or NDArrays (-> `_sample_<dist>`, one draw of `shape` per parameter element), as
MXNet 1.x does; mixing the two is an error.
"""
import numbers as _numbers

import numpy as _np

from ..base import MXNetError as _MXNetError
from ..context import current_context as _current_context
from ..ops import dispatch as _dispatch, registry as _registry
from .ndarray import NDArray as _NDArray
from .register import build_functions as _build_functions, write_out as _write_out

_build_functions(globals(), prefix="_random_")

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "negative_binomial",
           "generalized_negative_binomial", "multinomial", "shuffle", "randint", "uniform_like", "normal_like",
           "exponential_like", "gamma_like", "poisson_like", "negative_binomial_like",
           "generalized_negative_binomial_like"]


def _call(name, inputs, attrs, out=None):
    op = _registry.get(name)
    result = _dispatch.apply(op, tuple(inputs), op.parse(attrs))
    # several outputs (multinomial's get_prob=True) come back as a list, as MXNet's nd functions return them
    return _write_out(list(result) if type(result) is tuple else result, out)


def _is_number(x):
    return isinstance(x, _numbers.Number) or (isinstance(x, _np.generic) and x.ndim == 0)


def _random_helper(dist, pnames, params, shape, dtype, ctx, out, kwargs):
    if kwargs:
        raise _MXNetError(f"random.{dist}: unknown arguments {sorted(kwargs)}")
    if isinstance(params[0], _NDArray):
        for p in params[1:]:
            if not isinstance(p, _NDArray):
                raise _MXNetError(f"Distribution parameters must all have the same type, but got both "
                                  f"{type(params[0])} and {type(p)}.")
        attrs = {"dtype": dtype}
        if shape is not None:
            attrs["shape"] = shape
        return _call(f"_sample_{dist}", params, attrs, out)
    if _is_number(params[0]):
        for p in params[1:]:
            if not _is_number(p):
                raise _MXNetError(f"Distribution parameters must all have the same type, but got both "
                                  f"{type(params[0])} and {type(p)}.")
        if shape is None:
            shape = out.shape if out is not None else 1
        attrs = dict(zip(pnames, params))
        attrs.update(shape=shape, dtype=dtype, ctx=ctx or _current_context())
        return _call(f"_random_{dist}", (), attrs, out)
    raise _MXNetError(f"Distribution parameters must be either NDArray or numbers, but got {type(params[0])}.")


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Uniform samples in [low, high): numbers -> array of `shape`; NDArrays -> shape low.shape + shape."""
    return _random_helper("uniform", ("low", "high"), [low, high], shape, dtype, ctx, out, kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Normal samples with mean loc and standard deviation scale."""
    return _random_helper("normal", ("loc", "scale"), [loc, scale], shape, dtype, ctx, out, kwargs)


def randn(*shape, loc=0, scale=1, dtype=None, ctx=None, out=None, **kwargs):
    """Normal samples of the shape given positionally: randn(2, 3)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return _random_helper("normal", ("loc", "scale"), [loc, scale], shape or None, dtype, ctx, out, kwargs)


def poisson(lam=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Poisson samples with rate lam (float32 values)."""
    return _random_helper("poisson", ("lam",), [lam], shape, dtype, ctx, out, kwargs)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Exponential samples with mean `scale` (the op's rate is lam = 1/scale)."""
    return _random_helper("exponential", ("lam",), [1.0 / scale], shape, dtype, ctx, out, kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Gamma samples with shape alpha and scale beta (mean alpha * beta)."""
    return _random_helper("gamma", ("alpha", "beta"), [alpha, beta], shape, dtype, ctx, out, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Failures before the k-th success with success probability p."""
    return _random_helper("negative_binomial", ("k", "p"), [k, p], shape, dtype, ctx, out, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Negative binomial with mean mu and dispersion alpha (variance mu + alpha * mu^2)."""
    return _random_helper("generalized_negative_binomial", ("mu", "alpha"), [mu, alpha], shape, dtype, ctx,
                          out, kwargs)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Integers uniform in [low, high) (int32 by default); low and high must be numbers."""
    if kwargs:
        raise _MXNetError(f"random.randint: unknown arguments {sorted(kwargs)}")
    if not (_is_number(low) and _is_number(high)):
        raise _MXNetError(f"Distribution parameters must be either NDArray or numbers, but got {type(low)}.")
    if shape is None:
        shape = out.shape if out is not None else 1
    return _call("_random_randint", (), {"low": low, "high": high, "shape": shape, "dtype": dtype,
                                          "ctx": ctx or _current_context()}, out)


def multinomial(data, shape=None, get_prob=False, out=None, dtype="int32", **kwargs):
    """Category indices drawn from the probabilities along data's last axis (get_prob: also log-probs)."""
    if kwargs:
        raise _MXNetError(f"random.multinomial: unknown arguments {sorted(kwargs)}")
    attrs = {"get_prob": get_prob, "dtype": dtype}
    if shape is not None:
        attrs["shape"] = shape
    return _call("_sample_multinomial", (data,), attrs, out)


def shuffle(data, out=None, **kwargs):
    """A random permutation of data along its first axis."""
    if kwargs:
        raise _MXNetError(f"random.shuffle: unknown arguments {sorted(kwargs)}")
    return _call("_shuffle", (data,), {}, out)
