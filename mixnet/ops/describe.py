"""An op's arguments described as MXNet's operator info gives them (mx.operator.get_operator_arguments): the
array inputs first ('NDArray-or-Symbol'), then the attributes with a type string such as
"{'relu', 'sigmoid'}, required" or "float, optional, default=0.9"."""
from . import attrs as A

_TYPE_NAMES = {A.parse_bool: "boolean", A.parse_int: "int", A.parse_float: "float", A.parse_str: "string",
               A.parse_shape: "Shape(tuple)", A.parse_float_tuple: "tuple of <float>", A.parse_axis: "Shape(tuple)",
               A.parse_dtype: "dtype", A.parse_ctx: "Context"}


def _type_name(parse):
    inner = getattr(parse, "inner", None)
    if inner is not None:
        return f"{_type_name(inner)} or None"
    options = getattr(parse, "options", None)
    if options is not None:
        return "{" + ", ".join(repr(o) for o in sorted(options)) + "}"
    return _TYPE_NAMES.get(parse, "any")


def _default_text(value):
    if isinstance(value, bool):
        return str(int(value))              # MXNet prints booleans as 0 / 1
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, tuple):
        return "[" + ",".join(str(v) for v in value) + "]"
    return str(value)


def describe_attr(attr):
    kind = _type_name(attr.parse)
    if attr.default is A.REQUIRED:
        return f"{kind}, required"
    return f"{kind}, optional, default={_default_text(attr.default)}"


def op_arguments(op):
    """(names, types) of the op's inputs (those its default attributes give) and attributes."""
    defaults = {k: a.default for k, a in op.attrs.items() if a.default is not A.REQUIRED}
    names = op.inputs if not callable(op.inputs) else None
    if names is None and not op.open_attrs and all(a.default is not A.REQUIRED for a in op.attrs.values()):
        names = op.inputs(defaults)
    if op.variadic or names is None:     # inputs decided by required attributes (Custom's op_type): a list
        inputs = [((names or ("data",))[0], "NDArray-or-Symbol[]")]
    else:
        inputs = [(n, "NDArray-or-Symbol") for n in names]
    described = [(name, describe_attr(attr)) for name, attr in op.attrs.items()]
    pairs = inputs + described
    return [n for n, _ in pairs], [t for _, t in pairs]
