"""Special functions in plain numpy (mixnet depends on numpy only, not scipy): erf, erfinv, gamma, gammaln and
the polygamma family their gradients need. Accuracy is float64-level for erf/gamma (math module), and about
1e-12 relative for polygamma (asymptotic series after upward recurrence).

A cupy array is computed on its GPU by cupyx.scipy.special (part of cupy), in float64 and with the poles placed
as the host functions place them, so the two devices agree."""
import math

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)


def _gamma_scalar(x):
    try:
        return math.gamma(x)
    except (ValueError, OverflowError):   # poles and overflow: what numpy-style code expects
        return math.nan if x <= 0 and float(x).is_integer() else math.inf


_gamma = np.frompyfunc(_gamma_scalar, 1, 1)


def _lgamma_scalar(x):
    try:
        return math.lgamma(x)
    except ValueError:
        return math.inf


_lgamma = np.frompyfunc(_lgamma_scalar, 1, 1)


def _gpu_special(x):
    """cupyx.scipy.special when x is a cupy array (the numpy code below cannot read device memory), else None."""
    if isinstance(x, np.ndarray) or not hasattr(x, "__cuda_array_interface__"):
        return None
    import cupyx.scipy.special
    return cupyx.scipy.special


def _at_poles(x64, value):
    """value with nan where the cupy array x64 is a non-positive integer (gamma's and polygamma's poles, where
    the host functions give nan and scipy's give inf)."""
    import cupy
    return cupy.where((x64 <= 0) & (x64 == cupy.floor(x64)), np.nan, value)


def _elementwise(ufunc, gpu_name, x):
    """Applies a Python-scalar ufunc (object dtype) and returns an array of x's dtype, 0-d included; on a GPU,
    cupyx.scipy.special's `gpu_name` in float64."""
    if not x.size:
        return x.copy()
    gpu = _gpu_special(x)
    if gpu is not None:
        x64 = x.astype(np.float64)
        value = getattr(gpu, gpu_name)(x64)
        return (_at_poles(x64, value) if gpu_name == "gamma" else value).astype(x.dtype)
    return np.asarray(ufunc(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def erf(x):
    return _elementwise(_erf, "erf", x)


def gamma(x):
    return _elementwise(_gamma, "gamma", x)


def gammaln(x):
    return _elementwise(_lgamma, "gammaln", x)


def erfinv(y):
    """Inverse error function: Giles' single-precision approximation refined by two Newton steps in float64."""
    gpu = _gpu_special(y)
    if gpu is not None:
        return gpu.erfinv(y.astype(np.float64)).astype(y.dtype)
    y64 = y.astype(np.float64)
    w = -np.log((1.0 - y64) * (1.0 + y64))
    small = w < 5.0
    ws = w - 2.5
    p_small = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p_small = c + p_small * ws
    wb = np.sqrt(np.where(small, 5.0, w)) - 3.0
    p_big = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        p_big = c + p_big * wb
    x = np.where(small, p_small, p_big) * y64
    finite = np.isfinite(x)
    for _ in range(2):
        err = np.asarray(_erf(np.where(finite, x, 0.0)), dtype=np.float64) - y64
        x = np.where(finite, x - err / (2.0 / math.sqrt(math.pi) * np.exp(-x * x)), x)
    x = np.where(np.abs(y64) == 1.0, np.copysign(np.inf, y64), x)
    return x.astype(y.dtype)


# Bernoulli numbers B2, B4, ... B16 for the asymptotic polygamma series.
_B2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def polygamma(n, x):
    """psi^(n)(x) for n >= 0 (n = 0 is digamma), elementwise, for real x (poles give nan/inf)."""
    gpu = _gpu_special(x)
    if gpu is not None:             # psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x), scipy's own definition
        x64 = x.astype(np.float64)
        value = gpu.digamma(x64) if n == 0 else \
            (-1.0 if n % 2 == 0 else 1.0) * math.factorial(n) * gpu.zeta(float(n + 1), x64)
        return _at_poles(x64, value).astype(x.dtype)
    x64 = np.array(x, dtype=np.float64, copy=True)
    result = np.zeros_like(x64)
    sign = -1.0 if n % 2 == 0 else 1.0          # (-1)^(n+1)
    # Reflection is not needed for the gradients mixnet takes; shift x upwards until the series converges.
    shift = np.zeros_like(x64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(12):
            low = x64 + shift < 12.0
            if not low.any():
                break
            term = 1.0 / (x64 + shift) ** (n + 1)
            result = result + np.where(low, term, 0.0)
            shift = shift + low
        z = x64 + shift
        if n == 0:
            series = np.log(z) - 0.5 / z
            zz = z * z
            zpow = zz
            for k, b in enumerate(_B2K, start=1):
                series = series - b / (2 * k * zpow)
                zpow = zpow * zz
            out = series - result
        else:
            fact = math.factorial(n - 1)
            series = fact / z ** n + math.factorial(n) / (2 * z ** (n + 1))
            for k, b in enumerate(_B2K, start=1):
                series = series + b * math.factorial(2 * k + n - 1) / (math.factorial(2 * k) * z ** (2 * k + n))
            out = sign * series + sign * math.factorial(n) * result
        out = np.where((x64 <= 0) & (x64 == np.floor(x64)), np.nan, out)
    return out.astype(np.asarray(x).dtype)
