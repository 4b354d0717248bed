"""Builds the `mx.nd.*` functions from the operator registry (one generic binder, no per-op code)."""
import numpy as np

from ..base import MXNetError
from ..ops import dispatch, registry
from .ndarray import NDArray, array


def _as_input(op, name, value):
    if isinstance(value, NDArray):
        return value
    if isinstance(value, np.ndarray):
        return array(value, dtype=value.dtype)
    raise MXNetError(f"{op.name}: input {name!r} must be an NDArray, got {type(value).__name__}")


def bind_arguments(op, args, kwargs):
    """Splits a call's arguments into input arrays and attributes, the way MXNet's generated functions do:
    leading positional arrays are inputs, later positional values fill attributes in declaration order,
    keywords name either."""
    args = list(args)
    positional_inputs = []
    if not op.variadic and not callable(op.inputs):
        # Fixed inputs: leading positionals fill the inputs not given by keyword, whatever their type, so a
        # wrong type gets a clear "must be an NDArray" error rather than being taken for an attribute.
        n_positional = len([n for n in op.inputs if n not in kwargs])
        positional_inputs, args = args[:n_positional], args[n_positional:]
    else:
        # Optional inputs: leading arrays are inputs; an explicit None marks an absent one (bias with no_bias).
        while args and (args[0] is None or isinstance(args[0], (NDArray, np.ndarray))):
            positional_inputs.append(args.pop(0))
        positional_inputs = [x for x in positional_inputs if x is not None]
    if op.variadic and positional_inputs and not args and len(positional_inputs) == 1 \
            and isinstance(positional_inputs[0], (list, tuple)):
        positional_inputs = list(positional_inputs[0])
    attr_names = list(op.attrs)
    given = {}
    if len(args) > len(attr_names):
        raise MXNetError(f"{op.name}: too many positional arguments ({len(args)} beyond the inputs)")
    for key, value in zip(attr_names, args):
        given[key] = value
    keyword_inputs = {}
    for key, value in kwargs.items():
        if key in op.attrs:
            if key in given:
                raise MXNetError(f"{op.name}: attribute {key!r} given twice")
            given[key] = value
        else:
            keyword_inputs[key] = value
    if op.variadic:
        keyword_inputs.pop("num_args", None)
        extra = keyword_inputs.pop(op.input_names({})[0], None)
        if extra is not None:
            positional_inputs.extend(extra if isinstance(extra, (list, tuple)) else [extra])
        if keyword_inputs:
            raise MXNetError(f"{op.name}: unknown arguments {sorted(keyword_inputs)}")
        attrs = op.parse(given)
        return tuple(_as_input(op, "args", x) for x in positional_inputs), attrs
    attrs = op.parse(given)
    names = op.input_names(attrs)
    if len(positional_inputs) > len(names):
        raise MXNetError(f"{op.name}: takes {len(names)} input array(s) ({', '.join(names) or 'none'}), "
                         f"got {len(positional_inputs)}")
    inputs = list(positional_inputs)
    for name in names[len(positional_inputs):]:
        if name not in keyword_inputs:
            raise MXNetError(f"{op.name}: missing input {name!r} (inputs: {', '.join(names)})")
        inputs.append(keyword_inputs.pop(name))
    if keyword_inputs:
        raise MXNetError(f"{op.name}: unknown argument(s) {sorted(keyword_inputs)} "
                         f"(inputs: {', '.join(names) or 'none'}; attributes: {', '.join(attr_names) or 'none'})")
    return tuple(_as_input(op, n, x) for n, x in zip(names, inputs)), attrs


def write_out(result, out):
    """MXNet's `out=` argument: the result is copied into the given array(s), which are returned."""
    if out is None:
        return result
    results = result if isinstance(result, tuple) else (result,)
    outs = out if isinstance(out, (list, tuple)) else (out,)
    if len(outs) != len(results):
        raise MXNetError(f"out=: expected {len(results)} array(s), got {len(outs)}")
    for r, o in zip(results, outs):
        if o.shape != r.shape:
            raise MXNetError(f"out=: result shape {r.shape} does not match out shape {o.shape}")
        o._assign(r._converted_for(o))
    return out


def make_function(op):
    def function(*args, out=None, name=None, **kwargs):
        inputs, attrs = bind_arguments(op, args, kwargs)
        return write_out(dispatch.apply(op, inputs, attrs), out)
    function.__name__ = op.name
    function.__qualname__ = op.name
    attr_doc = "\n".join(f"    {k}: default {v.default!r}" for k, v in op.attrs.items()
                         if v.default is not registry_required())
    function.__doc__ = (op.doc or f"The {op.name} operator.") + (
        f"\n\nInputs: {op.inputs if not callable(op.inputs) else 'depend on attributes'}"
        + (f"\nAttributes:\n{attr_doc}" if attr_doc else ""))
    return function


def registry_required():
    from ..ops.attrs import REQUIRED
    return REQUIRED


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
