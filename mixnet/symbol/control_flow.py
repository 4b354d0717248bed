"""`mx.sym.contrib.foreach / while_loop / cond`: one `_foreach` / `_while_loop` / `_cond` node holding subgraphs.

As in MXNet 1.9.1, the user's function runs once on fresh variables (named `<node>-<output index>`) inside an
AttrScope that tags every node it creates with `__subgraph_name__`. Every reference from those nodes to a node
made outside (a closure value, a parameter, an outer computation) is then cut: inside the subgraph it becomes a
new variable named after the outer output, and the outer value becomes an extra input of the control-flow node
(MXNet's remain_locs / *_input_locs), so gradients reach it. A variable made inside the function (a 2.0-style
`param.data()` call in the body) is cut the same way. Outputs that are not nodes of the subgraph (a variable, an
outer value, or one already listed) go through `identity`, as MXNet does.

The same code serves `mx.sym` and hybridize (1.x `F.contrib.*`, and 2.0-style `mx.nd.contrib.*` on traced
values). While hybridize traces (TRACE_SHAPES holds the input shapes), the new node's shapes are inferred at
once, so a body that changes a state's shape fails at the user's line rather than at the first call.
"""
import contextvars

from .. import attribute, name as name_module
from .._nest import flatten, mxnet_format, unflatten
from .._source import user_location
from ..base import MXNetError
from ..ops import registry
from .graph import Node
from .symbol import Group, Symbol, make_function, var

__all__ = ["foreach", "while_loop", "cond", "TRACE_SHAPES"]

# {variable name: shape} of the graph hybridize is tracing, or None (stand-alone mx.sym).
TRACE_SHAPES = contextvars.ContextVar("mixnet_trace_shapes", default=None)

_SCOPE_KEY = "__subgraph_name__"


class UnusedInputError(MXNetError, AssertionError):
    """A foreach data array or state the body does not use (MXNet raises AssertionError)."""


class UnusedLoopVarError(MXNetError, ValueError):
    """A while_loop variable func does not use (MXNet raises ValueError)."""


def _fail(op, msg, error=MXNetError):
    where = user_location()
    raise error(f"contrib.{op}: {msg}" + (f"\n  at {where}" if where else ""))


def _symbol_leaf(x):
    if not isinstance(x, Symbol):
        return None
    n = len(x._outputs)
    return ([x], "x") if n == 1 else ([x[i] for i in range(n)], ("list", ("x",) * n))


def _flatten(obj, op, what):
    """Nested lists of Symbols -> (flat list of one-output Symbols, structure): mixnet/_nest.py, regrouped as
    lists as MXNet does."""
    try:
        return flatten(obj, _symbol_leaf, f"{what} must be a Symbol or a (nested) list of Symbols", keep_tuples=False)
    except MXNetError as err:
        _fail(op, str(err))


def _scope_name(base):
    outer = attribute.AttrScope.current().get(None).get(_SCOPE_KEY, "")
    if outer:
        base = f"{outer}${base}"
    counts = attribute.AttrScope._subgraph_names     # unique in the process, as MXNet's (which tests reset)
    count = counts[base]
    counts[base] += 1
    return f"{base}{count}"


def _fresh(symbols, taken=()):
    """A new variable per outer Symbol (made inside the scope, so it is tagged)."""
    names, out = set(taken), []
    for s in symbols:
        node, idx = s._outputs[0]
        name = f"{node.name}-{idx}"
        while name in names:                 # the same array given twice still gets two inputs
            name += "_"
        names.add(name)
        out.append(var(name))
    return out


def _close(symbols, scope):
    """The subgraph's heads: identity for outputs that are variables, outer values or repeated entries."""
    identity = make_function(registry.get("_copy"), "identity")
    heads, seen = [], set()
    for s in symbols:
        node, idx = s._outputs[0]
        if node.op is None or node.raw.get(_SCOPE_KEY) != scope or (id(node), idx) in seen:
            node, idx = identity(s)._outputs[0]
        seen.add((id(node), idx))
        heads.append((node, idx))
    return heads


def _outer_key(node, idx):
    return ("var", node.name) if node.op is None else (id(node), idx)


def _cut(heads, scope, fresh, op):
    """Cuts the subgraph with outputs `heads` out of the traced graph (its own nodes are rewired in place).
    Returns (subgraph Symbol, its input names, {input name: (key, outer entry)} for the cut inputs)."""
    fresh_ids = {id(s._outputs[0][0]) for s in fresh}
    cut_vars, outer = {}, {}

    def cut(src, idx):
        key = _outer_key(src, idx)
        made_inside = src.raw.get(_SCOPE_KEY) == scope
        if made_inside:        # a variable made in the function: the outer graph gets its own copy
            entry = (Node(None, src.name, {}, {k: v for k, v in src.raw.items() if k != _SCOPE_KEY}, (),
                          src.location), 0)
        else:
            entry = (src, idx)
        v = cut_vars.get(key)
        if v is None:
            name = src.name if src.op is None else src.output_names()[idx]
            v = cut_vars[key] = Node(None, name, {}, {}, (), src.location)
            outer[name] = (key, entry)
        elif not made_inside:
            outer[v.name] = (key, entry)       # prefer the outer graph's own variable to a copy
        return (v, 0)

    def inner(node):
        return node.raw.get(_SCOPE_KEY) == scope and (node.op is not None or id(node) in fresh_ids)

    seen, stack = set(), [node for node, _ in heads]
    while stack:
        node = stack.pop()
        if id(node) in seen or node.op is None:
            continue
        seen.add(id(node))
        node.inputs = [(src, idx) if inner(src) else cut(src, idx) for src, idx in node.inputs]
        stack.extend(src for src, _ in node.inputs)
    graph = Symbol(heads)
    names = graph.list_inputs()
    if len(set(names)) != len(names):
        _fail(op, f"the inputs of the traced subgraph do not have unique names: {names} (give the arrays it "
                  "uses distinct names)")
    return graph, names, outer


def _raw(**values):
    """String attributes as MXNet's Python front end writes them: str() of ints and of lists."""
    return {k: str(list(v) if isinstance(v, (list, tuple)) else v) for k, v in values.items()}


def _make_node(op_name, subgraphs, raw, entries):
    op = registry.get(op_name)
    attrs = op.parse({**raw, **subgraphs})
    raw = {**raw, **attribute.AttrScope.current().get(None)}       # inside an outer subgraph: tagged
    node = Node(op, name_module.NameManager.current().get(None, op_name), attrs, raw, entries, user_location())
    return [Symbol([(node, i)]) for i in range(node.num_visible())]


def _check_shapes(op, outputs):
    """While hybridize traces, infers the new node's shapes now, so shape errors name the user's line."""
    shapes = TRACE_SHAPES.get()
    if shapes is None or not outputs:
        return
    group = Group(outputs)
    inputs = set(group.list_inputs())
    try:
        group.infer_shape_partial(**{k: v for k, v in shapes.items() if k in inputs})
    except MXNetError as err:
        if "\n  at " in str(err):           # already names the user's line
            raise MXNetError(f"contrib.{op}: {err}") from None
        _fail(op, str(err))


def _locate(op, names, name, what, error):
    if name not in names:
        _fail(op, f"{what} is not used by the traced function; MXNet's graph format needs every one used", error)
    return names.index(name)


# ---------------------------------------------------------------------------------------------------------
def foreach(body, data, init_states, name="foreach"):
    """body(data_slice, states) -> (outputs, new_states) over axis 0 of data, as one `_foreach` node.
    Returns (outputs stacked on axis 0, final states), nested as the body's outputs and init_states."""
    op = "foreach"
    flat_data, data_fmt = _flatten(data, op, "data")
    flat_states, state_fmt = _flatten(init_states, op, "init_states")
    scope = _scope_name(name)
    with attribute.AttrScope(**{_SCOPE_KEY: scope}):
        data_vars = _fresh(flat_data)
        state_vars = _fresh(flat_states, taken=[v.name for v in data_vars])
        result = body(unflatten(list(data_vars), data_fmt), unflatten(list(state_vars), state_fmt))
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            _fail(op, "the body must return a pair (outputs, new_states)")
        flat_out, out_fmt = _flatten(result[0], op, "the body's outputs")
        flat_new, new_fmt = _flatten(result[1], op, "the body's new states")
        if new_fmt != state_fmt:
            _fail(op, f"the body returned {len(flat_new)} state(s) nested as {mxnet_format(new_fmt)}, but init_states "
                      f"has {len(flat_states)} nested as {mxnet_format(state_fmt)}; they must match")
        heads = _close(flat_out + flat_new, scope)
    graph, names, outer = _cut(heads, scope, data_vars + state_vars, op)
    data_locs = [_locate(op, names, v.name, f"data {k}", UnusedInputError) for k, v in enumerate(data_vars)]
    state_locs = [_locate(op, names, v.name, f"state {k}", UnusedInputError) for k, v in enumerate(state_vars)]
    remain_locs = [j for j, n in enumerate(names) if n in outer]
    entries = [s._outputs[0] for s in flat_data + flat_states] + [outer[names[j]][1] for j in remain_locs]
    outs = _make_node("_foreach", {"body": graph}, _raw(
        num_args=len(entries) + 1, num_outputs=len(heads), num_out_data=len(flat_out),
        in_state_locs=state_locs, in_data_locs=data_locs, remain_locs=remain_locs), entries)
    _check_shapes(op, outs)
    return unflatten(outs[:len(flat_out)], out_fmt), unflatten(outs[len(flat_out):], state_fmt)


def _union(graphs):
    """Node inputs for several subgraphs ([(names, {name: (key, entry)})]): each distinct value once."""
    inputs, index, all_locs = [], {}, []
    for names, sources in graphs:
        locs = []
        for n in names:
            key, entry = sources[n]
            if key not in index:
                index[key] = len(inputs)
                inputs.append(entry)
            locs.append(index[key])
        all_locs.append(locs)
    return inputs, all_locs


def _loop_sources(fresh, flat_vars):
    return {v.name: (("loop", k), s._outputs[0]) for k, (v, s) in enumerate(zip(fresh, flat_vars))}


def while_loop(cond, func, loop_vars, max_iterations=None, name="while_loop"):
    """func(*loop_vars) -> (step_outputs, new_loop_vars) while cond(*loop_vars), as one `_while_loop` node.
    Step outputs are stacked and padded with zero rows to max_iterations."""
    op = "while_loop"
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    try:
        max_iterations = int(max_iterations)
    except (TypeError, ValueError):
        _fail(op, f"max_iterations must be an integer, got {max_iterations!r}")
    flat_vars, var_fmt = _flatten(loop_vars, op, "loop_vars")
    if not flat_vars:
        _fail(op, "loop_vars must hold at least one Symbol")

    def args(fresh):
        return [fresh[0]] if var_fmt == "x" else unflatten(list(fresh), var_fmt)

    cond_scope = _scope_name(name + "_cond")
    with attribute.AttrScope(**{_SCOPE_KEY: cond_scope}):
        cond_vars = _fresh(flat_vars)
        pred = cond(*args(cond_vars))
        if not isinstance(pred, Symbol) or len(pred._outputs) != 1:
            _fail(op, f"cond must return one Symbol, got {type(pred).__name__}")
        cond_heads = _close([pred], cond_scope)
    func_scope = _scope_name(name + "_func")
    with attribute.AttrScope(**{_SCOPE_KEY: func_scope}):
        func_vars = _fresh(flat_vars)
        result = func(*args(func_vars))
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            _fail(op, "func must return a pair (step_outputs, new_loop_vars)")
        step, new_vars = [[] if r is None else r for r in result]
        flat_step, step_fmt = _flatten(step, op, "func's step outputs")
        flat_new, _ = _flatten(new_vars, op, "func's new loop variables")
        if len(flat_new) != len(flat_vars):
            _fail(op, f"func returned {len(flat_new)} loop variable(s), but loop_vars has {len(flat_vars)}")
        func_heads = _close(flat_step + flat_new, func_scope)
    cond_graph, cond_names, cond_outer = _cut(cond_heads, cond_scope, cond_vars, op)
    func_graph, func_names, func_outer = _cut(func_heads, func_scope, func_vars, op)
    inputs, (cond_locs, func_locs) = _union([
        (cond_names, {**_loop_sources(cond_vars, flat_vars), **cond_outer}),
        (func_names, {**_loop_sources(func_vars, flat_vars), **func_outer})])
    var_locs = [_locate(op, func_names, v.name, f"loop variable {k}", UnusedLoopVarError) for k, v in enumerate(func_vars)]
    outs = _make_node("_while_loop", {"cond": cond_graph, "func": func_graph}, _raw(
        num_args=len(inputs) + 2, num_outputs=len(func_heads), num_out_data=len(flat_step),
        max_iterations=max_iterations, cond_input_locs=cond_locs, func_input_locs=func_locs,
        func_var_locs=var_locs), inputs)
    _check_shapes(op, outs)
    finals = outs[len(flat_step):]
    return unflatten(outs[:len(flat_step)], step_fmt), unflatten(finals, var_fmt)


def cond(pred, then_func, else_func, name="cond"):
    """then_func() if pred is nonzero else else_func(), as one `_cond` node; only that branch runs."""
    op = "cond"
    if not isinstance(pred, Symbol) or len(pred._outputs) != 1:
        _fail(op, f"pred must be a Symbol with one output, got {type(pred).__name__}")
    traced = []
    for suffix, fn in (("_pred", lambda: pred), ("_then", then_func), ("_else", else_func)):
        scope = _scope_name(name + suffix)
        with attribute.AttrScope(**{_SCOPE_KEY: scope}):
            flat, fmt = _flatten(fn(), op, f"the {suffix[1:]} branch's outputs")
            heads = _close(flat, scope)
        traced.append(_cut(heads, scope, [], op) + (fmt, len(flat)))
    (pred_graph, *_), (then_graph, _, _, then_fmt, n_then), (else_graph, _, _, _, n_else) = traced
    if n_then != n_else:
        _fail(op, f"then_func returns {n_then} output(s) and else_func {n_else}; they must match")
    inputs, (cond_locs, then_locs, else_locs) = _union([(names, outer) for _, names, outer, _, _ in traced])
    outs = _make_node("_cond", {"cond": pred_graph, "then_branch": then_graph, "else_branch": else_graph}, _raw(
        num_args=len(inputs) + 3, num_outputs=n_then, cond_input_locs=cond_locs, then_input_locs=then_locs,
        else_input_locs=else_locs), inputs)
    _check_shapes(op, outs)
    return unflatten(list(outs), then_fmt)
