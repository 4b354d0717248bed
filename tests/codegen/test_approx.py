"""Accuracy of the vectorizable approximations (mixnet/codegen/approx.py) over the float32 range, their IEEE
special cases, and that a loop using them really vectorizes."""
import math
import re

import numpy as np
import pytest
from numba import njit

from mixnet.codegen import approx

_ERF = np.frompyfunc(math.erf, 1, 1)


def erf64(v):
    """Exact erf reference in float64 (Python's math.erf; mixnet does not depend on scipy)."""
    return np.asarray(_ERF(np.asarray(v, dtype=np.float64)), dtype=np.float64)


# Measured max error (ulp of the float32 result, against float64 numpy/math.erf) over every 97th float32 bit
# pattern: exp 0.99, expm1 1.34, log 0.76, log1p 2.25, tanh 4.31, sigmoid 2.25, erf 5.36
# (polynomials contracted to FMAs). Asserted with a margin.
ULP_BOUNDS = {"exp_f32": 1.5, "expm1_f32": 2.5, "log_f32": 1.5, "log1p_f32": 3, "tanh_f32": 7, "sigmoid_f32": 3,
              "erf_f32": 8}
REFERENCE = {"exp_f32": np.exp, "expm1_f32": np.expm1, "log_f32": np.log, "log1p_f32": np.log1p,
             "tanh_f32": np.tanh,
             "sigmoid_f32": lambda v: np.where(v >= 0, 1, np.exp(-np.abs(v))) / (1 + np.exp(-np.abs(v))),
             "erf_f32": erf64}

F32 = np.finfo(np.float32)
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, F32.tiny, -F32.tiny, F32.smallest_subnormal,
                    -F32.smallest_subnormal, 1e-40, -1e-40, F32.max, -F32.max, F32.eps, 88.72283, 88.72284,
                    88.7229, 89.0, -87.33654, -103.0, -103.972, -104.0, -150.0, 7.9, 7.906, -7.906, 3.9, 4.0,
                    -4.0, 0.0004, -0.0004, 1e-4, -1e-4, -0.99999994, -1.0000001, 16.635532, 0.5, -0.5, 0.34657359,
                    -0.34657359, 17.0, -17.0, 20.0, -20.0, 25.0, 80.0], dtype=np.float32)


def _sweep():
    bits = np.arange(-2**31, 2**31, 4099, dtype=np.int64).astype(np.int32)      # ~1M patterns, all exponents
    x = bits.view(np.float32)
    dense = np.linspace(-10, 10, 200_001, dtype=np.float32)                      # where the functions bend
    return np.concatenate([x[np.isfinite(x)], dense, SPECIAL])


@pytest.fixture(scope="module")
def kernels():
    out = {}
    for name in ULP_BOUNDS:
        f = getattr(approx, name)

        @njit(error_model="numpy")
        def apply(x, y, f=f):
            for i in range(x.size):
                y[i] = f(x[i])
        out[name] = apply
    return out


def _run(kernel, x):
    y = np.empty_like(x)
    kernel(x, y)
    return y


def ulp_error(got, x, reference):
    with np.errstate(all="ignore"):
        exact = reference(x.astype(np.float64))
        rounded = exact.astype(np.float32)
    ulp = np.maximum(np.spacing(np.abs(rounded)).astype(np.float64), float(F32.smallest_subnormal))
    finite = np.isfinite(rounded)
    err = np.zeros(x.shape)
    with np.errstate(all="ignore"):
        err[finite] = np.abs(got[finite].astype(np.float64) - exact[finite]) / ulp[finite]
    # where the float32 result is inf or nan, it must be exactly that
    same_special = (np.isnan(got) == np.isnan(rounded)) & ((got == rounded) | ~np.isinf(rounded))
    return err, same_special


@pytest.mark.parametrize("name", sorted(ULP_BOUNDS))
def test_max_ulp_error_over_float32_range(kernels, name):
    x = _sweep()
    got = _run(kernels[name], x)
    assert got.dtype == np.float32
    err, same_special = ulp_error(got, x, REFERENCE[name])
    worst = int(np.argmax(err))
    print(f"{name}: max {err.max():.2f} ulp at x={x[worst]!r}")
    assert err.max() <= ULP_BOUNDS[name], f"{name}: {err.max():.2f} ulp at x={x[worst]!r}"
    assert same_special.all(), f"{name}: wrong inf/nan at {x[~same_special][:5]}"


EXACT = {  # IEEE results that must be exact
    "exp_f32": {np.inf: np.inf, -np.inf: 0.0, 0.0: 1.0, 89.0: np.inf, -150.0: 0.0},
    "expm1_f32": {np.inf: np.inf, -np.inf: -1.0, 0.0: 0.0, 89.0: np.inf, -30.0: -1.0},
    "log_f32": {np.inf: np.inf, 0.0: -np.inf, 1.0: 0.0, -1.0: np.nan, -np.inf: np.nan},
    "log1p_f32": {np.inf: np.inf, -1.0: -np.inf, 0.0: 0.0, -2.0: np.nan},
    "tanh_f32": {np.inf: 1.0, -np.inf: -1.0, 0.0: 0.0, 20.0: 1.0, -20.0: -1.0},
    "sigmoid_f32": {np.inf: 1.0, -np.inf: 0.0, 0.0: 0.5},
    "erf_f32": {np.inf: 1.0, -np.inf: -1.0, 0.0: 0.0, 5.0: 1.0, -5.0: -1.0},
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_special_values(kernels, name):
    cases = EXACT[name]
    x = np.array(list(cases) + [np.nan], dtype=np.float32)
    got = _run(kernels[name], x)
    want = np.array(list(cases.values()) + [np.nan], dtype=np.float32)
    np.testing.assert_array_equal(got, want)
    if name == "log_f32":        # -0.0 cannot be a key beside 0.0 in `cases` (equal keys)
        assert _run(kernels[name], np.array([-0.0], dtype=np.float32))[0] == -np.inf
    # signed zero and denormals pass through the odd functions unchanged
    if name in ("tanh_f32", "expm1_f32", "log1p_f32"):
        tiny = np.array([-0.0, F32.smallest_subnormal, -1e-40], dtype=np.float32)
        np.testing.assert_array_equal(_run(kernels[name], tiny).view(np.int32), tiny.view(np.int32))


def test_helpers_match_numpy():
    @njit(error_model="numpy")
    def helpers(a, b, out):
        for i in range(a.size):
            out[0, i] = approx.maximum(a[i], b[i])
            out[1, i] = approx.minimum(a[i], b[i])
            out[2, i] = approx.fmod_floor(a[i], b[i])
            out[3, i] = approx.round_half_away_f32(a[i])
    a = np.array([1.5, -2.5, np.nan, 3.0, -7.0, 2.5], dtype=np.float32)
    b = np.array([2.0, -3.0, 1.0, np.nan, 3.0, -2.0], dtype=np.float32)
    out = np.empty((4, a.size), np.float32)
    helpers(a, b, out)
    np.testing.assert_array_equal(out[0], np.maximum(a, b))
    np.testing.assert_array_equal(out[1], np.minimum(a, b))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(out[2], np.mod(a, b))
    np.testing.assert_array_equal(out[3], np.where(a >= 0, np.floor(a + 0.5), np.ceil(a - 0.5)))

    @njit
    def inv(y):
        return approx.erfinv(y)
    for v in (-0.999, -0.3, 0.0, 0.2, 0.9, 0.99999):
        assert abs(erf64(inv(v)) - v) < 1e-12


@pytest.mark.parametrize("name", ["exp_f32", "log_f32", "tanh_f32", "erf_f32", "log1p_f32"])
def test_kernels_vectorize(name):
    """A serial loop over one approximation compiles to packed float32 SIMD (ymm/zmm registers)."""
    f = getattr(approx, name)

    @njit(error_model="numpy")
    def loop(x, y):
        for i in range(x.size):
            y[i] = f(x[i])
    loop(np.ones(4, np.float32), np.empty(4, np.float32))
    asm = "\n".join(loop.inspect_asm().values())
    packed = re.findall(r"\bv\w+ps\s+%[yz]mm", asm)
    assert len(packed) >= 10, f"{name} does not vectorize ({len(packed)} packed instructions)"
