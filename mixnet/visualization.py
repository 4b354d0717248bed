"""`mx.viz` (`mx.visualization`): MXNet 1.x's `print_summary` (a layer table) and `plot_network` (a
`graphviz.Digraph`), for Symbols and for hybridized HybridBlocks (their most recent traced graph).

Differences from MXNet 1.9.1, on purpose (docs/visualization.md):
* print_summary counts every layer's parameters from their shapes: MXNet counted only Convolution,
  FullyConnected, BatchNorm and Embedding, from the previous layer's channel count (wrong for a FullyConnected
  over a 4-d input, and bias-only without `shape`). Without `shape`, a layer whose parameter shapes are not known
  shows `?`. Every data input gets a row (MXNet: only the graph's first node). Auxiliary states (BatchNorm's
  running statistics) are not counted, as in MXNet.
* plot_network: node ids are generated and names escaped (a name from a model file cannot change the DOT
  text); `hide_weights=False` draws the weights as nodes (MXNet drew edges to undeclared nodes); a hybridized
  block is drawn as its compiled plan runs, each fused kernel a cluster of its ops, every node's tooltip naming
  the user's source line. Without Graphviz's `dot` program the Digraph is still returned (`.source` is the DOT
  text) and shows the text graph in a notebook.
"""
import warnings

from .base import MXNetError
from .symbol import draw
from .symbol.draw import GraphvizMissing, IncompleteShape, NotAGraph  # noqa: F401  (the errors, public here)
from .symbol.graph import topo_order
from .symbol.infer import infer_graph
from .symbol.symbol import Symbol
from .gluon.block import HybridBlock
from .gluon.explain import TracedGraph, traced_graph

__all__ = ["print_summary", "plot_network"]


def _graph_of(symbol, shape, dtype, caller):
    """(Symbol to tabulate, TracedGraph or None, shape dict, dtype dict) for a Symbol or a hybridized block."""
    if isinstance(symbol, HybridBlock):
        symbol = traced_graph(symbol)
    if isinstance(symbol, TracedGraph):       # the shapes it was traced for, parameters' included
        return symbol, symbol, symbol.traced_shapes, dtype
    if not isinstance(symbol, Symbol):
        raise NotAGraph(f"{caller}: symbol must be a Symbol or a hybridized HybridBlock, got "
                        f"{type(symbol).__name__}")
    return symbol, None, shape, dtype


def print_summary(symbol, shape=None, line_length=120, positions=[.44, .64, .74, 1.]):   # MXNet's defaults
    """Prints a table of the graph's layers: `name(op)`, output shape (without the batch axis), parameter
    count, and the layers feeding it; then the total. symbol: a Symbol, or a hybridized HybridBlock (its most
    recent traced graph, with the shapes it was traced for). shape: {input name: shape} (needed for output
    shapes and parameter counts of a Symbol). line_length / positions: the table's width and its columns' right
    edges (fractions of line_length when the last is <= 1, else characters)."""
    symbol, traced, shape, _ = _graph_of(symbol, shape, None, "print_summary")
    print(summary_text(symbol, shape, line_length, positions,
                       parameters=set(traced.parameters) if traced is not None else None,
                       inputs=set(traced.input_shapes) if traced is not None else None))


def summary_text(symbol, shape=None, line_length=120, positions=(.44, .64, .74, 1.), parameters=None,
                 inputs=None):
    """print_summary's table as a string. parameters / inputs: the names of the weight / data variables when
    known (a traced graph's), else told by their names and the op inputs they fill / by `shape`."""
    outputs = symbol._outputs
    nodes = topo_order(outputs)
    aux = symbol._aux_ids(nodes)
    # without shapes: what partial inference decides (declared parameter shapes), for the counts
    eshape = draw.entry_types(outputs, shape)[0] if shape is not None else _partial_shapes(symbol)
    is_param = (lambda n: n.name in parameters) if parameters is not None else \
        (lambda n: draw.looks_like_weight(n.name) or _fills_weight_slot(n, nodes))
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    def row(fields):
        line = ""
        for text, edge in zip(fields, positions):
            line = (line + str(text))[:edge]
            line += " " * (edge - len(line))
        return line

    lines = ["_" * line_length, row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"]), "=" * line_length]
    if inputs is None:         # as MXNet: the inputs given shapes; without shapes, the graph's first node
        inputs = {k for k in shape} if shape is not None else {nodes[0].name} if nodes else set()
    is_input = lambda n: n.op is None and n.name in inputs and id(n) not in aux and not is_param(n)
    rows = [n for n in nodes if n.op is not None or is_input(n)]
    total, unknown = 0, False
    for k, node in enumerate(rows):
        if node.op is None:
            count, previous, kind = 0, [], "null"
        else:
            params = [src for src, _ in node.inputs if src.op is None and is_param(src) and id(src) not in aux]
            shapes = [eshape.get((id(p), 0)) for p in params]
            if all(_known(s) for s in shapes):
                count = sum(_size(s) for s in shapes)
                total += count
            else:
                count, unknown = "?", True
            previous = [src.name for src, _ in node.inputs if src.op is not None or is_input(src)]
            kind = node.op.name
        outs = [eshape.get((id(node), i)) for i in range(node.num_visible())]
        texts = ["x".join(map(str, s[1:])) for s in outs if _known(s)]
        out_text = texts[0] + f" (x{len(texts)} outputs)" if len(set(texts)) == 1 and len(texts) > 1 else \
            ", ".join(texts)
        lines.append(row([f"{node.name}({kind})", out_text, count, previous[0] if previous else ""]))
        lines += [row(["", "", "", name]) for name in previous[1:]]
        lines.append(("=" if k == len(rows) - 1 else "_") * line_length)
    lines.append(f"Total params: {total}" if not unknown else
                 f"Total params: ? ({total} in the layers counted; give shape= to count the layers marked ?)")
    lines.append("_" * line_length)
    return "\n".join(lines)


def _partial_shapes(symbol):
    """{entry: shape} that inference decides without input shapes (declared parameter shapes and what follows)."""
    try:
        return infer_graph(symbol._nodes(), {}, {}, partial=True)[0]
    except MXNetError:
        return {}


def _fills_weight_slot(var, nodes):
    """A variable read by an op at a parameter input (weight, bias, gamma, beta, parameters)."""
    for node in nodes:
        if node.op is None:
            continue
        names = node.input_names()
        for k, (src, _) in enumerate(node.inputs):
            if src is var and k < len(names) and names[k] in ("weight", "bias", "gamma", "beta", "parameters"):
                return True
    return False


def _known(shape):
    return shape is not None and len(shape) > 0 and all(d > 0 for d in shape)


def _size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def plot_network(symbol, title="plot", save_format="pdf", shape=None, dtype=None, node_attrs={},
                 hide_weights=True):          # MXNet's signature (node_attrs is only read)
    """A `graphviz.Digraph` of the graph: boxes for ops (MXNet's labels and colours), ovals for inputs, edges
    labelled with shapes (without the batch axis) when `shape` ({input name: shape}) is given and with dtypes
    when `dtype` is. symbol: a Symbol, or a hybridized HybridBlock (drawn as its most recent compiled plan runs:
    fused kernels as clusters of their ops, shapes always shown). node_attrs: Graphviz node attributes over the
    defaults. hide_weights: leave out the parameters (names ending in _weight, _bias, _gamma, ... for a Symbol).

    `.render()` / `.view()` need Graphviz's `dot` program; without it the Digraph's `.source` still holds the
    DOT text, and in a notebook it shows the graph as text. Needs the graphviz Python package (pip install
    graphviz)."""
    draw.graphviz_module()
    symbol, traced, shape, dtype = _graph_of(symbol, shape, dtype, "plot_network")
    if traced is not None:
        drawn = traced._drawn()          # the plan that runs (typed: its shapes are drawn), else the trace
        return draw.network(drawn._outputs, title, save_format, shape, dtype, node_attrs, hide_weights,
                            parameters=set(traced.parameters), text=str(traced))
    _warn_repeated_names(symbol)
    return draw.network(symbol._outputs, title, save_format, shape, dtype, node_attrs, hide_weights,
                        text=symbol.debug_str())


def _warn_repeated_names(symbol):
    """As MXNet: a warning when nodes share a name. The drawing keeps them apart (its ids are generated), but
    binding, saving or loading parameters by name will not."""
    seen, repeated = set(), []
    for node in symbol._nodes():
        if node.name in seen and node.name not in repeated:
            repeated.append(node.name)
        seen.add(node.name)
    if repeated:
        warnings.warn("There are multiple variables with the same name in your graph: "
                      f"{', '.join(map(repr, repeated))}. They are drawn as separate nodes, but wherever the graph "
                      "is bound or its parameters are saved or loaded by name they clash; give each layer its own "
                      "name.", RuntimeWarning, stacklevel=3)
