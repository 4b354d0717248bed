"""Graph-mode autodiff: the backward pass of a Symbol as another graph, built from the registry's gradient rules.

The rules are the ones eager backward runs (`OpDef.grad`, written with mixnet ops). Here they run once, on
*traced arrays*: NDArrays whose buffer is a zero-byte stand-in of the right shape and dtype, while the dispatch
door's tracer slot holds a `_GraphTracer` that turns every op a rule applies into a graph node instead of running
it. So one set of rules serves eager backward, higher-order gradients and compiled backward graphs, and the
backward graph is itself optimizable (CSE, fusion) like any other.

A rule that cannot be traced (it reads values, e.g. `asnumpy()`, or replays a forward on the tape like the fused
RNN op) becomes one opaque `_backward_rule` node that runs the rule eagerly when the graph runs: slower, but
every op keeps a correct compiled backward.
"""
import numpy as np

from .. import autograd
from .._mode import MODE
from .._shape_mode import shape_is_unknown
from ..base import MXNetError
from ..context import cpu
from ..ndarray.ndarray import NDArray
from ..ops import common
from ..ops.registry import OpDef
from .graph import Node, graph_types, raw_from_attrs, topo_order
from .executor import creation_shapes
from ..ops.common import call

__all__ = ["gradient", "head_grad_name"]


def head_grad_name(index):
    return f"_head_grad{index}"


class _NotTraceable(autograd.NotTraceable):
    """A gradient rule asked for values while being traced."""


class _Needed:
    """The `_node` of a traced array whose gradient is wanted: rules test `x._node is not None` to skip work."""
    __slots__ = ()


_NEEDED = _Needed()


class _Traced(NDArray):
    """An NDArray standing for a graph entry: shape and dtype are real, the buffer is a zero-byte broadcast."""
    _entry = None

    def _refuse(self, *args, **kwargs):
        raise _NotTraceable("a gradient rule read array values")

    asnumpy = asscalar = item = __bool__ = __float__ = __int__ = __index__ = _refuse


def _traced(entry, shape, dtype, ctx, needed=False):
    arr = _Traced.__new__(_Traced)
    arr._data = np.broadcast_to(np.zeros((), dtype=dtype), tuple(shape))
    arr._ctx = ctx
    arr._entry = entry
    if needed:
        arr._node = _NEEDED
    return arr


class _GraphTracer:
    """Sits in the dispatch door's tracer slot while a rule runs: each op becomes a Node."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.source = None           # the forward node whose rule is running (names and locates new nodes)
        self.count = 0

    def emit(self, op, inputs, attrs):
        if any(not isinstance(x, _Traced) for x in inputs):
            raise _NotTraceable(f"{op.name} was given an array that is not part of the graph")
        shapes = [x.shape for x in inputs]
        dtypes = [x._data.dtype for x in inputs]
        if op.creates and "ctx" in op.attrs:
            attrs = dict(attrs, ctx=self.ctx)
        out_shapes, out_dtypes = common.infer(op, shapes, dtypes, attrs)
        self.count += 1
        node = Node(op, f"{self.source.name}_backward{self.count}", attrs, raw_from_attrs(op, attrs),
                    [x._entry for x in inputs], self.source.location)
        node.types = tuple((tuple(s), np.dtype(d)) for s, d in zip(out_shapes, out_dtypes))   # graph.py: typed
        needed = any(x._node is not None for x in inputs)
        outs = tuple(_traced((node, i), s, d, self.ctx, needed) for i, (s, d) in enumerate(zip(out_shapes,
                                                                                             out_dtypes)))
        nvis = op.n_visible(attrs)
        return outs[0] if nvis == 1 else outs[:nvis]


# ---------------------------------------------------------------------------------------------------------
# the opaque fallback: a node that runs a gradient rule eagerly
def _run_rule_eagerly(xp, *arrays, fwd_op, fwd_attrs, is_train, n_in, n_out, wanted):
    def rule(*wrapped):
        inputs, outputs, out_grads = wrapped[:n_in], wrapped[n_in:n_in + n_out], wrapped[n_in + n_out:]
        for x, want in zip(inputs, wanted):
            if want:
                x._node = autograd.Leaf("write")     # rules (RNN's) replay their forward on inputs that are recorded
        return inputs, fwd_op.grad(autograd.GradContext(fwd_op, fwd_attrs, inputs, is_train, outputs), *out_grads)

    inputs, grads = common.run_ops(xp, rule, arrays, is_train)
    grads = tuple(xp.zeros_like(x._data) if g is None else g._data for x, g in zip(inputs, grads))
    return grads if n_in > 1 else grads[0]      # a one-output kernel returns its array, not a 1-tuple


def _infer_rule(shapes, dtypes, n_in, **attrs):
    return [tuple(s) for s in shapes[:n_in]], list(dtypes[:n_in])


_BACKWARD_RULE = OpDef(name="_backward_rule", kernel=_run_rule_eagerly, infer=_infer_rule, variadic=True,
                       num_outputs=lambda attrs: attrs["n_in"], differentiable=False, hidden=True,
                       doc="Runs one forward op's gradient rule eagerly inside a compiled backward graph (for "
                           "rules that read values and so cannot be traced into graph nodes).")


def _opaque(node, inputs, outputs, out_grads, wanted, is_train, ctx):
    n_in, n_out = len(inputs), len(outputs)
    attrs = {"fwd_op": node.op, "fwd_attrs": node.attrs, "is_train": is_train, "n_in": n_in, "n_out": n_out,
             "wanted": tuple(wanted)}
    entries = [x._entry for x in inputs] + [x._entry for x in outputs] + [g._entry for g in out_grads]
    rule = Node(_BACKWARD_RULE, f"{node.name}_backward", attrs, {"op": node.op.name}, entries, node.location)
    return [_traced((rule, i), x.shape, x._data.dtype, ctx) if w else None
            for i, (x, w) in enumerate(zip(inputs, wanted))]


# ---------------------------------------------------------------------------------------------------------
def _needs_grad(nodes, wrt):
    """Entries whose gradient is wanted: those that depend on a variable in `wrt` through differentiable ops."""
    needed = set()
    for node in nodes:
        if node.op is None:
            if node.name in wrt:
                needed.add((id(node), 0))
            continue
        if not node.op.differentiable:
            continue
        diff_inputs = [e for k, e in enumerate(node.inputs) if k not in node.op.nondiff_inputs]
        if any((id(src), i) in needed for src, i in diff_inputs):
            needed.update((id(node), k) for k in range(node.num_outputs()))
    return needed


def exact_types(symbol, shapes, dtypes):
    """Every entry's shape and dtype, from complete input shapes (a 0 is a real size here, not MXNet's
    'unknown'): the registry's inference node by node; creation ops with unknown dims ask the graph's consumers."""
    eshape, edtype = {}, {}
    pending = None
    nodes = topo_order(symbol._outputs)
    for node in nodes:
        if node.types is not None:           # a compiler graph's node carries its types (symbol/typed.py)
            for k, (shape, dtype) in enumerate(node.types):
                eshape[(id(node), k)], edtype[(id(node), k)] = shape, dtype
            continue
        if node.op is None:
            eshape[(id(node), 0)], edtype[(id(node), 0)] = tuple(shapes[node.name]), np.dtype(dtypes[node.name])
            continue
        attrs = node.attrs
        if node.op.creates and shape_is_unknown(attrs.get("shape", (1,))):
            if pending is None:
                pending = creation_shapes(symbol, shapes, dtypes)
            attrs = dict(attrs, shape=pending[id(node)])
        try:
            out_shapes, out_dtypes = common.infer(node.op, [eshape[(id(s), i)] for s, i in node.inputs],
                                                  [edtype[(id(s), i)] for s, i in node.inputs], attrs)
        except MXNetError as err:            # name the graph node and the line that made it, not mixnet's caller
            where = f"\n  at {node.location}" if node.location else ""
            raise MXNetError(f"{str(err).split(chr(10) + '  at ')[0]} (graph node {node.name!r}){where}") from None
        for k, (shape, dtype) in enumerate(zip(out_shapes, out_dtypes)):
            eshape[(id(node), k)], edtype[(id(node), k)] = tuple(shape), np.dtype(dtype)
    return eshape, edtype


class _Tracing:
    """autograd.reverse_sweep over a Symbol's graph: the gradient rules run on traced arrays (the forward graph's
    entries), so the ops they apply become the backward graph's nodes."""

    def __init__(self, tracer, traced, is_train):
        self.tracer, self.traced, self.is_train = tracer, traced, is_train

    @staticmethod
    def num_outputs(node):
        return node.num_outputs()

    def context(self, node):
        self.tracer.source = node
        outputs = tuple(self.traced((node, i)) for i in range(node.num_outputs()))
        inputs = tuple(self.traced(e) for e in node.inputs)
        return autograd.GradContext(node.op, node.attrs, inputs, self.is_train, outputs)

    @staticmethod
    def zeros(node, ctx, index):
        return _zeros_like(ctx.outputs[index])

    def rule(self, node, ctx, out_grads):
        try:
            return node.op.grad(ctx, *out_grads)
        except autograd.NotTraceable:
            wanted = [x._node is not None and k not in node.op.nondiff_inputs for k, x in enumerate(ctx.inputs)]
            return _opaque(node, ctx.inputs, ctx.outputs, out_grads, wanted, self.is_train, self.tracer.ctx)

    @staticmethod
    def key(node, index, x, g):
        if x._node is None or index in node.op.nondiff_inputs:
            return None
        if not isinstance(g, _Traced):
            raise MXNetError(f"internal: gradient rule of {node.op.name} returned a value outside the traced graph")
        return id(x._entry[0]), x._entry[1]


def gradient(symbol, wrt, is_train, ctx=None):
    """The gradients of a typed `symbol`'s outputs (symbol/typed.py) w.r.t. the variables named in `wrt`, as
    graph entries.

    Returns (grads, heads). grads has one `(node, index)` entry per name in `wrt`, or None where no output
    depends on it. The backward nodes read the forward graph's own entries (so forward values are shared, not
    recomputed) and the variables in heads, {output index: variable `_head_grad{i}`}, each carrying that output's
    incoming gradient. Every backward node made carries its types, as the forward's do.
    """
    ctx = ctx or cpu()
    nodes = topo_order(symbol._outputs)
    eshape, edtype = graph_types(symbol._outputs)
    wrt_names = list(wrt)
    needed = _needs_grad(nodes, set(wrt_names))

    def traced(entry):
        key = (id(entry[0]), entry[1])
        return _traced(entry, eshape[key], edtype[key], ctx, key in needed)

    grads, heads = {}, {}                                # (id(node), index) -> traced gradient
    tracer = _GraphTracer(ctx)
    token = MODE.set(MODE.get()._replace(recording=False, training=is_train, tracer=tracer))
    try:
        for k, (node, index) in enumerate(symbol._outputs):
            if (id(node), index) not in needed:
                continue
            head = tracer.source = heads[k] = Node(None, head_grad_name(k))
            autograd.accumulate(grads, (id(node), index), _traced((head, 0), eshape[(id(node), index)],
                                                                  edtype[(id(node), index)], ctx))
        autograd.reverse_sweep([n for n in reversed(nodes) if n.op is not None], grads,
                               _Tracing(tracer, traced, is_train))
        # a name is one input even when a hand-built graph holds several variable nodes of that name
        result = []
        for name in wrt_names:
            total = None
            for var in (n for n in nodes if n.op is None and n.name == name):
                g = grads.get((id(var), 0))
                if g is not None:
                    total = g if total is None else total + g
            result.append(None if total is None else total._entry)
    finally:
        MODE.reset(token)
    return result, heads


def _zeros_like(x):
    return call("zeros_like", x)
