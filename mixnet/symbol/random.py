"""`mx.sym.random`: the registry ops named `_random_*` as Symbol functions, and MXNet's hand-written samplers.

`uniform(low, high, shape, dtype)` & co. take either numbers (-> `_random_<dist>`, a node with no inputs) or
Symbols (-> `_sample_<dist>`, one draw of `shape` per parameter element), as MXNet 1.x's mx.sym.random does;
mixing the two is an error.
"""
import numbers as _numbers

import numpy as _np

from ..base import MXNetError as _MXNetError
from ..ops import registry as _registry
from .symbol import Symbol as _Symbol, build_functions as _build_functions, make_function as _make_function

_build_functions(globals(), prefix="_random_")

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial", "negative_binomial",
           "generalized_negative_binomial", "shuffle", "randint"]


def _op(name):
    return _make_function(_registry.get(name))


def _is_number(x):
    return isinstance(x, _numbers.Number) or (isinstance(x, _np.generic) and x.ndim == 0)


def _random_helper(dist, pnames, params, shape, dtype, kwargs):
    attrs = dict(kwargs)
    if shape is not None:
        attrs["shape"] = shape
    if dtype is not None:
        attrs["dtype"] = dtype
    if isinstance(params[0], _Symbol):
        if not all(isinstance(p, _Symbol) for p in params[1:]):
            raise _MXNetError(f"random.{dist}: distribution parameters must all have the same type, got "
                              f"{[type(p).__name__ for p in params]}")
        return _op(f"_sample_{dist}")(*params, **attrs)
    if _is_number(params[0]):
        if not all(_is_number(p) for p in params[1:]):
            raise _MXNetError(f"random.{dist}: distribution parameters must all have the same type, got "
                              f"{[type(p).__name__ for p in params]}")
        return _op(f"_random_{dist}")(**dict(zip(pnames, params)), **attrs)
    raise _MXNetError(f"random.{dist}: distribution parameters must be either Symbols or numbers, got "
                      f"{type(params[0]).__name__}")


def uniform(low=0, high=1, shape=None, dtype=None, **kwargs):
    return _random_helper("uniform", ("low", "high"), [low, high], shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, **kwargs):
    return _random_helper("normal", ("loc", "scale"), [loc, scale], shape, dtype, kwargs)


def randn(*shape, loc=0, scale=1, dtype=None, **kwargs):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    # MXNet drops Symbol keyword arguments here (_random_normal has no inputs): randn(data=s) is randn()
    kwargs = {k: v for k, v in kwargs.items() if not isinstance(v, _Symbol)}
    return _random_helper("normal", ("loc", "scale"), [loc, scale], shape or None, dtype, kwargs)


def poisson(lam=1, shape=None, dtype=None, **kwargs):
    return _random_helper("poisson", ("lam",), [lam], shape, dtype, kwargs)


def exponential(scale=1, shape=None, dtype=None, **kwargs):
    """Exponential samples with mean `scale` (the op's rate is lam = 1/scale, for numbers and Symbols)."""
    return _random_helper("exponential", ("lam",), [1.0 / scale], shape, dtype, kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, **kwargs):
    return _random_helper("gamma", ("alpha", "beta"), [alpha, beta], shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, **kwargs):
    return _random_helper("negative_binomial", ("k", "p"), [k, p], shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, **kwargs):
    return _random_helper("generalized_negative_binomial", ("mu", "alpha"), [mu, alpha], shape, dtype, kwargs)


def randint(low, high, shape=None, dtype=None, **kwargs):
    if not (_is_number(low) and _is_number(high)):
        raise _MXNetError(f"random.randint: low and high must be numbers, got {type(low).__name__}")
    return _random_helper("randint", ("low", "high"), [low, high], shape, dtype, kwargs)


def multinomial(data, shape=None, get_prob=True, dtype="int32", **kwargs):
    """Category indices drawn from the probabilities along data's last axis (MXNet's symbolic default is
    get_prob=True: a Symbol of two outputs, samples and their log-probabilities)."""
    attrs = dict(kwargs, get_prob=get_prob, dtype=dtype)
    if shape is not None:
        attrs["shape"] = shape
    return _op("_sample_multinomial")(data, **attrs)


def shuffle(data, **kwargs):
    """A random permutation of data along its first axis."""
    return _op("_shuffle")(data, **kwargs)
