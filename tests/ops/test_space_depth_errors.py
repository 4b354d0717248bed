"""depth_to_space / space_to_depth refuse what MXNet refuses: a zero-size dimension, a block size of 0, a depth
or spatial size the block does not divide."""
import pytest

import mixnet as mx
from mixnet.base import MXNetError


@pytest.mark.parametrize("op,shape,block", [
    (mx.nd.depth_to_space, (1, 4, 0, 3), 2), (mx.nd.depth_to_space, (1, 3, 2, 2), 2),
    (mx.nd.depth_to_space, (1, 4, 2, 2), 0), (mx.nd.space_to_depth, (1, 0, 4, 4), 2),
    (mx.nd.space_to_depth, (1, 2, 3, 4), 2), (mx.nd.space_to_depth, (1, 2, 4, 4), 0)])
def test_invalid_inputs_raise(op, shape, block):
    with pytest.raises(MXNetError):
        op(mx.nd.ones(shape), block)


def test_valid_round_trip():
    x = mx.nd.arange(32).reshape((1, 8, 2, 2))
    assert (mx.nd.space_to_depth(mx.nd.depth_to_space(x, 2), 2) == x).asnumpy().all()
