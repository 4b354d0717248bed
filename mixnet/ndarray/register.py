"""Builds the `mx.nd.*` functions from the operator registry (one generic binder, no per-op code)."""
import numpy as np

from .._traceback import hide_internals
from ..base import MXNetError
from ..ops import dispatch, docgen, registry
from ..ops.binding import bind_call
from ..symbol.symbol import make_function as symbol_function
from .ndarray import NDArray, array


class SymbolArguments(Exception):
    """An nd function was given Symbols (hybridize is tracing 2.0-style code): the call becomes a graph node."""


def _as_input(op, name, value):
    if isinstance(value, NDArray):
        return value
    if isinstance(value, np.ndarray):
        return array(value, dtype=value.dtype)
    if type(value).__name__ == "Symbol":
        raise SymbolArguments()
    raise MXNetError(f"{op.name}: input {name!r} must be an NDArray, got {type(value).__name__}")


def _is_array(value):
    return isinstance(value, (NDArray, np.ndarray))


def bind_arguments(op, args, kwargs):
    """A call's arguments -> (input NDArrays, parsed attributes), by MXNet's convention (ops/binding.py)."""
    inputs, given, names = bind_call(op, args, kwargs, _is_array)
    attrs = op.parse(given)
    if names is None:
        return tuple(_as_input(op, "args", x) for x in inputs), attrs
    for name, x in zip(names, inputs):
        if x is None:
            raise MXNetError(f"{op.name}: missing input {name!r} (inputs: {', '.join(names)})")
    return tuple(_as_input(op, n, x) for n, x in zip(names, inputs)), attrs


def write_out(result, out):
    """MXNet's `out=` argument: the result is copied into the given array(s), which are returned."""
    if out is None:
        return result
    results = result if isinstance(result, list) else (result,)
    outs = out if isinstance(out, (list, tuple)) else (out,)
    if len(outs) != len(results):
        raise MXNetError(f"out=: expected {len(results)} array(s), got {len(outs)}")
    for r, o in zip(results, outs):
        if o.shape != r.shape:
            raise MXNetError(f"out=: result shape {r.shape} does not match out shape {o.shape}")
        o._assign(r._converted_for(o))
    return out


_FUNCTIONS = {}     # op name -> (op, its function): mx.nd, nd.op, nd._internal, nd.contrib share one object


def make_function(op):
    made = _FUNCTIONS.get(op.name)
    if made is not None and made[0] is op:
        return made[1]

    def function(*args, out=None, name=None, **kwargs):
        try:
            inputs, attrs = bind_arguments(op, args, kwargs)
        except SymbolArguments:          # traced values: the same op, as a graph node (checked only on failure)
            return symbol_function(op)(*args, name=name, **kwargs)
        try:
            result = dispatch.apply(op, inputs, attrs)
        except MXNetError as err:
            __tracebackhide__ = True    # noqa: F841 - IPython and pytest hide this frame
            raise hide_internals(err)   # mixnet's own frames are cut: MIXNET_FULL_TRACEBACK=1 shows them
        if type(result) is tuple:        # MXNet's nd functions return several outputs as a list (nd.split)
            result = list(result)
        return write_out(result, out)
    function.__name__ = op.name
    function.__qualname__ = op.name
    function.__doc__ = docgen.nd_doc(op, op.name)
    function.__signature__ = docgen.nd_signature(op)
    _FUNCTIONS[op.name] = (op, function)
    return function


def build_functions(namespace, prefix=""):
    """Adds one function per registry op (and alias) whose name starts with `prefix` to `namespace`."""
    made = {}
    for op in registry.all_ops():
        fn = make_function(op)
        for name in (op.name,) + tuple(op.aliases):
            if not name.startswith(prefix):
                continue
            short = name[len(prefix):]
            if short and short not in namespace:
                namespace[short] = fn
                made[short] = fn
    return made
