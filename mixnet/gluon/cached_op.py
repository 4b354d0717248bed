"""The CachedOp: how a traced graph runs — compiled, and recorded on the autograd tape as ONE node per call.

For one input signature (cached_graph.CachedGraph) there are two kinds of plan:

* `InferencePlan` (autograd not recording, or nothing to differentiate): the forward graph through the compiler's
  pass pipeline (mixnet/compiler: cse -> epilogue -> drop_identity_reshapes -> fuse -> memory), compiled to
  straight-line Python (mixnet/symbol/compile.py). Fused kernels missing from the on-disk cache compile in a
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
import dataclasses
import operator
import threading

import numpy as np

from .._source import warn
from .. import autograd, compiler, config
from .. import random as mx_random
from .._mode import MODE
from ..ndarray.ndarray import _wrap
from ..ops.common import call
from ..ops.registry import OpDef
from ..symbol import autodiff, fuse
from ..symbol.executor import run_graph
from ..symbol.graph import Node, rewrite, topo_order
from ..symbol.symbol import Symbol
from ..codegen import cache

IDLE_BUFFER_SETS = 8        # planned buffer sets a plan keeps for later calls (more only while more calls run)
_DATA = operator.attrgetter("_data")


class _Compiled:
    """One CompiledPlan of a plan's graph (swapped in whole, so a call never sees half of one) and its pool.

    With static_alloc, a call takes a buffer set of its own (see "Threads" in the module docstring): `_idle` holds
    the compiled graphs, each writing into its own planned buffers, that no call is running."""
    __slots__ = ("_idle", "plan", "run")

    def __init__(self, plan):
        self.plan = plan
        self._idle = [plan.code]
        # nothing planned: calls share no buffer and run the compiled graph itself (one Python frame less)
        self.run = plan.code if not plan.slots else self._run_pooled

    def _run_pooled(self, arrays, is_train, dests):
        try:
            graph = self._idle.pop()         # atomic: two threads never take the same set
        except IndexError:                   # every set is in use by calls running in other threads
            graph = self.plan.code.with_buffers(self.plan.new_buffers())
        try:
            return graph(arrays, is_train, dests)
        finally:
            if len(self._idle) < IDLE_BUFFER_SETS:
                self._idle.append(graph)


class InferencePlan:
    """One typed graph (compiler.Graph) through the compiler's pipeline and compiled. With static_alloc, outputs of
    ops that can write into given buffers and that stay inside the call get planned buffers (symbol/memory.py),
    allocated once and reused.

    Fused kernels take Numba seconds to compile the first time, so by default (config.COMPILE_BACKGROUND) the plan
    starts with the unfused compiled graph and a background thread runs the rest of the pipeline (fuse ->
    memory) and compiles; calls switch to the fused version when it is ready (`wait_fused()` blocks until then).
    destinations: `run` may be given buffers to write outputs into (a backward writing gradients into their
    buffers; CompiledGraph)."""

    def __init__(self, graph, ctx, options, destinations=False):
        base, plan = compiler.compile_plan(graph, dataclasses.replace(options, fusion=False), ctx, destinations)
        self._current = _Compiled(plan)
        self._fusing = None
        if options.fusion:
            cache.usable_dir()             # checked here, so that a warning about it points at the user's call
        if options.fusion and fuse.may_fuse(base.symbol):      # else no thread only to find nothing to fuse
            if config.COMPILE_BACKGROUND:
                self._fusing = threading.Thread(target=self._fuse, args=(base, options, ctx, destinations, True),
                                                daemon=True, name="mixnet-fusion")
                self._fusing.start()
            else:
                self._fuse(base, options, ctx, destinations, False)

    def _fuse(self, base, options, ctx, destinations, elsewhere):
        """Fuses and compiles, then swaps the fused plan in (compiler.fused_plan)."""
        try:
            plan = compiler.fused_plan(base, options, ctx, destinations, elsewhere)
            if plan is not None:
                self._current = _Compiled(plan)
        except Exception as err:       # the unfused graph gives the same results: keep it, say why
            if threading.current_thread() is threading.main_thread():
                raise
            warn(f"mixnet: fusing a hybridized graph failed ({type(err).__name__}: {err}); it keeps "
                 "running unfused")

    def wait_fused(self):
        if self._fusing is not None:
            self._fusing.join()

    @property
    def symbol(self):
        return self._current.plan.graph

    @property
    def compiled(self):
        return self._current.plan.code

    @property
    def fused_groups(self):
        return self._current.plan.fused_groups

    @property
    def planned_bytes(self):
        """Bytes of one set of static_alloc buffers (None without static_alloc)."""
        slots = self._current.plan.slots
        return None if slots is None else int(sum(slots))

    def run(self, arrays, is_train, dests=None):
        return self._current.run(arrays, is_train, dests)

    def memory_report(self):
        """Bytes: 'naive' (every intermediate kept), 'peak' (most live at once in the compiled schedule),
        'outputs' (returned), 'planned' (static buffers, None without static_alloc)."""
        return self._current.plan.memory_report()


class TrainingPlan:
    """Forward and backward of one typed graph (compiler.Graph) for one gradient mask, compiled."""

    def __init__(self, graph, mask, ctx, is_train, options, mirror=False):
        symbol, names = graph.symbol, list(graph.names)
        self.graph = symbol                    # what a create_graph backward replays, and get_symbol inlines
        self.names = names
        self.wrt = [n for n, m in zip(names, mask) if m]
        self.wrt_set = set(self.wrt)
        self.ctx = ctx
        self.n_out = len(symbol._outputs)
        grads, head_vars = autodiff.gradient(symbol, self.wrt, is_train, ctx)
        forward_ids = {id(n) for n in topo_order(symbol._outputs)}
        mirrored = {id(n) for n in topo_order(symbol._outputs) if _recomputable(n)} if mirror else set()
        for k, var in head_vars.items():       # each head's gradient has its output's type
            node, index = symbol._outputs[k]
            var.types = (node.types[index],)
        # the backward graph reads forward values through variables `_saved{k}`: kept from the forward call
        # ("saved"), or, for mirrored nodes, recomputed in the backward from what is saved
        backward, present, saved = _rebuild(grads, forward_ids, mirrored)
        self.grad_present = present
        saved_ops = [e for e in saved if e[0].op is not None]
        self.saved_inputs = [names.index(e[0].name) for e in saved if e[0].op is None]
        order = saved_ops + [e for e in saved if e[0].op is None]
        forward = dataclasses.replace(graph, symbol=Symbol(list(symbol._outputs) + saved_ops),
                                      internal_outputs=frozenset(range(self.n_out, self.n_out + len(saved_ops))))
        self.forward = InferencePlan(forward, ctx, options)
        variables = {n.name: n for n in (backward._nodes() if backward is not None else ()) if n.op is None}
        self.head_index = sorted(k for k, var in head_vars.items() if variables.get(var.name) is var)
        heads = [head_vars[k].name for k in self.head_index]
        saved_names = [f"_saved{saved.index(e)}" for e in order]
        self.backward = None
        if backward is not None:               # its new nodes are typed here, the rest carry their types
            backward_graph = compiler.typed_graph(backward, heads + saved_names, {}, {})
            self.backward = InferencePlan(backward_graph, ctx, options, destinations=True)
        self.saved_bytes = sum(int(np.prod(n.types[i][0], dtype=np.int64)) * n.types[i][1].itemsize
                               for n, i in saved_ops)
        self.random = self.forward.compiled.random
        self.mutated = [names[k] for k in self.forward.compiled.mutated]
        # per call, by position in `names`: the inputs whose versions the forward bumps, those recorded on the tape
        self._mutated_positions = list(self.forward.compiled.mutated)
        self._recorded_positions = [k for k, name in enumerate(names) if name in self.wrt_set]
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
        # this runs on every recorded call: map over C functions and plain loops, no comprehension frames
        arrays = list(map(_DATA, inputs))
        results = self.forward._current.run(arrays, is_train, None)
        given = set(map(id, arrays))
        outputs = []
        for r in results[:self.n_out]:
            outputs.append(_wrap(r.copy() if id(r) in given else r, ctx))   # an input returned as is: a copy
        outputs = tuple(outputs)
        for k in self._mutated_positions:
            inputs[k]._bump_version()
        saved = list(results[self.n_out:])
        saved += map(arrays.__getitem__, self.saved_inputs)
        attrs = {"saved": saved, "inputs": inputs, "rng_state": rng_state, "inline_limit": inline_limit}
        recorded = tuple(map(inputs.__getitem__, self._recorded_positions))
        autograd._record(self.op, attrs, recorded, outputs, is_train)
        return outputs

    def _grad_rule(self, ctx, *out_grads):
        if MODE.get().recording:
            return self._replay_gradients(ctx, out_grads)
        if self.backward is None:
            return (None,) * len(ctx.inputs)
        arrays = [out_grads[i]._data for i in self.head_index]
        arrays += ctx.attrs["saved"]
        results = self.backward._current.run(arrays, ctx.is_train, self._grad_destinations(ctx, arrays))
        device = ctx.inputs[0]._ctx if ctx.inputs else self.ctx
        grads, k = [], 0
        for present in self.grad_present:     # every backward call: a loop, no comprehension frame
            if present:
                grads.append(_wrap(results[k], device))
                k += 1
            else:
                grads.append(None)
        return tuple(grads)

    def _grad_destinations(self, ctx, arrays):
        """Per backward output, the gradient buffer it can be written into directly (autograd.backward offers the
        buffers of leaves with grad_req 'write' and this one contribution: GradContext.grad_buffer), or None. A
        buffer that the backward also reads (a gradient passed back in as data) is not used."""
        offered = ctx._destinations
        if not offered:
            return None
        dests, any_dest, read = [], False, None
        for present, x in zip(self.grad_present, ctx.inputs):
            if present:
                buf = offered.get(id(x))
                if buf is not None:
                    if read is None:           # the allocations the backward reads (a view's base is its owner)
                        read = {id(a if a.base is None else a.base) for a in arrays}
                    data = x._data
                    if (buf.shape != data.shape or buf.dtype != data.dtype
                            or id(buf if buf.base is None else buf.base) in read):
                        buf = None
                    else:
                        any_dest = True
                dests.append(buf)
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
                outs = run_graph(self.graph, values, self.ctx)
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
    stands_for = {}                          # id(variable) -> the forward entry it stands for

    def cut(node, inputs):
        if id(node) not in forward_ids or id(node) in mirrored:
            return None                      # backward nodes, mirrored forward nodes; head gradient variables
        variables = [Node(None, "_saved") for _ in range(node.num_outputs())]
        for k, var in enumerate(variables):
            stands_for[id(var)] = (node, k)
            var.types = None if node.types is None else (node.types[k],)
        return [(var, 0) for var in variables]

    outputs = rewrite([g for g in grads if g is not None], cut)
    saved = []
    for node in topo_order(outputs):         # the variables the backward reads, numbered in schedule order
        if id(node) in stands_for:
            node.name = f"_saved{len(saved)}"
            saved.append(stands_for[id(node)])
    return (Symbol(outputs) if outputs else None), [g is not None for g in grads], saved
