"""assert_almost_equal / almost_equal on arrays larger than one comparison block: a mismatch in any block (the
last, partial one included) is found, NDArray inputs are read in place and left unchanged, and float16 against
float32 compares as before."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import test_utils as tu


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_mismatch_found_in_every_block(dtype):
    n = 3 * tu._CLOSE_BLOCK + 5
    a = np.linspace(0, 1, n).astype(dtype)
    for pos in (0, tu._CLOSE_BLOCK, 2 * tu._CLOSE_BLOCK + 1, n - 1):
        b = a.copy()
        b[pos] += 0.5
        assert not tu.almost_equal(a, b, rtol=1e-3, atol=1e-3)
        with pytest.raises(AssertionError, match="Location of maximum error"):
            tu.assert_almost_equal(mx.nd.array(a, dtype=dtype), mx.nd.array(b, dtype=dtype), rtol=1e-3, atol=1e-3)
    tu.assert_almost_equal(a, a.copy(), rtol=0, atol=0)


def test_ndarray_inputs_read_in_place_and_unchanged():
    x = mx.nd.array(np.arange(2 * tu._CLOSE_BLOCK + 3, dtype=np.float32).reshape(-1, 1))
    before = x.asnumpy()
    view = tu._host_view(x)
    assert not view.flags.writeable and np.shares_memory(view, x._data)
    tu.assert_almost_equal(x, before)
    np.testing.assert_array_equal(x.asnumpy(), before)
    x[:] = 1                                   # the NDArray itself stays writable
    assert float(x.asnumpy().sum()) == x.size


def test_nan_and_mixed_dtypes_fall_back_to_the_float64_check():
    n = tu._CLOSE_BLOCK + 10
    a = np.ones(n, np.float16)
    b = np.ones(n, np.float32)
    tu.assert_almost_equal(a, b, rtol=0, atol=0)
    a[-1] = np.nan
    assert not tu.almost_equal(a, b)
    assert tu.almost_equal(a, np.where(np.isnan(a), np.nan, b), equal_nan=True)
