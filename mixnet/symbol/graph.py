"""The graph IR under `mx.sym`: nodes with typed attributes, their MXNet string forms, and the user's line.

A `Node` is either a variable (`op is None`: a graph input, a parameter or an auxiliary state) or an application
of a registry op. Its inputs are `(node, output_index)` entries. `attrs` holds the op's complete, parsed
attributes (what the kernel receives); `raw` holds the string attributes MXNet would write to `-symbol.json`
(the attributes the user gave explicitly, in MXNet's spelling, plus hidden `__key__` attributes).

The compiler's graphs are typed: `types` holds each output's (shape, dtype), set once by `symbol/typed.py` (or by
the pass that makes the node) and kept by every rewrite, so passes read types instead of inferring them again.
A user's graph is untyped (None): its nodes may be run with other shapes. Passes rebuild graphs through
`rewrite`, which copies a node with `Node.clone`.
"""
import numpy as np

from ..base import MXNetError
from ..ops.attrs import REQUIRED, format_attr, parse_subgraph

__all__ = ["Node", "graph_types", "mx_str", "raw_from_attrs", "rewrite", "subgraphs", "topo_order"]


class Node:
    __slots__ = (
        "__weakref__",
        "attrs",
        "inputs",
        "json_outputs",
        "json_versions",
        "location",
        "name",
        "op",
        "raw",
        "types",
    )

    def __init__(self, op, name, attrs=None, raw=None, inputs=(), location=None):
        self.op = op
        self.name = name
        self.attrs = attrs if attrs is not None else {}
        self.raw = raw if raw is not None else {}
        self.inputs = list(inputs)
        self.location = location
        self.json_outputs = None     # MXNet's output count for node_row_ptr, when it differs from the registry's
        self.json_versions = None    # the input entries' versions read from a file (kept to write it back)
        self.types = None            # compiler graphs: ((shape, dtype) per output, hidden ones included)

    def clone(self, inputs=None, **changes):
        """A copy of this node reading `inputs` (default: the same entries), every other field kept unless given
        in `changes` (e.g. types=...)."""
        new = Node(self.op, self.name, self.attrs, self.raw, self.inputs if inputs is None else inputs,
                   self.location)
        new.json_outputs, new.json_versions, new.types = self.json_outputs, self.json_versions, self.types
        for key, value in changes.items():
            setattr(new, key, value)
        return new

    @property
    def is_variable(self):
        return self.op is None

    def num_outputs(self):
        """All outputs, hidden ones included (what node_row_ptr counts)."""
        return 1 if self.op is None else self.op.n_outputs(self.attrs)

    def num_visible(self):
        return 1 if self.op is None else self.op.n_visible(self.attrs)

    def output_names(self):
        if self.op is None:
            return [self.name]
        n = self.num_visible()
        names = self.op.output_names
        if names is not None:
            names = names(self.attrs) if callable(names) else names
            return [f"{self.name}_{suffix}" for suffix in names[:n]]
        if n == 1:
            return [self.name + "_output"]
        return [f"{self.name}_output{i}" for i in range(n)]

    def input_names(self):
        if self.op is None:
            return []
        if self.op.variadic:
            return [f"arg{i}" for i in range(len(self.inputs))]
        return list(self.op.input_names(self.attrs))

    def monitor_input_names(self):
        """Input names as MXNet's monitor callbacks give them (input<i> for ops without listed names)."""
        return [] if self.op is None else self.op.monitor_input_names(self.attrs, len(self.inputs))

    def __repr__(self):
        return f"<Node {self.name} ({'variable' if self.op is None else self.op.name})>"


def subgraphs(node):
    """(attribute name, Symbol) for each subgraph a control-flow node holds, in MXNet's "subgraphs" order."""
    if node.op is None:
        return []
    return [(key, node.attrs[key]) for key, spec in node.op.attrs.items() if spec.parse is parse_subgraph]


def topo_order(heads):
    """Nodes reachable from `heads` ((node, index) entries), in MXNet's order: post-order DFS from the heads,
    inputs visited in order (iterative, so deep graphs do not hit the recursion limit)."""
    order, seen = [], set()
    for head, _ in heads:
        if id(head) in seen:
            continue
        stack = [(head, 0)]
        seen.add(id(head))
        while stack:
            node, i = stack.pop()
            if i < len(node.inputs):
                stack.append((node, i + 1))
                child = node.inputs[i][0]
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                order.append(node)
    return order


FOLDED = ()    # what `rewrite`'s fn returns for a node taken into another one, whose value nothing reads any more


def rewrite(outputs, fn):
    """Rebuilds the graph reaching `outputs` ((node, index) entries); returns the new output entries. The old
    graph is left as it is.

    Nodes are visited in topological order, each once: `fn(node, inputs)` gets the node and its input entries
    already rewritten, and returns
    * None: keep the node (a clone reading `inputs`; a variable stays itself),
    * a Node: it stands for the node, output for output (a merged duplicate, a typed copy),
    * a sequence with one entry per output: entries of the new graph (an input, to drop the node) or of a node fn
      made, which may read entries of the OLD graph: once every node is visited, those are pointed at their
      replacements (a fused node can be made at its group's first member, before its other inputs are rebuilt),
    * FOLDED: the node's value was taken into another node; nothing in the new graph may read it.
    """
    nodes = topo_order(outputs)
    old = {id(n) for n in nodes}
    new, made = {}, {}

    def entry(src, index):
        got = new[id(src)]
        return (got, index) if isinstance(got, Node) else (got[index] if got else None)

    for node in nodes:
        inputs = [entry(*e) for e in node.inputs]
        result = fn(node, inputs)
        if result is None:
            if None in inputs:
                raise MXNetError(f"internal: graph rewrite: {node.name!r} reads a value folded into another node")
            result = node if node.op is None else node.clone(inputs)
        else:
            for made_node in [result] if isinstance(result, Node) else [n for n, _ in result]:
                if id(made_node) not in old:
                    made[id(made_node)] = made_node
        new[id(node)] = result
    for node in made.values():
        node.inputs = [entry(*e) if id(e[0]) in old else e for e in node.inputs]
    return [entry(*e) for e in outputs]


def graph_types(outputs):
    """({entry: shape}, {entry: dtype}) of a typed graph (entries are (id(node), index)), read off its nodes."""
    eshape, edtype = {}, {}
    for node in topo_order(outputs):
        for k, (shape, dtype) in enumerate(node.types):
            eshape[(id(node), k)], edtype[(id(node), k)] = shape, dtype
    return eshape, edtype


def mx_str(key, value):
    """A user's attribute value as MXNet's Python front end writes it: `str(value)`, except dtypes, which are
    written as numpy names ("float32"). Tuples stay "(3, 3)", lists "[1, 0]", floats "1e-05"."""
    if isinstance(value, str):
        return value
    if key == "dtype" or isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        if value is None:
            return "None"
        try:
            return np.dtype(value).name
        except TypeError:
            return str(value)
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return str(value.item())
    if isinstance(value, tuple):
        return "(" + ", ".join(mx_str("", v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(mx_str("", v) for v in value) + "]"
    return str(value)


def raw_from_attrs(op, attrs):
    """String attributes for a node made from already-parsed attributes (e.g. by a tracer): every attribute that
    differs from the op's default, written with mixnet.ops.attrs.format_attr."""
    raw = {}
    for key, spec in op.attrs.items():
        if key not in attrs or key == "ctx" or spec.parse is parse_subgraph:
            continue
        value = attrs[key]
        if spec.default is not REQUIRED:
            try:
                if value == spec.default or (spec.default is not None and value == spec.parse(spec.default)):
                    continue
            except (ValueError, TypeError):
                pass
        raw[key] = format_attr(value)
    return raw
