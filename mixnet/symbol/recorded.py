"""`autograd.get_symbol(x)`: the computation autograd recorded for `x`, as a Symbol.

Every tape node becomes a graph node (its op and attributes as recorded); arrays the tape does not produce
(attach_grad leaves, constants) become variables `var0, var1, ...` in the order they are first read. A
hybridized block's call (one `_CachedOp` tape node) is inlined as the graph it runs when that graph has at most
`inline_limit` ops (a hybridize() option, 2 by default, as in MXNet), else it stays one `_CachedOp` node.
"""
from .. import autograd
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from .graph import Node, raw_from_attrs, rewrite, topo_order
from .symbol import Symbol

__all__ = ["get_symbol", "symbol_of"]


def get_symbol(x):
    """The recorded computation of x (an output computed under record()) as a Symbol: tape nodes become graph
    nodes, other arrays variables var0, var1, ... MXNet users call it as `mx.autograd.get_symbol`: mixnet's
    __init__ puts it there, as autograd sits below the graph layer."""
    return symbol_of(x)


def symbol_of(x):
    heads = list(x) if isinstance(x, (list, tuple)) else [x]
    if not all(isinstance(h, NDArray) for h in heads):
        raise MXNetError("autograd.get_symbol takes an NDArray (or a list of them)")
    if not any(isinstance(h._node, autograd.TapeNode) for h in heads):
        raise MXNetError("autograd.get_symbol: the array was not computed under autograd.record()")
    built, variables = {}, {}                        # id(TapeNode) -> [entries]; id(NDArray) -> Node

    def entry(arr):
        node = arr._node
        if isinstance(node, autograd.TapeNode):
            return built[id(node)][arr._oidx]
        if id(arr) not in variables:
            variables[id(arr)] = (Node(None, f"var{len(variables)}"), arr)   # keep arr alive: ids stay unique
        return variables[id(arr)][0], 0

    for tape_node in reversed(autograd._topological_nodes(heads)):     # producers first
        op = tape_node.op
        if op.name == "_CachedOp":
            limit = tape_node.attrs.get("inline_limit")
            plan = op.grad.__self__
            if limit is None or sum(1 for n in topo_order(plan.graph._outputs) if n.op is not None) <= limit:
                built[id(tape_node)] = _inline(tape_node, entry)
            else:                                     # as MXNet: a larger graph stays one _CachedOp node
                node = Node(op, f"_cachedop{len(built)}", {}, {}, [entry(a) for a in tape_node.attrs["inputs"]])
                built[id(tape_node)] = [(node, k) for k in range(plan.n_out)]
        elif op.kernel is None:
            raise MXNetError(f"autograd.get_symbol: {op.name} (a custom autograd.Function) has no graph form")
        else:
            node = Node(op, f"{op.name.lstrip('_').lower()}{len(built)}", tape_node.attrs,
                        raw_from_attrs(op, tape_node.attrs), [entry(i) for i in tape_node.inputs])
            built[id(tape_node)] = [(node, k) for k in range(node.num_outputs())]
    return Symbol([entry(h) for h in heads])


def _inline(tape_node, entry):
    """The entries of a hybridized call's outputs: its graph cloned over the call's own inputs."""
    plan = tape_node.op.grad.__self__                 # the TrainingPlan whose backward the tape node runs
    given = {name: entry(arr) for name, arr in zip(plan.names, tape_node.attrs["inputs"])}

    def over_given(node, inputs):           # the clones are a user's graph: untyped, they may run other shapes
        return [given[node.name]] if node.op is None else node.clone(inputs, types=None)

    return rewrite(plan.graph._outputs, over_given)
