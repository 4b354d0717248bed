"""Running a Symbol: `Symbol.eval`, `bind`, `simple_bind` and the `Executor`.

This executor interprets the graph: nodes run in topological order through the one dispatch door
(`mixnet.ops.dispatch.apply`) on NDArrays, so autograd records them and `backward` uses the registry's gradient
rules, exactly as eager code does. It serves mx.sym's bind/eval, check mode's op-by-op run, the replay behind
higher-order gradients of hybridized calls and error explanations; hybridized blocks and SymbolBlocks run the
compiled plans of gluon/cached_op.py instead.
"""
import numpy as np

from .. import autograd
from ..base import MXNetError
from ..context import Context, current_context
from ..ndarray import ndarray as nd_module
from ..ndarray.ndarray import NDArray
from ..ops import dispatch
from .infer import infer_graph, known

__all__ = ["Executor", "evaluate", "run_graph", "simple_bind"]


def creation_shapes(symbol, shapes, dtypes):
    """Shapes for creation nodes with unknown (0) dims, e.g. RNN begin states `_zeros(shape=(L, 0, H))`,
    inferred from the consumers and the given input shapes/dtypes ({name: shape}, {name: dtype})."""
    nodes = symbol._nodes()
    pending = [n for n in nodes if n.op is not None and n.op.creates and 0 in tuple(n.attrs.get("shape", (1,)))]
    if not pending:
        return {}
    eshape, _ = infer_graph(nodes, dict(shapes), dict(dtypes), True)
    return {id(n): eshape[(id(n), 0)] for n in pending if known(eshape.get((id(n), 0)))}


def run_graph(symbol, values, ctx=None):
    """Evaluates `symbol` with variable values {name: NDArray}; returns the list of output NDArrays. Each op
    goes through dispatch.apply, so it is recorded when autograd is recording. A value is dropped as soon as
    its last consumer has run, so inference holds only live activations (autograd's tape keeps what backward
    needs on its own)."""
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


def _as_dict(names, arrays, what):
    if arrays is None:
        return {}
    if isinstance(arrays, dict):
        unknown = [k for k in arrays if k not in names]
        if unknown:
            raise MXNetError(f"bind: {what} {unknown} are not in the symbol's list ({names})")
        return dict(arrays)
    arrays = list(arrays)
    if len(arrays) != len(names):
        raise MXNetError(f"bind: {len(arrays)} {what} given for {len(names)} names {names}")
    return dict(zip(names, arrays))


class Executor:
    """A Symbol bound to arrays. forward(is_train, **new_values) -> outputs; backward(out_grads) writes
    grad_dict. Built on the interpreter in this module (recorded by autograd, gradients from the registry)."""

    def __init__(self, symbol, ctx, args, args_grad=None, grad_req="write", aux_states=None):
        self._symbol = symbol
        self._ctx = ctx if isinstance(ctx, Context) else current_context()
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self.arg_dict = _as_dict(self._arg_names, args, "arguments")
        missing = [n for n in self._arg_names if n not in self.arg_dict]
        if missing:
            raise MXNetError(f"bind: arguments {missing} are missing")
        self.aux_dict = _as_dict(self._aux_names, aux_states, "aux states")
        missing = [n for n in self._aux_names if n not in self.aux_dict]
        if missing:
            raise MXNetError(f"bind: auxiliary states {missing} are missing")
        grads = _as_dict(self._arg_names, args_grad, "gradients")
        if isinstance(grad_req, str):
            reqs = {n: grad_req for n in self._arg_names}
        elif isinstance(grad_req, dict):
            reqs = {n: grad_req.get(n, "null") for n in self._arg_names}
        else:
            reqs = dict(zip(self._arg_names, grad_req))
        self._reqs = {n: (r if n in grads or r == "null" else "null") for n, r in reqs.items()}
        self.grad_dict = {n: grads[n] for n in self._arg_names if n in grads}
        self.outputs = []

    @property
    def arg_arrays(self):
        return [self.arg_dict[n] for n in self._arg_names]

    @property
    def grad_arrays(self):
        return [self.grad_dict.get(n) for n in self._arg_names]

    @property
    def aux_arrays(self):
        return [self.aux_dict[n] for n in self._aux_names]

    @property
    def output_dict(self):
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    def forward(self, is_train=False, **kwargs):
        for key, value in kwargs.items():
            if key not in self.arg_dict:
                raise MXNetError(f"forward: {key!r} is not an argument ({self._arg_names})")
            target = self.arg_dict[key]
            if not isinstance(value, NDArray):
                value = nd_module.array(value, ctx=target.context, dtype=target.dtype)
            if tuple(value.shape) != tuple(target.shape):
                raise MXNetError(f"forward: {key!r} has shape {tuple(target.shape)}, got {tuple(value.shape)}")
            value.copyto(target)
        values = {}
        marked = []
        for name in self._arg_names:
            arr = self.arg_dict[name]
            if is_train and self._reqs.get(name, "null") != "null":
                view = arr.detach()
                autograd.mark_variables([view], [self.grad_dict[name]], self._reqs[name])
                marked.append(view)
                arr = view
            values[name] = arr
        values.update(self.aux_dict)
        if is_train:
            with autograd.record(train_mode=True):
                self.outputs = run_graph(self._symbol, values, self._ctx)
        else:
            with autograd.pause(train_mode=False):
                self.outputs = run_graph(self._symbol, values, self._ctx)
        self._recorded = is_train
        return self.outputs

    def backward(self, out_grads=None, is_train=True):
        if not getattr(self, "_recorded", False):
            raise MXNetError("backward needs a forward(is_train=True) first")
        if out_grads is not None and not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        heads = list(self.outputs)
        if out_grads is None:
            out_grads = [nd_module.array(np.ones(o.shape, dtype=o.dtype), ctx=o.context, dtype=o.dtype)
                         for o in heads]
        autograd.backward(heads, list(out_grads), train_mode=is_train)

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        for src, dst in ((arg_params or {}, self.arg_dict), (aux_params or {}, self.aux_dict)):
            for name, value in src.items():
                if name in dst:
                    value.copyto(dst[name])
                elif not allow_extra_params:
                    raise MXNetError(f"copy_params_from: {name!r} is not in the executor")


def simple_bind(symbol, ctx, grad_req, type_dict, shapes):
    ctx = ctx if isinstance(ctx, Context) else current_context()
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    if arg_shapes is None:
        raise MXNetError(f"simple_bind: cannot infer every shape from {shapes}")
    type_dict = type_dict or {}
    arg_types, _, aux_types = symbol.infer_type(**type_dict) if type_dict else (None, None, None)
    names = symbol.list_arguments()
    aux_names = symbol.list_auxiliary_states()
    arg_types = arg_types or [np.float32] * len(names)
    aux_types = aux_types or [np.float32] * len(aux_names)
    args = {n: nd_module.array(np.zeros(s, dtype=t), ctx=ctx, dtype=t)
            for n, s, t in zip(names, arg_shapes, arg_types)}
    aux = {n: nd_module.array(np.zeros(s, dtype=t), ctx=ctx, dtype=t)
           for n, s, t in zip(aux_names, aux_shapes, aux_types)}
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in names}
    elif isinstance(grad_req, dict):
        reqs = {n: grad_req.get(n, "null") for n in names}
    else:
        reqs = dict(zip(names, grad_req))
    grads = {n: nd_module.array(np.zeros(args[n].shape, dtype=args[n].dtype), ctx=ctx, dtype=args[n].dtype)
             for n in names if reqs[n] != "null"}
    return Executor(symbol, ctx, args, grads, reqs, aux)
