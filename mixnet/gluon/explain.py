"""What a hybridized block traced and compiled, for people: `HybridBlock.graph()` (the traced graph of one input
signature, a Symbol that prints with output types and the user's source lines) and `HybridBlock.explain()` (a
report: each signature and why it was traced, what re-traces, the plans built, the fused kernels, the ops left
unfused and why, and with code=True the generated code). `mx.viz.plot_network` / `print_summary` take a
hybridized block through here.

Nothing here builds or runs a plan: it reads what the calls made (cached_graph.CachedGraph, cached_op plans).
A plan still fusing in the background is waited for, so the report shows the kernels that will run.
"""
import html

import numpy as np

from .. import config
from ..base import MXNetError, dtype_name
from ..codegen import backend
from ..symbol import draw
from ..symbol.autodiff import exact_types
from ..symbol.fuse import unfusible_reason
from ..symbol.graph import graph_types, topo_order
from ..symbol.symbol import Symbol, load_json
from ..compiler import PIPELINE
from .compiled_plans import compiled_plans, _is_shape

__all__ = ["TracedGraph", "Explanation", "traced_graph", "explain"]


class GraphNotTraced(MXNetError):
    """graph()/explain()/plot_network asked of a block with no traced graph (not hybridized, or never called)."""


def _cached_graphs(block, what):
    """The block's traced graphs {signature: CachedGraph}, or GraphNotTraced saying what to do."""
    kind = f"{type(block).__name__} {block.name!r}"
    if not hasattr(block, "_cached_graphs"):
        raise GraphNotTraced(f"{kind} is not a HybridBlock: {what} shows a hybridized block's traced graph")
    if not block._active:
        raise GraphNotTraced(f"{kind} is not hybridized: call net.hybridize(), then net(x) once; {what} shows "
                             "the graph that call traces")
    if not block._cached_graphs:
        raise GraphNotTraced(f"{kind} has no traced graph yet: a hybridized block traces on its first call, so "
                             f"call it once (net(x)) or precompile it (net.precompile([shape, ...])) before {what}"
                             " (a block run inside a hybridized parent is traced into the parent's graph: ask "
                             "the parent)")
    return block._cached_graphs


def _shapes_text(shapes):
    return ", ".join(_dims(s) for s in shapes)


def _dims(shape):
    return "x".join(map(str, shape)) or "scalar"


def _select(block, shapes, what):
    """(signature key, CachedGraph): the most recent trace, or the most recent one whose inputs have `shapes`
    (a shape for one input, a list of shapes for several)."""
    graphs = _cached_graphs(block, what)
    items = list(graphs.items())
    if shapes is None:
        last = block._last_graph
        return next(((k, g) for k, g in items if g is last), items[-1])
    wanted = (tuple(shapes),) if _is_shape(shapes) else tuple(tuple(s) for s in shapes)
    found = [(k, g) for k, g in items if tuple(s for s, _ in k[1]) == wanted]
    if not found:
        known = "; ".join(f"({_shapes_text(s for s, _ in k[1])})" for k, _ in items)
        raise GraphNotTraced(f"{type(block).__name__} {block.name!r}: no traced graph for inputs of shapes "
                             f"({_shapes_text(wanted)}); traced: {known}")
    return found[-1]


def running_plans(graph):
    """[(label, InferencePlan)] of a CachedGraph's built plans (fusion waited for), in the order built."""
    plans = []
    for kind, group in graph.built_plans():
        for part, plan in zip(("forward", "backward"), group):
            plan.wait_fused()
            plans.append((kind if kind == "inference" else f"training {part}", plan))
    return plans


class TracedGraph(Symbol):
    """The graph a hybridized block traced for one input signature: a Symbol (every Symbol method works: tojson,
    list_arguments, infer_shape, ...) that knows its input shapes and its compiled plans. print() shows one line
    per node with its output shape and dtype and the user's source line, then the fused kernels; in a notebook
    it is a picture of the graph that runs (mx.viz.plot_network), fused kernels drawn as groups."""
    __slots__ = ("_cached", "_key", "_block")

    def __init__(self, block, key, cached):
        super().__init__(cached.symbol._outputs)
        self._block, self._key, self._cached = f"{type(block).__name__} {block.name!r}", key, cached

    def __reduce__(self):            # pickles as the plain Symbol (plans are not picklable)
        return load_json, (self.tojson(),)

    @property
    def input_shapes(self):
        """{input name: shape} of the traced call's inputs."""
        return {n: self._cached.shapes[n] for n in self._cached.input_names}

    @property
    def traced_shapes(self):
        """{variable name: shape} of every input of the graph (data, parameters, constants) as traced."""
        return dict(self._cached.shapes)

    @property
    def input_dtypes(self):
        return {n: dtype_name(self._cached.dtypes[n]) for n in self._cached.input_names}

    @property
    def parameters(self):
        """Names of the variables that are the block's parameters (or constants made inside forward)."""
        return list(self._cached.param_names)

    @property
    def train_mode(self):
        return bool(self._key[3])

    def plans(self):
        """[(kind, compiled graph Symbol)] of the plans built for this signature, as they run (fused kernels are
        `_fused_elemwise` nodes)."""
        return [(label, plan.symbol) for label, plan in running_plans(self._cached)]

    def running(self):
        """The graph that runs this signature's forward (the inference plan's, else the first training
        forward's), or None when no plan is built yet."""
        plans = self.plans()
        return next((s for label, s in plans if label == "inference"), plans[0][1] if plans else None)

    def _types(self):
        cached = self._cached
        return exact_types(self, cached.shapes, cached.dtypes)

    def __str__(self):
        eshape, edtype = self._types()

        def note(node):
            outs = [(eshape.get((id(node), k)), edtype.get((id(node), k))) for k in range(node.num_visible())]
            return ", ".join(f"{_dims(s)} {dtype_name(d)}" for s, d in outs if s is not None and d is not None)

        inputs = ", ".join(f"{n}: {_dims(s)} {self.input_dtypes[n]}" for n, s in self.input_shapes.items())
        head = (f"traced graph of {self._block} for ({inputs}), {'train' if self.train_mode else 'predict'} mode, "
                f"{self._key[2]}")
        lines = [head] + self._debug_lines("", note)
        running = self.running()
        kernels = fused_kernels(running) if running is not None else []
        if kernels:
            lines.append(f"fused kernels ({len(kernels)}, in the graph that runs):")
            lines += ["  " + text for text in kernels]
        return "\n".join(lines)

    def __repr__(self):
        return f"<TracedGraph of {self._block}: {len(self._nodes())} nodes>"

    def _drawn(self):
        running = self.running()
        return running if running is not None else self

    def _repr_svg_(self):
        return draw.notebook_svg(self._drawn()._outputs, title=self.name or "plot",
                                 parameters=set(self.parameters))

    def _repr_html_(self):
        return draw.notebook_html(self._drawn()._outputs, str(self), title=self.name or "plot",
                                  parameters=set(self.parameters))


def traced_graph(block, shapes=None):
    """See HybridBlock.graph."""
    key, cached = _select(block, shapes, "graph()")
    return TracedGraph(block, key, cached)


def fused_kernels(symbol):
    """One line per fused kernel of a compiled graph: its ops, result and the user's lines."""
    lines = []
    for k, node in enumerate(n for n in topo_order(symbol._outputs) if _is_fused(n)):
        group = fused_group(node)
        where = sorted({s.location for s in group.steps if s.location})
        ops = [s.op for s in group.steps] + ([group.reduce.op or group.reduce.kind] if group.reduce else [])
        result = ", ".join(f"{_dims(s)} {dtype_name(d)}" for s, d in node.types or ())
        lines.append(f"kernel {k}: {len(ops)} ops ({', '.join(ops)}) -> {result}"
                     + (f"  # {', '.join(where)}" if where else ""))
    return lines


def fused_group(node):
    """The fused node's own group (this graph's steps and source lines; its kernel may be shared with an earlier
    graph of the same ops)."""
    return node.attrs.get("group") or node.attrs["kernel"].group


def _is_fused(node):
    return node.op is not None and node.op.name == "_fused_elemwise" and hasattr(node.attrs.get("kernel"), "group")


def _unfused(symbol, fusion):
    """(Counter-like {op: count} of ops with their own kernels, [lines: elementwise ops left unfused and why])."""
    eshape, edtype = graph_types(symbol._outputs)
    own, lines = {}, []
    for node in topo_order(symbol._outputs):
        if node.op is None or _is_fused(node):
            continue
        reason = unfusible_reason(node, eshape, edtype)
        if reason is not None and not node.op.elementwise:
            own[node.op.name] = own.get(node.op.name, 0) + 1
            continue
        if not fusion:
            reason = "fusion is off (MIXNET_FUSE=0, or MIXNET_NUMBA=0 on the CPU)"
        elif reason is None:
            size = int(np.prod(eshape[(id(node), 0)]))
            reason = (f"{size} elements, below MIXNET_FUSE_MIN_SIZE={config.FUSE_MIN_SIZE}"
                      if size < config.FUSE_MIN_SIZE else
                      "no fusible neighbour of the same shape (one op alone gains nothing from a kernel)")
        where = f"  # {node.location}" if node.location else ""
        lines.append(f"{node.name} ({node.op.name}): {reason}{where}")
    return own, lines


def _kernel_source(kernel, group):
    """The fused kernel's generated source with this graph's source lines (`group`) in its comments."""
    if hasattr(kernel, "render"):                              # CUDA (codegen/cupy_gpu.CudaKernel)
        return kernel.render(locations=True).text
    from ..codegen.numba_cpu import render_kernel  # lazy: the Numba backend, loaded only where kernels exist
    return render_kernel(group, exact=config.CODEGEN_EXACT, locations=True)


class Explanation:
    """HybridBlock.explain()'s report: print it (text) or show it in a notebook (HTML). `sections` holds
    (title, text) pairs; code sections (code=True) are folded in the HTML form."""

    def __init__(self, sections):
        self.sections = sections

    def __str__(self):
        return "\n\n".join(f"{title}\n{text}" if title else text for title, text, _ in self.sections)

    def __repr__(self):
        return self.__str__()

    def _repr_html_(self):
        parts = []
        for title, text, is_code in self.sections:
            body = f"<pre>{html.escape(text)}</pre>"
            if is_code:
                parts.append(f"<details><summary>{html.escape(title)}</summary>{body}</details>")
            else:
                parts.append((f"<b>{html.escape(title)}</b>" if title else "") + body)
        return "<div>" + "".join(parts) + "</div>"


def explain(block, code=False):
    """See HybridBlock.explain."""
    graphs = _cached_graphs(block, "explain()")
    records = compiled_plans(block, keys=set(graphs))
    kind = f"{type(block).__name__} {block.name!r}"
    sections = [("", f"{kind}: hybridized, {len(graphs)} signature(s) traced, {sum(r.compiles for r in records)} "
                     f"plan(s) compiled, {sum(r.calls for r in records)} call(s).\n"
                     "A call re-traces (and compiles again) when its signature is new: the nesting of its arguments, "
                     "an input's shape or dtype, the device, or the training mode (autograd.record / "
                     "train_mode) differs from every traced one.\n"
                     f"Passes: {PIPELINE}; elementwise fusion is {'on' if backend.fuses('cpu') else 'off'} for "
                     "CPU plans (MIXNET_FUSE, MIXNET_NUMBA)."
                     + _retrace_advice(graphs))]
    for number, ((key, cached), record) in enumerate(zip(graphs.items(), records)):
        inputs = ", ".join(f"{n}: {_dims(cached.shapes[n])} {dtype_name(cached.dtypes[n])}"
                           for n in cached.input_names)
        lines = [f"inputs ({inputs}), {'train' if key[3] else 'predict'} mode, {key[2]}",
                 f"why traced: {record.reason}; {record.calls} call(s)",
                 f"traced graph: {sum(n.op is not None for n in topo_order(cached.symbol._outputs))} ops "
                 f"(net.graph({_shape_arg(cached)}) prints it with source lines)"]
        plans = running_plans(cached)
        if not plans:
            lines.append("no plan built yet (the first call ran eagerly to initialize deferred parameter shapes; "
                         "the next call builds one)")
        for label, plan in plans:
            own, unfused = _unfused(plan.symbol, cached.fusion)
            kernels = fused_kernels(plan.symbol)
            lines.append(f"{label} plan: {len(kernels)} fused kernel(s); ops with kernels of their own: "
                         + (", ".join(f"{op} x{n}" if n > 1 else op for op, n in own.items()) or "none"))
            lines += ["  fused " + text for text in kernels]
            lines += ["  unfused " + text for text in unfused]
            if plan.planned_bytes is not None:
                lines.append(f"  static_alloc buffers: {plan.planned_bytes} bytes")
        sections.append((f"signature {number}", "\n".join(lines)))
        if code:
            for label, plan in plans:
                sections.append((f"signature {number}, {label} plan: compiled graph code", plan.compiled.source))
                for k, node in enumerate(n for n in topo_order(plan.symbol._outputs) if _is_fused(n)):
                    sections.append((f"signature {number}, {label} plan: fused kernel {k}",
                                     _kernel_source(node.attrs["kernel"], fused_group(node))))
    if not code:
        sections.append(("", "explain(code=True) adds the generated code: each plan's compiled graph and its fused "
                             "kernels, commented with your source lines."))
    return Explanation([(title, text, title.endswith(("code",)) or " fused kernel " in title)
                        for title, text in sections])


def _shape_arg(cached):
    shapes = [cached.shapes[n] for n in cached.input_names]
    return str(shapes[0]) if len(shapes) == 1 else str(shapes)


def _retrace_advice(graphs):
    """A hint when signatures differ only in input shapes (padding to buckets bounds the traces)."""
    keys = list(graphs)
    shapes_only = sum(1 for k in keys if any(o[0] == k[0] and o[2:] == k[2:] and o[1] != k[1] for o in keys))
    if shapes_only < 3:
        return ""
    return (f"\n{shapes_only} signatures differ only in input shapes: each compiled its own plans. Padding batches "
            "to a few bucket lengths bounds that (docs/bucketing.md), and net.precompile([...]) compiles them "
            "ahead of the first epoch.")
