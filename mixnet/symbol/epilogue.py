"""The epilogue pass: fuses the elementwise work around a Dense layer's GEMMs into single nodes of a compiled graph.

* Forward: `act(FullyConnected(x, w[, b]))` -> `_fc_epilogue(x, w[, b], act_type=...)` (ops/nn_epilogue.py): the
  GEMM writes the output, then one pass adds the bias and applies the activation in place. Only when the
  FullyConnected's value is read by the activation alone and is not an output of the graph (in a training plan's
  forward part, values the backward needs are outputs, so a kept pre-activation blocks it).
* Backward: an activation's backward `dz` whose sum over the leading axes is taken by `_sum_to` (a bias gradient,
  possibly read through Reshapes) -> `_act_bwd_bias(g, data, act_type=..., shape=...)` with outputs (dz, dbias),
  computed in one pass. The activation backward is recognised in the forms the gradient rules write it:
  `_relu_bwd(g, d)`, `g * d * (1 - d)` (sigmoid), `g * (1 - d * d)` (tanh), `g * sigmoid(x)` (softrelu); its
  inner nodes must have no other readers.

Activations: Activation(act_type relu/sigmoid/tanh/softrelu) and the relu/sigmoid/tanh ops. The pass runs after
CSE and before elementwise fusion in every hybridized plan (gluon/cached_op.py), unless MIXNET_EPILOGUE=0.
"""
from ..ops import registry
from .autodiff import exact_types
from .graph import Node, graph_types, rewrite, topo_order
from .symbol import Symbol

__all__ = ["epilogue"]

_MUL = ("broadcast_mul", "elemwise_mul", "_mul")
_ACT_OPS = {"relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh"}
_ACTIVATIONS = ("relu", "sigmoid", "tanh", "softrelu")


def _is(node, *names):
    return node.op is not None and node.op.name in names


def _forward_act(node):
    """The activation a node applies, if the forward epilogue can take it."""
    if _is(node, "Activation") and node.attrs.get("act_type") in _ACTIVATIONS:
        return node.attrs["act_type"]
    return _ACT_OPS.get(node.op.name) if node.op is not None else None


def _one_minus(entry):
    """x for an entry computing `1 - x` (the _rminus_scalar that `1 - x` traces to), else None."""
    node = entry[0]
    if _is(node, "_rminus_scalar") and float(node.attrs.get("scalar", 0)) == 1.0:
        return node.inputs[0]
    return None


def _act_backward(p):
    """(act_type, grad entry, data entry, inner nodes) when node p computes an activation's backward, else None."""
    if _is(p, "_relu_bwd"):
        return "relu", p.inputs[0], p.inputs[1], []
    if not _is(p, *_MUL):
        return None
    for left, right in (p.inputs, p.inputs[::-1]):
        d = _one_minus(right)
        if d is not None and _is(left[0], *_MUL) and left[1] == 0:              # (g * d) * (1 - d)
            for g, dd in (left[0].inputs, left[0].inputs[::-1]):
                if dd == d:
                    return "sigmoid", g, d, [left[0], right[0]]
        if d is not None and _is(d[0], *_MUL) and d[0].inputs[0] == d[0].inputs[1]:   # g * (1 - d * d)
            return "tanh", left, d[0].inputs[0], [right[0], d[0]]
        if _is(right[0], "sigmoid"):                                             # g * sigmoid(x)
            return "softrelu", left, right[0].inputs[0], [right[0]]
    return None


def epilogue(symbol, shapes=None, dtypes=None):
    """Returns a new Symbol with the forward and backward epilogues fused (the input symbol is unchanged).
    shapes/dtypes: {input name: shape/dtype} of an untyped graph, to check that a reduction sums exactly the
    leading axes (a typed graph's nodes carry their types)."""
    nodes = topo_order(symbol._outputs)
    if not any(_is(n, "_sum_to") for n in nodes):         # only the backward match needs shapes
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

    def only_read_by(node, allowed):
        """node's single output is not a graph output and every reader is in `allowed` (ids)."""
        return (node.num_outputs() == 1 and (id(node), 0) not in heads
                and all(id(r) in allowed for r in readers.get((id(node), 0), ())))

    forward, backward, sums = {}, {}, {}
    for node in nodes:
        act = _forward_act(node) if node.op is not None else None
        if act is not None:
            fc, index = node.inputs[0]
            if _is(fc, "FullyConnected") and len(readers[(id(fc), index)]) == 1 and only_read_by(fc, {id(node)}):
                forward[id(node)] = (fc, act)
        if _is(node, "_sum_to"):
            match = _bias_sum(node, eshape, edtype, only_read_by)
            if match is not None and id(match[0]) not in backward:
                backward[id(match[0])] = (node,) + match[1:]

    def fold(node, inputs):
        if id(node) in forward:
            (fc, _), act = inputs[0], forward[id(node)][1]
            attrs = {k: fc.attrs[k] for k in ("num_hidden", "no_bias", "flatten")}
            fused = Node(registry.get("_fc_epilogue"), node.name, dict(attrs, act_type=act), {}, fc.inputs,
                         node.location)
            fused.types = node.types
            return fused
        if id(node) in backward:                  # the activation backward; its _sum_to comes later
            reduce, act, g, d = backward[id(node)]
            fused = Node(registry.get("_act_bwd_bias"), node.name,
                         {"act_type": act, "shape": tuple(reduce.attrs["shape"])}, {}, [g, d], node.location)
            if node.types is not None:
                fused.types = (node.types[0], reduce.types[0])
            sums[id(reduce)] = fused
            return [(fused, 0)]
        if id(node) in sums:
            return [(sums[id(node)], 1)]
        return None

    return Symbol(rewrite(symbol._outputs, fold))


def _bias_sum(reduce, eshape, edtype, only_read_by):
    """(backward node, act_type, grad entry, data entry) when the `_sum_to` node `reduce` sums an activation
    backward's result (through Reshapes) over every axis but the last, else None."""
    src, index = reduce.inputs[0]
    while _is(src, "Reshape"):
        src, index = src.inputs[0]
    if src.op is None or index != 0:
        return None
    match = _act_backward(src)
    if match is None:
        return None
    act, g, d, inner = match
    target = tuple(reduce.attrs["shape"])
    summed, shape = eshape.get((id(reduce.inputs[0][0]), reduce.inputs[0][1])), eshape.get((id(src), 0))
    if summed is None or shape is None or not target or not shape or len(target) > len(summed):
        return None
    n = target[-1]
    if summed[-1] != n or shape[-1] != n or any(t != 1 for t in target[:-1]):
        return None
    if eshape.get((id(g[0]), g[1])) != shape or eshape.get((id(d[0]), d[1])) != shape:
        return None                                      # a broadcasting product is not this pattern
    dtype = edtype.get((id(src), 0))
    if dtype is None or dtype.kind != "f" or edtype.get((id(g[0]), g[1])) != dtype \
            or edtype.get((id(d[0]), d[1])) != dtype:
        return None
    inside = {id(src)} | {id(m) for m in inner}
    if not all(only_read_by(m, inside) for m in inner):
        return None
    return src, act, g, d
