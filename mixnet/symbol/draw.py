"""Pictures of graphs: the DOT source of a Symbol's graph (as a `graphviz.Digraph`), its SVG when Graphviz's
`dot` program is installed, and the text form otherwise. `mx.viz.plot_network` and Symbol's notebook reprs
(`_repr_svg_`, `_repr_html_`) draw through here; hybridized blocks come in through gluon/explain.py.

Fused kernels (`_fused_elemwise` nodes of a compiled plan) are drawn as clusters holding one box per fused op,
each box's tooltip naming the user's line.

Safety: a graph may come from a downloaded `-symbol.json`, so nothing read from it becomes DOT syntax. Node ids
are generated (`n0`, `n1`, ...; `cluster0`, ...), and names, op names, attributes and locations reach the DOT
text only as label or tooltip strings, escaped here (backslashes doubled, control characters replaced, marked as
not-HTML) before the graphviz package quotes them.
"""
import html
import shutil

import numpy as np

from ..base import MXNetError
from .graph import graph_types, topo_order
from .infer import infer_graph

__all__ = ["GraphvizMissing", "IncompleteShape", "NotAGraph", "network", "has_dot", "svg_of", "text_html"]

# MXNet 1.x's look (mx.viz.plot_network): node box and colours by op family
NODE_ATTRS = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034", "style": "filled"}
COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")
FUSED_COLOR = "#d9f0d3"
WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean", "_running_var",
                   "_running_mean")
LABEL_LIMIT = 200            # characters of one outside string in a label
SVG_NODE_LIMIT = 400         # notebook reprs draw graphs up to this many nodes (dot takes seconds beyond)

INSTALL_DOT = ("Graphviz's `dot` program is not installed, so there is no picture (the graphviz Python package "
               "only writes DOT text). Install it with your system's package manager (apt install graphviz, "
               "brew install graphviz, conda install graphviz) and restart the kernel.")


class GraphvizMissing(MXNetError, ImportError):
    """plot_network needs the graphviz Python package."""


class IncompleteShape(MXNetError, ValueError):
    """The given input shapes or dtypes do not decide every value's (MXNet: ValueError)."""


class NotAGraph(MXNetError, TypeError):
    """What was given is not a Symbol or a hybridized block (MXNet: TypeError)."""


def graphviz_module():
    try:
        import graphviz  # lazy: an optional package, needed only to draw
    except ImportError:
        raise GraphvizMissing("plot_network draws with the graphviz Python package, which is not installed: "
                              "pip install graphviz (and, for pictures, Graphviz's `dot` program; without it "
                              "the text form is shown)") from None
    return graphviz


def has_dot():
    """Whether Graphviz's `dot` program is on the PATH (where the graphviz package looks for it)."""
    return shutil.which("dot") is not None


def safe_text(text):
    """Outside text as a DOT label/tooltip string: at most LABEL_LIMIT characters, control characters replaced by
    spaces and backslashes doubled, so that no escape (`\\N`, `\\"` ...) or line break of DOT's is left for the
    graphviz package's quoting to meet; `"` is escaped by that quoting."""
    text = str(text)
    if len(text) > LABEL_LIMIT:
        text = text[:LABEL_LIMIT] + "..."
    text = "".join(" " if (ord(c) < 32 or 0x7f <= ord(c) < 0xa0 or c in "\u2028\u2029") else c for c in text)
    return text.replace("\\", "\\\\")


def _label(*lines):
    """A label or tooltip from lines of outside text (a real newline between lines, as MXNet's labels have),
    marked not-HTML so that a name like `<b>` is not read as an HTML label."""
    import graphviz  # lazy: only while drawing (graphviz_module() checked it is there)
    return graphviz.nohtml("\n".join(safe_text(line) for line in lines if line is not None))


def _dims(value):
    return "x".join(str(d) for d in (value if isinstance(value, (tuple, list)) else (value,)))


def op_label(node):
    """The box label MXNet 1.x draws for an op node, and its colour."""
    op, attrs = node.op.name, node.attrs
    if op == "Convolution":
        stride = attrs.get("stride") or (1,)
        return ["Convolution", f"{_dims(attrs.get('kernel', ()))}/{_dims(stride)}, {attrs.get('num_filter')}"], \
            COLORS[1]
    if op == "FullyConnected":
        return ["FullyConnected", str(attrs.get("num_hidden"))], COLORS[1]
    if op == "BatchNorm":
        return [node.name], COLORS[3]
    if op in ("Activation", "LeakyReLU"):
        return [op, str(attrs.get("act_type", "leaky"))], COLORS[2]
    if op == "Pooling":
        kernel = _dims(attrs["kernel"]) if attrs.get("kernel") else "[]"
        return ["Pooling", f"{attrs.get('pool_type')}, {kernel}/{_dims(attrs.get('stride') or (1,))}"], COLORS[4]
    if op in ("Concat", "Flatten", "Reshape"):
        return [node.name], COLORS[5]
    if op == "Softmax":
        return [node.name], COLORS[6]
    if op == "Custom":
        return [str(attrs.get("op_type", node.name))], COLORS[7]
    return [node.name], COLORS[7]


def looks_like_weight(name):
    return name.endswith(WEIGHT_SUFFIXES)


def _step_label(step):
    scalars = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(step.attrs.items()))
    return [step.op] + ([scalars] if scalars else [])


def _tooltip(name, op, location):
    return _label(f"{name} ({op})" if op else name, location)


class _Drawing:
    """Builds the Digraph: generated ids for nodes, one cluster per fused kernel."""

    def __init__(self, dot, node_attrs, hide, edge_text):
        self.dot, self.node_attrs, self.hide, self.edge_text = dot, node_attrs, hide, edge_text
        self.ids = {}          # (id(node), output index) -> drawn node id
        self.edges = []        # (consumer id, producer id, attrs), written after every node
        self.count = 0

    def new_id(self):
        self.count += 1
        return f"n{self.count - 1}"

    def box(self, where, label, fill, tooltip, **extra):
        node_id = self.new_id()
        attrs = dict(self.node_attrs)
        attrs.update(fillcolor=fill, tooltip=tooltip, **extra)
        where.node(node_id, label=label, **attrs)
        return node_id

    def draw(self, nodes):
        clusters = 0
        for node in nodes:
            if node.op is None:
                if node.name in self.hide:
                    continue
                drawn = self.box(self.dot, _label(node.name), COLORS[0], _tooltip(node.name, None, node.location),
                                 shape="oval")
                self.ids[(id(node), 0)] = drawn
            elif node.op.name == "_fused_elemwise" and getattr(node.attrs.get("kernel"), "group", None) is not None:
                self.fused(node, clusters)
                clusters += 1
            else:
                lines, fill = op_label(node)
                drawn = self.box(self.dot, _label(*lines), fill, _tooltip(node.name, node.op.name, node.location))
                for k in range(node.num_outputs()):
                    self.ids[(id(node), k)] = drawn
                for src, index in node.inputs:
                    self.edge(drawn, src, index)
        for consumer, producer, attrs in self.edges:
            self.dot.edge(consumer, producer, dir="back", arrowtail="open", **attrs)

    def edge(self, consumer, src, index):
        producer = self.ids.get((id(src), index))
        if producer is not None:             # else a hidden weight
            self.edges.append((consumer, producer, {"label": _label(self.edge_text(src, index) or "")}))

    def fused(self, node, number):
        """One cluster per fused kernel: a box per fused op (its tooltip the user's line), edges inside."""
        group = node.attrs.get("group") or node.attrs["kernel"].group   # this graph's lines
        where = {step.location for step in group.steps if step.location}
        title = f"fused kernel {number}: {len(group.steps)} ops" + (f", {sorted(where)[0]}" if len(where) == 1 else "")
        with self.dot.subgraph(name=f"cluster{number}") as cluster:
            cluster.attr(label=_label(title), style="dashed", tooltip=_label(node.name, title))
            steps = []
            for step in group.steps:
                drawn = self.box(cluster, _label(*_step_label(step)), FUSED_COLOR,
                                 _tooltip(step.op, "fused", step.location))
                for ref in step.inputs:
                    if ref.kind == "step":
                        self.edges.append((drawn, steps[ref.index], {}))
                    else:
                        self.edge(drawn, *node.inputs[ref.index])
                steps.append(drawn)
            outputs = [steps[j] for j in group.outputs]
            if group.reduce is not None:
                red = group.reduce
                drawn = self.box(cluster, _label(red.op or red.kind, f"{red.kind} over {red.layout} axes"),
                                 FUSED_COLOR, _tooltip(red.op or red.kind, "fused", red.location))
                self.edges.append((drawn, outputs[0], {}))
                outputs = [drawn]
        for k, drawn in enumerate(outputs):
            self.ids[(id(node), k)] = drawn


def entry_types(outputs, shape=None, dtype=None):
    """({entry: shape}, {entry: dtype}) for the graph reaching `outputs`: read off a typed graph's nodes (a
    compiled plan's), or inferred from `shape` / `dtype` ({input name: shape / dtype}; IncompleteShape when they
    do not decide every value). Empty when neither is known."""
    nodes = topo_order(outputs)
    if nodes and all(n.types is not None for n in nodes):
        return graph_types(outputs)
    if shape is None and dtype is None:
        return {}, {}
    shapes = {k: tuple(v) for k, v in (shape or {}).items()}
    dtypes = {k: np.dtype(v) for k, v in (dtype or {}).items()}
    try:
        eshape, edtype = infer_graph(nodes, shapes, dtypes, partial=True)
    except MXNetError as err:
        raise IncompleteShape(f"the input shapes/dtypes given do not fit the graph: {err}") from None
    for node in nodes:
        for k in range(node.num_visible()):
            if shape is not None and not _known(eshape.get((id(node), k))):
                raise IncompleteShape(f"Input shape is incomplete: the shapes given ({shapes}) do not decide the "
                                      f"shape of {node.name!r}; give every data input's shape")
            if dtype is not None and edtype.get((id(node), k)) is None:
                raise IncompleteShape(f"Input type is incomplete: the dtypes given do not decide the type of "
                                      f"{node.name!r}; give every data input's dtype")
    return (eshape if shape is not None else {}), (edtype if dtype is not None else {})


def _known(shape):
    return shape is not None and all(d > 0 for d in shape)


def network(outputs, title="plot", save_format="pdf", shape=None, dtype=None, node_attrs=None, hide_weights=True,
            parameters=None, text=""):
    """The Digraph of the graph reaching `outputs` (see mx.viz.plot_network). parameters: the names of the
    variables that are weights (a hybridized block knows them), else names ending like MXNet's weights
    (`_weight`, `_bias`, `_gamma`, ...). text: what the Digraph shows in a notebook when `dot` is missing."""
    graphviz = graphviz_module()
    nodes = topo_order(outputs)
    eshape, edtype = entry_types(outputs, shape, dtype)
    if dtype is None:                     # as MXNet: dtypes on the edges only when asked for
        edtype = {}
    weight = (lambda name: name in parameters) if parameters is not None else looks_like_weight
    hide = {n.name for n in nodes if n.op is None and weight(n.name)} if hide_weights else set()

    def edge_text(src, index):
        parts = []
        if (id(src), index) in eshape:
            parts.append(_dims(eshape[(id(src), index)][1:]))
        if (id(src), index) in edtype:
            parts.append(f"({np.dtype(edtype[(id(src), index)]).name})")
        return "".join(parts)

    attrs = dict(NODE_ATTRS)
    attrs.update(node_attrs or {})
    dot = digraph_class(graphviz)(name=str(_label(title)), format=save_format)
    dot.text = text
    _Drawing(dot, attrs, hide, edge_text).draw(nodes)
    return dot


_DIGRAPH = []


def digraph_class(graphviz):
    """graphviz.Digraph whose notebook display falls back to the text graph when `dot` is missing (the
    package's own display would raise graphviz.ExecutableNotFound)."""
    if not _DIGRAPH:
        class NetworkDigraph(graphviz.Digraph):
            """A graphviz.Digraph of a network; `.source` is its DOT text, `.text` the graph as text."""
            text = ""

            def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
                if has_dot():
                    return super()._repr_mimebundle_(include, exclude, **kwargs)
                return {"text/plain": f"{self.text}\n\n({INSTALL_DOT})",
                        "text/html": text_html(self.text, INSTALL_DOT)}

        NetworkDigraph.__qualname__ = "NetworkDigraph"
        globals()["NetworkDigraph"] = NetworkDigraph       # importable by name: a Digraph of it pickles
        _DIGRAPH.append(NetworkDigraph)
    return _DIGRAPH[0]


def svg_of(dot):
    """The SVG text of a Digraph, or None without `dot` (or when `dot` fails)."""
    if not has_dot():
        return None
    try:
        return dot.pipe(format="svg").decode("utf-8")
    except Exception:       # noqa: BLE001 - any failure of the external program: the caller shows text instead
        return None


def text_html(text, note=None):
    """A text graph as notebook HTML: a scrollable <pre>, with a note under it."""
    body = f'<pre style="max-height:32em;overflow:auto">{html.escape(text)}</pre>'
    if note:
        body += f'<p style="font-size:smaller;color:#666">{html.escape(note)}</p>'
    return f"<div>{body}</div>"


def notebook_svg(outputs, title="plot", **kwargs):
    """The SVG of a graph for a notebook repr: None without the graphviz package or `dot`, or for a graph of
    more than SVG_NODE_LIMIT nodes (dot would take seconds)."""
    if not has_dot() or len(topo_order(outputs)) > SVG_NODE_LIMIT:
        return None
    try:
        dot = network(outputs, title, **kwargs)
    except GraphvizMissing:
        return None
    return svg_of(dot)


def notebook_html(outputs, text, **kwargs):
    """A graph as notebook HTML: its picture (with the text form folded under it), or the text form with a note
    saying why there is no picture."""
    picture = notebook_svg(outputs, **kwargs)
    if picture is not None:
        return (f"<div>{picture}<details><summary>as text</summary>{text_html(text)}</details></div>")
    if not has_dot():
        why = INSTALL_DOT
    elif len(topo_order(outputs)) > SVG_NODE_LIMIT:
        why = f"More than {SVG_NODE_LIMIT} nodes: mx.viz.plot_network(...) draws it."
    else:
        why = "No picture: pip install graphviz."
    return text_html(text, why)
