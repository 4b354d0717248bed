"""What a hybridized block accepts, as MXNet 1.9.1's cached op: (nested lists of) NDArrays and None, one
device, and the argument structure of its first call (trailing None arguments aside)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import gluon, nd


class Add(gluon.HybridBlock):
    def hybrid_forward(self, F, a, b=None):
        if isinstance(a, (list, tuple)):
            a = sum(a)
        return b if a is None else a if b is None else a + b


def test_unhybridized_block_takes_scalars_hybridized_refuses():
    block = Add()
    np.testing.assert_array_equal(block(nd.ones((2,)), 1).asnumpy(), [2, 2])
    block.hybridize()
    with pytest.raises(ValueError, match="must be \\(nested\\) lists of NDArrays"):
        block(nd.ones((2,)), 1)


def test_inputs_on_two_devices_are_refused():
    block = Add()
    block.hybridize()
    with pytest.raises(ValueError, match="multiple contexts"):
        block(nd.ones((2,), ctx=mx.cpu(1)), nd.ones((2,), ctx=mx.cpu(2)))


def test_argument_structure_is_fixed_by_the_first_call():
    block = Add()
    block.hybridize()
    x = nd.ones((2,))
    block(None, x)
    with pytest.raises(ValueError, match="argument structure"):
        block(x, x)
    other = Add()
    other.hybridize()
    other(x)
    np.testing.assert_array_equal(other(x, None).asnumpy(), [1, 1])      # trailing None: the default
    with pytest.raises(ValueError, match="argument structure"):
        other([x, x])
