"""Graph -> graph passes over Symbols, each small and testable alone (mixnet/compiler/pipeline.py orders them).

* `verify`: structural checks (every input is an earlier node's existing output, op arity, variable names
  unique) — run between passes when debugging (MIXNET_VERIFY=1);
* `cse`: common-subexpression elimination — nodes applying the same op with the same attributes to the same
  inputs are merged (never random, stateful or creation ops);
* `drop_identity_reshapes`: reshapes that keep their input's shape go (needs the exact shapes);
* dead code needs no pass: a Symbol holds only the nodes its outputs reach.
"""
import numpy as np

from ..base import MXNetError
from .graph import graph_types, rewrite, topo_order


def verify(symbol):
    """Raises MXNetError naming the node when the graph is malformed; returns the symbol unchanged."""
    nodes = topo_order(symbol._outputs)
    position = {id(n): i for i, n in enumerate(nodes)}
    variables = {}
    for i, node in enumerate(nodes):
        where = f"node {node.name!r}" + (f" (created at {node.location})" if node.location else "")
        if node.op is None:
            if node.inputs:
                raise MXNetError(f"verify: variable {where} has inputs")
            other = variables.setdefault(node.name, node)
            if other is not node:
                raise MXNetError(f"verify: two different variables are named {node.name!r}")
            continue
        for src, index in node.inputs:
            if position.get(id(src), len(nodes)) >= i:
                raise MXNetError(f"verify: {where} reads {src.name!r}, which does not come before it")
            if index >= src.num_outputs():
                raise MXNetError(f"verify: {where} reads output {index} of {src.name!r}, which has "
                                 f"{src.num_outputs()}")
        if not node.op.variadic and len(node.inputs) != len(node.input_names()):
            raise MXNetError(f"verify: {where} ({node.op.name}) has {len(node.inputs)} inputs, expected "
                             f"{len(node.input_names())} ({', '.join(node.input_names())})")
    return type(symbol)(symbol._outputs)


def _attr_key(attrs):
    """A hashable, exact key for attributes, or None when one is not exactly comparable (arrays)."""
    items = []
    for key in sorted(attrs):
        value = attrs[key]
        if isinstance(value, np.ndarray) or (isinstance(value, tuple) and any(isinstance(v, np.ndarray)
                                                                               for v in value)):
            return None
        try:
            hash(value)
        except TypeError:
            return None
        items.append((key, value))
    return tuple(items)


def cse(symbol):
    """Merges duplicate computations; returns a new Symbol over new nodes (the input symbol is unchanged)."""
    seen = {}

    def merge(node, inputs):
        if node.op is None or node.op.random or node.op.mutates or node.op.creates or node.op.train_aware:
            return None
        attr_key = _attr_key(node.attrs)
        if attr_key is None:
            return None
        key = (node.op.name, attr_key, tuple((id(src), idx) for src, idx in inputs))
        if key not in seen:
            seen[key] = node.clone(inputs)
        return seen[key]

    return type(symbol)(rewrite(symbol._outputs, merge))


def drop_identity_reshapes(symbol, eshape=None, edtype=None):
    """Removes reshapes whose output has the input's shape (a Dense's backward has one per gradient: each a kernel
    call for nothing). eshape/edtype: every entry's exact shape and dtype (autodiff.exact_types), for an untyped
    graph; a typed graph's nodes carry theirs. A graph output that would become a graph input as is keeps its
    reshape, so outputs stay distinct from inputs."""
    if eshape is None:
        eshape, edtype = graph_types(symbol._outputs)
    heads = {id(n) for n, _ in symbol._outputs}

    def drop(node, inputs):
        if node.op is None or not node.op.reshape or not node.inputs:
            return None
        src = (id(node.inputs[0][0]), node.inputs[0][1])
        same = eshape[(id(node), 0)] == eshape[src] and edtype[(id(node), 0)] == edtype[src]
        if same and not (id(node) in heads and inputs[0][0].op is None):
            return [inputs[0]]
        return None

    return type(symbol)(rewrite(symbol._outputs, drop))
