"""`hybridize(check=True)` (or MIXNET_HYBRIDIZE_CHECK=1): the first calls of a hybridized block run both eagerly
and through the compiled graph, op by op, forward and (when recording) gradients; the first graph node whose value
diverges is reported with its op, name and the user's source line.

Both runs start from the same state: running statistics (parameters with grad_req 'null') and the random
generators are restored in between, so Dropout and BatchNorm compare like for like.
"""
import copy

import numpy as np

from .. import autograd
from .. import random as mx_random
from .._mode import MODE
from ..base import MXNetError
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
    aux = [(p, [d.asnumpy() for d in p.list_data()]) for p in block.collect_params().values()
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
    nodes = [n for n in graph.plan._nodes() if n.op is not None]
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


def checked_call(block, graph, args, flat, eager_call):
    """One checked call: eager and compiled runs compared; returns the compiled result."""
    from .cached_graph import flatten
    ctx = flat[0].context if flat else None
    snapshot = _snapshot(block, ctx)
    eager_out, eager_calls = _observe(lambda: eager_call(block, args))
    _restore(snapshot)
    graph_out, graph_calls = _observe(lambda: graph.run(block, flat))
    problem = _first_divergence(graph, eager_calls, graph_calls)
    if problem is None:
        for k, (a, b) in enumerate(zip(flatten(eager_out)[0], flatten(graph_out)[0])):
            if not np.allclose(a.asnumpy(), b.asnumpy(), rtol=RTOL, atol=ATOL, equal_nan=True):
                problem = f"output {k} of the block differs between eager and compiled runs"
                break
    if problem is None and autograd.is_recording():
        params = [p.data(ctx) for p in block.collect_params().values() if p.grad_req != "null" and p._data]
        eager_flat, graph_flat = flatten(eager_out)[0], flatten(graph_out)[0]
        ge, gg = _grads(eager_flat, params), _grads(graph_flat, params)
        names = [n for n, p in block.collect_params().items() if p.grad_req != "null" and p._data]
        for name, a, b in zip(names, ge or [], gg or []):
            if not np.allclose(a.asnumpy(), b.asnumpy(), rtol=RTOL, atol=ATOL, equal_nan=True):
                problem = f"the gradient of parameter {name!r} differs between eager and compiled runs"
                break
    if problem is not None:
        raise HybridizeCheckError(f"{type(block).__name__} {block.name!r}: hybridize check failed: {problem}")
    return graph_out
