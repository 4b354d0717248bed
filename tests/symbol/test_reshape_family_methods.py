"""Symbol.flatten / squeeze / expand_dims take NDArray's `inplace` argument and ignore it, as MXNet 1.9.1's
Symbol does (same nodes and JSON); so a 2.0-style forward written for NDArrays also traces."""
import json

import numpy as np
import pytest

import mixnet as mx
from mixnet import gluon


@pytest.mark.parametrize("inplace", [False, True])
def test_inplace_is_accepted_and_ignored(inplace):
    x = mx.sym.var("x")
    value = mx.nd.ones((2, 1, 3))
    assert x.squeeze(inplace=inplace).eval(x=value)[0].shape == (2, 3)
    assert x.squeeze(axis=1, inplace=inplace).eval(x=value)[0].shape == (2, 3)
    assert x.expand_dims(axis=0, inplace=inplace).eval(x=value)[0].shape == (1, 2, 1, 3)
    assert x.flatten(inplace=inplace).eval(x=value)[0].shape == (2, 3)


def test_squeeze_node_as_mxnet_writes_it():
    # MXNet 1.9.1: mx.sym.var('x').squeeze(inplace=True) is a "squeeze" node with attrs {"axis": "None"}
    node = [n for n in json.loads(mx.sym.var("x").squeeze(inplace=True).tojson())["nodes"]
            if n["op"] != "null"][0]
    assert node["op"] == "squeeze" and node["attrs"] == {"axis": "None"}


@pytest.mark.parametrize("inplace", [False, True])
def test_hybridized_forward_with_inplace_squeeze(inplace):
    class Foo(gluon.HybridBlock):
        def forward(self, x):
            return x.squeeze(inplace=inplace)

    block = Foo()
    block.hybridize()
    np.testing.assert_array_equal(block(mx.nd.ones((3, 2, 1))).asnumpy(), np.ones((3, 2)))
