"""NDArray semantics that MXNet 1.9.1 users' code relies on (issue 11): numpy scalars on the left, size-1 values
assigned to one element, multi-output functions returning lists, in-place writes while recording, zero gradients
through non-differentiable ops, integer arange, and no numpy RuntimeWarnings from kernels."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from mixnet import autograd, nd
from mixnet.base import MXNetError

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("scalar", [np.float64(0.5), np.float32(0.5), np.int64(3)])
def test_numpy_scalar_on_the_left_stays_on_the_tape(scalar):
    x = nd.array([1.0, 2.0, 4.0])
    x.attach_grad()
    with autograd.record():
        y = scalar * x + scalar - x / scalar
    assert isinstance(y, nd.NDArray) and y.dtype is np.float32
    y.backward()
    s = float(scalar)
    np.testing.assert_allclose(x.grad.asnumpy(), np.full(3, s - 1 / s), rtol=1e-6)


def test_numpy_scalar_on_the_left_of_comparisons_and_reflected_ops():
    x = nd.array([1.0, 2.0, 4.0])
    for got, want in [(np.float64(1.5) < x, [0, 1, 1]), (np.float64(2) == x, [0, 1, 0]),
                      (np.float64(8) / x, [8, 4, 2]), (np.float64(1) - x, [0, -1, -3]), (np.float64(2) ** x, [2, 4, 16])]:
        assert isinstance(got, nd.NDArray)
        assert got.asnumpy().tolist() == want
    assert isinstance(np.sin(x), np.ndarray)     # other numpy functions still compute in numpy


def test_setitem_with_a_size_one_ndarray_fills_an_element():
    y = nd.zeros((3,))
    y[1] = nd.array([5])
    z = nd.zeros((2, 2))
    z[1, 0] = nd.array([[3]])
    assert y.asnumpy().tolist() == [0, 5, 0] and z.asnumpy().tolist() == [[0, 0], [3, 0]]


def test_multi_output_functions_return_lists():
    parts = nd.split(nd.arange(8).reshape((4, 2)), num_outputs=2, axis=0)
    assert isinstance(parts, list) and len(parts) == 2 and parts[1].asnumpy().tolist() == [[4, 5], [6, 7]]
    assert isinstance(nd.split(nd.zeros((4, 2)), num_outputs=1), nd.NDArray)


def test_inplace_op_whose_result_is_recorded_raises():
    x = nd.ones((3,))
    x.attach_grad()
    with autograd.record():
        w = nd.ones((3,))
        w += 1                                   # nothing recorded: allowed
        with pytest.raises(MXNetError, match="Inplace operations"):
            w += x
        z = x * 2
        with pytest.raises(MXNetError, match="computational graph"):
            z[:] = 1
    assert w.asnumpy().tolist() == [2, 2, 2]


@pytest.mark.parametrize("fn", [nd.sign, nd.round, nd.floor, nd.ceil, nd.rint, nd.fix, nd.trunc, nd.BlockGrad,
                                nd.shape_array, lambda v: v > 0, lambda v: nd.broadcast_equal(v, v),
                                lambda v: nd.argmax(v, axis=0), lambda v: nd.sign(v * 2) * 3])
def test_backward_through_zero_gradient_ops_writes_zeros(fn):
    x = nd.array([1.5, -2.0, 3.0])
    x.attach_grad()
    x.grad[:] = 7
    with autograd.record():
        y = fn(x)
    y.backward()
    assert x.grad.asnumpy().tolist() == [0, 0, 0]
    with autograd.record():                      # mixed with a differentiable path, only that path counts
        y = fn(x).sum().astype("float32") + (x * x).sum()
    y.backward()
    assert x.grad.asnumpy().tolist() == [3, -4, 6]


def test_arange_with_an_integer_dtype_casts_start_and_step():
    got = nd.arange(0, 10000 ** 2, 10001, dtype="int32").asnumpy()
    np.testing.assert_array_equal(got, np.arange(0, 10000 ** 2, 10001, dtype=np.int32))
    assert nd.arange(1.5, 4, 0.5, dtype="int32").asnumpy().tolist() == [1] * 5


def test_kernels_print_no_numpy_runtime_warnings():
    # A fresh interpreter with warnings as errors: mixnet's import-time filter must silence its kernels' numpy
    # warnings (log(0), x / 0, sqrt(-1)) while the user's own numpy warnings stay errors.
    code = ("import numpy as np, mixnet as mx; nd = mx.nd\n"
            "out = [nd.log(nd.array([0.0, -1.0])), nd.array([1.0, 0.0]) / 0, nd.sqrt(nd.array([-1.0])),\n"
            "       nd.array([0.0]) / nd.array([0.0])]\n"
            "assert np.isneginf(out[0].asnumpy()[0]) and np.isnan(out[2].asnumpy()[0])\n"
            "try:\n    np.log(np.zeros(1))\nexcept RuntimeWarning:\n    print('user warning kept')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + sys.path))
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "user warning kept" and "Warning" not in done.stderr


def test_constant_first_order_gradient_differentiates_to_zeros():
    x = nd.array([0.5, 2.0])
    x.attach_grad()
    with autograd.record():
        y = nd.radians(x)
        g = autograd.grad(y, x, create_graph=True, retain_graph=True)[0]
    g.backward()
    np.testing.assert_allclose(g.asnumpy(), np.full(2, np.pi / 180), rtol=1e-6)
    assert x.grad.asnumpy().tolist() == [0, 0]
