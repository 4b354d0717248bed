"""Initializer.dumps(): the '["name", {kwargs}]' JSON MXNet stores in a parameter's __init__ attribute."""
import json

import numpy as np
import pytest

import mixnet as mx


@pytest.mark.parametrize("value", [mx.nd.ones((2, 2)), np.full((3,), 0.5), [1.0, 2.0]])
def test_constant_with_an_array_dumps_a_list(value):
    init = mx.init.Constant(value)
    expected = np.asarray(value.asnumpy() if hasattr(value, "asnumpy") else value).tolist()
    assert json.loads(init.dumps()) == ["constant", {"value": expected}]
    arr = mx.nd.zeros(np.shape(expected))
    init("weight", arr)          # the value still fills arrays
    np.testing.assert_array_equal(arr.asnumpy(), expected)


def test_constant_scalar_dumps_exactly_as_mxnet():
    assert mx.init.Constant(1).dumps() == '["constant", {"value": 1}]'
