"""An operator's out-of-bounds index raises an error that is both an MXNetError and an IndexError (MXNet raises
IndexError there), with the op and shapes named."""
import pytest

import mixnet as mx
from mixnet.base import MXNetError


@pytest.mark.parametrize("bad", [[[0, 1], [0, 3]], [[0, 1], [0, -5]]])
def test_gather_nd_out_of_bounds_is_an_index_error(bad):
    data = mx.nd.array([[0, 1, 2], [3, 4, 5]])
    with pytest.raises(IndexError, match="gather_nd") as info:
        mx.nd.gather_nd(data, mx.nd.array(bad)).asnumpy()
    assert isinstance(info.value, MXNetError)


def test_other_op_errors_are_not_index_errors():
    with pytest.raises(MXNetError) as info:
        mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))
    assert not isinstance(info.value, IndexError)
