"""How a call's arguments map onto an op's inputs and attributes: the convention of MXNet's generated functions,
shared by `mx.nd` (NDArray inputs) and `mx.sym` (Symbol inputs).

Leading positional values are inputs (for ops with a fixed input list: as many as are not named by keyword;
otherwise: while they are inputs, an explicit None marking an absent optional input); later positional values
fill attributes in declaration order; keywords name either.
"""
from ..base import MXNetError
from .attrs import REQUIRED


def _is_input_list(value, is_input):
    return isinstance(value, (list, tuple)) and bool(value) and all(is_input(v) for v in value)


def bind_call(op, args, kwargs, is_input, named_variadic=False):
    """-> (inputs, raw_attrs, input_names). `inputs` holds None where an input was not given; input_names is
    None for variadic ops. named_variadic: keyword inputs of a variadic op are taken in order (mx.sym)."""
    args = list(args)
    positional = []
    if op.variadic:
        while args and (is_input(args[0]) or _is_input_list(args[0], is_input)):
            item = args.pop(0)
            positional.extend(item if isinstance(item, (list, tuple)) else [item])
    elif not callable(op.inputs):
        count = len([n for n in op.inputs if n not in kwargs])
        positional, args = args[:count], args[count:]
    else:
        while args and (args[0] is None or is_input(args[0])):
            positional.append(args.pop(0))
    attr_names = list(op.attrs)
    if len(args) > len(attr_names):
        raise MXNetError(f"{op.name}: too many positional arguments ({len(args)} beyond the inputs)")
    # REQUIRED: a signature's marker for a required attribute passed back (bind().apply_defaults()): not given
    given = {k: v for k, v in zip(attr_names, args) if v is not REQUIRED}
    keyword_inputs = {}
    for key, value in kwargs.items():
        if value is REQUIRED:
            continue
        if key in op.attrs:
            if key in given:
                raise MXNetError(f"{op.name}: attribute {key!r} given twice")
            given[key] = value
        else:
            keyword_inputs[key] = value
    if op.variadic:
        named = keyword_inputs.pop(op.input_names({})[0], None)
        if named is not None:
            positional.extend(named if isinstance(named, (list, tuple)) else [named])
        if keyword_inputs and not named_variadic:
            raise MXNetError(f"{op.name}: unknown argument(s) {sorted(keyword_inputs)} "
                             f"(attributes: {', '.join(attr_names) or 'none'})")
        positional.extend(keyword_inputs.values())
        return positional, given, None
    names = list(op.input_names(op.parse(given)) if callable(op.inputs) else op.inputs)
    while len(positional) > len(names) and positional[-1] is None:
        positional.pop()                  # an explicit None for an input the attributes removed (no_bias)
    if len(positional) > len(names):
        raise MXNetError(f"{op.name}: takes {len(names)} input(s) ({', '.join(names) or 'none'}), "
                         f"got {len(positional)}")
    inputs = positional + [None] * (len(names) - len(positional))
    if callable(op.inputs):      # `sequence_length=None` names an input the attributes removed: absent, as in MXNet
        keyword_inputs = {k: v for k, v in keyword_inputs.items() if v is not None or k in names}
    for i, name in enumerate(names):
        if name in keyword_inputs:
            if inputs[i] is not None:
                raise MXNetError(f"{op.name}: input {name!r} given twice")
            inputs[i] = keyword_inputs.pop(name)
    if not op.attrs:
        # MXNet ignores unknown attributes of ops that declare none (no parameter struct): users' code passes
        # e.g. broadcast_maximum(a, b, axis=1). Unknown array arguments stay errors.
        keyword_inputs = {k: v for k, v in keyword_inputs.items() if is_input(v)}
    if keyword_inputs:
        raise MXNetError(f"{op.name}: unknown argument(s) {sorted(keyword_inputs)} "
                         f"(inputs: {', '.join(names) or 'none'}; attributes: {', '.join(attr_names) or 'none'})")
    return inputs, given, names
