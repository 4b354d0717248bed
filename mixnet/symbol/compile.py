"""Compiles a Symbol into straight-line Python: one kernel call per node, no interpreter loop.

The generated function takes the raw (numpy/cupy) buffers of the graph's inputs in a fixed order and returns the
raw buffers of its outputs. Each line calls the registry kernel directly — the dispatch door, NDArray wrapping
and taping are skipped, since the caller records the whole graph as one op — and each value is deleted after
its last use, so only live activations are held. The source is readable (one comment per node with the op, the
node name and the user's line; MIXNET_SHOW_CODE=1 prints it) and `CompiledGraph.source` keeps it. Every name in
the code is generated (`i0`, `v3`, `K3`, `A3`); kernels, attribute dicts and planned buffers are passed in the
exec namespace, never as text, and node names and locations (which may come from a model file) reach the source
only in comments, through codegen/safe_text.comment_text.

When a kernel raises, the graph is re-run through the interpreter (`executor.run_graph`), whose error names the
node, its op, the shapes and dtypes and the user's source line.
"""
import copy
import itertools
import logging

from .. import _logging, config
from ..base import MXNetError
from ..codegen.safe_text import comment_text
from ..ops import dispatch
from . import memory
from .graph import topo_order
from .. import autograd
from ..ndarray.ndarray import _wrap
from .executor import run_graph

_LOG = logging.getLogger(__name__)     # MIXNET_SHOW_CODE: each compiled graph's source at DEBUG

__all__ = ["CompiledGraph"]

_COUNTER = itertools.count(1)     # next() is atomic: graphs compiled in several threads get distinct names


class CompiledGraph:
    """`CompiledGraph(symbol, input_names, ctx, creation_shapes, out_buffers)(arrays, is_train)` -> list of
    output buffers.

    input_names fixes the order of the buffers passed in; every variable of the symbol must be among them.
    creation_shapes: {id(node): shape} for creation ops whose declared shape has unknown (0) dims.
    out_buffers: {(id(node), index): array} planned buffers (static_alloc) that ops declaring `writes_out` write
    their outputs into, every call. So a graph with planned buffers must not run two calls at once: `with_buffers`
    gives a copy writing into buffers of its own.

    With `destinations`, outputs can also be written into buffers the caller passes per call (`dests`, one entry
    or None per output):
    a compiled backward writes a parameter's gradient straight into its gradient buffer instead of returning a
    fresh array that autograd then copies there. Only outputs made by a single-output `writes_out` node, and
    returned once, take a destination (`dest_outputs`); for the others the entry is ignored.

    types: (eshape, edtype), every entry's exact shape and dtype; with them, elementwise ops write their result
    over an input that dies with them (memory.inplace_reuse).
    """

    def __init__(self, symbol, input_names, ctx, creation_shapes=None, out_buffers=None, destinations=False,
                 types=None):
        self.symbol = symbol
        self.input_names = list(input_names)
        self.ctx = ctx
        nodes = topo_order(symbol._outputs)
        self.random = any(n.op is not None and n.op.random for n in nodes)
        self.mutated = sorted({self.input_names.index(n.inputs[k][0].name) for n in nodes if n.op is not None
                               for k in n.op.mutates if n.inputs[k][0].op is None})
        self.dest_outputs = _destination_outputs(symbol, out_buffers or {}) if destinations else []
        out_buffers = out_buffers or {}
        inplace = {}
        if types is not None and config.INPLACE:
            written = list(out_buffers) + [(id(symbol._outputs[k][0]), 0) for k in self.dest_outputs]
            inplace = memory.inplace_reuse(symbol, *types, written)
        self.source, namespace = _render(symbol, nodes, self.input_names, ctx, creation_shapes or {},
                                         out_buffers, self.dest_outputs, inplace)
        filename = f"<mixnet graph {next(_COUNTER)}>"
        self._code = compile(self.source, filename, "exec")
        exec(self._code, namespace)                                   # noqa: S102 - our own generated source
        self._run, self._namespace, self._buffers = namespace["graph"], namespace, out_buffers
        self._kernel_ops = {f"K{k}": n.op.name for k, n in enumerate(nodes) if n.op is not None}
        self._timed_run = None        # built at the first call made while mx.profiler runs
        self._xp = ctx.xp
        _logging.debug(_LOG, config.SHOW_CODE, "# %s\n%s", filename, self.source)

    def with_buffers(self, out_buffers):
        """This graph's code writing into other planned buffers: `out_buffers` has the same keys, shapes and dtypes
        as the ones it was compiled with. No second rendering: the code runs again in a copy of its namespace
        whose `O{k}` entries (the planned arrays, or tuples of them) are swapped for the new ones. A call writes
        into its graph's planned buffers, so two calls running at once need two of these (gluon/cached_op.py)."""
        key_of = {id(array): key for key, array in self._buffers.items()}

        def swap(planned):
            return tuple(map(swap, planned)) if isinstance(planned, tuple) else out_buffers[key_of[id(planned)]]

        namespace = {name: swap(v) if name.startswith("O") else v for name, v in self._namespace.items()}
        exec(self._code, namespace)                                   # noqa: S102 - our own generated source
        other = copy.copy(self)
        other._run, other._namespace, other._buffers = namespace["graph"], namespace, out_buffers
        other._timed_run = None
        return other

    def __call__(self, arrays, is_train, dests=None):
        rng = dispatch.random_state(self.ctx) if self.random else None
        extra = () if dests is None else map(dests.__getitem__, self.dest_outputs)
        prof = dispatch.PROFILER
        run = self._run if prof is None else self._profiled(prof)
        try:
            return run(self._xp, is_train, rng, *arrays, *extra)
        except Exception as err:
            self._explain(arrays, is_train, err)
            raise

    def _profiled(self, prof):
        """The same code run with each kernel timed by mx.profiler under its op's name: exec'd again in a copy
        of the namespace whose `K{k}` entries are timing wrappers (the source is unchanged)."""
        if self._timed_run is None:
            namespace = {name: prof.timed_kernel(self._kernel_ops[name], v) if name in self._kernel_ops else v
                         for name, v in self._namespace.items()}
            exec(self._code, namespace)                               # noqa: S102 - our own generated source
            self._timed_run = namespace["graph"]
        return self._timed_run

    def _explain(self, arrays, is_train, err):
        """Re-runs the graph op by op so the error names the node and the user's line."""
        values = {n: _wrap(a.copy(), self.ctx) for n, a in zip(self.input_names, arrays)}
        scope = autograd.train_mode() if is_train else autograd.predict_mode()
        with autograd.pause(train_mode=is_train), scope:
            try:
                run_graph(self.symbol, values, self.ctx)
            except MXNetError as explained:
                raise explained from None
        if isinstance(err, MXNetError):
            return
        raise MXNetError(f"compiled graph failed: {type(err).__name__}: {err}") from err


def _comment(node):
    """The node's comment: its op, name and user line, through comment_text (a name from a model file may hold
    a newline or anything else; it must stay inside the comment)."""
    where = f"  [{comment_text(node.location)}]" if node.location else ""
    return f"# {comment_text(node.op.name)} {comment_text(node.name)}{where}"


def _destination_outputs(symbol, out_buffers):
    """Positions of the outputs that can be written into a caller's buffer (see CompiledGraph)."""
    heads = symbol._outputs
    count = {}
    for node, index in heads:
        count[(id(node), index)] = count.get((id(node), index), 0) + 1
    return [k for k, (node, index) in enumerate(heads)
            if node.op is not None and node.op.writes_out and node.num_outputs() == 1
            and count[(id(node), index)] == 1 and (id(node), index) not in out_buffers]


def _render(symbol, nodes, input_names, ctx, creation_shapes, out_buffers, dest_outputs, inplace):
    """The source of `graph(xp, is_train, rng, *inputs, *destinations)` and its globals (kernels and attribute
    dicts). Destination parameters default to None: the kernel then allocates its result."""
    namespace = {}
    value = {}                                    # (id(node), index) -> local name
    for k, name in enumerate(input_names):
        value[name] = f"i{k}"
    remaining = {}                                # local name -> uses left
    heads = [(node, index) for node, index in symbol._outputs]

    def ref(src, index):
        return value[src.name] if src.op is None else value[(id(src), index)]

    for node in nodes:
        for src, index in node.inputs:
            remaining[ref_key(src, index)] = remaining.get(ref_key(src, index), 0) + 1
    pinned = {ref_key(n, i) for n, i in heads}
    dest_of = {id(heads[k][0]): f"D{k}" for k in dest_outputs}
    params = [f"i{k}" for k in range(len(input_names))] + [f"D{k}=None" for k in dest_outputs]
    lines = ["def graph(xp, is_train, rng, " + ", ".join(params) + "):"]
    for k, node in enumerate(nodes):
        if node.op is None:
            if node.name not in value:
                raise MXNetError(f"compile: no input named {node.name!r} (inputs: {input_names})")
            continue
        op = node.op
        attrs = dict(node.attrs)
        if op.creates:
            if id(node) in creation_shapes:
                attrs["shape"] = creation_shapes[id(node)]
            if "ctx" in op.attrs and attrs.get("ctx") is None:
                attrs["ctx"] = ctx
        namespace[f"K{k}"], namespace[f"A{k}"] = op.kernel, attrs
        args = ["xp"] + [ref(src, index) for src, index in node.inputs]
        if op.train_aware:
            args.append("is_train=is_train")
        if op.random:
            args.append("rng=rng")
        n_out = node.num_outputs()
        planned = [out_buffers.get((id(node), j)) for j in range(n_out)]
        if op.writes_out and all(b is not None for b in planned):
            namespace[f"O{k}"] = planned[0] if n_out == 1 else tuple(planned)
            args.append(f"out=O{k}")                 # a static buffer, reused every call
        elif id(node) in dest_of:
            args.append(f"out={dest_of[id(node)]}")  # the caller's buffer, or None
        elif id(node) in inplace:
            args.append(f"out={ref(*inplace[id(node)])}")   # in place: this is that value's last use
        outs = [f"v{k}"] if n_out == 1 else [f"v{k}_{j}" for j in range(n_out)]
        for j, name in enumerate(outs):
            value[(id(node), j)] = name
        target = outs[0] if n_out == 1 else ", ".join(outs)
        lines.append(f"    {target} = K{k}({', '.join(args)}, **A{k})  {_comment(node)}")
        dead = []
        for src, index in node.inputs:
            key = ref_key(src, index)
            remaining[key] -= 1
            if not remaining[key] and key not in pinned and src.op is not None:
                dead.append(ref(src, index))
        unused = [name for j, name in enumerate(outs) if not remaining.get((id(node), j))
                  and (id(node), j) not in pinned]
        if dead or unused:
            lines.append(f"    del {', '.join(dict.fromkeys(dead + unused))}")
    lines.append("    return (" + "".join(f"{ref(n, i)}, " for n, i in heads) + ")")
    return "\n".join(lines) + "\n", namespace


def ref_key(src, index):
    return src.name if src.op is None else (id(src), index)
