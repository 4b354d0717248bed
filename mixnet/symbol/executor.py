"""Running a Symbol: `Symbol.eval`, `bind`, `simple_bind` and the `Executor`.

This executor interprets the graph: nodes run in topological order through the one dispatch door
(`mixnet.ops.dispatch.apply`) on NDArrays, so autograd records them and `backward` uses the registry's gradient
rules, exactly as eager code does. It serves mx.sym's bind/eval, check mode's op-by-op run, the replay behind
higher-order gradients of hybridized calls and error explanations; hybridized blocks and SymbolBlocks run the
compiled plans of gluon/cached_op.py instead.

The Executor keeps MXNet 1.x's semantics: its output arrays exist from bind on and every forward writes into
them; a forward of an executor with gradient arrays is always recorded, so `backward` may follow a plain
`forward()` (the gradient at the values that forward computed, as MXNet's graph executor gives); `reshape`
returns an executor whose arrays share memory with this one's; the graph it runs is the common-subexpression-
eliminated one unless MXNET_ELIMINATE_COMMON_EXPR=0 at bind (`get_optimized_symbol`).
"""

import numpy as np

from .. import autograd, config
from ..base import MXNetError
from ..context import Context, current_context
from ..ndarray import ndarray as nd_module
from ..ndarray.ndarray import NDArray, _wrap
from ..ops import dispatch, registry
from ..ops.common import call
from . import passes
from .graph import Node
from .infer import infer_graph, known
from .._shape_mode import shape_is_unknown
from .memory import lifetimes, _nbytes

__all__ = ["Executor", "evaluate", "run_graph", "simple_bind"]

def creation_shapes(symbol, shapes, dtypes):
    """Shapes for creation nodes with unknown (0 or -1) dims, e.g. RNN begin states `_zeros(shape=(L, 0, H))`,
    inferred from the consumers and the given input shapes/dtypes ({name: shape}, {name: dtype})."""
    nodes = symbol._nodes()
    pending = [n for n in nodes if n.op is not None and n.op.creates
               and shape_is_unknown(n.attrs.get("shape", (1,)))]
    if not pending:
        return {}
    eshape, _ = infer_graph(nodes, dict(shapes), dict(dtypes), True)
    return {id(n): eshape[(id(n), 0)] for n in pending if known(eshape.get((id(n), 0)))}


def run_graph(symbol, values, ctx=None, monitor=None):
    """Evaluates `symbol` with variable values {name: NDArray}; returns the list of output NDArrays. Each op
    goes through dispatch.apply, so it is recorded when autograd is recording. A value is dropped as soon as
    its last consumer has run, so inference holds only live activations (autograd's tape keeps what backward
    needs on its own). monitor(node, inputs, outputs), if given, sees every node's arrays after it ran."""
    nodes = symbol._nodes()
    ctx = ctx or current_context()
    fixed = creation_shapes(symbol, {k: tuple(v.shape) for k, v in values.items()},
                            {k: v.dtype for k, v in values.items()})
    results = {}
    uses = {}
    for node in nodes:
        for src, _ in node.inputs:
            uses[id(src)] = uses.get(id(src), 0) + 1
    for node, _ in symbol._outputs:
        uses[id(node)] = uses.get(id(node), 0) + 1          # outputs stay alive
    for node in nodes:
        if node.op is None:
            try:
                results[id(node)] = (values[node.name],)
            except KeyError:
                raise MXNetError(f"no value given for input {node.name!r} (inputs: {symbol.list_inputs()})") \
                    from None
            continue
        attrs = node.attrs
        if node.op.creates:
            attrs = dict(attrs)
            if id(node) in fixed:
                attrs["shape"] = fixed[id(node)]
            if attrs.get("ctx") is None and "ctx" in node.op.attrs:
                attrs["ctx"] = ctx
        inputs = [results[id(src)][idx] for src, idx in node.inputs]
        try:
            out = dispatch.apply(node.op, inputs, attrs)
        except MXNetError as err:
            where = f" (created at {node.location})" if node.location else ""
            raise MXNetError(f"in node {node.name!r}{where}: {err}") from None
        results[id(node)] = out if isinstance(out, tuple) else (out,)
        if monitor is not None:
            monitor(node, inputs, results[id(node)])
        for src, _ in node.inputs:
            uses[id(src)] -= 1
            if not uses[id(src)]:
                del results[id(src)]
    return [results[id(node)][idx] for node, idx in symbol._outputs]


def evaluate(symbol, kwargs, ctx=None):
    ctx = ctx or current_context()
    values = {}
    for key, value in kwargs.items():
        if not isinstance(value, NDArray):
            value = nd_module.array(value, ctx=ctx)
        values[key] = value
    return run_graph(symbol, values, ctx)


_GRAD_REQS = ("null", "write", "add")


def _bound_arrays(names, arrays, what, allow_missing):
    """bind's args / args_grad / aux_states as MXNet reads them: a list in `names` order, or a dict by name
    whose other keys are ignored. Returns {name: NDArray or None}."""
    if arrays is None:
        arrays = {}
    if isinstance(arrays, dict):
        out = {n: arrays.get(n) for n in names}
    elif isinstance(arrays, (list, tuple)):
        if len(arrays) != len(names):
            raise MXNetError(f"bind: {len(arrays)} {what} given for the {len(names)} names {names}")
        out = dict(zip(names, arrays))
    else:
        raise MXNetError(f"bind: {what} must be a list of NDArrays or a dict of name to NDArray, got "
                         f"{type(arrays).__name__}")
    missing = [n for n, v in out.items() if v is None]
    if missing and not allow_missing:
        raise MXNetError(f"bind: {what} {missing} are missing (needed: {names})")
    for name, value in out.items():
        if value is not None and not isinstance(value, NDArray):
            raise MXNetError(f"bind: {what} {name!r} must be an NDArray, got {type(value).__name__}")
    return out


def _grad_reqs(names, grad_req):
    """{argument name: 'null' | 'write' | 'add'} from one string, a list in argument order or a dict (names it
    does not list get 'null')."""
    if isinstance(grad_req, str):
        reqs = dict.fromkeys(names, grad_req)
    elif isinstance(grad_req, dict):
        reqs = {n: grad_req.get(n, "null") for n in names}
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(names):
            raise MXNetError(f"bind: {len(grad_req)} grad_req values given for the {len(names)} arguments {names}")
        reqs = dict(zip(names, grad_req))
    else:
        raise MXNetError(f"bind: grad_req must be a string, a list or a dict, got {type(grad_req).__name__}")
    bad = {n: r for n, r in reqs.items() if r not in _GRAD_REQS}
    if bad:
        raise MXNetError(f"bind: grad_req must be one of {_GRAD_REQS}, got {bad}")
    return reqs


def _zeros(shape, dtype, ctx):
    # the op itself: bound arrays may be scalars or zero-size, which the public nd.zeros refuses in legacy mode
    return call("_zeros", shape=shape, ctx=ctx, dtype=dtype)


def _view(arr, shape):
    """An array of `shape` over the first elements of `arr`'s memory (reshape's smaller arrays share it)."""
    n = int(np.prod(shape, dtype=np.int64))
    return _wrap(arr._data.reshape(-1)[:n].reshape(shape), arr.context)


def optimize(symbol):
    """The graph an executor runs: common subexpressions merged (symbol/passes.py), and an output that would
    then repeat an earlier one goes through `_copy`, so every output has its own array (MXNet does the same)."""
    merged = passes.cse(symbol)
    copy_op = registry.get("_copy")
    heads, seen = [], set()
    for node, idx in merged._outputs:
        if (id(node), idx) in seen:
            node, idx = Node(copy_op, f"{node.name}_copy{len(heads)}", copy_op.parse({}), {}, [(node, idx)],
                             node.location), 0
        seen.add((id(node), idx))
        heads.append((node, idx))
    return type(symbol)(heads)


class Executor:
    """A Symbol bound to arrays (MXNet 1.x's Executor). forward(is_train, **new_values) -> outputs;
    backward(out_grads) writes grad_dict's arrays. Built on the interpreter in this module."""

    def __init__(self, symbol, ctx, args, args_grad=None, grad_req="write", aux_states=None, _outputs=None):
        self._symbol = symbol
        self._ctx = ctx if isinstance(ctx, Context) else current_context()
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self._out_names = symbol.list_outputs()
        self.arg_dict = _bound_arrays(self._arg_names, args, "arguments", False)
        self.aux_dict = _bound_arrays(self._aux_names, aux_states, "auxiliary states", False)
        self.grad_dict = _bound_arrays(self._arg_names, args_grad, "gradients", True)
        reqs = _grad_reqs(self._arg_names, grad_req)
        self._reqs = {n: (r if self.grad_dict[n] is not None else "null") for n, r in reqs.items()}
        # read at bind, as MXNet's graph executor reads it
        self._graph = optimize(symbol) if config.ELIMINATE_COMMON_EXPR else symbol
        self._monitor = None
        self._heads = None
        self._types = None
        if _outputs is None:
            eshape, edtype = self._infer()
            _outputs = [_zeros(eshape[(id(n), i)], edtype[(id(n), i)], self._ctx)
                        if known(eshape.get((id(n), i))) and (id(n), i) in edtype else None
                        for n, i in self._graph._outputs]
        self.outputs = _outputs

    def _infer(self):
        """(entry shapes, entry dtypes) of the graph for the bound arrays; none when an op's output shape depends
        on the data (boolean_mask): its outputs are then allocated by the first forward."""
        if self._types is None:
            if any(n.op is not None and n.op.dynamic_shape for n in self._graph._nodes()):
                self._types = ({}, {})
                return self._types
            bound = {**self.arg_dict, **self.aux_dict}
            self._types = infer_graph(self._graph._nodes(), {n: tuple(a.shape) for n, a in bound.items()},
                                      {n: np.dtype(a.dtype) for n, a in bound.items()}, False)
        return self._types

    # ------------------------------------------------------------------ MXNet's views of the arrays
    @property
    def arg_arrays(self):
        return [self.arg_dict[n] for n in self._arg_names]

    @property
    def grad_arrays(self):
        return [self.grad_dict[n] for n in self._arg_names]

    @property
    def aux_arrays(self):
        return [self.aux_dict[n] for n in self._aux_names]

    @property
    def output_dict(self):
        return dict(zip(self._out_names, self.outputs))

    # ------------------------------------------------------------------ running
    def forward(self, is_train=False, **kwargs):
        """Runs the graph (Dropout/BatchNorm in training mode when is_train) and writes the outputs into
        `self.outputs`. Keyword arguments are new values copied into the argument arrays first."""
        for key, value in kwargs.items():
            if key not in self.arg_dict:
                raise MXNetError(f"forward: {key!r} is not an argument ({self._arg_names})")
            target = self.arg_dict[key]
            if not isinstance(value, (NDArray, np.ndarray)):
                raise MXNetError(f"forward: argument {key!r} must be an NDArray or a numpy array, got "
                                 f"{type(value).__name__}")
            if tuple(value.shape) != tuple(target.shape):
                raise MXNetError(f"forward: argument {key!r} has shape {tuple(target.shape)}, got "
                                 f"{tuple(value.shape)}")
            target[:] = value
        values = {}
        recording = any(r != "null" for r in self._reqs.values())
        for name in self._arg_names:
            arr = self.arg_dict[name]
            if self._reqs[name] != "null":
                view = arr.detach()
                autograd.mark_variables([view], [self.grad_dict[name]], self._reqs[name])
                arr = view
            values[name] = arr
        values.update(self.aux_dict)
        # with gradient arrays bound, every forward is recorded, so backward may follow forward(is_train=False)
        scope = autograd.record(train_mode=is_train) if recording else autograd.pause(train_mode=is_train)
        with scope:
            heads = run_graph(self._graph, values, self._ctx, self._monitor)
        self._heads = heads if recording else None
        for i, head in enumerate(heads):
            out = self.outputs[i]
            if out is None or out.shape != head.shape or out.dtype != head.dtype:
                self.outputs[i] = out = _zeros(head.shape, head.dtype, head.context)
            out._data[...] = head._converted_for(out)
            out._bump_version()
        return self.outputs

    def backward(self, out_grads=None, is_train=True):
        """Gradients of the last forward's outputs, given their head gradients (one per output, or none: ones;
        cast to the output's dtype), written into the gradient arrays by their grad_req. Arguments
        whose gradient does not reach an output get zeros ('write')."""
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        elif isinstance(out_grads, dict):
            out_grads = [out_grads[k] for k in self._out_names]
        out_grads = list(out_grads)
        for g in out_grads:
            if not isinstance(g, NDArray):
                raise MXNetError(f"backward: head gradients must be NDArrays, got {type(g).__name__}")
        if not any(r != "null" for r in self._reqs.values()):
            return
        if self._heads is None:
            self._forward_for_backward(is_train)
        if out_grads and len(out_grads) < len(self._heads):      # extra ones are ignored, as MXNet does
            raise MXNetError(f"backward: {len(out_grads)} head gradients given for the {len(self._heads)} "
                             f"outputs {self._out_names}")
        heads, grads = [], []
        needs = self._needs_grad()
        for i, head in enumerate(self._heads):
            if head._node is None or _gradient_stops(head):
                continue            # no gradient flows from it (BlockGrad, a constant, Proposal): g is not read
            g = out_grads[i] if out_grads else None
            if not needs[id(self._graph._outputs[i][0])]:
                # MXNet drops the head gradient of an output whose gradient reaches no argument (shape_array,
                # argmax, BlockGrad, ...) unread, whatever its shape
                continue
            if g is None:
                g = nd_module.ones_like_array(head)
            elif g.size == 0 and head.size == 0:
                g = head.zeros_like()            # nothing to copy: MXNet accepts any zero-size head gradient
            elif tuple(g.shape) != tuple(head.shape):
                raise MXNetError(f"backward: the head gradient of output {self._out_names[i]!r} has shape "
                                 f"{tuple(g.shape)}, the output {tuple(head.shape)}")
            elif g.dtype != head.dtype:
                g = g.astype(head.dtype)
            if g.context != head.context:
                g = g.as_in_context(head.context)     # MXNet copies head gradients onto the executor's device
            heads.append(head)
            grads.append(g)
        for name, req in self._reqs.items():
            if req == "write":
                self.grad_dict[name][:] = 0
        if heads:
            autograd.backward(heads, grads, retain_graph=True, train_mode=is_train)

    def _forward_for_backward(self, is_train):
        """backward() before any forward: MXNet then differentiates at whatever its buffers hold (gradients that
        need no forward values, like repeat's, are exact). Here the graph runs once at the current arguments;
        the auxiliary states (BatchNorm's moving statistics) are put back, as that forward is not the user's."""
        saved = {name: arr.copy() for name, arr in self.aux_dict.items()}
        self.forward(is_train=is_train)
        for name, arr in saved.items():
            self.aux_dict[name][:] = arr

    def set_monitor_callback(self, callback, monitor_all=False):
        """callback(name, array) after every node of each forward: its outputs (`<node>_output`...) and, with
        monitor_all, its inputs first (`<node>_<input name>`, each preceded by the variable's own name when the
        input is a variable, as MXNet does)."""
        def monitor(node, inputs, outputs):
            if monitor_all:
                for (src, _), name, arr in zip(node.inputs, node.monitor_input_names(), inputs):
                    if src.op is None:
                        callback(src.name, arr)
                    callback(f"{node.name}_{name}", arr)
            for name, arr in zip(node.output_names(), outputs):
                callback(name, arr)
        self._monitor = monitor

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copies {name: NDArray} into the argument / auxiliary arrays (cast to their dtypes)."""
        for src, dst, what in ((arg_params or {}, self.arg_dict, "arguments"),
                               (aux_params or {}, self.aux_dict, "auxiliary states")):
            for name, value in src.items():
                if name in dst:
                    value.astype(dst[name].dtype).copyto(dst[name])
                elif not allow_extra_params:
                    raise MXNetError(f"copy_params_from: {name!r} is not in the executor's {what} "
                                     f"({sorted(dst)}); pass allow_extra_params=True to skip it")

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new argument shapes, sharing memory with this one: an array whose shape stays is
        the same array; a smaller one is a view of the old one's memory; a larger one is new (only with
        allow_up_sizing). Arguments not given may change shape only with partial_shaping."""
        given = {k: tuple(v) for k, v in kwargs.items() if isinstance(v, tuple)}
        arg_shapes, _, aux_shapes = self._symbol.infer_shape_partial(**given)
        fill = {n: self.arg_dict[n].shape for n, s in zip(self._arg_names, arg_shapes) if not known(s)}
        fill.update({n: self.aux_dict[n].shape for n, s in zip(self._aux_names, aux_shapes) if not known(s)})
        arg_shapes, out_shapes, aux_shapes = self._symbol.infer_shape(**given, **fill)
        if arg_shapes is None:
            raise MXNetError(f"reshape: cannot infer every shape from {given}")

        def resized(name, old, shape, kind):
            if old is None or tuple(old.shape) == tuple(shape):
                return old
            if kind != "output" and name not in given and not partial_shaping:
                raise MXNetError(f"reshape: the shape of {kind} {name!r} changes from {tuple(old.shape)} to "
                                 f"{tuple(shape)} though it was not given; pass partial_shaping=True if this is "
                                 "intended (the new executor then does not share it)")
            if int(np.prod(shape, dtype=np.int64)) > old.size:
                if kind != "output" and not allow_up_sizing:
                    raise MXNetError(f"reshape: new shape {tuple(shape)} of {kind} {name!r} is larger than the "
                                     f"original {tuple(old.shape)}; pass allow_up_sizing=True to allocate new "
                                     "arrays (making a big executor and sizing it down is more efficient)")
                return _zeros(shape, old.dtype, old.context)
            return _view(old, shape)
        args = {n: resized(n, self.arg_dict[n], s, "argument") for n, s in zip(self._arg_names, arg_shapes)}
        grads = {n: resized(n, self.grad_dict[n], s, "argument") for n, s in zip(self._arg_names, arg_shapes)}
        aux = {n: resized(n, self.aux_dict[n], s, "auxiliary state") for n, s in zip(self._aux_names, aux_shapes)}
        outs = [resized(n, o, s, "output") if o is not None else None
                for n, o, s in zip(self._out_names, self.outputs, out_shapes)]
        new = Executor(self._symbol, self._ctx, args, grads, self._reqs, aux, _outputs=outs)
        new._monitor = self._monitor
        return new

    # ------------------------------------------------------------------ inspection
    def get_optimized_symbol(self):
        """The Symbol this executor runs (common subexpressions merged unless MXNET_ELIMINATE_COMMON_EXPR=0)."""
        return type(self._symbol)(self._graph._outputs)

    def _needs_grad(self):
        """{id(node): whether a gradient can flow from the node's outputs to an argument that wants one}: only
        through differentiable ops and their differentiable inputs."""
        needs = {}
        for node in self._graph._nodes():
            if node.op is None:
                needs[id(node)] = self._reqs.get(node.name, "null") != "null"
            else:
                needs[id(node)] = node.op.differentiable and any(
                    needs[id(src)] for k, (src, _) in enumerate(node.inputs) if k not in node.op.nondiff_inputs)
        return needs

    def _allocated_bytes(self):
        """The most bytes of intermediate values live at once in a forward: a value lives until its last reader,
        or to the end when backward needs it (it feeds or comes from a node on a gradient path)."""
        eshape, edtype = self._infer()
        nodes = self._graph._nodes()
        needs = self._needs_grad()
        flows = {id(n) for n, _ in self._graph._outputs}      # a gradient reaches it from an output
        for node in reversed(nodes):
            if id(node) in flows and node.op is not None and node.op.differentiable:
                flows.update(id(src) for k, (src, _) in enumerate(node.inputs) if k not in node.op.nondiff_inputs)
        end = len(nodes)
        life = dict(lifetimes(self._graph))
        for node in nodes:
            if node.op is not None and needs[id(node)] and id(node) in flows:
                for src, idx in node.inputs:
                    if (id(src), idx) in life:
                        life[(id(src), idx)] = (life[(id(src), idx)][0], end)
                for i in range(node.num_outputs()):
                    life[(id(node), i)] = (life[(id(node), i)][0], end)
        delta = [0] * (end + 2)
        for key, (first, last) in life.items():
            if key in eshape and key in edtype:
                size = _nbytes(eshape[key], edtype[key])
                delta[first] += size
                delta[last + 1] -= size
        peak = live = 0
        for d in delta:
            live += d
            peak = max(peak, live)
        return peak

    def debug_str(self):
        """The graph the executor runs, node by node in MXNet's layout, and the memory its forward holds."""
        lines = ["Symbol Outputs:"]
        lines += [f"\toutput[{k}]={n.name}({i})" for k, (n, i) in enumerate(self._graph._outputs)]
        for node in self._graph._nodes():
            if node.op is None:
                lines.append(f"Variable:{node.name}")
                continue
            lines += ["--------------------", f"Op:{node.op.name}, Name={node.name}", "Inputs:"]
            lines += [f"\targ[{k}]={src.name}({i})" + (" version=0" if src.op is None else "")
                      for k, (src, i) in enumerate(node.inputs)]
            attrs = {k: v for k, v in node.raw.items() if not k.startswith("__")}
            if attrs:
                lines.append("Attrs:")
                lines += [f"\t{k}={v}" for k, v in sorted(attrs.items())]
        lines.append(f"Total {self._allocated_bytes() >> 20} MB allocated")
        return "\n".join(lines) + "\n"


def _gradient_stops(head):
    """Whether `head` comes straight from an op with no gradient (MXNet gives its inputs zeros whatever the head
    gradient is, so it never reads it: MXNet's tests pass one of another shape)."""
    op = getattr(head._node, "op", None)
    return op is not None and not op.differentiable


def simple_bind(symbol, ctx, grad_req, type_dict, shapes):
    """Allocates every array from the given input shapes (and dtypes: type_dict, or declared by Variable(dtype=);
    float32 where none can be inferred) and binds them; gradient arrays for the arguments whose grad_req is not
    'null'."""
    ctx = ctx if isinstance(ctx, Context) else current_context()
    names, aux_names = symbol.list_arguments(), symbol.list_auxiliary_states()
    reqs = _grad_reqs(names, grad_req)
    arg_types, _, aux_types = symbol.infer_type_partial(**(type_dict or {}))
    dtypes = {n: np.dtype(t or np.float32) for n, t in zip(names + aux_names, arg_types + aux_types)}
    # only tuples (and lists) are shapes: MXNet's simple_bind skips other keyword values (callers pass op
    # attributes too)
    shapes = {k: tuple(v) for k, v in shapes.items() if isinstance(v, (tuple, list))}
    arg_shapes, _, aux_shapes = symbol._infer_shapes((), shapes, dtypes)
    unknown = [n for n, s in zip(names + aux_names, arg_shapes + aux_shapes) if not known(s)]
    if unknown:
        raise MXNetError(f"simple_bind: cannot infer the shapes of {unknown} from the given shapes {shapes}; give "
                         "them as keyword arguments")
    args = {n: _zeros(s, dtypes[n], ctx) for n, s in zip(names, arg_shapes)}
    aux = {n: _zeros(s, dtypes[n], ctx) for n, s in zip(aux_names, aux_shapes)}
    grads = {n: _zeros(args[n].shape, args[n].dtype, ctx) for n in names if reqs[n] != "null"}
    return Executor(symbol, ctx, args, grads, reqs, aux)
