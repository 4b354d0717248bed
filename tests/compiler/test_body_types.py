"""A foreach body's types are found once: the inference that checks the trace gives them to the typing of the
traced graph and to the body's compiled plans (symbol/infer.py `subgraph_types`, symbol/loop.py)."""
import collections

import numpy as np

import mixnet as mx
from mixnet import autograd, gluon, nd
from mixnet.symbol import infer, typed as typed_module
from mixnet.symbol.graph import topo_order


class CellLoop(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.cell = gluon.rnn.LSTMCell(6, input_size=4)

    def hybrid_forward(self, F, x, h, c):
        outs, _ = F.contrib.foreach(lambda xt, s: self.cell(xt, s), x, [h, c])
        return outs


def _inputs():
    x = np.random.RandomState(0).uniform(-1, 1, (5, 3, 4)).astype(np.float32)
    return nd.array(x), nd.zeros((3, 6)), nd.zeros((3, 6))


def test_planning_a_training_signature_infers_each_body_node_once(monkeypatch):
    inferred = collections.Counter()          # op node name -> times a whole-graph inference computed its types
    real_nodes, real_exact = infer._infer_nodes, typed_module.exact_types

    def nodes(nodes, *args):
        inferred.update(n.name for n in nodes if n.op is not None)
        return real_nodes(nodes, *args)

    def exact(symbol, shapes, dtypes):
        inferred.update(n.name for n in topo_order(symbol._outputs) if n.op is not None and n.types is None)
        return real_exact(symbol, shapes, dtypes)

    monkeypatch.setattr(infer, "_infer_nodes", nodes)
    monkeypatch.setattr(typed_module, "exact_types", exact)
    net = CellLoop()
    net.initialize()
    net.hybridize()
    with autograd.record():
        out = net(*_inputs())
    out.backward()
    body = [name for name in inferred if "_foreach" not in name]
    assert len(body) > 5 and all(inferred[name] == 1 for name in body), inferred


def test_hybridized_foreach_matches_eager():
    results = []
    for hybrid in (False, True):
        mx.random.seed(1)
        net = CellLoop()
        net.initialize()
        if hybrid:
            net.hybridize()
        x, h, c = _inputs()
        x.attach_grad()
        with autograd.record():
            out = net(x, h, c)
        out.backward()
        results.append((out.asnumpy(), x.grad.asnumpy(), net.cell.i2h_weight.grad().asnumpy()))
    for eager, hybrid in zip(*results):
        np.testing.assert_allclose(hybrid, eager, rtol=1e-5, atol=1e-6)


def test_subgraph_types_are_those_of_the_last_complete_inference_with_the_same_inputs():
    x, w = mx.sym.var("x"), mx.sym.var("w")
    body = mx.sym.dot(x, w)
    shapes, dtypes = {"x": (2, 4), "w": (4, 3)}, {"x": np.float32, "w": np.float32}
    assert infer.subgraph_types(body, shapes, dtypes) is None                     # never inferred
    eshape, edtype = infer.infer_subgraph(body, shapes, dtypes, False)
    assert infer.subgraph_types(body, shapes, dtypes) == (eshape, edtype)
    assert eshape[(id(body._outputs[0][0]), 0)] == (2, 3)
    assert infer.subgraph_types(body, dict(shapes, x=(5, 4)), dtypes) is None     # other inputs
    assert infer.subgraph_types(body, shapes, dict(dtypes, x=np.float64)) is None
    infer.infer_subgraph(body, {"x": (2, 4)}, dtypes, False)                       # w unknown, so the output
    assert infer.subgraph_types(body, {"x": (2, 4)}, dtypes) is None
    assert infer.subgraph_types(body, shapes, dtypes) == (eshape, edtype)         # still the last complete one
