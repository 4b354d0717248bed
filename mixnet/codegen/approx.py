"""Vectorizable approximations of transcendental functions, for the generated Numba kernels.

Why: the llvmlite build has no SVML, so `math.exp`/`np.tanh` inside a Numba loop are scalar libm calls and a fused
kernel that uses them is slower than numpy's SIMD ufuncs (the literal W1 kernel ran 7x slower than numpy). The
functions here use only `+ - * /`, comparisons/selects, `np.floor` and integer bit tricks (float <-> int
reinterpretation through `_f32_as_i32`/`_i32_as_f32`, an LLVM bitcast), all of which LLVM vectorizes (AVX2/AVX-512
`vfmadd...ps`, `vblendvps`, `vpslld`, ...; see tests/codegen/test_approx.py::test_kernels_vectorize).

Every function is float32 in, float32 out, with every constant an `np.float32` (one Python float would promote the
whole expression to float64). IEEE special cases are exact: nan -> nan, exp(-inf) = 0, exp(inf) = inf,
tanh(+-inf) = +-1, log(0) = -inf, log(x < 0) = nan, log(inf) = inf; denormal inputs and results are handled.

Measured max error (tests/codegen/test_approx.py; reference: numpy / math.erf in float64; error in ulp of the float32
result; every 97th float32 bit pattern, denormals included, plus special values; bounds asserted in ULP_BOUNDS):

    exp_f32      0.99 ulp   Cody-Waite range reduction, degree-7 polynomial (Cephes expf), 2^n by bit shift
    expm1_f32    1.34 ulp   same reduction, expm1(r) polynomial, 2^n*expm1(r) + (2^n - 1)
    log_f32      0.76 ulp   mantissa/exponent split by bits, degree-9 polynomial (Cephes logf)
    log1p_f32    2.25 ulp   u = 1 + x; log(u) * x / (u - 1)  (Goldberg's trick)
    tanh_f32     4.31 ulp   13/6 rational function, clamped to +-7.9053 (Eigen's ptanh_float); x for |x| < 4e-4
    sigmoid_f32  2.25 ulp   exp(-|x|) then 1/(1+e) or e/(1+e)
    erf_f32      5.36 ulp   odd 13/8 rational function clamped to +-4 (Eigen); 2/sqrt(pi) x for tiny x

Float64 kernels use libm (numba_cpu maps the names to numpy's scalar functions): the same tricks work in float64
with longer polynomials, not written yet.

These are ordinary `@njit` functions: LLVM inlines them into the generated loops (numba links callee IR into the
caller's module before optimizing), so the loop still vectorizes. Changing this file changes the fingerprint that
every generated kernel embeds (`SOURCE_FINGERPRINT`), so cached kernels compiled against an older version are never
reused.
"""
import hashlib
import math
import os

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["exp_f32", "expm1_f32", "log_f32", "log1p_f32", "tanh_f32", "sigmoid_f32", "erf_f32", "sigmoid_libm32",
           "sigmoid_libm64", "maximum", "minimum", "fmod_floor", "round_half_away_f32", "round_half_away_f64", "power", "erfinv", "SOURCE_FINGERPRINT"]

with open(os.path.abspath(__file__), "rb") as _f:
    SOURCE_FINGERPRINT = hashlib.sha1(_f.read()).hexdigest()[:12]

f32 = np.float32
i32 = np.int32

# `contract` lets LLVM turn each `p * r + c` of the polynomials into one FMA instruction (the instruction flags
# survive inlining into the generated loops). Measured on this AVX2 machine, one thread, per 1e6 floats: exp
# 2.39 -> 2.12 ms, tanh 1.97 -> 1.61 ms, the W1 chain 5.46 -> 4.35 ms. An FMA rounds once instead of twice; the
# errors in the table above are measured with it. No other fast-math flag is set: nan/inf handling and the order
# of operations stay IEEE.
_JIT = dict(error_model="numpy", fastmath={"contract"})


@intrinsic
def _f32_as_i32(typingctx, x):
    """The bits of a float32 as an int32 (an LLVM bitcast: free, and vectorizes)."""
    if x != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int32))
    return types.int32(types.float32), codegen


@intrinsic
def _i32_as_f32(typingctx, x):
    """The low 32 bits of an integer as a float32 (numba widens int32 arithmetic to int64; truncate back)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        value = args[0]
        if x.bitwidth > 32:
            value = builder.trunc(value, context.get_value_type(types.int32))
        return builder.bitcast(value, context.get_value_type(types.float32))
    return types.float32(x), codegen


@njit(**_JIT)
def _pow2i(n):
    """2**n for an int32 n in [-126, 127], by writing the exponent field."""
    return _i32_as_f32((n + i32(127)) << i32(23))


# ---------------------------------------------------------------------------------------------------- helpers
@njit(**_JIT)
def maximum(a, b):
    """np.maximum's semantics (a nan in either argument gives nan), as a select that vectorizes."""
    return a if (a >= b or a != a) else b


@njit(**_JIT)
def minimum(a, b):
    return a if (a <= b or a != a) else b


@njit(**_JIT)
def fmod_floor(a, b):
    """np.mod: the remainder has the sign of the divisor."""
    r = np.fmod(a, b)
    if r != 0 and ((r < 0) != (b < 0)):
        r = r + b
    return r


@njit(**_JIT)
def round_half_away_f32(x):
    """MXNet's round: halves away from zero (np.round rounds half to even)."""
    return np.floor(x + f32(0.5)) if x >= f32(0.0) else np.ceil(x - f32(0.5))


@njit(**_JIT)
def round_half_away_f64(x):
    return np.floor(x + 0.5) if x >= 0.0 else np.ceil(x - 0.5)


@njit(**_JIT)
def power(a, b):
    return a ** b


@njit(**_JIT)
def erfinv(y):
    """Inverse error function, float64 result (not vectorized: a rare op). Giles' single-precision approximation followed by two
    Newton steps on math.erf in float64, so float32 results are correctly rounded in practice."""
    x = np.float64(y)
    if x != x or x < -1.0 or x > 1.0:
        return np.nan
    if x == 1.0 or x == -1.0:
        return x * np.inf
    w = -np.log((1.0 - x) * (1.0 + x))
    if w < 5.0:
        w = w - 2.5
        p = 2.81022636e-08
        p = 3.43273939e-07 + p * w
        p = -3.5233877e-06 + p * w
        p = -4.39150654e-06 + p * w
        p = 0.00021858087 + p * w
        p = -0.00125372503 + p * w
        p = -0.00417768164 + p * w
        p = 0.246640727 + p * w
        p = 1.50140941 + p * w
    else:
        w = np.sqrt(w) - 3.0
        p = -0.000200214257
        p = 0.000100950558 + p * w
        p = 0.00134934322 + p * w
        p = -0.00367342844 + p * w
        p = 0.00573950773 + p * w
        p = -0.0076224613 + p * w
        p = 0.00943887047 + p * w
        p = 1.00167406 + p * w
        p = 2.83297682 + p * w
    r = p * x
    for _ in range(2):
        err = _erf64(r) - x
        r = r - err / (1.1283791670955126 * np.exp(-r * r))
    return r


@njit(**_JIT)
def _erf64(x):
    return math.erf(x)


# ---------------------------------------------------------------------------------------------------- exp
@njit(**_JIT)
def exp_f32(x):
    # Clamp so the reduction below stays finite (a nan goes to the clamp and is restored at the end).
    xc = x if x < f32(88.72284) else f32(88.72284)
    xc = xc if xc > f32(-104.0) else f32(-104.0)
    # x = n*ln2 + r, |r| <= ln2/2; ln2 in two parts (Cody-Waite) so n*ln2_hi is exact.
    n = np.floor(xc * f32(1.44269504088896341) + f32(0.5))
    r = xc - n * f32(0.693359375)
    r = r - n * f32(-2.12194440e-4)
    z = r * r
    p = f32(1.9875691500e-4)
    p = p * r + f32(1.3981999507e-3)
    p = p * r + f32(8.3334519073e-3)
    p = p * r + f32(4.1665795894e-2)
    p = p * r + f32(1.6666665459e-1)
    p = p * r + f32(5.0000001201e-1)
    p = p * z + r + f32(1.0)
    # 2**n as two factors so that n in [-150, 128] (denormal results, exp(88.72) ~ FLT_MAX) never overflows
    # the exponent field.
    ni = i32(n)
    n1 = ni >> i32(1)
    y = p * _pow2i(n1) * _pow2i(ni - n1)
    y = y if x <= f32(88.72284) else f32(np.inf)
    return y if x == x else x


@njit(**_JIT)
def expm1_f32(x):
    xc = x if x < f32(88.72284) else f32(88.72284)
    xc = xc if xc > f32(-20.0) else f32(-20.0)
    n = np.floor(xc * f32(1.44269504088896341) + f32(0.5))
    r = xc - n * f32(0.693359375)
    r = r - n * f32(-2.12194440e-4)
    # expm1(r) = r + r^2/2 + r^3 * q(r) on |r| <= ln2/2 (Taylor coefficients to r^8 suffice in float32).
    q = f32(1.0 / 362880.0)
    q = q * r + f32(1.0 / 40320.0)
    q = q * r + f32(1.0 / 5040.0)
    q = q * r + f32(1.0 / 720.0)
    q = q * r + f32(1.0 / 120.0)
    q = q * r + f32(1.0 / 24.0)
    q = q * r + f32(1.0 / 6.0)
    z = r * r
    em = r + (z * f32(0.5) + z * r * q)
    ni = i32(n)
    nsmall = ni if ni < i32(25) else i32(25)
    t = _pow2i(nsmall)                                   # exact: n in [-29, 25]
    small = t * em + (t - f32(1.0))                      # 2^n expm1(r) + (2^n - 1)
    n1 = ni >> i32(1)
    big = (em + f32(1.0)) * _pow2i(n1) * _pow2i(ni - n1) - f32(1.0)
    y = small if ni < i32(25) else big
    y = y if x <= f32(88.72284) else f32(np.inf)
    y = y if x == x else x
    return x if (x < f32(1e-20) and x > f32(-1e-20)) else y     # tiny x (denormals) exactly


# ---------------------------------------------------------------------------------------------------- log
@njit(**_JIT)
def log_f32(x):
    # Denormals: scale by 2^23 into the normal range and take 23 off the exponent.
    tiny = x < f32(1.17549435e-38)
    xs = x * f32(8388608.0) if tiny else x
    bits = _f32_as_i32(xs)
    e = np.float32((bits >> i32(23)) - i32(126)) - (f32(23.0) if tiny else f32(0.0))
    m = _i32_as_f32((bits & i32(0x007FFFFF)) | i32(0x3F000000))       # mantissa in [0.5, 1)
    low = m < f32(0.707106781186547524)
    e = e - f32(1.0) if low else e
    m = (m + m - f32(1.0)) if low else (m - f32(1.0))                  # m in [sqrt(.5) - 1, sqrt(2) - 1)
    z = m * m
    p = f32(7.0376836292e-2)
    p = p * m + f32(-1.1514610310e-1)
    p = p * m + f32(1.1676998740e-1)
    p = p * m + f32(-1.2420140846e-1)
    p = p * m + f32(1.4249322787e-1)
    p = p * m + f32(-1.6668057665e-1)
    p = p * m + f32(2.0000714765e-1)
    p = p * m + f32(-2.4999993993e-1)
    p = p * m + f32(3.3333331174e-1)
    y = p * m * z
    y = y + e * f32(-2.12194440e-4)
    y = y - f32(0.5) * z
    y = m + y + e * f32(0.693359375)
    y = y if x < f32(np.inf) else x                                    # inf -> inf
    y = y if x > f32(0.0) else (f32(-np.inf) if x == f32(0.0) else f32(np.nan))
    return y if x == x else x


@njit(**_JIT)
def log1p_f32(x):
    u = x + f32(1.0)
    d = u - f32(1.0)
    y = log_f32(u) * (x / d)
    # 1 + x == 1: log1p(x) = x; x = inf: inf (nan propagates by itself). One select: more of them here stop LLVM
    # from inlining this into the caller's loop, which then no longer vectorizes.
    return x if (d == f32(0.0) or d == f32(np.inf)) else y


# ---------------------------------------------------------------------------------------------------- tanh, erf
@njit(**_JIT)
def tanh_f32(x):
    # Eigen's ptanh_float: a 13/6 rational function; beyond +-7.9053 tanh rounds to +-1 in float32.
    xc = x if x < f32(7.90531110763549805) else f32(7.90531110763549805)
    xc = xc if xc > f32(-7.90531110763549805) else f32(-7.90531110763549805)
    z = xc * xc
    p = f32(-2.76076847742355e-16)
    p = p * z + f32(2.00018790482477e-13)
    p = p * z + f32(-8.60467152213735e-11)
    p = p * z + f32(5.12229709037114e-08)
    p = p * z + f32(1.48572235717979e-05)
    p = p * z + f32(6.37261928875436e-04)
    p = p * z + f32(4.89352455891786e-03)
    p = p * xc
    q = f32(1.19825839466702e-06)
    q = q * z + f32(1.18534705686654e-04)
    q = q * z + f32(2.26843463243900e-03)
    q = q * z + f32(4.89352518554385e-03)
    y = p / q
    # Past the clamp the rational gives 1 - 4 ulp with FMA contraction; tanh(x) rounds to +-1 beyond |x| = 9.01.
    y = f32(1.0) if x > f32(9.01) else (f32(-1.0) if x < f32(-9.01) else y)
    y = x if (x < f32(0.0004) and x > f32(-0.0004)) else y             # tanh(x) = x to float32 precision
    return y if x == x else x


@njit(**_JIT)
def sigmoid_f32(x):
    # exp of -|x| only, so that sigmoid(x) for x << 0 keeps its relative accuracy down to the denormals
    # (1 / (1 + exp(-x)) would overflow exp at x < -88.7 and return 0).
    e = exp_f32(-x if x >= f32(0.0) else x)
    d = f32(1.0) + e
    return f32(1.0) / d if x >= f32(0.0) else e / d


# sigmoid through libm's exp, in the form of sigmoid_f32 (and of the CUDA kernels' mx_sigmoid): float64 kernels
# and float32 ones with exact=True.
@njit(**_JIT)
def sigmoid_libm32(x):
    e = np.exp(-abs(x))
    d = f32(1.0) + e
    return f32(1.0) / d if x >= f32(0.0) else e / d


@njit(**_JIT)
def sigmoid_libm64(x):
    e = np.exp(-abs(x))
    d = 1.0 + e
    return 1.0 / d if x >= 0.0 else e / d


@njit(**_JIT)
def erf_f32(x):
    # Eigen's generic_fast_erf_float: odd rational function on [-4, 4]; erf(+-4) rounds to +-1 in float32.
    xc = x if x < f32(4.0) else f32(4.0)
    xc = xc if xc > f32(-4.0) else f32(-4.0)
    z = xc * xc
    p = f32(-2.72614225801306e-10)
    p = p * z + f32(2.77068142495902e-08)
    p = p * z + f32(-2.10102402082508e-06)
    p = p * z + f32(-5.69250639462346e-05)
    p = p * z + f32(-7.34990630326855e-04)
    p = p * z + f32(-2.95459980854025e-03)
    p = p * z + f32(-1.60960333262415e-02)
    p = p * xc
    q = f32(-1.45660718464996e-05)
    q = q * z + f32(-2.13374055278905e-04)
    q = q * z + f32(-1.68282697438203e-03)
    q = q * z + f32(-7.37332916720468e-03)
    q = q * z + f32(-1.42647390514189e-02)
    y = p / q
    y = x * f32(1.12837916709551257) if (x < f32(1e-4) and x > f32(-1e-4)) else y
    return y if x == x else x
