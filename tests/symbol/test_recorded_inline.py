"""autograd.get_symbol and hybridize(inline_limit=...): a hybridized call whose graph has at most inline_limit
ops shows as its ops, a larger one as one _CachedOp node over the call's inputs (MXNet 1.9.1 gives the same
node counts: 10 and 8 for three Dense layers)."""
import json

import mixnet as mx
from mixnet.gluon import nn


def _nodes(net):
    with mx.autograd.record():
        y = net(mx.nd.zeros((1, 5)))
    nodes = json.loads(mx.autograd.get_symbol(y).tojson())["nodes"]
    y.backward()
    return nodes


def test_inline_limit_decides_between_ops_and_one_cached_op_node():
    net = nn.HybridSequential(prefix="n_")
    with net.name_scope():
        net.add(nn.Dense(4), nn.Dense(4), nn.Dense(4))
    net.initialize()
    net(mx.nd.zeros((1, 5)))                  # shapes known: later calls run the cached graph
    net.hybridize(inline_limit=3)
    inlined = _nodes(net)
    assert len(inlined) == 10
    assert [n["op"] for n in inlined if n["op"] != "null"] == ["FullyConnected"] * 3
    net.hybridize(inline_limit=0)
    opaque = _nodes(net)
    assert len(opaque) == 8
    ops = [n for n in opaque if n["op"] != "null"]
    assert [n["op"] for n in ops] == ["_CachedOp"] and len(ops[0]["inputs"]) == 7
