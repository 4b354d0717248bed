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
