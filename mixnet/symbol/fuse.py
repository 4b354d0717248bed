"""The elementwise fusion pass: maximal groups of elementwise ops with scalar templates become one node that
runs a generated kernel (mixnet/codegen: Numba on the CPU, CUDA through cupy on a GPU) — one pass over memory
instead of one per op.

A group is a connected set of fusible nodes (an op with a scalar template, one output, a float32/float64 result
of one common shape; inputs may broadcast) grown greedily in topological order so that no path leaves the group
and comes back (the contracted graph stays acyclic). The fused node is the hidden op `_fused_elemwise`; its
outputs are the members used outside the group. Fusion is numerically within the approximations' stated ulp
bounds of the unfused graph (codegen/approx.py). It runs after graph-mode autodiff, on forward and backward
graphs alike (gluon/cached_op.py), so the fused node needs no gradient rule.

A group whose one result is read only by a `sum`, `mean` or `_sum_to` (the gradient of broadcasting) over all,
leading or trailing axes (codegen/reduction.py) takes the reduction in too, on CPU plans: its kernel adds each
value into the reduced result instead of writing the full-size intermediate (codegen/numba_reduce.py); a single
elementwise op then fuses as well (`sum(x * y)`). MIXNET_FUSE_REDUCE=0 turns this off.
"""
import math

import numpy as np

from .. import config
from ..codegen.backend import compile_for
from ..ops import registry
from .graph import FOLDED, Node, graph_types, rewrite, topo_order
from .symbol import Symbol
from .typed import typed


def unfusible_reason(node, eshape, edtype):
    """Why `node` cannot join a fused group, in words (HybridBlock.explain() shows it), or None when it can."""
    op = node.op
    if op is None or op.scalar is None or not op.elementwise:
        return "not an elementwise op with a scalar template"
    if op.variadic or op.random:
        return "takes any number of inputs" if op.variadic else "random op"
    if op.n_outputs(node.attrs) != 1 or (id(node), 0) not in eshape:
        return "more than one output"
    dtype = edtype.get((id(node), 0))
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        return f"{dtype} result (fused kernels are float32 or float64)"
    if any(edtype.get((id(src), i)) != dtype for src, i in node.inputs):
        return "inputs of another dtype than its result"
    return None


def _fusible(node, eshape, edtype):
    return unfusible_reason(node, eshape, edtype) is None


def _groups(nodes, fusible, eshape):
    """Greedy grouping in topological order. A fusible node joins its producers' groups (same output shape),
    merging them, unless one of its other inputs depends on such a group: joining would then close a path
    group -> outside -> group, and the contracted graph would have a cycle. `reads[n]` is the set of groups n
    depends on, transitively; group ids go through a union-find because groups merge."""
    parent = []

    def find(g):
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    group_of, reads = {}, {}
    for node in nodes:
        depends = set()
        for src, _ in node.inputs:
            depends |= reads.get(id(src), set())
            if id(src) in group_of:
                depends.add(group_of[id(src)])
        reads[id(node)] = depends
        if not fusible[id(node)]:
            continue
        joined = None
        for src, _ in node.inputs:
            if id(src) not in group_of or eshape[(id(src), 0)] != eshape[(id(node), 0)]:
                continue
            g = find(group_of[id(src)])
            outside = [o for o, _ in node.inputs if id(o) not in group_of or find(group_of[id(o)]) != g]
            if any(g in {find(d) for d in reads.get(id(o), ())} for o in outside):
                continue                                    # a path g -> outside -> node exists
            if joined is None:
                joined = g
            elif g != joined:
                parent[g] = joined                          # both feed this node directly: one group
        if joined is None:
            joined = len(parent)
            parent.append(joined)
        group_of[id(node)] = joined
    groups = {}
    for node in nodes:
        if id(node) in group_of:
            groups.setdefault(find(group_of[id(node)]), []).append(node)
    return list(groups.values())


# Row sums fuse only for rows of at least the reduce kernel's lane span (numba_reduce.LANES * FLUSH = 4096 values):
# shorter rows take its float64 path, measured 1.26-1.40x slower than the fused group followed by numpy's row sums
# (sum(tanh(x*0.5+1)*x, axis=1), rows of 1000). Tests lower it to reach the kernels with small shapes.
MIN_FUSED_ROW = 4096


def _fusible_reduction(output, consumers, heads, eshape, edtype):
    """The node reducing the group's only result `output`, with its ir.Reduction, when it can join the group:
    it is the result's only reader, a sum/mean/_sum_to over all, leading or trailing axes, of the same dtype."""
    from ..codegen.ir import Reduction  # lazy: codegen loads only when a graph is fused
    from ..codegen.reduction import plan  # lazy: codegen loads only when a graph is fused
    readers = consumers.get(id(output), ())
    if id(output) in heads or len({id(r) for r in readers}) != 1:
        return None
    node = readers[0]
    shape = eshape[(id(output), 0)]
    found = node.op.reduction(node.attrs, shape) if node.op is not None and node.op.reduction else None
    if found is None or edtype.get((id(node), 0)) != edtype[(id(output), 0)]:
        return None
    layout = plan(shape, found[1])
    if layout is None:
        return None
    if layout == "trailing" and math.prod(shape[a] for a in found[1]) < MIN_FUSED_ROW:
        return None
    return node, Reduction(found[0], layout, node.op.name, node.location)


def _fusible_nodes(nodes, eshape, edtype, min_size=None):
    """{id(node): whether it may join a group}: fusible, with a result of min_size elements at least (default
    config.FUSE_MIN_SIZE)."""
    min_size = config.FUSE_MIN_SIZE if min_size is None else min_size
    return {id(n): _fusible(n, eshape, edtype) and int(np.prod(eshape[(id(n), 0)])) >= min_size for n in nodes}


def may_fuse(symbol):
    """Whether `fuse` could make a group of this typed graph: it has a node that may join one. Cheap (no codegen,
    no Numba), so that a plan with nothing to fuse starts no thread to find that out (gluon/cached_op.py)."""
    nodes = topo_order(symbol._outputs)
    return any(_fusible_nodes(nodes, *graph_types(symbol._outputs)).values())


def fuse(symbol, shapes=None, dtypes=None, device="cpu", min_size=None, compile_now=True):
    """Returns (fused symbol, number of fused groups). shapes/dtypes: {input name: shape/dtype} of an untyped
    graph (a typed graph's nodes carry their types). `device` ('cpu' or 'gpu') picks the backend each group is
    compiled for now (Numba or CUDA through cupy); the fused node runs on either, compiling the group for the
    other backend on first use (codegen/backend.py). Groups whose result has fewer than min_size elements (default
    config.FUSE_MIN_SIZE) stay unfused; compile_now=False leaves Numba kernels to be compiled by the caller
    (Kernel.ensure_compiled)."""
    if shapes is not None:
        symbol = typed(symbol, shapes, dtypes)
    nodes = topo_order(symbol._outputs)
    eshape, edtype = graph_types(symbol._outputs)
    fusible = _fusible_nodes(nodes, eshape, edtype, min_size)
    if not any(fusible.values()):
        return symbol, 0
    candidates = _groups(nodes, fusible, eshape)
    from ..codegen.ir import group_from_nodes  # lazy: codegen loads only when a graph is fused
    consumers = {}
    for node in nodes:
        for src, _ in node.inputs:
            consumers.setdefault(id(src), []).append(node)
    heads = {id(n) for n, _ in symbol._outputs}
    fused_op = registry.get("_fused_elemwise")
    group_of, groups = {}, 0
    for members in candidates:
        inside = {id(m) for m in members}
        outputs = [m for m in members if id(m) in heads
                   or any(id(c) not in inside for c in consumers.get(id(m), ()))]
        # GPU plans keep reductions unfused: the CUDA backend renders elementwise loops only (a plan fused
        # here that later runs on cupy arrays reduces with cupy after the CUDA kernel: reduction.py)
        reduction = (_fusible_reduction(outputs[0], consumers, heads, eshape, edtype)
                     if config.FUSE_REDUCE and device == "cpu" and len(outputs) == 1 else None)
        if len(members) < 2 and reduction is None:
            continue                                 # one op alone gains nothing from a kernel of its own
        group, externals = group_from_nodes(members, outputs, dtype=edtype[(id(members[0]), 0)].name)
        if reduction is not None:
            reducer, group.reduce = reduction
            from ..codegen.reduction import FusedReduction  # lazy: codegen loads only when a graph is fused
            kernel = FusedReduction(compile_for(device, group, compile_now), eshape[(id(reducer), 0)],
                                    np.prod(eshape[(id(outputs[0]), 0)]))
            members, outputs = members + [reducer], [reducer]
        else:
            kernel = compile_for(device, group, compile_now)
        # the fused node reads the group's external inputs in the old graph; rewrite points them at the new one
        # "group": this graph's own steps and source lines (the kernel may be a cached one built for an earlier
        # graph with the same ops, whose group names that graph's lines): what graph()/explain()/plot_network show
        fused = Node(fused_op, f"{outputs[-1].name}_fused",
                     {"kernel": kernel, "group": group, "num_outputs": len(outputs)},
                     {"ops": "+".join(m.op.name for m in members)}, externals, members[-1].location)
        fused.types = tuple(out.types[0] for out in outputs)
        position = {id(out): k for k, out in enumerate(outputs)}
        for m in members:
            group_of[id(m)] = (fused, position.get(id(m)))
        groups += 1
    if not groups:
        return symbol, 0

    def replace(node, inputs):
        if id(node) not in group_of:
            return None
        fused, k = group_of[id(node)]
        return FOLDED if k is None else [(fused, k)]

    return Symbol(rewrite(symbol._outputs, replace)), groups
