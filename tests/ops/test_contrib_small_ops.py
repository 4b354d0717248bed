"""all_finite / multi_all_finite and the contrib helpers allclose, div_sqrt_dim, quadratic: MXNet 1.9.1's
output shapes and dtypes (the generated tests cover values and gradients)."""
import numpy as np
import pytest

from mixnet import nd
from mixnet.base import MXNetError


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_all_finite_flags(bad):
    x = nd.array([[1.0, 2.0]])
    ok, broken = nd.all_finite(x), nd.all_finite(nd.array([[1.0, bad]]))
    assert ok.shape == (1,) and ok.dtype is np.float32 and ok.asnumpy().tolist() == [1]
    assert broken.asnumpy().tolist() == [0]
    assert nd.multi_all_finite(x, x * bad, num_arrays=2).asnumpy().tolist() == [0]
    assert nd.multi_all_finite(x, x, num_arrays=2).asnumpy().tolist() == [1]
    with pytest.raises(MXNetError, match="num_arrays"):
        nd.multi_all_finite(x, x, num_arrays=3)


def test_allclose_is_a_0d_uint8():
    a = nd.array([1.0, np.nan])
    same = nd.contrib.allclose(a, a)
    assert same.shape == () and same.dtype is np.uint8 and same.asscalar() == 1
    assert nd.contrib.allclose(a, a, equal_nan=False).asscalar() == 0
    assert nd.contrib.allclose(nd.array([1.0]), nd.array([2.0]), rtol=0.1, atol=0.1).asscalar() == 0
    assert nd.contrib.allclose(nd.array([1.0]), nd.array([2.0]), rtol=0.5, atol=0.1).asscalar() == 1
    with pytest.raises(MXNetError, match="equal shapes"):
        nd.contrib.allclose(nd.ones((2,)), nd.ones((3,)))


def test_div_sqrt_dim_and_quadratic():
    x = nd.array([[1.0, 2.0, 3.0, 4.0]])
    assert nd.contrib.div_sqrt_dim(x).asnumpy().tolist() == [[0.5, 1.0, 1.5, 2.0]]
    assert nd.contrib.quadratic(x, a=1, b=2, c=3).asnumpy().tolist() == [[6, 11, 18, 27]]
    with pytest.raises(MXNetError, match="at least one axis"):
        nd.contrib.div_sqrt_dim(nd.array(np.float32(2)).reshape(()))
