"""The epilogue pass: fuses the elementwise work around a Dense layer's GEMMs, and a classifier's loss, into single
nodes of a compiled graph.

* Forward: `act(FullyConnected(x, w[, b]))` -> `_fc_epilogue(x, w[, b], act_type=...)` (ops/nn_epilogue.py): the
  GEMM writes the output, then one pass adds the bias and applies the activation in place. Only when the
  FullyConnected's value is read by the activation alone and is not an output of the graph (in a training plan's
  forward part, values the backward needs are outputs, so a kept pre-activation blocks it).
* Backward: an activation's backward `dz` whose sum over the leading axes is taken by `_sum_to` (a bias gradient,
  possibly read through Reshapes) -> `_act_bwd_bias(g, data, act_type=..., shape=...)` with outputs (dz, dbias),
  computed in one pass. The activation backward is recognised by what the activation's own gradient rule traces
  to (`_backward_pattern`: graph-mode autodiff of a one-node graph, as it traces the rule into every backward
  graph), so a rule rewritten in another form is matched in its new form; the inner nodes must have no other
  readers.

* A classifier's loss: `pick(log_softmax(x), label)` over the classes of 2-d float x (what
  SoftmaxCrossEntropyLoss traces to) -> `_log_softmax_pick(x, label)` with outputs (picked, logp), one loop; its
  other readers (the backward's saved value) read logp. Its backward, `_log_softmax_bwd(logp, scatter of pick's
  head gradient)`, is recognised as the rules of pick and log_softmax themselves trace it (`_loss_pattern`) and
  becomes `_log_softmax_pick_bwd(logp, label, g)`, one loop, no scattered (rows, classes) array in between.

* Feature-major values: a hidden activation that only the next Dense layers read (as data) and the backward keeps
  is marked `feature_major` on its `_fc_epilogue`, and so is the `_fc_data_grad` its `_act_bwd_bias` reads in
  the backward (see the section below).

Activations: Activation(act_type relu/sigmoid/tanh/softrelu) and the relu/sigmoid/tanh ops. The pass runs after
CSE and before elementwise fusion in every hybridized plan (compiler/pipeline.py), unless MIXNET_EPILOGUE=0.
"""
import numpy as np

from ..ops import registry
from ..ops.nn_epilogue import ACTS, READS_INPUT
from .autodiff import exact_types, gradient
from .graph import Node, graph_types, rewrite, topo_order
from .symbol import Symbol

__all__ = ["epilogue"]


def _is(node, *names):
    return node.op is not None and node.op.name in names


def _forward_act(node):
    """The activation a node applies, if the forward epilogue can take it (Activation, or the op of that name)."""
    if _is(node, "Activation"):
        return node.attrs["act_type"] if node.attrs.get("act_type") in ACTS else None
    return node.op.name if _is(node, *ACTS) else None


def _backward_pattern(act, shape, dtype):
    """(dz, g, data) entries of the graph that Activation(act)'s gradient rule traces to for an input of this
    shape and dtype: dz computed from the head gradient g and `data`, which is what `_act_bwd_bias` reads (the
    activation's output, or its input for READS_INPUT)."""
    x = Node(None, "x")
    y = Node(registry.get("Activation"), "act", {"act_type": act}, {"act_type": act}, [(x, 0)])
    x.types = y.types = ((tuple(shape), np.dtype(dtype)),)
    (dz,), heads = gradient(Symbol([(y, 0)]), ["x"], is_train=True)
    return dz, (heads[0], 0), (x, 0) if act in READS_INPUT else (y, 0)


def _match(pattern, entry, bound, matched):
    """Whether `entry` computes what the pattern's entry does: the same ops with the same attributes over inputs
    that match in turn, down to the pattern's leaves, which stand for any entry (the same one at each use).
    bound: {(id(leaf), index): the entry it stands for, or None while unbound}; matched: {id(pattern node): node},
    filled in (a pattern node matches one node, though two pattern nodes may match the same one after CSE)."""
    pnode, pindex = pattern
    key = (id(pnode), pindex)
    if key in bound:
        if bound[key] is None:
            bound[key] = entry
        return bound[key][0] is entry[0] and bound[key][1] == entry[1]
    node, index = entry
    if id(pnode) in matched:
        return matched[id(pnode)] is node and index == pindex
    if (pnode.op is None or node.op is not pnode.op or index != pindex or node.attrs != pnode.attrs
            or len(node.inputs) != len(pnode.inputs)):
        return False
    matched[id(pnode)] = node
    return all(_match(p, e, bound, matched) for p, e in zip(pnode.inputs, node.inputs))


def _act_backward(p, shape, dtype, patterns):
    """(act_type, grad entry, data entry, inner nodes) when node p computes an activation's backward for a value
    of this shape and dtype, else None. patterns: {(act, shape, dtype): _backward_pattern(...)}, filled in."""
    for act in ACTS:
        key = (act, shape, dtype)
        if key not in patterns:
            patterns[key] = _backward_pattern(act, shape, dtype)
        (root, index), g, d = patterns[key]
        bound, matched = {(id(g[0]), g[1]): None, (id(d[0]), d[1]): None}, {}
        if root.op is not None and _match((root, index), (p, 0), bound, matched):
            return act, bound[(id(g[0]), g[1])], bound[(id(d[0]), d[1])], [n for n in matched.values() if n is not p]
    return None


def epilogue(symbol, shapes=None, dtypes=None, internal_outputs=()):
    """Returns a new Symbol with the forward and backward epilogues fused (the input symbol is unchanged).
    shapes/dtypes: {input name: shape/dtype} of an untyped graph, to check that a reduction sums exactly the
    leading axes (a typed graph's nodes carry their types). internal_outputs: positions of the outputs that only
    mixnet reads (a training forward's saved values), which may be laid out feature-major."""
    nodes = topo_order(symbol._outputs)
    if not any(_is(n, "_sum_to", "pick", "_log_softmax_bwd") for n in nodes):    # only these matches need shapes
        eshape, edtype = {}, {}
    elif shapes is None:
        eshape, edtype = graph_types(symbol._outputs)
    else:
        eshape, edtype = exact_types(symbol, shapes, dtypes)
    readers = {}
    for node in nodes:
        for src, index in node.inputs:
            readers.setdefault((id(src), index), []).append(node)
    heads = {(id(n), i) for n, i in symbol._outputs}
    user_heads = {(id(n), i) for k, (n, i) in enumerate(symbol._outputs) if k not in internal_outputs}

    def only_read_by(node, allowed):
        """node's single output is not a graph output and every reader is in `allowed` (ids)."""
        return (node.num_outputs() == 1 and (id(node), 0) not in heads
                and all(id(r) in allowed for r in readers.get((id(node), 0), ())))

    forward, backward, sums, patterns = {}, {}, {}, {}
    feature_major = set()           # ids of the forward activations and data gradients computed feature-major
    loss_of, loss_picks, loss_backward = {}, {}, {}      # log_softmax -> its pick; pick -> fused; bwd root -> match
    for node in nodes:
        act = _forward_act(node) if node.op is not None else None
        if act is not None:
            fc, index = node.inputs[0]
            if _is(fc, "FullyConnected") and len(readers[(id(fc), index)]) == 1 and only_read_by(fc, {id(node)}):
                forward[id(node)] = (fc, act)
                if _read_as_dense_data(node, readers, user_heads):
                    feature_major.add(id(node))
        if _is(node, "_sum_to"):
            match = _bias_sum(node, eshape, edtype, only_read_by, patterns)
            if match is not None and id(match[0]) not in backward:
                backward[id(match[0])] = (node,) + match[1:]
                grad = _feature_major_grad(match, readers, heads)
                if grad is not None:
                    feature_major.add(id(grad))
        if _is(node, "pick"):
            lsm = _log_softmax_picked(node, eshape, edtype, readers)
            if lsm is not None:
                loss_of[id(lsm)] = node
        if _is(node, "_log_softmax_bwd"):
            match = _log_softmax_pick_backward(node, eshape, edtype, only_read_by, patterns)
            if match is not None:
                loss_backward[id(node)] = match

    def fold(node, inputs):
        if id(node) in forward:
            (fc, _), act = inputs[0], forward[id(node)][1]
            attrs = {k: fc.attrs[k] for k in ("num_hidden", "no_bias", "flatten")}
            attrs.update(act_type=act, feature_major=id(node) in feature_major)
            fused = Node(registry.get("_fc_epilogue"), node.name, attrs, {}, fc.inputs, node.location)
            fused.types = node.types
            return fused
        if id(node) in feature_major:             # a data gradient that an activation backward reads
            return node.clone(inputs, attrs=dict(node.attrs, feature_major=True))
        if id(node) in backward:                  # the activation backward; its _sum_to comes later
            reduce, act, g, d, _ = backward[id(node)]
            fused = Node(registry.get("_act_bwd_bias"), node.name,
                         {"act_type": act, "shape": tuple(reduce.attrs["shape"])}, {}, [g, d], node.location)
            if node.types is not None:
                fused.types = (node.types[0], reduce.types[0])
            sums[id(reduce)] = fused
            return [(fused, 0)]
        if id(node) in sums:
            return [(sums[id(node)], 1)]
        if id(node) in loss_of:                   # the log_softmax; its pick comes later, reading output 0
            pick = loss_of[id(node)]
            fused = Node(registry.get("_log_softmax_pick"), pick.name,
                         {"keepdims": pick.attrs["keepdims"], "mode": pick.attrs["mode"]}, {},
                         [node.inputs[0], pick.inputs[1]], pick.location)
            if node.types is not None and pick.types is not None:
                fused.types = (pick.types[0], node.types[0])
            loss_picks[id(pick)] = fused
            return [(fused, 1)]
        if id(node) in loss_picks:
            return [(loss_picks[id(node)], 0)]
        if id(node) in loss_backward:
            logp, index, grad, mode = loss_backward[id(node)]
            fused = Node(registry.get("_log_softmax_pick_bwd"), node.name, {"mode": mode}, {},
                         [logp, index, grad], node.location)
            fused.types = node.types
            return [(fused, 0)]
        return None

    return Symbol(rewrite(symbol._outputs, fold))


# ---------------------------------------------------------------------------------------------------------
# feature-major values. OpenBLAS computes a Dense layer's (rows, N) GEMM faster as its transpose, weight @ data.T,
# when the layer is wide against the batch: 4-5% at (128, 512), up to 28% at 8 rows, and nothing from rows ~ N on
# (benchmarks/README.md). A hidden activation of such a shape, read only by the next Dense layers (as their data)
# and by the backward, is therefore computed that way and kept as the transpose of a C-contiguous (N, rows) array;
# the next layer's GEMM reads it as is, and in the backward its data gradient is written feature-major too, so
# that the activation backward reads two arrays of one layout (both cost a little more than row-major: hence the
# shape rule, which the forward and the backward apply to the same value's shape). Only the layout changes: every
# kernel computes the same values for either, and a mismatch (an array that stayed row-major) costs a copy, never
# a wrong result.
def _wide_enough(shape):
    """Whether a (rows, N) value gains from being feature-major: N at least 4 * rows, two rows at least."""
    return len(shape) == 2 and shape[0] >= 2 and shape[1] >= 4 * shape[0]


def _read_as_dense_data(act, readers, user_heads):
    """Whether the activation's 2-d float value, of a shape _wide_enough, is read, inside the graph, only as the
    data of FullyConnected nodes (one at least), and is not an output the user gets."""
    entry = (id(act), 0)
    if act.types is None or not _wide_enough(act.types[0][0]) or act.types[0][1].kind != "f" \
            or entry in user_heads:
        return False
    readers = readers.get(entry, ())
    return bool(readers) and all(_is(r, "FullyConnected") and r.inputs[0] == (act, 0)
                                 and (act, 0) not in r.inputs[1:] for r in readers)


def _feature_major_grad(match, readers, heads):
    """The `_fc_data_grad` node that computes the head gradient of the activation backward matched by _bias_sum,
    when that backward is its only reader and the activation's value, of a shape _wide_enough, comes from the
    forward part (a variable, `_saved{k}`), else None."""
    _, _, (g, gi), (d, di), inside = match
    if d.op is not None or d.types is None or not _wide_enough(d.types[di][0]):
        return None
    while True:                     # the rule's Reshape of the gradient to the data's shape, an identity here
        if (id(g), gi) in heads or not all(id(r) in inside for r in readers.get((id(g), gi), ())):
            return None
        if not _is(g, "Reshape"):
            return g if _is(g, "_fc_data_grad") else None
        src, index = g.inputs[0]
        if g.types is None or src.types is None or g.types[0][0] != src.types[index][0]:
            return None
        inside, g, gi = inside | {id(g)}, src, index


def _bias_sum(reduce, eshape, edtype, only_read_by, patterns):
    """(backward node, act_type, grad entry, data entry, ids of the backward's nodes) when the `_sum_to` node
    `reduce` sums an activation backward's result (through Reshapes) over every axis but the last, else None."""
    src, index = reduce.inputs[0]
    while _is(src, "Reshape"):
        src, index = src.inputs[0]
    if src.op is None or index != 0:
        return None
    target = tuple(reduce.attrs["shape"])
    summed, shape = eshape.get((id(reduce.inputs[0][0]), reduce.inputs[0][1])), eshape.get((id(src), 0))
    if summed is None or shape is None or not target or not shape or len(target) > len(summed):
        return None
    n = target[-1]
    if summed[-1] != n or shape[-1] != n or any(t != 1 for t in target[:-1]):
        return None
    dtype = edtype.get((id(src), 0))
    if dtype is None or dtype.kind != "f":
        return None
    match = _act_backward(src, tuple(shape), dtype, patterns)
    if match is None:
        return None
    act, g, d, inner = match
    if eshape.get((id(g[0]), g[1])) != shape or eshape.get((id(d[0]), d[1])) != shape:
        return None                                      # a broadcasting product is not this pattern
    if edtype.get((id(g[0]), g[1])) != dtype or edtype.get((id(d[0]), d[1])) != dtype:
        return None
    inside = {id(src)} | {id(m) for m in inner}
    if not all(only_read_by(m, inside) for m in inner):
        return None
    return src, act, g, d, inside


# ---------------------------------------------------------------------------------------------------------
# a classifier's loss: pick(log_softmax(x)) -> _log_softmax_pick, and its backward -> _log_softmax_pick_bwd
def _rows_and_classes(entry, eshape, edtype):
    """(shape, dtype) of a 2-d float entry, else None."""
    shape, dtype = eshape.get(entry), edtype.get(entry)
    if shape is None or len(shape) != 2 or dtype is None or dtype.kind != "f":
        return None
    return tuple(shape), dtype


def _log_softmax_picked(pick, eshape, edtype, readers):
    """The log_softmax node when the pick node takes one class per row of log_softmax(x) over the last axis of 2-d
    float data x, and is that log_softmax's only pick (its other readers, saved values, read the fused node's
    logp); else None."""
    lsm, index = pick.inputs[0]
    if index != 0 or not _is(lsm, "log_softmax") or len(lsm.inputs) != 1:
        return None
    a = lsm.attrs
    if a.get("temperature") is not None or a.get("dtype") is not None or a.get("use_length"):
        return None
    typed = _rows_and_classes((id(lsm), 0), eshape, edtype)
    if typed is None or a.get("axis", -1) % 2 != 1 or pick.attrs.get("axis") is None or pick.attrs["axis"] % 2 != 1:
        return None
    (rows, _), _ = typed
    label = pick.inputs[1]
    if eshape.get((id(label[0]), label[1])) not in ((rows,), (rows, 1)):
        return None
    if sum(1 for r in readers.get((id(lsm), 0), ()) if _is(r, "pick")) != 1:
        return None
    if any(n is lsm for n in topo_order([label])):    # an index computed from logp (its argmax): the fused node,
        return None                                   # made where log_softmax is, cannot read it yet
    return lsm


def _loss_pattern(shape, dtype, index_shape, index_dtype, keepdims, mode):
    """(dx, g, logp, index) entries of the graph that the gradient rules of pick(log_softmax(x)) trace to: dx
    computed from pick's head gradient g, log_softmax's output logp and the index."""
    x, label = Node(None, "x"), Node(None, "label")
    lsm = Node(registry.get("log_softmax"), "lsm", {"axis": -1, "temperature": None, "dtype": None,
                                                    "use_length": False}, {}, [(x, 0)])
    pick = Node(registry.get("pick"), "pick", {"axis": -1, "keepdims": keepdims, "mode": mode}, {},
                [(lsm, 0), (label, 0)])
    x.types = lsm.types = ((shape, dtype),)
    label.types = ((index_shape, index_dtype),)
    pick.types = (((shape[0], 1) if keepdims else (shape[0],), dtype),)
    (dx,), heads = gradient(Symbol([(pick, 0)]), ["x"], is_train=True)
    return dx, (heads[0], 0), (lsm, 0), (label, 0)


def _log_softmax_pick_backward(node, eshape, edtype, only_read_by, patterns):
    """(logp, index, grad entries, mode) when the `_log_softmax_bwd` node computes the gradient that the rules of
    pick(log_softmax(x)) trace to (the pattern derived from the rules themselves, _loss_pattern), else None."""
    typed = _rows_and_classes((id(node), 0), eshape, edtype)
    scatter = node.inputs[1][0]
    if typed is None or not _is(scatter, "_put_along_axis_add") or scatter.attrs.get("mode") not in ("clip", "wrap"):
        return None
    shape, dtype = typed
    # the index and head gradient reach the scatter through Reshapes in the rules as they are written; their
    # shapes key the pattern, which is then matched whole
    leaves = []
    for src, index in scatter.inputs:
        while _is(src, "Reshape"):
            src, index = src.inputs[0]
        leaves.append((id(src), index))
    grad_shape, index_shape = eshape.get(leaves[0]), eshape.get(leaves[1])
    if index_shape not in ((shape[0],), (shape[0], 1)) or grad_shape not in ((shape[0],), (shape[0], 1)):
        return None
    key = ("loss", shape, dtype, index_shape, edtype.get(leaves[1]), grad_shape, scatter.attrs["mode"])
    if key not in patterns:
        patterns[key] = _loss_pattern(shape, dtype, index_shape, edtype.get(leaves[1]), len(grad_shape) == 2,
                                      scatter.attrs["mode"])
    (root, index), g, logp, label = patterns[key]
    bound, matched = {(id(g[0]), g[1]): None, (id(logp[0]), logp[1]): None, (id(label[0]), label[1]): None}, {}
    if root.op is None or not _match((root, index), (node, 0), bound, matched):
        return None
    inner = [n for n in matched.values() if n is not node]
    inside = {id(node)} | {id(m) for m in inner}
    if not all(only_read_by(m, inside) for m in inner):
        return None
    found = [bound[(id(e[0]), e[1])] for e in (logp, label, g)]
    return (*found, scatter.attrs["mode"])
