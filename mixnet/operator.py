"""`mx.operator`: operators written in Python (MXNet's CustomOp API).

    class Sqr(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * in_data[0])
        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])

    @mx.operator.register("sqr")
    class SqrProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Sqr()

    y = mx.nd.Custom(x, op_type="sqr")          # differentiable under autograd.record()
    s = mx.sym.Custom(data=mx.sym.var("x"), op_type="sqr")   # a graph node: hybridize, export, bind

How it fits the registry: `Custom` is one registry op whose attributes are `op_type` plus the prop's keyword
arguments (strings, as MXNet passes them) and whose inputs, outputs and inference come from the prop; its
kernel creates the operator and calls its forward on NDArrays that view the kernel's buffers. Its gradient is
the hidden op `_backward_Custom`, whose kernel calls the operator's backward.

Differences from MXNet (see docs/compatibility.md): in a graph (hybridize, Symbol executors) the backward runs
on a fresh operator from `create_operator`, so state a forward leaves on `self` reaches backward only in eager
mode (nd.Custom under autograd.record()); storage types are always 'default'.
"""
import collections
import functools
import threading
import weakref

import numpy as np

from .base import DTYPES, MXNetError
from .context import cpu, current_context
from .ops import describe, dispatch, registry
from .ops.registry import OpDef
from . import autograd
from .ndarray.ndarray import NDArray
from .ndarray.register import write_out
from .symbol.symbol import Symbol, create_node
from . import ndarray, symbol

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators", "get_operator_arguments",
           "OperatorArguments", "PythonOp", "NumpyOp", "NDArrayOp"]


class CustomOp:
    """Base class of a Python operator: override forward and backward (both default to doing nothing)."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Computes out_data from in_data; req[i] says how to write out_data[i] (use self.assign)."""

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Computes in_grad from out_grad; req[i] says how to write in_grad[i] (use self.assign)."""

    def assign(self, dst, req, src):
        """Writes src into dst as req says: 'write'/'inplace' copy, 'add' accumulates, 'null' does nothing."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise MXNetError(f"CustomOp.assign: req must be 'null', 'write', 'inplace' or 'add', got {req!r}")


class CustomOpProp:
    """Describes a Python operator: its arguments, outputs, auxiliary states, shapes and types, and creates it.

    need_top_grad: whether backward reads the output gradients (declare_backward_dependency's default)."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """-> (input shapes, output shapes[, aux shapes]); by default every output and aux has in_shape[0]."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), (in_shape[0],) * len(self.list_auxiliary_states())

    def infer_type(self, in_type):
        """-> (input types, output types[, aux types]); by default everything has in_type[0]."""
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype):
        """mixnet arrays are dense: every storage type is 'default'."""
        return (["default"] * len(in_stype), ["default"] * len(self.list_outputs()),
                ["default"] * len(self.list_auxiliary_states()))

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype, aux_stype):
        return tuple(["default"] * len(x) for x in (ograd_stype, in_stype, out_stype, igrad_stype, aux_stype))

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def list_auxiliary_states(self):
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids of the blobs backward reads (mixnet keeps them all; MXNet uses this to free memory early)."""
        return (list(out_grad) if self.need_top_grad_ else []) + list(in_data) + list(out_data)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return CustomOp()


_PROPS = {}                 # op_type -> CustomOpProp subclass
_LOCK = threading.Lock()


def register(reg_name):
    """Class decorator: registers a CustomOpProp subclass as op_type `reg_name` (a later registration under the
    same name replaces it, as in MXNet)."""
    if not isinstance(reg_name, str) or not reg_name:
        raise MXNetError(f"operator.register: the name must be a non-empty string, got {reg_name!r}")

    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise MXNetError(f"operator.register({reg_name!r}): expected a subclass of CustomOpProp, "
                             f"got {prop_cls!r}")
        with _LOCK:
            _PROPS[reg_name] = prop_cls
        return prop_cls
    return do_register


register("custom_op")(CustomOpProp)


def get_all_registered_operators():
    """Names of every operator in the registry (aliases included)."""
    return sorted(registry._OPS)


OperatorArguments = collections.namedtuple("OperatorArguments", ["narg", "names", "types"])


def get_operator_arguments(op_name):
    """OperatorArguments(narg, names, types) of a registered operator: its array inputs, then its attributes,
    with MXNet's type strings ("float, optional, default=0.9")."""
    names, types = describe.op_arguments(registry.get(op_name))
    return OperatorArguments(len(names), names, types)


# ---------------------------------------------------------------------------------------------------------
# MXNet's older Python-op API: an operator object whose get_symbol() makes a Custom node
class PythonOp:
    """Base of NumpyOp / NDArrayOp (deprecated in MXNet in favour of CustomOp). The defaults are the identity:
    forward copies in_data[0] to out_data[0], backward copies out_grad[0] to in_grad[0]."""

    _as_numpy = False

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad
        self._op_type = None

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """A Symbol node running this object's forward/backward (registered once per object)."""
        if self._op_type is None:
            self._op_type = f"_python_op_{type(self).__name__}_{id(self)}"
            register(self._op_type)(_python_prop(self))
        return sym_custom(*args, op_type=self._op_type, **kwargs)

    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = out_grad[0]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]] * len(self.list_outputs())

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def need_top_grad(self):
        return self.need_top_grad_


class NumpyOp(PythonOp):
    """A PythonOp whose forward/backward receive numpy arrays (written in place)."""
    _as_numpy = True


class NDArrayOp(PythonOp):
    """A PythonOp whose forward/backward receive NDArrays."""

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return (list(out_grad) if self.need_top_grad() else []) + list(in_data) + list(out_data)


def _python_prop(python_op):
    """A CustomOpProp (and CustomOp) adapting a PythonOp object."""
    def call(method, written, **groups):
        """Calls the PythonOp's method: with the NDArrays (NDArrayOp), or with numpy arrays (NumpyOp): the arrays'
        own buffers on the CPU; on a GPU, host copies, of which the `written` group is copied back."""
        if not python_op._as_numpy:
            return method(**groups)
        hosts = {k: [x._data if isinstance(x._data, np.ndarray) else x.asnumpy() for x in xs]
                 for k, xs in groups.items()}
        method(**hosts)
        for x, host in zip(groups[written], hosts[written]):
            if host is not x._data:
                x[:] = host

    class Adapter(CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            call(python_op.forward, "out_data", in_data=in_data, out_data=out_data)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            call(python_op.backward, "in_grad", out_grad=out_grad, in_data=in_data, out_data=out_data,
                 in_grad=in_grad)

    class Prop(CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=python_op.need_top_grad())

        def list_arguments(self):
            return python_op.list_arguments()

        def list_outputs(self):
            return python_op.list_outputs()

        def infer_shape(self, in_shape):
            return python_op.infer_shape(in_shape)

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Adapter()
    Prop.__name__ = f"{type(python_op).__name__}Prop"
    return Prop


# ---------------------------------------------------------------------------------------------------------
# the registry ops
def _op_type(attrs):
    return attrs["op_type"]


def _user_error(op_type, what, err):
    if isinstance(err, MXNetError):
        return MXNetError(f"Custom operator {op_type!r}: error in {what}: {err}")
    return MXNetError(f"Custom operator {op_type!r}: error in {what}: {type(err).__name__}: {err}")


@functools.lru_cache(maxsize=256)
def _prop_for(prop_cls, op_type, items):
    # One prop per (class, arguments): its list_*/infer_* answers are asked for many times per call.
    try:
        return prop_cls(**dict(items))
    except Exception as err:
        raise _user_error(op_type, f"{prop_cls.__name__}(**{dict(items)})", err) from None


def _prop(attrs):
    op_type = _op_type(attrs)
    prop_cls = _PROPS.get(op_type)
    if prop_cls is None:
        raise MXNetError(f"Custom: op_type {op_type!r} is not registered (registered: "
                         f"{', '.join(sorted(_PROPS))}); decorate its CustomOpProp with "
                         f"@mx.operator.register({op_type!r})")
    return _prop_for(prop_cls, op_type, tuple(sorted((k, v) for k, v in attrs.items() if k != "op_type")))


def _call(prop, what, *args):
    try:
        return getattr(prop, what)(*args)
    except MXNetError:
        raise
    except Exception as err:
        raise _user_error(_prop_name(prop), f"{type(prop).__name__}.{what}", err) from None


def _prop_name(prop):
    return next((k for k, v in _PROPS.items() if v is type(prop)), type(prop).__name__)


def _names(prop):
    return (list(_call(prop, "list_arguments")), list(_call(prop, "list_outputs")),
            list(_call(prop, "list_auxiliary_states")))


def _split3(prop, what, result, counts):
    """infer_shape/infer_type results: 2 or 3 lists of the declared lengths."""
    result = tuple(result)
    if len(result) == 2:
        result += ([],)
    if len(result) != 3:
        raise MXNetError(f"Custom operator {_prop_name(prop)!r}: {what} must return 2 or 3 lists, "
                         f"got {len(result)}")
    for kind, got, want in zip(("input", "output", "aux"), result, counts):
        if len(got) != want:
            raise MXNetError(f"Custom operator {_prop_name(prop)!r}: {what} returned {len(got)} {kind} "
                             f"entries, expected {want}")
    return result


def _infer(prop, shapes, dtypes):
    """Output shapes and dtypes from the prop (inputs are the arguments followed by the aux states)."""
    args, outs, auxs = _names(prop)
    if len(shapes) != len(args) + len(auxs):
        raise MXNetError(f"Custom operator {_prop_name(prop)!r}: takes {len(args) + len(auxs)} inputs "
                         f"({', '.join(args + auxs) or 'none'}), got {len(shapes)}")
    counts = (len(args), len(outs), len(auxs))
    _, out_shapes, _ = _split3(prop, "infer_shape",
                               _call(prop, "infer_shape", [list(s) for s in shapes[:len(args)]]), counts)
    in_types = [np.dtype(d).type for d in dtypes[:len(args)]]
    _, out_types, _ = _split3(prop, "infer_type", _call(prop, "infer_type", in_types), counts)
    try:
        return [tuple(int(n) for n in s) for s in out_shapes], [np.dtype(d) for d in out_types]
    except (TypeError, ValueError) as err:
        raise MXNetError(f"Custom operator {_prop_name(prop)!r}: bad shape or type from infer_shape/infer_type: "
                         f"{err}") from None


def _context(xp):
    ctx = current_context()
    return ctx if ctx.xp is xp else cpu()


def _view(data, ctx, writable):
    if not writable:
        data = data.view()
        data.flags.writeable = False      # MXNet hands in_data to the operator read-only, too
    return dispatch.WRAP(data, ctx)


def create(prop, ctx, datas):
    """A new operator for inputs `datas` (MXNet passes their shapes and dtype codes)."""
    shapes = [list(d.shape) for d in datas[:len(_names(prop)[0])]]
    codes = [DTYPES[np.dtype(d.dtype).name] for d in datas[:len(shapes)]]
    return _call(prop, "create_operator", ctx, shapes, codes)


def run_forward(prop, operator, xp, datas, is_train):
    """Runs operator.forward over NDArray views of `datas`; returns the output NDArrays."""
    args, _, _ = _names(prop)
    out_shapes, out_dtypes = _infer(prop, [d.shape for d in datas], [d.dtype for d in datas])
    ctx = _context(xp)
    in_data = [_view(d, ctx, False) for d in datas[:len(args)]]
    aux = [_view(d, ctx, True) for d in datas[len(args):]]
    out_data = [dispatch.WRAP(xp.zeros(s, dtype=t), ctx) for s, t in zip(out_shapes, out_dtypes)]
    _run(prop, operator, "forward", is_train=is_train, req=["write"] * len(out_data), in_data=in_data,
         out_data=out_data, aux=aux)
    return out_data


def run_backward(prop, operator, xp, out_grads, datas, outputs):
    """Runs operator.backward; returns the gradients of the arguments (aux states get none)."""
    args, _, _ = _names(prop)
    ctx = _context(xp)
    in_data = [_view(d, ctx, False) for d in datas[:len(args)]]
    aux = [_view(d, ctx, True) for d in datas[len(args):]]
    in_grad = [dispatch.WRAP(xp.zeros(d.shape, dtype=d.dtype), ctx) for d in datas[:len(args)]]
    _run(prop, operator, "backward", req=["write"] * len(in_grad), out_grad=[_view(g, ctx, False) for g in out_grads],
         in_data=in_data, out_data=[_view(o, ctx, False) for o in outputs], in_grad=in_grad, aux=aux)
    return in_grad


def _run(prop, operator, what, **kwargs):
    try:
        with autograd.pause():          # the operator's own NDArray calls are its implementation, not the tape's
            getattr(operator, what)(**kwargs)
    except Exception as err:
        raise _user_error(_prop_name(prop), f"{type(operator).__name__}.{what}", err) from None


class _CustomDef(OpDef):
    """`Custom`'s attributes are op_type plus whatever the prop's constructor takes, kept as strings."""

    def parse(self, given):
        op_type = given.get("op_type")
        if not isinstance(op_type, str) or not op_type:
            raise MXNetError(f"{self.name}: required attribute 'op_type' is missing (the name given to "
                             "@mx.operator.register)")
        return {k: v if isinstance(v, str) else str(v) for k, v in given.items()}

    def aux_slots(self, attrs):
        """The prop's auxiliary states (its inputs after the arguments), as MXNet lists them."""
        args, _, auxs = _names(_prop(attrs))
        return tuple(range(len(args), len(args) + len(auxs)))


# The operator that ran a forward, by the id of its first output buffer, for as long as that buffer lives:
# the gradient rule finds it there, so backward runs on the same object (state a forward leaves on `self`
# reaches backward, as in MXNet). A graph's gradient (traced, no buffers) runs a fresh operator instead.
_OPERATORS = {}


def _remember(operator, buffer):
    key = id(buffer)
    _OPERATORS[key] = (weakref.ref(buffer), operator)
    weakref.finalize(buffer, _OPERATORS.pop, key, None)


def _remembered(buffer):
    ref, operator = _OPERATORS.get(id(buffer), (None, None))
    return operator if ref is not None and ref() is buffer else None


def _custom_kernel(xp, *datas, is_train=False, **attrs):
    prop = _prop(attrs)
    operator = create(prop, _context(xp), datas)
    outs = run_forward(prop, operator, xp, datas, is_train)
    if outs:
        _remember(operator, outs[0]._data)
    return outs[0]._data if len(outs) == 1 else tuple(o._data for o in outs)


def _custom_grad(ctx, *out_grads):
    prop = _prop(ctx.attrs)
    n_aux = len(_names(prop)[2])
    outputs = ctx.outputs
    operator = _remembered(outputs[0]._data) if outputs else None
    if operator is not None:                    # eager: the forward's own operator
        xp = outputs[0]._ctx._xp or outputs[0]._ctx.xp
        grads = run_backward(prop, operator, xp, [g._data for g in out_grads], [x._data for x in ctx.inputs],
                             [o._data for o in outputs])
    else:                                       # a traced graph: the _backward_Custom node
        grads = dispatch.apply(BACKWARD, tuple(out_grads) + tuple(ctx.inputs) + tuple(outputs), ctx.attrs)
        grads = grads if isinstance(grads, tuple) else (grads,)
    return tuple(grads) + (None,) * n_aux


def _backward_kernel(xp, *datas, **attrs):
    prop = _prop(attrs)
    args, outs, auxs = _names(prop)
    n_out = len(outs)
    out_grads, inputs, outputs = datas[:n_out], datas[n_out:len(datas) - n_out], datas[len(datas) - n_out:]
    operator = (_remembered(outputs[0]) if outputs else None) or create(prop, _context(xp), inputs)
    grads = run_backward(prop, operator, xp, out_grads, inputs, outputs)
    return grads[0]._data if len(grads) == 1 else tuple(g._data for g in grads)


def _backward_infer(shapes, dtypes, **attrs):
    args, outs, _ = _names(_prop(attrs))
    first = len(outs)
    return [tuple(s) for s in shapes[first:first + len(args)]], list(dtypes[first:first + len(args)])


CUSTOM = registry.register(_CustomDef(
    name="Custom", kernel=_custom_kernel, train_aware=True, open_attrs=True,
    inputs=lambda attrs: [*_names(_prop(attrs))[0], *_names(_prop(attrs))[2]],
    num_outputs=lambda attrs: len(_names(_prop(attrs))[1]),
    output_names=lambda attrs: tuple(_names(_prop(attrs))[1]),
    infer=lambda shapes, dtypes, **attrs: _infer(_prop(attrs), shapes, dtypes),
    param_shapes=registry.ParamShapes(lambda attrs, shapes: _param_shapes(attrs, shapes)),
    grad=_custom_grad,
    doc="Runs the Python operator registered as op_type (mx.operator.register)."))

BACKWARD = registry.register(_CustomDef(
    name="_backward_Custom", kernel=_backward_kernel, hidden=True, differentiable=False, open_attrs=True,
    inputs=lambda attrs: (lambda a, o, x: [f"{n}_grad" for n in o] + a + x + o)(*_names(_prop(attrs))),
    num_outputs=lambda attrs: len(_names(_prop(attrs))[0]),
    infer=_backward_infer,
    doc="The gradient of Custom: runs the Python operator's backward."))


# ---------------------------------------------------------------------------------------------------------
# mx.nd.Custom and mx.sym.Custom
def _bind(prop, op_type, args, named, is_input):
    """Positional inputs fill the prop's arguments then aux states in order; keywords name them."""
    a, _, x = _names(prop)
    names = a + x
    if len(args) > len(names):
        raise MXNetError(f"Custom operator {op_type!r}: takes {len(names)} inputs ({', '.join(names) or 'none'}), "
                         f"got {len(args)}")
    inputs = list(args) + [None] * (len(names) - len(args))
    for key, value in named.items():
        if key not in names:
            raise MXNetError(f"Custom operator {op_type!r}: unknown input {key!r} (inputs: {', '.join(names)})")
        slot = names.index(key)
        if inputs[slot] is not None:
            raise MXNetError(f"Custom operator {op_type!r}: input {key!r} given twice")
        inputs[slot] = value
    for n, v in zip(names, inputs):
        if v is not None and not is_input(v):
            raise MXNetError(f"Custom operator {op_type!r}: input {n!r} must be an array, got {type(v).__name__}")
    return names, inputs


def _split_kwargs(op_type, kwargs, is_input):
    named = {k: v for k, v in kwargs.items() if is_input(v)}
    given = {k: v for k, v in kwargs.items() if k not in named}
    given["op_type"] = op_type
    return named, given


def nd_custom(*args, op_type=None, name=None, out=None, **kwargs):
    """mx.nd.Custom: runs the Python operator registered as op_type; other keywords go to its prop's constructor
    (as strings). Under autograd.record() the call is recorded; backward calls the same operator's backward."""
    if any(isinstance(v, Symbol) for v in list(args) + list(kwargs.values())):
        return sym_custom(*args, op_type=op_type, name=name, **kwargs)
    named, given = _split_kwargs(op_type, kwargs, lambda v: isinstance(v, NDArray))
    attrs = CUSTOM.parse(given)
    prop = _prop(attrs)
    names, inputs = _bind(prop, op_type, args, named, lambda v: isinstance(v, NDArray))
    missing = [n for n, v in zip(names, inputs) if v is None]
    if missing:
        raise MXNetError(f"Custom operator {op_type!r}: missing input(s) {missing} (inputs: {', '.join(names)})")
    return write_out(dispatch.apply(CUSTOM, tuple(inputs), attrs), out)


def sym_custom(*args, op_type=None, name=None, attr=None, **kwargs):
    """mx.sym.Custom: a graph node running the Python operator registered as op_type; inputs not given become
    variables named <name>_<input>, as MXNet does."""
    named, given = _split_kwargs(op_type, kwargs, lambda v: isinstance(v, Symbol))
    prop = _prop(CUSTOM.parse(given))
    names, inputs = _bind(prop, op_type, args, named, lambda v: isinstance(v, Symbol))
    missing = [n for n, v in zip(names, inputs) if v is None]
    return create_node(CUSTOM, inputs, given, name=name, attr=attr, name_hint="custom", missing=missing)


def _param_shapes(attrs, shapes):
    """Symbol shape inference: once the arguments' shapes are known, the aux states' shapes come from the
    prop's infer_shape (as do arguments it completes, such as a weight)."""
    prop = _prop(attrs)
    args, outs, auxs = _names(prop)
    if len(shapes) != len(args) + len(auxs) or any(s is None for s in shapes[:len(args)]):
        return {}
    ishape, _, ashape = _split3(prop, "infer_shape", _call(prop, "infer_shape", [list(s) for s in shapes[:len(args)]]),
                                (len(args), len(outs), len(auxs)))
    return {slot: tuple(int(n) for n in s) for slot, s in enumerate(list(ishape) + list(ashape))}


def _install():
    # mx.nd / mx.sym are built from the registry before this module registers Custom: add their functions here.
    nd_custom.__name__ = sym_custom.__name__ = "Custom"
    ndarray.Custom = ndarray._namespace.Custom = ndarray.op.Custom = nd_custom
    symbol.Custom = symbol._namespace.Custom = symbol.op.Custom = sym_custom


_install()
