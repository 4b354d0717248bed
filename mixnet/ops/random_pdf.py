"""`_random_pdf_<dist>(sample, *params, is_log=False)`: MXNet 1.x's densities (probability mass for the discrete
ones) of samples under the distributions the samplers in random.py draw from, and their gradients.

Shapes follow MXNet: the parameter arrays share one shape P, and the samples have shape P + S (one density per
sample, parameters constant along S); the output has the samples' shape. Dirichlet's samples are vectors:
alpha has shape P + (k,), samples P + S + (k,), the output P + S ((1,) for a single vector sample).

Each distribution's log-density and its partial derivatives are written once, over a small namespace of
functions (`_NUMPY` for the kernel, `_MIXNET` for the gradient rule, so gradients are mixnet ops and can be
differentiated again). The density is exp(log-density); its gradient is the density times the log-density's.
As in MXNet, samples of discrete distributions and of the uniform get a zero gradient, the gamma's `beta` is a
rate (density beta^alpha x^(alpha-1) e^(-beta x) / Gamma(alpha)) and negative_binomial's `p` multiplies as p^k.
"""
import math
from types import SimpleNamespace

import numpy as np

from . import special
from .attrs import Attr, parse_bool
from .common import call, sum_to
from .registry import OpDef, OpTest, register

_NUMPY = SimpleNamespace(log=np.log, exp=np.exp, gammaln=special.gammaln,
                         digamma=lambda x: special.polygamma(0, x),
                         sum_last=lambda x: x.sum(axis=-1, keepdims=True))
_MIXNET = SimpleNamespace(log=lambda x: call("log", x), exp=lambda x: call("exp", x),
                          gammaln=lambda x: call("gammaln", x), digamma=lambda x: call("_polygamma", x, n=0),
                          sum_last=lambda x: call("sum", x, axis=-1, keepdims=True))
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


# log-density(F, x, *params) and its derivatives -> (d/dx or None for zero, d/dparam, ...)
def _normal(F, x, loc, scale):
    return -0.5 * ((x - loc) / scale) ** 2 - F.log(scale) - _HALF_LOG_2PI


def _normal_d(F, x, loc, scale):
    z = (x - loc) / (scale * scale)
    return -z, z, ((x - loc) * (x - loc) - scale * scale) / (scale * scale * scale)


def _uniform(F, x, low, high):
    return 0 * x - F.log(high - low)          # no check that x is in [low, high), as MXNet


def _uniform_d(F, x, low, high):
    inv = 1 / (high - low) + 0 * x
    return None, inv, -inv


def _gamma(F, x, alpha, beta):
    return alpha * F.log(beta) + (alpha - 1) * F.log(x) - beta * x - F.gammaln(alpha)


def _gamma_d(F, x, alpha, beta):
    return (alpha - 1) / x - beta, F.log(beta) + F.log(x) - F.digamma(alpha), alpha / beta - x


def _exponential(F, x, lam):
    return F.log(lam) - lam * x


def _exponential_d(F, x, lam):
    return -lam + 0 * x, 1 / lam - x


def _poisson(F, x, lam):
    return x * F.log(lam) - F.gammaln(x + 1) - lam


def _poisson_d(F, x, lam):
    return None, x / lam - 1


def _negative_binomial(F, x, k, p):
    return F.gammaln(x + k) - F.gammaln(x + 1) - F.gammaln(k) + k * F.log(p) + x * F.log(1 - p)


def _negative_binomial_d(F, x, k, p):
    return None, F.digamma(x + k) - F.digamma(k) + F.log(p), k / p - x / (1 - p)


def _gen_negative_binomial(F, x, mu, alpha):
    """Negative binomial with k = 1/alpha, p = 1/(mu*alpha + 1): mean mu, variance mu + alpha*mu^2."""
    return _negative_binomial(F, x, 1 / alpha, 1 / (mu * alpha + 1))


def _gen_negative_binomial_d(F, x, mu, alpha):
    den = mu * alpha + 1
    _, dk, dp = _negative_binomial_d(F, x, 1 / alpha, 1 / den)
    return None, -dp * alpha / (den * den), -dk / (alpha * alpha) - dp * mu / (den * den)


def _dirichlet(F, x, alpha):
    """Along the last axis: sum((alpha - 1) log x) + lgamma(sum alpha) - sum(lgamma alpha), keeping that axis."""
    return F.sum_last((alpha - 1) * F.log(x)) + F.gammaln(F.sum_last(alpha)) - F.sum_last(F.gammaln(alpha))


def _dirichlet_d(F, x, alpha):
    return (alpha - 1) / x, F.log(x) + F.digamma(F.sum_last(alpha)) - F.digamma(alpha)


_DISTS = {
    # name: (log-density, derivatives, parameter names, discrete)
    "uniform": (_uniform, _uniform_d, ("low", "high")),
    "normal": (_normal, _normal_d, ("mu", "sigma")),
    "gamma": (_gamma, _gamma_d, ("alpha", "beta")),
    "exponential": (_exponential, _exponential_d, ("lam",)),
    "poisson": (_poisson, _poisson_d, ("lam",)),
    "negative_binomial": (_negative_binomial, _negative_binomial_d, ("k", "p")),
    "generalized_negative_binomial": (_gen_negative_binomial, _gen_negative_binomial_d, ("mu", "alpha")),
    "dirichlet": (_dirichlet, _dirichlet_d, ("alpha",)),
}


def _layout(sample_shape, param_shapes, vector):
    """(output shape, the parameters' broadcastable shape against the samples) after MXNet's shape checks."""
    sample_shape, first = tuple(sample_shape), tuple(param_shapes[0])
    for s in param_shapes[1:]:
        if tuple(s) != first:
            raise ValueError(f"distribution parameters must have the same shape, got "
                             f"{', '.join(str(tuple(p)) for p in param_shapes)}")
    if len(first) > len(sample_shape) or (vector and not first):
        raise ValueError(f"samples {sample_shape} must have at least the dimensions of the parameters {first}")
    lead = first[:-1] if vector else first
    if sample_shape[:len(lead)] != lead or (vector and sample_shape[-1] != first[-1]):
        raise ValueError(f"the parameters' shape {first} must match the leading dimensions of the samples "
                         f"{sample_shape}" + (" and their last (vector) dimension" if vector else ""))
    extra = len(sample_shape) - len(first)
    if vector:
        out = sample_shape[:-1] if len(sample_shape) > 1 else (1,)
        return out, lead + (1,) * extra + first[-1:]
    return sample_shape, first + (1,) * extra


def _make(name, logpdf, derivs, vector):
    def infer(shapes, dtypes, is_log):
        out, _ = _layout(shapes[0], shapes[1:], vector)
        return [out], [dtypes[0]]

    def kernel(xp, sample, *params, is_log):
        out_shape, bshape = _layout(sample.shape, [p.shape for p in params], vector)
        host = [np.asarray(a.get() if hasattr(a, "get") else a, dtype=np.float64) for a in (sample,) + params]
        x, ps = host[0], [p.reshape(bshape) for p in host[1:]]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            value = logpdf(_NUMPY, x, *ps)
            value = value if is_log else np.exp(value)
        value = value.reshape(out_shape).astype(sample.dtype)
        return value if xp is np else xp.asarray(value)

    def grad(c, g):
        sample, params, out = c.inputs[0], c.inputs[1:], c.outputs[0]
        _, bshape = _layout(sample.shape, [p.shape for p in params], vector)
        scaled = g if c.attrs["is_log"] else g * out
        # the output lost the vector axis (Dirichlet): give it back so it broadcasts against the samples
        scaled = call("Reshape", scaled, shape=sample.shape[:-1] + (1,)) if vector else scaled
        ps = [call("Reshape", p, shape=bshape) for p in params]
        d = derivs(_MIXNET, sample, *ps)
        dx = call("zeros_like", sample) if d[0] is None else scaled * d[0]
        dps = [call("Reshape", sum_to(scaled * dp, bshape), shape=p.shape) for dp, p in zip(d[1:], params)]
        return (dx, *dps)
    return infer, kernel, grad


def _ref(logpdf, vector):
    def ref(sample, *params, is_log=False):
        out, bshape = _layout(sample.shape, [p.shape for p in params], vector)
        value = logpdf(_NUMPY, sample.astype(np.float64), *[p.astype(np.float64).reshape(bshape) for p in params])
        return (value if is_log else np.exp(value)).reshape(out)
    return ref


for _name, (_logpdf, _derivs, _pnames) in _DISTS.items():
    _vector = _name == "dirichlet"
    _discrete = _name in ("poisson", "negative_binomial", "generalized_negative_binomial")
    _infer, _kernel, _grad = _make(_name, _logpdf, _derivs, _vector)
    _shapes = (((2, 4, 3), (2, 3)), ((3,), (3,))) if _vector else (((2, 3, 4), (2, 3)), ((3,), (3,)))
    register(OpDef(
        name=f"_random_pdf_{_name}", kernel=_kernel, inputs=("sample",) + _pnames, infer=_infer, grad=_grad,
        aliases=(f"random_pdf_{_name}",), nondiff_inputs=(0,) if _discrete else (),
        attrs={"is_log": Attr(parse_bool, False)},
        test=OpTest(ref=_ref(_logpdf, _vector), dtype="float64", grad2=False,
                    # positive parameters and samples in the support (discrete samples need not be integers
                    # here: the formulas accept any non-negative value, as MXNet's kernels do); the uniform's
                    # `high` is fixed at 1 so that it stays above `low`
                    domain=(0.1, 0.9), int_inputs={2: (1, 2)} if _name == "uniform" else {},
                    cases=tuple((((s[0],) + (s[1],) * len(_pnames)), {"is_log": log})
                                for s in _shapes for log in (False, True))),
        doc=f"The {_name} distribution's density (is_log: its log) at each sample, for the parameters of the "
            "sample's leading dimensions."))
