"""NDArray pickles hold MXNet's own state ({'handle': raw record bytes}), so pickles move between MXNet and mixnet.

The hex strings were printed by real MXNet 1.9.1: `mx.nd.<array>.__getstate__()['handle'].hex()`."""
import pickle

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError

MXNET_ARANGE_2X3 = ("c9fa93f9000000000200000002000000000000000300000000000000010000000000000000000000"
                    "000000000000803f0000004000004040000080400000a040")
MXNET_INT32_1_2 = "c9fa93f9000000000100000002000000000000000100000000000000040000000100000002000000"
# mx.nd.arange(1, ctx=mx.gpu()) pickled on a GPU machine: device type 2
MXNET_GPU_ZERO = "c9fa93f90000000001000000010000000000000002000000000000000000000000000000"


def test_state_is_byte_identical_to_mxnet():
    # MXNet's arrays were on cpu(0), and the record holds the device
    assert mx.nd.arange(6, ctx=mx.cpu()).reshape((2, 3)).__getstate__()["handle"].hex() == MXNET_ARANGE_2X3
    assert mx.nd.array([1, 2], dtype="int32", ctx=mx.cpu()).__getstate__()["handle"].hex() == MXNET_INT32_1_2


@pytest.mark.parametrize("hexstr, expected", [
    (MXNET_ARANGE_2X3, np.arange(6, dtype=np.float32).reshape(2, 3)),
    (MXNET_INT32_1_2, np.array([1, 2], dtype=np.int32)),
    (MXNET_GPU_ZERO, np.zeros(1, dtype=np.float32)),
])
def test_restores_mxnet_state(hexstr, expected):
    arr = mx.nd.zeros((1,))
    arr.__setstate__({"handle": bytearray(bytes.fromhex(hexstr))})
    assert arr.dtype == expected.dtype and arr.context == mx.cpu()  # no GPU here: back on the host
    np.testing.assert_array_equal(arr.asnumpy(), expected)


@pytest.mark.parametrize("value", [np.arange(12.0).reshape(3, 4), np.float16(2.5) * np.ones((0, 3)),
                                   np.array(7, dtype=np.int64), np.array([True, False])])
def test_pickle_round_trip(value):
    arr = mx.nd.array(value, dtype=value.dtype)
    back = pickle.loads(pickle.dumps(arr))
    assert back.shape == arr.shape and back.dtype == arr.dtype
    np.testing.assert_array_equal(back.asnumpy(), value)


def test_old_mixnet_state_still_loads():
    arr = mx.nd.zeros((1,))
    arr.__setstate__({"data": np.ones((2, 2), np.float32), "ctx": ("cpu", 0)})
    np.testing.assert_array_equal(arr.asnumpy(), np.ones((2, 2)))


@pytest.mark.parametrize("raw", [b"", b"\x00" * 3, bytes.fromhex(MXNET_INT32_1_2)[:-1],
                                 bytes.fromhex(MXNET_INT32_1_2) + b"\x00",
                                 bytes.fromhex("c9fa93f9" "00000000" "00000000")])
def test_bad_state_is_a_clear_error(raw):
    with pytest.raises(MXNetError):
        mx.nd.zeros((1,)).__setstate__({"handle": bytearray(raw)})
