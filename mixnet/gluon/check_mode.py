"""`hybridize(check=True)` (or MIXNET_HYBRIDIZE_CHECK=1): the first calls of a hybridized block run both eagerly
and through the compiled graph, op by op, forward and (when recording) gradients; the first graph node whose value
diverges is reported with its op, name and the user's source line.

Both runs start from the same state: running statistics (parameters with grad_req 'null') and the random
generators are restored in between, so Dropout and BatchNorm compare like for like.
"""
import copy

import numpy as np

from .. import _nest, autograd
from .. import random as mx_random
from .._mode import MODE
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..ops import dispatch
from ..symbol.graph import subgraphs

RTOL, ATOL = 1e-5, 1e-6


class HybridizeCheckError(MXNetError):
    """The compiled graph and the eager code disagree: the message names the first diverging node."""


class _Recorder:
    """Sits in the dispatch door's tracer slot: runs every op as usual and keeps its outputs, in order."""

    def __init__(self):
        self.calls = []

    def emit(self, op, inputs, attrs):
        token = MODE.set(MODE.get()._replace(tracer=None))
        try:
            out = dispatch.apply(op, inputs, attrs)
        finally:
            MODE.reset(token)
        self.calls.append((op.name, out if isinstance(out, tuple) else (out,)))
        return out


def _observe(run):
    recorder = _Recorder()
    token = MODE.set(MODE.get()._replace(tracer=recorder))
    try:
        result = run()
    finally:
        MODE.reset(token)
    return result, recorder.calls


def _snapshot(block, ctx):
    mx_random._state(ctx)                        # make sure the generator exists before copying its state
    aux = [(p, [d._data.copy() for d in p.list_data()]) for p in block.collect_params().values()
           if p.grad_req == "null" and p._data is not None]
    rng = {c: copy.deepcopy(g.bit_generator.state) for c, g in mx_random._STATES.items()}
    return aux, rng


def _restore(snapshot):
    aux, rng = snapshot
    for param, values in aux:
        for data, value in zip(param.list_data(), values):
            data._data[...] = value
    for ctx, state in rng.items():
        mx_random._STATES[ctx].bit_generator.state = state


def _first_divergence(graph, eager_calls, graph_calls):
    """Pairs each graph node with the eager op of the same name and output shapes (in order) and compares."""
    nodes = [n for n in graph.graph._nodes() if n.op is not None]
    pending = list(eager_calls)
    for node, (name, outs) in zip(nodes, graph_calls):
        if subgraphs(node):
            # control flow: its body ran as many eager ops, which pairing by name would confuse with the nodes
            # after it; from here on, checked_call compares the block's outputs instead
            return None
        shapes = [o.shape for o in outs]
        match = next((i for i, (n, e) in enumerate(pending) if n == name and [x.shape for x in e] == shapes), None)
        where = f" (created at {node.location})" if node.location else ""
        if match is None:
            return f"graph node {node.name!r} ({name}){where} has no counterpart in the eager run"
        _, eager_outs = pending.pop(match)
        for k, (a, b) in enumerate(zip(eager_outs, outs)):
            ea, gb = a.asnumpy().astype(np.float64), b.asnumpy().astype(np.float64)
            if not np.allclose(ea, gb, rtol=RTOL, atol=ATOL, equal_nan=True):
                diff = np.nanmax(np.abs(ea - gb)) if ea.size else 0.0
                return (f"first divergence at graph node {node.name!r} ({name}, output {k}){where}: max |eager - "
                        f"compiled| = {diff:.3g}")
    return None


def _grads(outputs, variables):
    heads = [o for o in outputs if o._node is not None]
    if not heads or not variables:
        return None
    weights = [o.ones_like() * 0.5 for o in heads]
    return autograd.grad(heads, variables, head_grads=weights, retain_graph=True)


def _params(block):
    names = [n for n, p in block.collect_params().items() if p.grad_req != "null" and p._data]
    return names, [block.collect_params()[n] for n in names]


def _compare_gradients(block, ctx, eager_out, other_out, what):
    names, params = _params(block)
    arrays = [p.data(ctx) for p in params]
    ge, go = _grads(_arrays(eager_out), arrays), _grads(_arrays(other_out), arrays)
    for name, a, b in zip(names, ge or [], go or []):
        if not np.allclose(a.asnumpy(), b.asnumpy(), rtol=RTOL, atol=ATOL, equal_nan=True):
            return f"the gradient of parameter {name!r} differs between the eager and the {what} run"
    return None


def _arrays(out):
    """The arrays of a block's output (NDArrays and None in nested lists/tuples, as hybridize flattens it)."""
    return _nest.flatten(out, _nest.leaf_of(NDArray), "hybridized blocks take NDArrays, None and lists/tuples of them")[0]


def _compare_outputs(eager_out, other_out, what):
    for k, (a, b) in enumerate(zip(_arrays(eager_out), _arrays(other_out))):
        if not np.allclose(a.asnumpy(), b.asnumpy(), rtol=RTOL, atol=ATOL, equal_nan=True):
            diff = np.nanmax(np.abs(a.asnumpy().astype(np.float64) - b.asnumpy())) if a.size else 0.0
            return f"output {k} of the {what} run differs from the eager one (max |diff| = {diff:.3g})"
    return None


def checked_call(block, graph, args, flat, eager_call):
    """One checked call: eager, interpreted (op by op) and compiled runs compared, forward and gradients;
    returns the compiled result."""
    ctx = flat[0].context if flat else None
    snapshot = _snapshot(block, ctx)
    eager_out, eager_calls = _observe(lambda: eager_call(block, args))
    _restore(snapshot)
    graph_out, graph_calls = _observe(lambda: graph.interpret(block, flat))
    problem = _first_divergence(graph, eager_calls, graph_calls)
    recording = autograd.is_recording()
    if problem is None:            # pairing stops at control-flow nodes: the final outputs settle the rest
        problem = _compare_outputs(eager_out, graph_out, "graph")
    if problem is None and recording:
        problem = _compare_gradients(block, ctx, eager_out, graph_out, "graph")
    _restore(snapshot)
    compiled_out = graph.run(block, flat)       # the plan calls really use: fused kernels, compiled backward
    if problem is None:
        problem = _compare_outputs(eager_out, compiled_out, "compiled")
    if problem is None and recording:
        problem = _compare_gradients(block, ctx, eager_out, compiled_out, "compiled")
    if problem is not None:
        raise HybridizeCheckError(f"{type(block).__name__} {block.name!r}: hybridize check failed: {problem}")
    return compiled_out
