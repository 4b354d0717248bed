"""The CachedOp: how a traced graph runs — compiled, and recorded on the autograd tape as ONE node per call.

For one input signature (cached_graph.CachedGraph) there are two kinds of plan:

* `InferencePlan` (autograd not recording, or nothing to differentiate): the CSE'd, fused forward graph compiled
  to straight-line Python (mixnet/symbol/compile.py). Fused kernels missing from the on-disk cache compile in a
  child process while the first calls run the unfused graph (config.COMPILE_BACKGROUND), then swap in.
* `TrainingPlan`, one per *gradient mask* (which graph inputs are being differentiated: a data input without
  attach_grad gets no gradient computed, a frozen parameter neither). Graph-mode autodiff
  (mixnet/symbol/autodiff.py) gives the backward graph from the registry's rules; the joint graph is split into
  a forward part, which also returns the values the backward needs ("saved"), and a backward part reading the
  saved values and the outputs' incoming gradients. Both parts are CSE'd, fused and compiled. A call runs the
  forward and records one tape node whose gradient rule runs the compiled backward.

Higher-order gradients through a hybridized block (`autograd.grad(..., create_graph=True)`) replay the forward
op by op on the tape from the recorded inputs (the random generators rewound, running statistics untouched) and
differentiate that, so every order works exactly as eagerly.

Threads. A plan may run calls from several threads at once; each gets the results of a sequential call. What a
call writes is its own (fresh outputs and saved values, its own tape node: the autograd tape and the recording
mode are per thread, contextvars), except static_alloc's planned buffers, which every call of a plan writes. So
each `_Compiled` keeps a pool of buffer sets: a call takes a set no other call is using (a list pop, atomic) or,
when all are busy, makes one (a new arena and the compiled code run again over it, no rendering:
CompiledGraph.with_buffers), and gives it back afterwards; a plan keeps at most IDLE_BUFFER_SETS idle sets. So
memory grows by one set per call running at the same time, as it would without static_alloc. The alternative, a
lock around each plan's run (what MXNet's CachedOp does in its static forward), measured the same alone and
worse with threads (about the same on the tiny net, whose calls hold the GIL throughout). Measured with
static_alloc=True, interleaved runs in fresh processes (before / pool / a lock per plan), BLAS 1 thread,
MIXNET_COMPILE_BACKGROUND=0, on 2 vCPUs shared with other jobs: ms per call (4 threads: wall time / all calls),
median of 5 rounds at load 2.6-3.6 | best of 8 rounds at load 3.9-7.2:

                                      1 thread: before       pool       lock    4 threads: before*       pool       lock
    Dense 32-64-64-10, batch 8 (us)          101 | 108   104 | 73    95 | 71             163 | 115   147 | 75   124 | 74
    MLP 784-512-512-10, batch 128            2.9 | 3.5  3.3 | 2.8  2.8 | 2.4             2.3 | 4.2  2.0 | 3.2  3.0 | 3.4
    LeNet, batch 64                            13 | 16    15 | 12    14 | 13               11 | 17    10 | 14    15 | 20
    MLP training step                        7.7 | 6.8  9.7 | 5.8   10 | 5.9              6.4 | 15  6.1 | 7.2   7.7 | 11
    (* before: the 4 threads got wrong results; the training step includes the loss and backward)

One thread: equal within the noise (the order changes between the two runs); the take-and-return alone costs
0.1-0.15 us per call against 0.45-0.7 us for an uncontended lock (timeit around a call that does nothing). Four
threads: the lock makes calls wait while one holds it in BLAS or numpy code that releases the GIL; the pool lets
them overlap.

Gradients are shared state: `backward()` writes a parameter's gradient into the parameter's gradient buffer (and a
compiled backward writes it there directly), so concurrent backward passes over the same Parameter race on that
buffer, as in any framework: not supported (each call's outputs, and `autograd.grad` results, which are fresh
arrays, are still right). Training separate nets in separate threads is. Random ops draw from their device's one
generator, so threads interleave its stream; running statistics (BatchNorm in training) are parameters too. On a
GPU a call returns before its kernels finish and its set goes back to the pool: the next call's kernels that
write it queue behind them on cupy's default stream, which every thread shares unless the user gives threads
streams of their own (cupy's per-thread default stream), which this does not support.
"""
import copy
import threading
import warnings

import numpy as np

from .. import autograd, config
from .. import random as mx_random
from ..ndarray.ndarray import _wrap
from ..ops.common import call
from ..ops.registry import OpDef
from ..symbol import autodiff, memory, passes
from ..symbol.compile import CompiledGraph
from ..symbol.epilogue import epilogue
from ..symbol.executor import creation_shapes, run_graph
from ..symbol.fuse import fuse
from ..symbol.graph import Node, topo_order
from ..symbol.symbol import Symbol

GRAPH_PASSES = ("cse",)
_ONE_COMPILER = threading.Lock()
IDLE_BUFFER_SETS = 8        # planned buffer sets a plan keeps for later calls (more only while more calls run)


def _fused_count(symbol):
    return sum(1 for n in symbol._nodes() if n.op is not None and n.op.name == "_fused_elemwise")


class _Compiled:
    """One compiled version of a plan's graph (swapped in whole, so a call never sees half of one).

    With static_alloc, a call takes a buffer set of its own (see "Threads" in the module docstring): `_idle` holds
    the compiled graphs, each writing into its own planned buffers, that no call is running."""
    __slots__ = ("symbol", "types", "slots", "graph", "fused_groups", "_ctx", "_slot_of", "_idle")

    def __init__(self, symbol, names, shapes, dtypes, ctx, static_alloc, destinations):
        self.symbol = symbol
        self._ctx = ctx
        self.fused_groups = _fused_count(symbol)
        self.types = autodiff.exact_types(symbol, shapes, dtypes)
        self._slot_of, self.slots = _plan_buffers(symbol, *self.types) if static_alloc else ({}, None)
        self.graph = CompiledGraph(symbol, names, ctx, creation_shapes(symbol, shapes, dtypes),
                                   self._new_buffers(), destinations, self.types)
        self._idle = [self.graph]

    def _new_buffers(self):
        return _allocate(self._slot_of, self.slots or [], *self.types, self._ctx)

    def run(self, arrays, is_train, dests):
        if not self._slot_of:                # nothing planned: calls share no buffer
            return self.graph(arrays, is_train, dests)
        try:
            graph = self._idle.pop()         # atomic: two threads never take the same set
        except IndexError:                   # every set is in use by calls running in other threads
            graph = self.graph.with_buffers(self._new_buffers())
        try:
            return graph(arrays, is_train, dests)
        finally:
            if len(self._idle) < IDLE_BUFFER_SETS:
                self._idle.append(graph)


class InferencePlan:
    """One graph, CSE'd, fused and compiled. With static_alloc, outputs of ops that can write into given buffers
    and that stay inside the call get planned buffers (symbol/memory.py), allocated once and reused.

    Fused kernels take Numba seconds to compile the first time, so by default (config.COMPILE_BACKGROUND) the plan
    starts with the unfused compiled graph and a background thread fuses and compiles; calls switch to the fused
    version when it is ready (`wait_fused()` blocks until then). destinations: `run` may be given buffers to write
    outputs into (a backward writing gradients into their buffers; CompiledGraph)."""

    def __init__(self, symbol, names, shapes, dtypes, ctx, fusion, static_alloc=False, destinations=False):
        base = passes.run(symbol, GRAPH_PASSES)
        if config.EPILOGUE:
            base = epilogue(base, shapes, dtypes)
        base = passes.drop_identity_reshapes(base, *autodiff.exact_types(base, shapes, dtypes))
        self._device = ctx.device_type
        self._build = lambda sym: _Compiled(sym, names, shapes, dtypes, ctx, static_alloc, destinations)
        self._current = self._build(base)
        self._fusing = None
        if fusion:
            from ..codegen import cache
            cache.usable_dir()             # checked here, so that a warning about it points at the user's call
            if config.COMPILE_BACKGROUND:
                self._fusing = threading.Thread(target=self._fuse, args=(base, shapes, dtypes, True),
                                                daemon=True, name="mixnet-fusion")
                self._fusing.start()
            else:
                self._fuse(base, shapes, dtypes, False)

    def _fuse(self, base, shapes, dtypes, elsewhere):
        """Fuses and compiles, then swaps the fused graph in. elsewhere: compile the kernels that are not in the
        on-disk cache yet in a child process (codegen/precompile.py), then only load them here."""
        try:
            device = self._device
            fused, groups = fuse(base, shapes, dtypes, device=device, compile_now=not elsewhere)
            if not groups:
                return
            if elsewhere and device == "cpu":          # CUDA kernels compile at their first launch instead
                from ..codegen import precompile
                eshape, _ = autodiff.exact_types(fused, shapes, dtypes)
                jobs = [(n.attrs["kernel"], n.attrs["kernel"].variant_for(int(np.prod(eshape[(id(n), 0)]))))
                        for n in fused._nodes() if n.op is not None and n.op.name == "_fused_elemwise"]
                with _ONE_COMPILER:                    # one compiling child at a time: the machine has few cores
                    pending = [job for job in jobs if not precompile.is_cached(job[0])]
                    if pending:
                        precompile.compile_elsewhere(pending)
                for kernel, variant in jobs:
                    kernel.ensure_compiled(variant)
            self._current = self._build(fused)
        except Exception as err:       # the unfused graph gives the same results: keep it, say why
            if threading.current_thread() is threading.main_thread():
                raise
            warnings.warn(f"mixnet: fusing a hybridized graph failed ({type(err).__name__}: {err}); it keeps "
                          "running unfused")

    def wait_fused(self):
        if self._fusing is not None:
            self._fusing.join()

    @property
    def symbol(self):
        return self._current.symbol

    @property
    def compiled(self):
        return self._current.graph

    @property
    def fused_groups(self):
        return self._current.fused_groups

    @property
    def planned_bytes(self):
        """Bytes of one set of static_alloc buffers (None without static_alloc)."""
        slots = self._current.slots
        return None if slots is None else int(sum(slots))

    def run(self, arrays, is_train, dests=None):
        return self._current.run(arrays, is_train, dests)

    def memory_report(self):
        """Bytes: 'naive' (every intermediate kept), 'peak' (most live at once in the compiled schedule),
        'outputs' (returned), 'planned' (static buffers, None without static_alloc)."""
        current = self._current
        return memory.report(current.symbol, *current.types, current.slots)


def _plan_buffers(symbol, eshape, edtype):
    """({entry: slot}, [slot sizes in bytes]) for the values that may take planned buffers (memory.py)."""
    heads = {(id(n), i) for n, i in symbol._outputs}
    eligible = [(id(n), i) for n in symbol._nodes() if n.op is not None and n.op.writes_out
                for i in range(n.num_outputs()) if (id(n), i) not in heads]
    return memory.assign_buffers(symbol, eshape, edtype, eligible)


def _allocate(slot_of, slots, eshape, edtype, ctx):
    """One buffer set: a flat byte arena per slot, and {entry: a view of its slot's arena}."""
    arenas = [ctx.xp.empty(size, dtype=np.uint8) for size in slots]
    views = {}
    for key, slot in slot_of.items():
        dtype, shape = np.dtype(edtype[key]), eshape[key]
        count = int(np.prod(shape, dtype=np.int64))
        views[key] = arenas[slot][:count * dtype.itemsize].view(dtype).reshape(shape)
    return views


class TrainingPlan:
    """Forward and backward of one graph for one gradient mask, compiled."""

    def __init__(self, symbol, names, mask, shapes, dtypes, ctx, is_train, fusion, static_alloc=False,
                 mirror=False):
        self.plan = symbol
        self.names = names
        self.wrt = [n for n, m in zip(names, mask) if m]
        self.wrt_set = set(self.wrt)
        self.ctx = ctx
        self.n_out = len(symbol._outputs)
        grads, head_vars = autodiff.gradient(symbol, self.wrt, shapes, dtypes, is_train, ctx)
        forward_ids = {id(n) for n in topo_order(symbol._outputs)}
        mirrored = {id(n) for n in topo_order(symbol._outputs) if _recomputable(n)} if mirror else set()
        # the backward graph reads forward values through variables `_saved{k}`: kept from the forward call
        # ("saved"), or, for mirrored nodes, recomputed in the backward from what is saved
        backward, present, saved = _rebuild(grads, forward_ids, mirrored)
        self.grad_present = present
        saved_ops = [e for e in saved if e[0].op is not None]
        self.saved_inputs = [names.index(e[0].name) for e in saved if e[0].op is None]
        order = saved_ops + [e for e in saved if e[0].op is None]
        forward = Symbol(list(symbol._outputs) + saved_ops)
        self.forward = InferencePlan(forward, names, shapes, dtypes, ctx, fusion, static_alloc)
        variables = {n.name: n for n in (backward._nodes() if backward is not None else ()) if n.op is None}
        self.head_index = sorted(k for k, var in head_vars.items() if variables.get(var.name) is var)
        heads = [head_vars[k].name for k in self.head_index]
        saved_names = [f"_saved{saved.index(e)}" for e in order]
        bshapes, bdtypes = _backward_types(symbol, saved, heads, shapes, dtypes)
        self.backward = (InferencePlan(backward, heads + saved_names, bshapes, bdtypes, ctx, fusion, static_alloc,
                                       destinations=True) if backward is not None else None)
        eshape, edtype = autodiff.exact_types(symbol, shapes, dtypes)
        self.saved_bytes = sum(int(np.prod(eshape[(id(n), i)], dtype=np.int64)) * edtype[(id(n), i)].itemsize
                               for n, i in saved_ops)
        self.random = self.forward.compiled.random
        self.mutated = [names[k] for k in self.forward.compiled.mutated]
        self.op = OpDef(name="_CachedOp", kernel=None, grad=self._grad_rule, num_outputs=self.n_out,
                        doc="a hybridized block's call")

    # ------------------------------------------------------------------ running
    def run(self, inputs, is_train, inline_limit=None):
        """inputs: the NDArrays of every graph input (in `names` order). Returns the output NDArrays, recorded
        as one tape node over the differentiated inputs. `inline_limit` (the block's hybridize option): the most
        ops for which autograd.get_symbol shows the graph itself rather than one _CachedOp node; None: always."""
        ctx = self.ctx
        rng_state = None
        if self.random:
            rng_state = copy.deepcopy(mx_random._state(ctx).bit_generator.state)
        arrays = [x._data for x in inputs]
        results = self.forward.run(arrays, is_train)
        outputs = tuple(_wrap(r, ctx) for r in results[:self.n_out])
        for out, r in zip(outputs, results):
            if any(r is a for a in arrays):           # an input returned as is: give the caller its own array
                out._data = r.copy()
        for name in self.mutated:
            inputs[self.names.index(name)]._bump_version()
        saved = list(results[self.n_out:]) + [arrays[k] for k in self.saved_inputs]
        attrs = {"saved": saved, "inputs": inputs, "rng_state": rng_state, "inline_limit": inline_limit}
        recorded = tuple(x for x, name in zip(inputs, self.names) if name in self.wrt_set)
        autograd._record(self.op, attrs, recorded, outputs, is_train)
        return outputs

    def _grad_rule(self, ctx, *out_grads):
        if autograd.is_recording():
            return self._replay_gradients(ctx, out_grads)
        if self.backward is None:
            return (None,) * len(ctx.inputs)
        heads = [out_grads[i]._data for i in self.head_index]
        arrays = heads + ctx.attrs["saved"]
        results = iter(self.backward.run(arrays, ctx.is_train, self._grad_destinations(ctx, arrays)))
        device = ctx.inputs[0].context if ctx.inputs else self.ctx
        return tuple(_wrap(next(results), device) if present else None for present in self.grad_present)

    def _grad_destinations(self, ctx, arrays):
        """Per backward output, the gradient buffer it can be written into directly (autograd.backward offers the
        buffers of leaves with grad_req 'write' and this one contribution), or None. A buffer that the backward
        also reads (a gradient passed back in as data) is not used."""
        dests, any_dest, read = [], False, None
        for present, x in zip(self.grad_present, ctx.inputs):
            if present:
                buf = ctx.grad_buffer(x)
                if buf is not None:
                    if read is None:           # the allocations the backward reads (a view's base is its owner)
                        read = {id(a if a.base is None else a.base) for a in arrays}
                    if (tuple(buf.shape) != tuple(x.shape) or buf.dtype != x.dtype
                            or id(buf if buf.base is None else buf.base) in read):
                        buf = None
                dests.append(buf)
                any_dest = any_dest or buf is not None
        return dests if any_dest else None

    def _replay_gradients(self, ctx, out_grads):
        """create_graph=True: replays the forward on the tape and differentiates it with the eager rules."""
        inputs = ctx.attrs["inputs"]
        wrt = self.wrt_set
        values, proxies = {}, []
        state = mx_random._state(self.ctx).bit_generator
        now = copy.deepcopy(state.state) if ctx.attrs["rng_state"] is not None else None
        with autograd.record(train_mode=ctx.is_train):
            for name, x in zip(self.names, inputs):
                if name in wrt:
                    proxy = call("_copy", x)
                    proxies.append(proxy)
                    values[name] = proxy
                else:
                    values[name] = x.copy() if name in self.mutated else x.detach()
            if now is not None:
                state.state = ctx.attrs["rng_state"]
            try:
                outs = run_graph(self.plan, values, self.ctx)
            finally:
                if now is not None:
                    state.state = now
        return tuple(autograd.local_gradients(outs, list(out_grads), proxies))


def _recomputable(node):
    """Mirroring: elementwise ops are recomputed in the backward instead of kept, as MXNet's mirror option does
    (one more pass over memory buys one activation less to hold between forward and backward)."""
    op = node.op
    return (op is not None and op.elementwise and not op.random
            and not op.mutates and node.num_outputs() == 1)


def _rebuild(grads, forward_ids, mirrored):
    """The backward Symbol over new nodes. Forward entries it reads become variables `_saved{k}`, except those of
    `mirrored` nodes, which are cloned into it (reading their own inputs the same way). Returns (symbol or None,
    [whether each gradient exists], [saved forward entries, k-th is `_saved{k}`])."""
    memo, saved_vars, saved = {}, {}, []

    def entry(src, index):
        if id(src) in forward_ids and id(src) not in mirrored:
            key = (id(src), index)
            if key not in saved_vars:
                saved_vars[key] = Node(None, f"_saved{len(saved)}")
                saved.append((src, index))
            return saved_vars[key], 0
        return clone(src), index

    def clone(node):
        if node.op is None:
            return node                       # head gradient variables
        new = memo.get(id(node))
        if new is None:
            new = memo[id(node)] = Node(node.op, node.name, node.attrs, node.raw,
                                        [entry(s, i) for s, i in node.inputs], node.location)
        return new

    for g in grads:
        if g is not None:                      # clone iteratively in topological order (deep graphs)
            for node in topo_order([g]):
                if node.op is not None and id(node) not in forward_ids:
                    clone(node)               # mirrored forward nodes are cloned on demand, from entry()
    outputs = [entry(*g) for g in grads if g is not None]
    return (Symbol(outputs) if outputs else None), [g is not None for g in grads], saved


def _backward_types(symbol, saved, heads, shapes, dtypes):
    eshape, edtype = autodiff.exact_types(symbol, shapes, dtypes)
    bshapes, bdtypes = {}, {}
    for name in heads:
        node, index = symbol._outputs[int(name[len(autodiff.head_grad_name(0)) - 1:])]
        bshapes[name], bdtypes[name] = eshape[(id(node), index)], edtype[(id(node), index)]
    for k, (node, index) in enumerate(saved):
        bshapes[f"_saved{k}"], bdtypes[f"_saved{k}"] = eshape[(id(node), index)], edtype[(id(node), index)]
    return bshapes, bdtypes
