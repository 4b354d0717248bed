"""An optional input that the attributes switch off may still be named with None (MXNet's generated functions
skip None inputs), for mx.nd and mx.sym; a real value for it, or an unknown name, is still refused."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


def test_switched_off_input_given_as_none_is_absent():
    x = np.arange(6, dtype=np.float32).reshape(3, 2, 1)
    out = mx.nd.SequenceReverse(mx.nd.array(x), sequence_length=None, use_sequence_length=False)
    np.testing.assert_array_equal(out.asnumpy(), x[::-1])
    sym = mx.sym.SequenceReverse(data=mx.sym.var("d"), sequence_length=None, use_sequence_length=False)
    assert sym.list_arguments() == ["d"]


def test_switched_off_input_given_a_value_is_refused():
    with pytest.raises(MXNetError, match="sequence_length"):
        mx.nd.SequenceReverse(mx.nd.ones((3, 2)), sequence_length=mx.nd.ones((2,)), use_sequence_length=False)
    with pytest.raises(MXNetError, match="bogus"):
        mx.nd.SequenceReverse(mx.nd.ones((3, 2)), bogus=mx.nd.ones((2,)))
