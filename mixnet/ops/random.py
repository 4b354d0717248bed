"""Random sampling operators (MXNet 1.x names): `_random_*` (scalar parameters, a new array of `shape` on
`ctx`), `_random_*_like` (shape and dtype of an input), `_sample_*` (parameter arrays: one draw of `shape` per
parameter element), `_sample_multinomial`, `_shuffle`.

Kernels draw from `rng`, the device's numpy Generator that `mx.random.seed` resets, and move the result to
`xp` (cupy on a GPU). Outputs default to float32 (`_random_randint`: int32; `_sample_multinomial`: int32).
Nothing here is differentiable except `_sample_multinomial(get_prob=True)`'s log-probabilities (the gradient
REINFORCE-style estimators use).
"""
import numpy as np

from .attrs import Attr, REQUIRED, parse_bool, parse_ctx, parse_dtype, parse_float, parse_int, \
    parse_shape
from .common import call, check_shape, infer_same
from .registry import OpDef, OpTest, register

_F32 = np.dtype(np.float32)
_I32 = np.dtype(np.int32)


def _host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _finish(xp, values, dtype):
    values = np.asarray(values)
    values = values.astype(dtype) if values.dtype != dtype else values
    return values if xp is np else xp.asarray(values)


def _dtype_or(default):
    def parse(value):
        if value is None or (isinstance(value, str) and value.strip() in ("None", "")):
            return None
        return parse_dtype(value)
    parse.__name__ = "optional_dtype"
    parse.inner = parse_dtype          # read by describe.py and docgen.py, as optional()'s
    return parse


# ---------------------------------------------------------------------------------------------------------
# samplers: numpy draws from parameters (scalars or broadcastable arrays) and a size
def _uniform(rng, size, low, high):
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    if low.ndim or high.ndim:
        return low + (high - low) * rng.random(size)
    values = rng.random(size)             # scalar bounds: scaled in place, no temporaries of the sample's size
    if high - low != 1:
        values *= high - low
    if low != 0:
        values += low
    return values


def _normal(rng, size, loc, scale):
    return rng.normal(loc, scale, size=size)


def _exponential(rng, size, lam):
    return rng.exponential(1.0 / np.asarray(lam, dtype=np.float64), size=size)


def _gamma(rng, size, alpha, beta):
    return rng.gamma(alpha, beta, size=size)


def _poisson(rng, size, lam):
    return rng.poisson(lam, size=size)


def _negative_binomial(rng, size, k, p):
    return rng.negative_binomial(k, p, size=size)


def _gen_negative_binomial(rng, size, mu, alpha):
    """Mean mu, variance mu + alpha * mu^2: a Poisson whose rate is Gamma(1/alpha, alpha*mu) (alpha=0: Poisson)."""
    mu = np.broadcast_to(np.asarray(mu, dtype=np.float64), size)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), size)
    safe = np.where(alpha > 0, alpha, 1.0)
    lam = np.where(alpha > 0, rng.gamma(1.0 / safe, safe * mu, size=size), mu)
    return rng.poisson(lam)


_DISTS = [
    # name, sampler, params [(name, default)], MXNet's _sample_* input names, test params
    ("uniform", _uniform, [("low", 0.0), ("high", 1.0)], ("low", "high"), {"low": -1.0, "high": 3.0}),
    ("normal", _normal, [("loc", 0.0), ("scale", 1.0)], ("mu", "sigma"), {"loc": 1.0, "scale": 2.0}),
    ("exponential", _exponential, [("lam", 1.0)], ("lam",), {"lam": 2.0}),
    ("gamma", _gamma, [("alpha", 1.0), ("beta", 1.0)], ("alpha", "beta"), {"alpha": 2.0, "beta": 0.5}),
    ("poisson", _poisson, [("lam", 1.0)], ("lam",), {"lam": 3.0}),
    ("negative_binomial", _negative_binomial, [("k", 1), ("p", 1.0)], ("k", "p"), {"k": 3, "p": 0.4}),
    ("generalized_negative_binomial", _gen_negative_binomial, [("mu", 1.0), ("alpha", 1.0)], ("mu", "alpha"),
     {"mu": 2.0, "alpha": 0.5}),
]


# Each distribution's mean and variance from its parameters (the generated tests check samples against them).
_MOMENTS = {
    "uniform": lambda low, high: ((low + high) / 2, (high - low) ** 2 / 12),
    "normal": lambda loc, scale: (loc, scale ** 2),
    "exponential": lambda lam: (1 / lam, 1 / lam ** 2),
    "gamma": lambda alpha, beta: (alpha * beta, alpha * beta ** 2),
    "poisson": lambda lam: (lam, lam),
    "negative_binomial": lambda k, p: (k * (1 - p) / p, k * (1 - p) / p ** 2),
    "generalized_negative_binomial": lambda mu, alpha: (mu, mu + alpha * mu ** 2),
}


def _sample_moments(name, pnames):
    """moments of a _sample_* op: one draw of `shape` per parameter element, so the parameters gain its axes."""
    def moments(*params, shape, **_):
        return _MOMENTS[name](*[np.asarray(p, np.float64).reshape(p.shape + (1,) * len(shape)) for p in params])
    return moments


def _param_attr(name, default):
    return Attr(parse_int if name == "k" else parse_float, default)


def _check_params(name, params):
    p = dict(params)
    if name == "uniform" and np.any(np.asarray(p["low"]) > np.asarray(p["high"])):
        raise ValueError("low must be less or equal to high in uniform distribution")
    if name == "normal" and np.any(np.asarray(p["scale"]) <= 0):
        raise ValueError("scale parameter in gaussian has to be positive")
    if name in ("exponential", "poisson") and np.any(np.asarray(p["lam"]) < 0):
        raise ValueError("lam must be non-negative")
    if name == "gamma" and (np.any(np.asarray(p["alpha"]) <= 0) or np.any(np.asarray(p["beta"]) <= 0)):
        raise ValueError("alpha and beta must be positive")
    if name == "negative_binomial" and (np.any(np.asarray(p["k"]) <= 0) or np.any(np.asarray(p["p"]) <= 0)
                                        or np.any(np.asarray(p["p"]) > 1)):
        raise ValueError("k must be positive and p in (0, 1]")
    if name == "generalized_negative_binomial" and (np.any(np.asarray(p["mu"]) < 0)
                                                    or np.any(np.asarray(p["alpha"]) < 0)):
        raise ValueError("mu and alpha must be non-negative")


def _make_random_kernel(name, sampler, pnames):
    def kernel(xp, shape, ctx, dtype, rng, **params):
        _check_params(name, params)
        return _finish(xp, sampler(rng, check_shape(shape), *[params[p] for p in pnames]), dtype or _F32)
    return kernel


def _make_like_kernel(name, sampler, pnames):
    def kernel(xp, data, rng, **params):
        _check_params(name, params)
        return _finish(xp, sampler(rng, data.shape, *[params[p] for p in pnames]), data.dtype)
    return kernel


def _sample_shape(param_shapes, shape):
    """One draw of `shape` per element of the parameter arrays (which have one shape): params.shape + shape."""
    param_shapes = [tuple(s) for s in param_shapes]
    for s in param_shapes[1:]:
        if s != param_shapes[0]:
            raise ValueError(f"parameter arrays must have the same shape, got "
                             f"{', '.join(str(x) for x in param_shapes)}")
    return check_shape(param_shapes[0] + tuple(shape))


def _sample_infer(shapes, dtypes, shape, dtype):
    return [_sample_shape(shapes, shape)], [dtype or _F32]


def _make_sample_kernel(name, sampler, pnames):
    def kernel(xp, *arrays, shape, dtype, rng):
        size = _sample_shape([a.shape for a in arrays], shape)
        shape = tuple(shape)
        params = [_host(a).astype(np.float64).reshape(a.shape + (1,) * len(shape)) for a in arrays]
        return _finish(xp, sampler(rng, size, *params), dtype or _F32)
    return kernel


def _random_infer(shapes, dtypes, shape, dtype, **_):
    return [check_shape(shape)], [dtype or _F32]


_SHAPE_CASES = (((), {"shape": (3, 4)}), ((), {"shape": (5,), "dtype": "float64"}), ((), {"shape": (0, 2)}))

for _name, _sampler, _params, _sample_inputs, _test_params in _DISTS:
    _pnames = [p for p, _ in _params]
    _aliases = ("random_" + _name,) + ((_name,) if _name in ("uniform", "normal") else ())
    register(OpDef(
        name=f"_random_{_name}", kernel=_make_random_kernel(_name, _sampler, _pnames), inputs=(), creates=True,
        random=True, differentiable=False, aliases=_aliases, infer=_random_infer,
        attrs={**{p: _param_attr(p, d) for p, d in _params}, "shape": Attr(parse_shape, ()),
               "ctx": Attr(parse_ctx, None), "dtype": Attr(_dtype_or(_F32), None)},
        test=OpTest(random=True, grad=False, grad2=False,
                    moments=lambda _m=_MOMENTS[_name], _p=_pnames, **a: _m(*[a[p] for p in _p]),
                    cases=tuple((s, {**a, **_test_params}) for s, a in _SHAPE_CASES)),
        doc=f"Samples of the {_name} distribution with scalar parameters: a new array of `shape` (float32)."))
    register(OpDef(
        name=f"_random_{_name}_like", kernel=_make_like_kernel(_name, _sampler, _pnames), inputs=("data",),
        random=True, differentiable=False,
        attrs={p: _param_attr(p, d) for p, d in _params},
        infer=lambda shapes, dtypes, **_: ([tuple(shapes[0])], [dtypes[0]]),
        test=OpTest(random=True, grad=False, grad2=False, cases=((((3, 4),), dict(_test_params)),),
                    moments=lambda data, _m=_MOMENTS[_name], _p=_pnames, **a: _m(*[a[p] for p in _p])),
        doc=f"Samples of the {_name} distribution shaped (and typed) like the input."))
    register(OpDef(
        name=f"_sample_{_name}", kernel=_make_sample_kernel(_name, _sampler, _pnames), inputs=_sample_inputs,
        random=True, differentiable=False, aliases=(f"sample_{_name}",), infer=_sample_infer,
        attrs={"shape": Attr(parse_shape, ()), "dtype": Attr(_dtype_or(_F32), None)},
        test=OpTest(random=True, grad=False, grad2=False, domain=(0.2, 0.9), moments=_sample_moments(_name, _pnames),
                    int_inputs={0: (1, 4)} if _name == "negative_binomial" else {},
                    cases=(((( 2,),) * len(_sample_inputs), {"shape": (3,)}),
                           (((2, 3),) * len(_sample_inputs), {}))),
        doc=f"Samples of the {_name} distribution, one array of `shape` per element of the parameter arrays: "
            "the output has shape params.shape + shape."))


def _randint(xp, low, high, shape, ctx, dtype, rng):
    if low >= high:
        raise ValueError(f"low ({low}) must be smaller than high ({high})")
    return _finish(xp, rng.integers(low, high, size=check_shape(shape)), dtype or _I32)


register(OpDef(
    name="_random_randint", kernel=_randint, inputs=(), creates=True, random=True, differentiable=False,
    aliases=("random_randint",),
    attrs={"low": Attr(parse_int, REQUIRED), "high": Attr(parse_int, REQUIRED), "shape": Attr(parse_shape, ()),
           "ctx": Attr(parse_ctx, None), "dtype": Attr(_dtype_or(_I32), None)},
    infer=lambda shapes, dtypes, shape, dtype, **_: ([tuple(shape)], [dtype or _I32]),
    test=OpTest(random=True, grad=False, grad2=False, cases=(
        ((), {"low": -3, "high": 5, "shape": (4, 5)}), ((), {"low": 0, "high": 2, "shape": (6,), "dtype": "int64"})),
        moments=lambda low, high, **_: ((low + high - 1) / 2, ((high - low) ** 2 - 1) / 12)),
    doc="Integers drawn uniformly from [low, high) (int32 by default)."))


# ---------------------------------------------------------------------------------------------------------
def _max_exact_integer(dtype):
    """The largest count of categories whose every index the output dtype holds exactly (MXNet's check)."""
    if dtype.kind == "f":
        return 2 ** (np.finfo(dtype).nmant + 1)
    return np.iinfo(dtype).max


def _multinomial_shape(data_shape, shape, dtype):
    data_shape = tuple(data_shape)
    if len(data_shape) < 1 or data_shape[-1] < 1:
        raise ValueError(f"data must hold probabilities along its last axis, got shape {data_shape}")
    if data_shape[-1] > _max_exact_integer(dtype):
        raise ValueError(f"dtype {dtype.name} does not have a sufficient precision to represent the indices of "
                         f"the input array ({data_shape[-1]} categories)")
    return check_shape(data_shape[:-1] + tuple(shape))


def _multinomial_infer(shapes, dtypes, shape, get_prob, dtype):
    out = _multinomial_shape(shapes[0], shape, dtype)
    return ([out, out], [dtype, dtypes[0]]) if get_prob else ([out], [dtype])


def _multinomial(xp, data, shape, get_prob, dtype, rng):
    _multinomial_shape(data.shape, shape, dtype)
    shape = tuple(shape)
    k = data.shape[-1]
    probs = _host(data).astype(np.float64).reshape(-1, k)
    rows, n = probs.shape[0], int(np.prod(shape))
    cdf = np.cumsum(probs, axis=1)
    u = rng.random((rows, n)) * cdf[:, -1:]
    idx = np.minimum((u[:, :, None] >= cdf[:, None, :]).sum(axis=2), k - 1)
    out_shape = data.shape[:-1] + shape
    samples = _finish(xp, idx.reshape(out_shape), dtype)
    if not get_prob:
        return samples
    picked = np.take_along_axis(probs, idx, axis=1).reshape(out_shape)
    return samples, _finish(xp, np.log(picked), data.dtype)


def _multinomial_grad(c, *grads):
    if not c.attrs["get_prob"]:
        return (None,)
    data, (samples, _) = c.inputs[0], c.outputs
    g = grads[1]
    k = data.shape[-1]
    rows = data.size // k
    s2 = call("Reshape", samples, shape=(rows, -1))
    d2 = call("Reshape", data, shape=(rows, k))
    picked = call("_take_along_axis", d2, s2, axis=1)
    gp = call("Reshape", g, shape=(rows, -1)) / picked
    return (call("Reshape", call("_put_along_axis_add", gp, s2, shape=(rows, k), axis=1), shape=data.shape),)


register(OpDef(
    name="_sample_multinomial", kernel=_multinomial, random=True, aliases=("sample_multinomial",),
    infer=_multinomial_infer,
    attrs={"shape": Attr(parse_shape, ()), "get_prob": Attr(parse_bool, False),
           "dtype": Attr(parse_dtype, _I32)},
    num_outputs=lambda a: 2 if a["get_prob"] else 1, grad=_multinomial_grad,
    test=OpTest(random=True, grad=False, grad2=False, domain=(0.1, 1.0), cases=(
        (((2, 3),), {}), (((3,),), {"shape": (4, 2)}), (((2, 4),), {"shape": 3, "get_prob": True}))),
    doc="Category indices drawn from the probabilities along data's last axis; get_prob adds their log "
        "probabilities (differentiable)."))


def _shuffle(xp, data, rng):
    if data.ndim == 0 or data.shape[0] < 2:
        return data.copy()
    perm = rng.permutation(data.shape[0])
    return data[perm if xp is np else xp.asarray(perm)]


register(OpDef(
    name="_shuffle", kernel=_shuffle, random=True, differentiable=False, aliases=("shuffle",), infer=infer_same,
    test=OpTest(random=True, grad=False, grad2=False, cases=((((5, 3),), {}), (((6,),), {}))),
    doc="A random permutation of data along its first axis."))
