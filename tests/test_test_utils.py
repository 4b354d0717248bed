import os
import sys

import numpy as np
import pytest

import mixnet as mx
from mixnet import test_utils as tu


def test_assert_almost_equal_passes_within_default_tolerance():
    tu.assert_almost_equal(np.ones(3, np.float32), np.ones(3, np.float32) + 5e-4)     # float32: atol 1e-3
    tu.assert_almost_equal(mx.nd.ones((2, 2)), np.ones((2, 2), np.float32))
    tu.assert_almost_equal(np.array([1.0, np.nan]), np.array([1.0, np.nan]), equal_nan=True)
    tu.assert_almost_equal(np.ones((2, 3)), np.ones(3))                               # broadcasting


def test_assert_almost_equal_fails_with_location_in_message():
    a = np.zeros((2, 3), np.float32)
    b = a.copy()
    b[1, 2] = 1.0
    b[0, 0] = 0.01
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(a, b, names=("mine", "ref"))
    msg = str(info.value)
    assert "(1, 2)" in msg and "mine" in msg and "ref" in msg and "rtol" in msg
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.ones(3), np.ones(3) + 1e-4)          # float64: rtol 1e-5, atol 1e-20
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([np.nan]), np.array([np.nan]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.ones((2, 3)), np.ones(3), use_broadcast=False)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([1, 2], np.int32), np.array([1, 3], np.int32))


def test_tolerance_defaults():
    assert tu.get_tols(np.ones(1, np.float16), np.ones(1, np.float32), None, None) == (1e-2, 1e-1)
    assert tu.get_tols(np.ones(1), np.ones(1), None, None) == (1e-5, 1e-20)
    assert tu.get_tols(np.ones(1, np.int32), np.ones(1, np.int32), None, None) == (0, 0)
    assert tu.almost_equal(np.ones(2, np.float16), np.ones(2, np.float16) + 0.05)
    assert not tu.almost_equal(np.ones(2), np.ones(3))


def test_same_and_assert_exception():
    assert tu.same(mx.nd.array([1, 2]), np.array([1, 2], np.float32))
    assert not tu.same(np.array([1, 2]), np.array([1, 3]))
    tu.assert_exception(lambda x: 1 / x, ZeroDivisionError, 0)
    with pytest.raises(AssertionError):
        tu.assert_exception(lambda: None, ValueError)


def test_random_helpers():
    x = tu.random_arrays((2, 3))
    assert x.shape == (2, 3) and x.dtype == np.float32
    xs = tu.random_arrays((2,), ())
    assert xs[0].shape == (2,) and np.isscalar(xs[1])
    u = tu.random_uniform_arrays((3,), low=2, high=3)[0]
    assert np.all((u >= 2) & (u < 3))
    assert len(set(tu.random_sample(range(10), 4))) == 4
    arr = tu.rand_ndarray((3, 4), dtype="float64")
    assert arr.shape == (3, 4) and arr.dtype == np.float64
    with pytest.raises(mx.MXNetError):
        tu.rand_ndarray((2, 2), stype="csr")
    for _ in range(20):
        s = tu.rand_shape_nd(3, dim=4)
        assert len(s) == 3 and all(1 <= d <= 4 for d in s)
        assert all(1 <= d <= 10 for d in tu.rand_shape_2d()) and len(tu.rand_shape_3d()) == 3
        assert all(d >= 0 for d in tu.rand_shape_2d(allow_zero_size=True))


def test_np_reduce_and_effective_dtype():
    x = np.arange(24.0).reshape(2, 3, 4)
    assert np.array_equal(tu.np_reduce(x, (0, 2), True, np.sum), x.sum(axis=(0, 2), keepdims=True))
    assert np.array_equal(tu.np_reduce(x, None, False, np.max), x.max())
    assert tu.effective_dtype(mx.nd.ones((2,))) == np.float32


def test_environment_and_context():
    os.environ.pop("MIXNET_TU_TEST", None)
    with tu.environment("MIXNET_TU_TEST", "1"):
        assert os.environ["MIXNET_TU_TEST"] == "1"
        with tu.environment({"MIXNET_TU_TEST": None}):
            assert "MIXNET_TU_TEST" not in os.environ
        assert os.environ["MIXNET_TU_TEST"] == "1"
    assert "MIXNET_TU_TEST" not in os.environ
    assert tu.default_context() == mx.cpu()
    tu.set_default_context(mx.cpu(1))
    try:
        assert tu.default_context() == mx.cpu(1)
    finally:
        tu.set_default_context(None)


def test_use_np_and_discard_stderr():
    @tu.use_np
    def f():
        return 3
    assert f() == 3
    with tu.discard_stderr():
        sys.stderr.write("hidden\n")
        os.write(2, b"hidden too\n")


def test_check_numeric_gradient_passes():
    x = np.random.uniform(0.5, 2, (3, 4))
    tu.check_numeric_gradient(lambda a: mx.nd.exp(a) * a, [x])
    tu.check_numeric_gradient(lambda a, b: mx.nd.dot(a, b), [x, np.random.rand(4, 2)])
    tu.check_numeric_gradient(lambda lhs, rhs: lhs / rhs, {"lhs": x, "rhs": x + 1}, grad_nodes=["rhs"])
    tu.check_numeric_gradient(lambda a: (mx.nd.sin(a), a * a), [mx.nd.array(x)])


class _WrongSquare(mx.autograd.Function):
    def forward(self, x):
        self.save_for_backward(x)
        return x * x

    def backward(self, dy):
        x, = self.saved_tensors
        return dy * x          # wrong: should be 2 * x * dy


def test_check_numeric_gradient_fails_on_wrong_gradient():
    with pytest.raises(AssertionError, match="NUMERICAL_0"):
        tu.check_numeric_gradient(lambda a: _WrongSquare()(a), [np.random.uniform(0.5, 2, (3,))])


def test_check_numeric_gradient_rejects_non_callables():
    with pytest.raises(mx.MXNetError, match="callable"):
        tu.check_numeric_gradient("not a symbol", [np.ones(2)])


# ---------------------------------------------------------------------------------------------------------
# statistical checks of generators
def test_chi2_sf_matches_known_values():
    # P(X >= x) for chi-square: closed forms for 2 dof (exp(-x/2)) and tabulated critical values
    for x in (0.0, 0.5, 3.0, 40.0):
        assert tu.chi2_sf(x, 2) == pytest.approx(np.exp(-x / 2), rel=1e-12, abs=1e-300)
    assert tu.chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, rel=1e-9)
    assert tu.chi2_sf(9.487729036781154, 4) == pytest.approx(0.05, rel=1e-9)
    assert tu.chi2_sf(67.50480642, 50) == pytest.approx(0.05, rel=1e-6)


def _normal_ppf_buckets():
    # quartiles of N(0, 1)
    q = 0.6744897501960817
    return [(-np.inf, -q), (-q, 0.0), (0.0, q), (q, np.inf)], [0.25] * 4


def test_verify_generator_accepts_a_right_generator_and_rejects_a_wrong_one():
    rng = np.random.default_rng(0)
    buckets, probs = _normal_ppf_buckets()
    pvalues = tu.verify_generator(lambda n: rng.normal(size=n), buckets, probs, nsamples=20000, nrepeat=5)
    assert len(pvalues) == 5 and all(0 <= p <= 1 for p in pvalues)
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda n: rng.normal(0.1, 1.0, size=n), buckets, probs, nsamples=20000, nrepeat=5)
    with pytest.raises(AssertionError):            # samples outside every bucket count against the fit
        tu.verify_generator(lambda n: rng.normal(size=n), buckets[1:3], [0.5, 0.5], nsamples=20000, nrepeat=3)


def test_verify_generator_discrete_buckets():
    rng = np.random.default_rng(1)
    tu.verify_generator(lambda n: rng.integers(0, 3, size=n), [0, 1, 2], [1 / 3] * 3, nsamples=9000)
    with pytest.raises(AssertionError):
        tu.verify_generator(lambda n: rng.choice(3, size=n, p=[0.4, 0.3, 0.3]), [0, 1, 2], [1 / 3] * 3,
                            nsamples=9000)


def test_gen_buckets_probs_with_ppf_and_moment_checks():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda p: 2 * p - 1, 4)    # uniform(-1, 1)
    assert buckets == [(-1.0, -0.5), (-0.5, 0.0), (0.0, 0.5), (0.5, 1.0)] and probs == [0.25] * 4
    rng = np.random.default_rng(2)
    assert tu.mean_check(lambda n: rng.normal(size=n), 0.0, 1.0, nsamples=20000)
    assert not tu.mean_check(lambda n: rng.normal(0.5, 1.0, size=n), 0.0, 1.0, nsamples=20000)
    assert tu.var_check(lambda n: rng.normal(size=n), 1.0, nsamples=20000)
    with pytest.raises(mx.MXNetError, match="nbuckets"):
        tu.gen_buckets_probs_with_ppf(lambda p: p, 0)


def test_retry_reruns_assertion_failures_only():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) == 3
    flaky()
    assert len(calls) == 3
