"""Typed graphs: a copy of a Symbol whose every node carries its outputs' shapes and dtypes (`Node.types`).

The compiler types a graph once, from its inputs' shapes and dtypes, and its passes keep the types on the nodes
they copy or make (graph.rewrite), so no pass infers shapes again. The inference is autodiff.exact_types (the
registry's rules, node by node), which takes the types a node already carries as they are: typing a graph whose
new nodes (a backward graph over a typed forward) lack them infers those nodes alone.
"""
import numpy as np

from .autodiff import exact_types
from .graph import graph_types, rewrite, topo_order
from .symbol import Symbol

__all__ = ["graph_types", "is_typed", "typed", "with_types"]


def is_typed(symbol):
    return all(node.types is not None for node in topo_order(symbol._outputs))


def typed(symbol, shapes, dtypes):
    """`symbol` with every node typed: itself when it is already, else a copy (variables included: the user's
    nodes stay untyped, since they may run with other shapes). shapes/dtypes: {input name: shape/dtype} for the
    variables that carry no type."""
    if is_typed(symbol):
        return symbol
    return with_types(symbol, *exact_types(symbol, shapes, dtypes))


def with_types(symbol, eshape, edtype):
    """A copy of `symbol` whose nodes carry the types given as {entry: shape} / {entry: dtype} (entries are
    (id(node), index) of `symbol`'s nodes), e.g. a subgraph's from its inference (infer.subgraph_types)."""
    def annotate(node, inputs):
        types = tuple((tuple(eshape[(id(node), k)]), np.dtype(edtype[(id(node), k)]))
                      for k in range(node.num_outputs()))
        return node.clone(inputs, types=types)

    return Symbol(rewrite(symbol._outputs, annotate))
