"""Memory planning for compiled graphs: value lifetimes in the straight-line schedule, the memory report, and
buffer assignment for `hybridize(static_alloc=True)`.

The schedule is the topological order the compiled code runs in (symbol/compile.py). A value is live from the
node that makes it to its last reader; the compiled code deletes it there, so the peak of live bytes is what a
call holds at most beyond its inputs. Under static_alloc, values of ops that can write into a given buffer
(`OpDef.writes_out`) and that do not leave the call (not an output, not kept for backward) get planned buffers:
one flat byte buffer per slot, reused across calls; two values share a slot when their lifetimes do not overlap
(MXNet paper §3.1, co-sharing), sized by powers of two so similar values can share.

In-place reuse (`inplace_reuse`, every compiled graph): an elementwise op writes its result over an input whose
last use it is (MXNet paper §3.1, in-place), so a chain of unfused elementwise ops touches one buffer, already in
cache, instead of allocating a new one per op.
"""
import numpy as np

from .graph import topo_order

__all__ = ["lifetimes", "report", "assign_buffers", "inplace_reuse"]


def _nbytes(shape, dtype):
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def lifetimes(symbol):
    """{(id(node), index): (first step, last step)} for every op output in the schedule; outputs of the graph
    live to the end."""
    nodes = topo_order(symbol._outputs)
    step = {id(n): k for k, n in enumerate(nodes)}
    life = {}
    for node in nodes:
        if node.op is None:
            continue
        for i in range(node.num_outputs()):
            life[(id(node), i)] = [step[id(node)], step[id(node)]]
        for src, index in node.inputs:
            if src.op is not None:
                life[(id(src), index)][1] = step[id(node)]
    for node, index in symbol._outputs:
        if node.op is not None:
            life[(id(node), index)][1] = len(nodes)
    return {k: tuple(v) for k, v in life.items()}


def report(symbol, eshape, edtype, planned=None):
    """{'naive': bytes if every intermediate value were kept, 'peak': the most bytes live at once in the
    schedule, 'outputs': bytes returned, 'planned': bytes of static buffers (None when not planned)}."""
    life = lifetimes(symbol)
    size = {k: _nbytes(eshape[k], edtype[k]) for k in life}
    nodes = topo_order(symbol._outputs)
    delta = [0] * (len(nodes) + 2)
    for key, (first, last) in life.items():
        delta[first] += size[key]
        delta[last + 1] -= size[key]
    peak, live = 0, 0
    for d in delta:
        live += d
        peak = max(peak, live)
    outputs = sum(size[(id(n), i)] for n, i in symbol._outputs if (id(n), i) in size)
    return {"naive": sum(size.values()), "peak": peak, "outputs": outputs,
            "planned": None if planned is None else sum(planned)}


def _size_class(nbytes):
    return 1 << max(int(nbytes - 1).bit_length(), 6)


def _through_views(symbol, life):
    """Lifetimes stretched over values that may be views: an op that does not declare writes_out may return a view
    of an input (Reshape, Flatten, expand_dims), so a value's memory stays in use while anything computed from it
    by such ops is live, and escapes the call when one of those is an output."""
    stretched = dict(life)
    for node in reversed(topo_order(symbol._outputs)):           # readers before their sources: transitive
        if node.op is None or node.op.writes_out:
            continue
        end = max(stretched[(id(node), i)][1] for i in range(node.num_outputs()))
        for src, index in node.inputs:
            if src.op is not None:
                first, last = stretched[(id(src), index)]
                stretched[(id(src), index)] = (first, max(last, end))
    return stretched


def assign_buffers(symbol, eshape, edtype, eligible):
    """Slots for the entries in `eligible` (non-escaping outputs of out-writing ops): returns ({entry: slot},
    [slot sizes in bytes]). Greedy in schedule order: a value takes a free slot of its size class whose previous
    value's lifetime (stretched over views of it) has ended, else a new slot; a value reaching an output through
    views gets none."""
    life = _through_views(symbol, lifetimes(symbol))
    end = len(topo_order(symbol._outputs))
    order = sorted((k for k in eligible if k in life and life[k][1] < end), key=lambda k: life[k])
    slots, free, slot_of, busy = [], {}, {}, []     # busy: (last step, slot)
    for key in order:
        first, last = life[key]
        still = []
        for end, slot in busy:
            if end < first:
                free.setdefault(slots[slot], []).append(slot)
            else:
                still.append((end, slot))
        busy = still
        need = _size_class(_nbytes(eshape[key], edtype[key]))
        if free.get(need):
            slot = free[need].pop()
        else:
            slot = len(slots)
            slots.append(need)
        slot_of[key] = slot
        busy.append((last, slot))
    return slot_of, slots


def inplace_reuse(symbol, eshape, edtype, written=()):
    """{id(node): (src, index)}: elementwise nodes that write their result over that input. The input must be
    owned by the call (made by an op that writes its own result, `writes_out`, so not a view and not a graph
    input), of the result's shape and dtype and not 0-d (numpy gives 0-d results as read-only scalars), not in `written` (entries that go into planned or caller-given
    buffers), not kept feature-major (the transpose of a C-contiguous array: symbol/epilogue.py), and read for the
    last time by this node, views of it included."""
    nodes = topo_order(symbol._outputs)
    life = _through_views(symbol, lifetimes(symbol))
    written = set(written)
    chosen = {}
    for step, node in enumerate(nodes):
        op = node.op
        if (op is None or not op.writes_out or node.num_outputs() != 1 or (id(node), 0) in written
                or (not op.elementwise and op.name != "_fused_elemwise")):
            continue
        for src, index in node.inputs:
            key = (id(src), index)
            if (src.op is not None and src.op.writes_out and key not in written and life[key][1] == step
                    and not src.attrs.get("feature_major")         # kept as a transpose: not a flat buffer
                    and eshape[key] == eshape[(id(node), 0)] != () and edtype[key] == edtype[(id(node), 0)]):
                chosen[id(node)] = (src, index)
                break
    return chosen
