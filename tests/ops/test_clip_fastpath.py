"""clip's one-pass path (xp.clip for ordered, nonzero bounds) gives the same bits as MXNet's order of tests
(above a_max -> a_max, else below a_min -> a_min, else x) for every dtype, with NaN, infinities and signed zeros."""
import numpy as np
import pytest

import mixnet as mx

_BOUNDS = [(-0.4, 0.4), (0.0, 1.0), (-1.0, -0.0), (0.5, 0.5), (2.0, -2.0), (-2.7, 3.9), (1.0, 200.0)]


def _mxnet_order(x, a_min, a_max):
    lo, hi = np.asarray(a_min).astype(x.dtype), np.asarray(a_max).astype(x.dtype)
    return np.where(x > hi, hi, np.where(x < lo, lo, x)).astype(x.dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int8", "uint8"])
def test_clip_same_bits_as_mxnet_order(dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(5003) * 3).astype(dtype) if dtype != "uint8" else \
        rng.integers(0, 255, 5003).astype(dtype)
    if x.dtype.kind == "f":
        x[::7], x[::11], x[::13], x[::17], x[::19] = np.nan, np.inf, -0.0, 0.0, -np.inf
    for a_min, a_max in _BOUNDS:
        got = mx.nd.clip(mx.nd.array(x, dtype=dtype), a_min, a_max).asnumpy()
        want = _mxnet_order(x, a_min, a_max)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (a_min, a_max)


def test_clip_strided_and_scalar_inputs():
    x = mx.nd.array(np.linspace(-2, 2, 24).reshape(4, 6))
    got = mx.nd.clip(x[:, 1:4], -0.5, 0.5)
    assert got.shape == (4, 3)
    np.testing.assert_array_equal(got.asnumpy(), np.clip(x.asnumpy()[:, 1:4], -0.5, 0.5))
    assert mx.nd.clip(mx.nd.array(1.5).reshape(()), 0.2, 1.0).asnumpy().shape == ()
