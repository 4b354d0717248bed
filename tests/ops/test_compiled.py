"""Tests generated from the registry, the third and fourth equivalences: every op run eagerly (dispatch door +
tape) vs the same op as a one-node graph run by the CachedOp (graph-mode autodiff, compiled straight-line code,
elementwise fusion of the backward graph) — outputs and input gradients — and the same graph with fusion off."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import mixnet as mx
from mixnet import config
from mixnet.gluon import SymbolBlock
from mixnet.ops import registry
from mixnet.symbol import Symbol
from mixnet.symbol.graph import Node, raw_from_attrs

from .recipes import make_inputs, recipe_cases
from .test_generated import _diff_inputs, _weights, analytic_grads, run_op

OPS = [op for op in registry.all_ops() if op.test is not None and not op.test.random and not op.creates
       and not op.dynamic_shape and not op.mutates]


def _one_node_block(op, arrays, attrs):
    names = [f"x{i}" for i in range(len(arrays))]
    variables = [Node(None, n) for n in names]
    parsed = op.parse(attrs)
    node = Node(op, op.name.lstrip("_") or "op", parsed, raw_from_attrs(op, parsed), [(v, 0) for v in variables])
    return SymbolBlock(Symbol([(node, i) for i in range(op.n_visible(parsed))]), names)


def _compiled(op, arrays, attrs, weights):
    block = _one_node_block(op, arrays, attrs)
    inputs = [mx.nd.array(a, dtype=a.dtype) for a in arrays]
    wrt = _diff_inputs(op, arrays) if op.differentiable and op.test.grad else []
    for i in wrt:
        inputs[i].attach_grad()
    with mx.autograd.record(train_mode=True):
        outs = block(*inputs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    if wrt and outs[0]._node is not None:
        mx.autograd.backward(outs, [mx.nd.array(w, dtype=o.dtype) for o, w in zip(outs, weights)])
    return [o.asnumpy() for o in outs], {i: inputs[i].grad.asnumpy() for i in wrt}


def check_compiled(op, shapes, attrs, seed, fusion):
    arrays = make_inputs(op.test, shapes, seed, dtype="float64" if op.test.grad else op.test.dtype)
    weights = _weights(op, arrays, attrs, seed)
    expected = [o.asnumpy() for o in run_op(op, arrays, attrs)]
    got, grads = _compiled(op, arrays, attrs, weights)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, f"{op.name}: {g.shape} {g.dtype} vs {e.shape} {e.dtype}"
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12, err_msg=f"{op.name} {attrs}: output")
    if not grads:
        return
    wrt, _, eager_grads, _ = analytic_grads(op, arrays, attrs, weights)
    for i, g in zip(wrt, eager_grads or []):
        np.testing.assert_allclose(grads[i], g.asnumpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=f"{op.name} {attrs}: gradient of input {i}")


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_compiled_graph_equals_eager(op, fusion, data, monkeypatch):
    monkeypatch.setattr(config, "FUSE", fusion)      # the same value for every example
    for k, (shapes, attrs) in enumerate(op.test.cases[:2]):
        check_compiled(op, shapes, attrs, k, fusion)
    if op.test.recipe is not None:
        shapes, attrs = data.draw(recipe_cases(op.test))
        check_compiled(op, shapes, attrs, data.draw(st.integers(0, 2 ** 16)), fusion)
