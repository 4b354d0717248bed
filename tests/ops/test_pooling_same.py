"""Pooling with pooling_convention='same' computes its own padding: zero pads of any length are accepted
(MXNet takes pad=(0, 0, 0) for 1-D), a non-zero pad is refused."""
import math

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


@pytest.mark.parametrize("pad", [(), (0,), (0, 0, 0)])
def test_zero_pads_are_accepted(pad):
    x = mx.nd.array(np.random.rand(1, 1, 10))
    out = mx.nd.Pooling(x, kernel=(2,), stride=(2,), pad=pad, pool_type="max", pooling_convention="same")
    assert out.shape[2] == math.ceil(10 / 2)


def test_nonzero_pad_is_refused():
    with pytest.raises(MXNetError, match="same"):
        mx.nd.Pooling(mx.nd.ones((1, 1, 10)), kernel=(2,), stride=(2,), pad=(2,), pool_type="max",
                      pooling_convention="same")
