"""mx.nd.reset_arrays zeroes its arrays in place (any dtype and shape), and refuses a wrong num_arrays."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


def test_zeroes_every_array_in_place():
    arrays = [mx.nd.ones((2, 3), dtype=dt) for dt in ("float16", "float32", "float64")] + [mx.nd.ones((4,))]
    before = [a._version for a in arrays]
    assert mx.nd.reset_arrays(*arrays, num_arrays=len(arrays)) is None
    for arr, version in zip(arrays, before):
        np.testing.assert_array_equal(arr.asnumpy(), np.zeros(arr.shape))
        assert arr._version != version          # a graph recorded before sees the change


def test_bad_arguments_are_clear_errors():
    with pytest.raises(MXNetError, match="num_arrays is 3 but 1"):
        mx.nd.reset_arrays(mx.nd.ones((2,)), num_arrays=3)
    with pytest.raises(MXNetError, match="expected an NDArray"):
        mx.nd.reset_arrays(np.ones(2))
