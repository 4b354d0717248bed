"""Shape and dtype inference over a graph.

Forward inference uses the registry (`mixnet.ops.common.infer`: each op's pure `infer`, shapes from shapes, no
kernel runs). Parameter shapes are inferred backwards from the data input by the rule each op declares
(`OpDef.param_shapes`; MXNet's ops do this in their C++ shape functions); a `0` in a declared `__shape__` or in
a creation op's `shape` (RNN begin states `(L, 0, H)`) means an unknown dimension (so does a `-1` in a declared
`__shape__`, as MXNet's np-shape files write it). A given or declared shape with a negative dimension, or more
elements than MIXNET_MAX_ELEMENTS, is refused.

Control-flow nodes hold subgraphs, inferred through `infer_subgraph`. Within one top-level inference each subgraph
is inferred once per distinct set of input shapes and dtypes (a memo), and a node's parameter rule runs only
while some input is unknown, so nested loops cost time linear in the size of the graph, not exponential in the
depth of the nesting. Across inferences, each subgraph keeps its last complete inference (`subgraph_types`): a
hybridized foreach's body is inferred when its trace is checked, and neither typing the traced graph nor
compiling the body (symbol/loop.py) infers it again.
"""
import contextvars
import threading
import weakref

import numpy as np

from ..base import MXNetError
from ..ops import common
from ..ops import shape as shape_ops
from ..serialization import DTYPE_CODES
from ..ops.attrs import parse_shape
from .._shape_mode import is_np_shape, shape_is_unknown

__all__ = ["infer_graph", "infer_subgraph", "known", "subgraph_types"]

# {(id(subgraph), input shapes, input dtypes, partial): result} for the top-level inference running in this
# context (None outside one)
_MEMO = contextvars.ContextVar("mixnet_infer_memo", default=None)


def known(shape):
    """A shape with no unknown (0) dimension."""
    return shape is not None and all(d > 0 for d in shape)


def _merge(old, new):
    """Fills the unknown (0) dims of `old` from `new`; None if they conflict."""
    if old is None:
        return tuple(new)
    if len(old) != len(new):
        return None
    out = []
    for a, b in zip(old, new):
        if a and b and a != b:
            return None
        out.append(a or b)
    return tuple(out)


def _prod(shape):
    return int(np.prod(shape)) if len(shape) else 1


def _var_shape(node):
    text = node.raw.get("__shape__")
    if text is None:
        return None
    try:
        shape = parse_shape(text)
    except ValueError:
        raise MXNetError(f"variable {node.name!r}: bad __shape__ {text!r}") from None
    return common.check_shape(tuple(0 if d == -1 else d for d in shape), f"variable {node.name!r}: __shape__")


def creation_shape(node):
    """A creation node's output shape as its `shape` attribute gives it, 0 marking unknown dims; None when even
    the rank is unknown (`()` in legacy shape mode: MXNet then takes the shape from the consumers)."""
    shape = tuple(node.attrs.get("shape", (1,)))
    if not shape_is_unknown(shape):
        return tuple(_node_infer(node, [], [])[0][0])
    if not shape and not is_np_shape():
        return None
    return tuple(0 if d in (0, -1) and (d == -1 or not is_np_shape()) else d for d in shape)


def _node_infer(node, ins, din):
    """common.infer for one node, its errors naming the node and its user line."""
    try:
        return common.infer(node.op, ins, din, node.attrs)
    except MXNetError as err:
        where = f" (created at {node.location})" if node.location else ""
        raise MXNetError(f"infer_shape error in node {node.name!r}{where}: {err}") from None


def _freeze(values, dtype=False):
    return tuple(sorted((k, np.dtype(v).str if dtype else tuple(v)) for k, v in values.items() if v is not None))


def infer_subgraph(graph, shapes, dtypes, partial):
    """infer_graph over the nodes of a subgraph Symbol, given {input name: shape} and {input name: dtype}. Within
    one top-level inference, a subgraph given the same input shapes and dtypes is inferred once, and so is one
    whose last complete inference had them (`subgraph_types`); the result is shared, so callers must not change
    it."""
    key = (id(graph), _freeze(shapes), _freeze(dtypes, True), partial)
    memo = _MEMO.get()
    if memo is not None and key in memo:
        return memo[key]
    result = None if partial else subgraph_types(graph, shapes, dtypes)
    if result is None:
        result = infer_graph(graph._nodes(), shapes, dtypes, partial)
        if not partial and _complete(graph, result):
            with _LAST_LOCK:
                _LAST[graph._outputs[0][0]] = (_last_key(graph, shapes, dtypes), result)
    if memo is not None:
        memo[key] = result
    return result


# subgraph's first output node -> (its _last_key, (entry shapes, entry dtypes)): the last complete inference of
# each subgraph, kept weakly (subgraphs are not changed once built; their compiled plans are kept the same way)
_LAST = weakref.WeakKeyDictionary()
_LAST_LOCK = threading.Lock()


def _last_key(graph, shapes, dtypes):
    # the value must not hold the first output node (the weak key) alive: the outputs go in by id
    return tuple((id(n), i) for n, i in graph._outputs), _freeze(shapes), _freeze(dtypes, True), is_np_shape()


def _complete(graph, result):
    eshape, edtype = result
    return all(known(eshape.get((id(n), k))) and (id(n), k) in edtype
               for n in graph._nodes() for k in range(n.num_outputs()))


def subgraph_types(graph, shapes, dtypes):
    """({entry: shape}, {entry: dtype}) of every entry of a subgraph from its last inference, when that was
    complete (no unknown or zero dims) and given these {input name: shape} / {input name: dtype}; else None.
    Shared: callers must not change it."""
    with _LAST_LOCK:
        last = _LAST.get(graph._outputs[0][0])
    if last is None or last[0] != _last_key(graph, shapes, dtypes):
        return None
    return last[1]


def _var_dtype(node):
    code = node.raw.get("__dtype__")
    if code is None:
        return None
    try:
        return np.dtype(DTYPE_CODES[int(code)])
    except (KeyError, ValueError):
        raise MXNetError(f"variable {node.name!r}: bad __dtype__ {code!r}") from None


def infer_graph(nodes, shapes=None, dtypes=None, partial=False):
    """Infers the output shape and dtype of every entry.

    nodes: topological order; shapes/dtypes: {variable name: shape/dtype} given by the caller. Returns
    (entry_shapes, entry_dtypes) keyed by (id(node), index); unknown ones are missing. With partial=True, unknown
    dtypes are stood in for by their neighbours' (or float32) so shapes can still be inferred. Raises MXNetError for
    inconsistent shapes (naming the node and its user line)."""
    if _MEMO.get() is not None:
        return _infer_nodes(nodes, shapes or {}, dtypes or {}, partial)
    token = _MEMO.set({})
    try:
        return _infer_nodes(nodes, shapes or {}, dtypes or {}, partial)
    finally:
        _MEMO.reset(token)


# Ops whose output has the shape of each of their inputs: shapes flow between them in both directions while some
# are unknown (MXNet's elementwise shape functions do this), so `elemwise_add(x2h, h2h)` gets its output shape from
# x2h alone and gives it back to h2h.
_SAME_SHAPE_KINDS = ("unary", "scalar", "binary")

# Output shapes from a partial data shape, for ops whose output dims each come from one known place (MXNet's
# FullyConnected gives (batch, num_hidden) with the batch still unknown, so a recurrent cell's h2h has a shape;
# SliceChannel then splits it, as mx.rnn's GRUCell does before adding i2h's known pieces).
_PARTIAL_FORWARD = {
    "FullyConnected": lambda a, s: [((s[0],) if a["flatten"] else tuple(s[:-1])) + (a["num_hidden"],)],
    "SliceChannel": lambda a, s: _partial_split(s, a["num_outputs"], a["axis"], a["squeeze_axis"]),
    "transpose": lambda a, s: [tuple(s[i] for i in _transpose_axes(a, s))],
    # an unknown (0) axis slices to an unknown one (as a Python slice of an empty axis does: 0)
    "slice": lambda a, s: [shape_ops.slice_shape(s, a["begin"], a["end"], a["step"])],
    "slice_axis": lambda a, s: [tuple(s) if not s[a["axis"] % len(s)] else
                                tuple(shape_ops._slice_axis_infer([s], [None], a["axis"], a["begin"], a["end"])[0][0])],
}


def _transpose_axes(a, shape):
    return tuple(a["axes"]) if a["axes"] else tuple(reversed(range(len(shape))))


def _transpose_back(a, ins, out):
    return {0: tuple(out[i] for i in np.argsort(_transpose_axes(a, out)))}


def _reshape_back(a, ins, out):
    """A data input with one unknown dim gets it from the output's size (MXNet's Reshape infers it backwards)."""
    data = ins[0]
    if data is None or not known(out) or sum(1 for d in data if not d) != 1:
        return {}
    rest = _prod([d for d in data if d])
    if _prod(out) % rest:
        return {}
    return {0: tuple(d or _prod(out) // rest for d in data)}


# Input shapes from a (partly) known output, for ops whose inputs the output decides (MXNet's shape functions
# fill them backwards): rule(attrs, input shapes, output shape) -> {input index: shape}.
_FROM_OUTPUT = {
    "transpose": _transpose_back,
    "Reshape": _reshape_back,
}


def _partial_split(shape, num_outputs, axis, squeeze_axis):
    axis = axis % len(shape)
    piece = tuple(shape[:axis]) + (() if squeeze_axis else (shape[axis] // num_outputs,)) + tuple(shape[axis + 1:])
    return [piece] * num_outputs


_MAX_SWEEPS = 12


def _same_shape(node):
    kind = node.op.kind
    return kind in _SAME_SHAPE_KINDS and node.num_outputs() == 1 and (kind == "binary" or len(node.inputs) == 1)


def _takes_consumer_dtype(node, slot):
    """Whether an input of unknown dtype takes the dtype of the node's other inputs: data and parameters do, and so
    does a loss's label (as MXNet infers it); indices and conditions stay unknown."""
    op = node.op
    if slot not in op.nondiff_inputs or slot in op.mutates:
        return True
    names = node.input_names()
    return slot < len(names) and names[slot] == "label"


def _where(node):
    return f"node {node.name!r}" + (f" (created at {node.location})" if node.location else "")


def _infer_nodes(nodes, shapes, dtypes, partial):
    eshape, edtype = {}, {}
    for node in nodes:
        if node.op is None:
            s = _var_shape(node)
            if node.name in shapes and shapes[node.name] is not None:
                given = common.check_shape(shapes[node.name], f"infer_shape: variable {node.name!r}")
                # a given shape overrides the declared one (MXNet's); its unknown (0) dims come from the declared
                s = given if s is None or len(s) != len(given) else tuple(g or d for g, d in zip(given, s))
            if s is not None:
                eshape[(id(node), 0)] = s
            d = dtypes.get(node.name)
            d = np.dtype(d) if d is not None else _var_dtype(node)
            if d is not None:
                edtype[(id(node), 0)] = d
        elif node.op.creates:              # an unknown part of its shape attribute stays unknown
            shape = creation_shape(node)
            if shape is not None:
                eshape[(id(node), 0)] = shape
            # the dtype does not depend on the shape: ask the op with a stand-in shape
            declared = node.attrs.get("shape")
            attrs = dict(node.attrs, shape=(1,)) if declared is not None and shape_is_unknown(declared) \
                else node.attrs
            edtype[(id(node), 0)] = np.dtype(common.infer(node.op, [], [], attrs)[1][0])
    ops = [n for n in nodes if n.op is not None and not (n.op.creates and not n.inputs)]
    state = (eshape, edtype, partial, {}, set())     # ..., the input shapes a rule last saw, the nodes inferred
    # Sweeps alternate forward and backward (shapes a consumer fixes flow back to producers) until nothing changes.
    for sweep in range(_MAX_SWEEPS):
        changed = False
        for node in ops if sweep % 2 == 0 else reversed(ops):
            if id(node) not in state[4]:
                changed = _infer_node(node, state) or changed
        if not changed:
            break
    return eshape, edtype


def _apply_rule(node, ins, state):
    """Runs the node's parameter rule (if any) while some input is unknown; fills variable/creation inputs."""
    eshape, _, _, ruled, _ = state
    rule = node.op.param_shapes
    if rule is None or all(known(s) for s in ins):
        return False
    seen = [s if known(s) or (s is not None and rule.partial) else None for s in ins]
    # a rule only fills unknown inputs, and gives the same answer for the same inputs
    if ruled.get(id(node)) == seen:
        return False
    ruled[id(node)] = seen
    changed = False
    for slot, shape in rule.rule(node.attrs, seen).items():
        if slot >= len(node.inputs):
            continue
        src, idx = node.inputs[slot]
        key = (id(src), idx)
        old = eshape.get(key)
        if known(old) or (src.op is not None and not src.op.creates and rule.variables_only):
            continue
        merged = _merge(old, shape) if old is not None else tuple(shape)
        if merged is None:
            raise MXNetError(f"infer_shape: {node.op.name} node {node.name!r} needs input "
                             f"{src.name!r} of shape {tuple(shape)}, but it is declared {old}")
        if merged != old:
            eshape[key] = ins[slot] = merged
            changed = True
    return changed


def _unify(node, keys, state):
    """Shapes of a same-shape node's inputs and output, merged; unknown dims of each filled from the others."""
    eshape = state[0]
    entries = keys + [(id(node), 0)]
    merged = None
    for i, key in enumerate(entries):
        s = eshape.get(key)
        if s is None:
            continue
        m = s if merged is None else _merge(merged, s)
        if m is None:
            what = f"input {i}" if i < len(keys) else "output"
            raise MXNetError(f"infer_shape error in {_where(node)}: {node.op.name}: incompatible shapes: {what} "
                             f"is {tuple(s)}, expected {tuple(merged)}")
        merged = m
    changed = False
    if merged is not None:
        for key in entries:
            old = eshape.get(key)
            new = merged if old is None else _merge(old, merged)
            if new != old:
                eshape[key] = new
                changed = True
    return changed


def _infer_node(node, state):
    eshape, edtype, partial, _, done = state
    keys = [(id(src), idx) for src, idx in node.inputs]
    ins = [eshape.get(k) for k in keys]
    changed = _apply_rule(node, ins, state)
    changed = _infer_from_output(node, keys, ins, state) or changed
    din = [edtype.get(k) for k in keys]
    takes = [_takes_consumer_dtype(node, slot) for slot in range(len(keys))]
    first = next((d for d, t in zip(din, takes) if d is not None and t), None)
    for slot, (src, idx) in enumerate(node.inputs):       # parameters take their consumer's dtype
        if din[slot] is None and first is not None and takes[slot] and (src.op is None or src.op.creates):
            edtype[keys[slot]] = din[slot] = first
            changed = True
    if _inputs_known(node, ins) and (partial or all(d is not None for d in din)):
        if _same_shape(node):     # the check the op's own infer leaves to its kernel (elemwise_add's shapes)
            _unify(node, keys, state)
        # shape inference needs dtypes: unknown ones get a stand-in (int32 for indices and conditions)
        din = [d or (first or np.dtype(np.float32) if t else np.dtype(np.int32)) for d, t in zip(din, takes)]
        out_shapes, out_dtypes = _node_infer(node, ins, din)
        for i, (s, d) in enumerate(zip(out_shapes, out_dtypes)):
            old = eshape.get((id(node), i))
            merged = tuple(s) if old is None else _merge(old, s)
            if merged is None:
                raise MXNetError(f"infer_shape error in {_where(node)}: {node.op.name}: output {i} has shape "
                                 f"{tuple(s)}, but its consumers need {tuple(old)}")
            eshape[(id(node), i)] = merged
            edtype[(id(node), i)] = np.dtype(d)
        done.add(id(node))
        return True
    if (id(node), 0) not in edtype:      # dtype only: the op's dtype attribute or its inputs'
        d = node.attrs.get("dtype") if node.op.dtype_attr else None
        d = np.dtype(d) if d is not None else first
        if d is not None:
            edtype[(id(node), 0)] = d
            changed = True
    if _same_shape(node):
        changed = _unify(node, keys, state) or changed
    elif node.op.name == "where":        # x, y and the output have one shape (mx.rnn's ZoneoutCell needs it)
        changed = _unify(node, keys[1:], state) or changed
    elif node.op.name in _PARTIAL_FORWARD and ins and ins[0] is not None and (id(node), 0) not in eshape:
        for i, shape in enumerate(_PARTIAL_FORWARD[node.op.name](node.attrs, ins[0])):
            eshape[(id(node), i)] = shape
        changed = True
    elif node.op.kind == "broadcast" and len(ins) == 2 and (ins[0] is not None or ins[1] is not None) \
            and (ins[0] is None or ins[1] is None or len(ins[0]) == len(ins[1])):
        changed = _broadcast_partial(node, ins, state) or changed
    return _fill_back(node, keys, ins, state) or changed


def _infer_from_output(node, keys, ins, state):
    eshape = state[0]
    rule = _FROM_OUTPUT.get(node.op.name)
    out = eshape.get((id(node), 0))
    if rule is None or out is None or all(known(s) for s in ins):
        return False
    changed = False
    for slot, shape in rule(node.attrs, ins, out).items():
        old = ins[slot]
        new = tuple(shape) if old is None else _merge(old, shape)
        if new is None:
            raise MXNetError(f"infer_shape error in {_where(node)}: {node.op.name}: input {slot} is {tuple(old)}, "
                             f"but the output {tuple(out)} needs {tuple(shape)}")
        if new != old:
            eshape[keys[slot]] = ins[slot] = new
            changed = True
    return changed


def _fill_back(node, keys, ins, state):
    """Unknown (0) dims of inputs that the node's known output decides, as MXNet's shape functions fill them
    backwards: FullyConnected's batch dims, SliceChannel's input, and a broadcasting binary op's inputs (mixnet's
    Symbol `+` stands for MXNet's elementwise one, whose inputs have the output's shape). So an RNN cell's begin
    state `zeros((0, H))` learns its batch size from `i2h(x) + h2h(state)`."""
    eshape = state[0]
    out = eshape.get((id(node), 0))
    if out is None:
        return False
    changed = False
    for slot, wanted in _decided_inputs(node, ins, tuple(out)).items():
        s = ins[slot] if ins[slot] is not None else (0,) * len(wanted)
        new = tuple(d or w for d, w in zip(s, wanted))
        if len(s) == len(wanted) and new != tuple(s):
            eshape[keys[slot]] = ins[slot] = new
            changed = True
    return changed


def _decided_inputs(node, ins, out):
    """{input slot: its shape as far as the output decides it (0 = not decided)}."""
    name, a = node.op.name, node.attrs
    if name == "FullyConnected" and ins[0] is not None:
        if a["flatten"]:
            return {0: (out[0],) + (0,) * (len(ins[0]) - 1)}
        return {0: out[:-1] + (0,)} if len(ins[0]) == len(out) else {}
    if name == "SliceChannel":
        n, squeeze = a["num_outputs"], a["squeeze_axis"]
        axis = a["axis"] % (len(out) + squeeze)
        return {0: out[:axis] + (n,) + out[axis:] if squeeze else out[:axis] + (out[axis] * n,) + out[axis + 1:]}
    if node.op.kind == "broadcast" and len(ins) == 2:
        return {slot: out for slot in (0, 1) if ins[slot] is None or len(ins[slot]) == len(out)}
    return {}


def _inputs_known(node, ins):
    """Whether the node's output shapes can be inferred: all input shapes known, or for a foreach all but its
    data's length (axis 0), which then stays unknown (0) in the outputs, as MXNet infers `(0, C, H, W)` data."""
    if all(known(s) for s in ins):
        return True
    if node.op.name != "_foreach":
        return False
    n_data = len(node.attrs["in_data_locs"])
    return all(s is not None and (known(s[1:]) if i < n_data else known(s))
               for i, s in enumerate(ins))


def _broadcast_partial(node, ins, state):
    """The output dims of a broadcasting binary op that its partial inputs decide: a dim known (> 1) on one side
    is the output's whatever the other side is, and a known 1 facing an unknown dim is too. (Symbol `+` broadcasts
    in mixnet where MXNet's is elementwise, so `i2h + h2h` must still give its shape when h2h's batch size is
    unknown, a batch of 1 included; an input of unknown rank counts as all unknown dims.)"""
    eshape = state[0]
    dims = []
    for a, b in zip(*[s if s is not None else (0,) * len(ins[1 - i]) for i, s in enumerate(ins)]):
        if a and b:
            dims.append(max(a, b) if min(a, b) == 1 else a)   # unequal non-1 dims: the op's infer says so later
        else:
            dims.append(a or b)
    old = eshape.get((id(node), 0))
    new = tuple(dims) if old is None else _merge(old, dims)
    changed = new is not None and new != old
    if changed:
        eshape[(id(node), 0)] = new
    # an unknown dim facing a known one of the output's size is that size (as MXNet's same-shape `+` infers it)
    keys = [(id(src), idx) for src, idx in node.inputs]
    for side in (0, 1):
        this, other = ins[side], ins[1 - side]
        if this is None or other is None:       # an operand of unknown rank: _fill_back gives it the output's
            continue
        filled = tuple(o if not t and o > 1 else t for t, o in zip(this, other))
        if filled != tuple(this):
            eshape[keys[side]] = filled
            changed = True
    return changed
