"""The compiler's pass pipeline, the typed IR and the rewrite helper (mixnet/compiler, symbol/graph.py)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, compiler, config, nd
from mixnet.base import MXNetError
from mixnet.gluon import nn
from mixnet.symbol import typed as typed_module
from mixnet.symbol.graph import FOLDED, Node, rewrite, topo_order
from mixnet.symbol.symbol import Symbol
from mixnet.symbol.typed import is_typed, typed


def _ops(sym):
    return [n.op.name for n in topo_order(sym._outputs) if n.op is not None]


def test_the_pipeline_prints_its_passes_in_order_with_what_they_need():
    assert str(compiler.PIPELINE) == "cse -> epilogue -> drop_identity_reshapes -> fuse -> memory"
    needs = {p.name: p.needs for p in compiler.PIPELINE}
    assert needs["cse"] == () and all("types" in needs[n] for n in ("epilogue", "fuse", "memory"))
    assert str(compiler.PIPELINE.until("fuse")) == "cse -> epilogue -> drop_identity_reshapes"
    assert str(compiler.PIPELINE.since("fuse")) == "fuse -> memory"


def test_each_pass_runs_once_and_keeps_the_types():
    x = mx.sym.var("x")
    y = mx.sym.Reshape(mx.sym.exp(x) + mx.sym.exp(x), shape=(2, 3))
    graph = compiler.typed_graph(y, ["x"], {"x": (2, 3)}, {"x": np.float32})
    out = compiler.PIPELINE.run(graph, compiler.Options(fusion=False))
    assert out.done == {"cse", "epilogue", "drop_identity_reshapes"}
    assert _ops(out.symbol) == ["exp", "broadcast_add"]                 # merged exp, identity reshape gone
    assert is_typed(out.symbol)
    assert all(t == ((2, 3), np.dtype(np.float32)) for n in topo_order(out.symbol._outputs) for t in n.types)
    assert compiler.PIPELINE.run(out, compiler.Options(fusion=False)) is out      # nothing left to run


def test_typing_copies_the_users_graph_and_leaves_it_untyped():
    x = mx.sym.var("x")
    y = mx.sym.sum(x * 2, axis=1)
    t = typed(y, {"x": (4, 5)}, {"x": np.float64})
    assert all(n.types is None for n in topo_order(y._outputs))
    assert t._outputs[0][0].types == (((4,), np.dtype(np.float64)),)
    assert typed(t, {}, {}) is t                                       # already typed: itself


def test_rewrite_keeps_drops_and_fixes_up_nodes_reading_the_old_graph():
    x = mx.sym.var("x")
    a = mx.sym.exp(x)
    b = mx.sym.negative(a)
    c = mx.sym.tanh(b)
    old = [n.op.name if n.op else n.name for n in topo_order(c._outputs)]

    def replace(node, inputs):
        if node.op is not None and node.op.name == "negative":
            return [inputs[0]]                                         # drop: read its input instead
        if node.op is not None and node.op.name == "tanh":
            return node.clone([node.inputs[0]], name="made")          # reads an OLD entry: fixed up at the end
        return None

    out = Symbol(rewrite(c._outputs, replace))
    assert _ops(out) == ["exp", "tanh"] and out._outputs[0][0].name == "made"
    assert [n.op.name if n.op else n.name for n in topo_order(c._outputs)] == old         # old graph unchanged
    assert out._outputs[0][0].inputs[0][0] is not a._outputs[0][0]                     # points at the copy


def test_rewrite_refuses_to_keep_a_node_reading_a_folded_value():
    x = mx.sym.var("x")
    y = mx.sym.tanh(mx.sym.exp(x))
    with pytest.raises(MXNetError, match="folded"):
        rewrite(y._outputs, lambda node, inputs: FOLDED if node.op is not None and node.op.name == "exp" else None)


def test_clone_copies_every_field_but_those_changed():
    node = Node(None, "x")
    node.types = (((1,), np.dtype(np.float32)),)
    copy = node.clone(name="y")
    assert copy.name == "y" and copy.types == node.types and copy is not node


def test_shape_inference_runs_once_while_a_training_signature_is_planned(monkeypatch):
    monkeypatch.setattr(config, "FUSE", False)
    inferred = []
    real = typed_module.exact_types

    def counted(symbol, shapes, dtypes):
        inferred.append(sum(n.types is None for n in topo_order(symbol._outputs)))
        return real(symbol, shapes, dtypes)

    monkeypatch.setattr(typed_module, "exact_types", counted)
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="relu", in_units=4), nn.Dense(3, in_units=8))
    net.initialize()
    net.hybridize()
    x = nd.array(np.random.RandomState(0).rand(5, 4))
    with autograd.record():
        out = net(x)
    out.backward()
    assert len(inferred) == 1                 # the forward, typed once; the backward's nodes come typed
