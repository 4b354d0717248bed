"""What `hybridize()` does: trace a HybridBlock into a Symbol graph per input signature and run the graph.

A call's signature is the nesting of its arguments, each array's shape, dtype and device, and the training
mode. On a new signature the block's own `hybrid_forward` (with F = mx.sym) or 2.0-style `forward` runs once
with symbol variables (parameters trace as their variables, children inline), giving a graph that is cached.
Calls run it compiled, as one op on the autograd tape (gluon/cached_op.py: graph-mode autodiff, fusion,
straight-line code). Python control flow on traced values fails at the user's line with a pointer to
contrib.cond / foreach / while_loop.
"""
import contextvars
import logging
import operator
import threading
import time

import numpy as np

from .._source import warn
from .. import _logging, _nest, autograd, compiler, config
from .._mode import MODE
from .._nest import mxnet_format, unflatten  # noqa: F401  (gluon.block and the compiler use them from here)
from ..base import MXNetError, dtype_name
from ..codegen import backend
from ..context import current_context
from ..ndarray.ndarray import NDArray, _wrap
from ..symbol import passes
from ..symbol.contrib import TRACE_SHAPES
from ..symbol.symbol import TRACE_CONSTANTS
from . import cached_op
from .check_mode import checked_call
from ..symbol import Symbol
from .. import symbol
from ..symbol.executor import run_graph
from .utils import InvalidArgument

_LOG = logging.getLogger(__name__)     # MIXNET_LOG_COMPILES: one DEBUG record per trace
TRACING = contextvars.ContextVar("mixnet_hybridize_tracing", default=False)
EAGER = contextvars.ContextVar("mixnet_hybridize_eager", default=False)   # a hybridized ancestor runs eagerly


_array_leaf = _nest.leaf_of(NDArray)


def _symbol_leaf(x):
    if x is None:
        return [], None
    if not isinstance(x, Symbol):
        return None
    n = len(x.list_outputs())
    return ([x], "x") if n == 1 else ([x[i] for i in range(n)], ("tuple", ("x",) * n))


def flatten(args, leaf=_array_leaf, what="hybridized blocks take NDArrays, None and lists/tuples of them"):
    """Nested lists/tuples of leaves (and None) -> (flat list of leaves, structure description): mixnet/_nest.py."""
    return _nest.flatten(args, leaf, what)


def signature(flat, structure):
    ctx = flat[0].context if flat else None
    return (structure, tuple((tuple(a.shape), dtype_name(a.dtype)) for a in flat), ctx,
            autograd.is_training())


class _Constant:
    """An array made inside a traced forward, read by the graph like a parameter (never differentiated)."""
    __slots__ = ("_data", "value")

    def __init__(self, value):
        self.value = value
        self._data = self      # what _param_arrays watches: a constant stands for itself


    def data(self, ctx=None):
        return self.value


class CachedGraph:
    """One traced graph: the symbol, its input names, how to regroup its outputs, and its compiled plans
    (gluon/cached_op.py): one for inference, one per gradient mask for recorded calls, each made on first use."""

    def __init__(self, block, args):
        flat, structure = flatten(args)
        self.in_structure = structure
        input_names = ["data"] if len(flat) == 1 else [f"data{i}" for i in range(len(flat))]
        sym_inputs = [symbol.var(n) for n in input_names]
        shapes = {n: tuple(a.shape) for n, a in zip(input_names, flat)}
        shapes.update((name, tuple(p.shape)) for name, p in block.collect_params().items() if p.shape)
        constants = {}
        tokens = TRACING.set(True), TRACE_SHAPES.set(shapes), TRACE_CONSTANTS.set(constants)
        try:
            out = block.forward(*unflatten(list(sym_inputs), structure))
        finally:
            for var, token in zip((TRACING, TRACE_SHAPES, TRACE_CONSTANTS), tokens):
                var.reset(token)
        outs, self.out_structure = flatten(out, _symbol_leaf, "a hybridized forward returns arrays or lists")
        traced = outs[0] if len(outs) == 1 else symbol.Group(outs)
        params = block.collect_params()
        missing = [n for n in traced.list_inputs() if n not in input_names and n not in params
                   and n not in constants]
        if missing:
            raise MXNetError(f"{type(block).__name__} {block.name!r}: the traced graph uses {missing}, which "
                             "are not parameters of this block (was a parameter created inside forward?)")
        self._prepare(traced, input_names, params, flat, constants, block._flags)

    @classmethod
    def from_symbol(cls, symbol, input_names, params, flat, flags):
        """A graph for an existing Symbol (SymbolBlock): inputs `input_names` take `flat`, in order; every other
        variable is read from params ({name: Parameter}). Outputs come back as a list."""
        graph = cls.__new__(cls)
        graph.in_structure = None
        graph.out_structure = ("list", ("x",) * len(symbol._outputs))
        graph._prepare(symbol, list(input_names), params, flat, {}, flags)
        return graph

    def _prepare(self, symbol, input_names, params, flat, constants, flags):
        self.symbol = symbol                                                   # as traced (what export writes)
        self.graph = passes.cse(symbol)             # what check mode interprets and the compiler starts from
        self.input_names = input_names
        self.ctx = flat[0].context if flat else current_context()
        self.constants = {n: c.as_in_context(self.ctx) for n, c in constants.items()}
        self.param_names = [n for n in symbol.list_inputs() if n not in input_names]
        self.params = [_Constant(self.constants[n]) if n in self.constants else params[n] for n in self.param_names]
        self.names = self.input_names + self.param_names
        self.is_train = autograd.is_training()
        self.shapes = {n: tuple(a.shape) for n, a in zip(self.input_names, flat)}
        self.dtypes = {n: np.dtype(a.dtype) for n, a in zip(self.input_names, flat)}
        for name, p in zip(self.param_names, self.params):
            data = p.data(self.ctx)
            self.shapes[name], self.dtypes[name] = tuple(data.shape), np.dtype(data.dtype)
        self.fusion = backend.fuses(self.ctx.device_type)   # Numba kernels on CPU, CUDA through cupy on GPU
        self.static_alloc = bool(flags.get("static_alloc", False))
        self.mirror = bool(flags.get("mirror", config.MIRROR))
        self.inline_limit = flags.get("inline_limit", 2)   # autograd.get_symbol inlines graphs this small
        self._typed_graph = None
        self._param_cache = None               # see _param_arrays
        self._inference = None
        self._training = {}
        self._building = threading.Lock()      # threads making a plan's first call at once build it once
        self.calls = 0                         # for compiled_plans(): runs of this graph
        self.trace_seconds = 0.0               # set by _trace
        self.build_seconds = 0.0               # making its plans (fusing in the background not included)

    def _typed(self):
        """The graph every plan of this signature starts from: `graph`, typed once (compiler.typed_graph)."""
        if self._typed_graph is None:
            self._typed_graph = compiler.typed_graph(self.graph, self.names, self.shapes, self.dtypes, done=("cse",))
        return self._typed_graph

    def _options(self):
        return compiler.Options(device=self.ctx.device_type, fusion=self.fusion, static_alloc=self.static_alloc)

    @property
    def inference(self):
        if self._inference is None:
            with self._building:
                if self._inference is None:
                    start = time.perf_counter()
                    self._inference = cached_op.InferencePlan(self._typed(), self.ctx, self._options())
                    self.build_seconds += time.perf_counter() - start
        return self._inference

    def training(self, mask):
        plan = self._training.get(mask)
        if plan is None:
            with self._building:
                plan = self._training.get(mask)
                if plan is None:
                    start = time.perf_counter()
                    plan = self._training[mask] = cached_op.TrainingPlan(
                        self._typed(), mask, self.ctx, self.is_train, self._options(), self.mirror)
                    self.build_seconds += time.perf_counter() - start
        return plan

    def built_plans(self):
        """The compiled plans made so far, each as (kind, [its InferencePlans]): ('inference', [plan]) and one
        ('training', [forward, backward]) per gradient mask."""
        plans = [("inference", [self._inference])] if self._inference is not None else []
        for plan in list(self._training.values()):
            plans.append(("training", [plan.forward] + ([plan.backward] if plan.backward is not None else [])))
        return plans

    def gradient_mask(self, flat):
        """The mask a recorded call on `flat` differentiates: the inputs that have autograd nodes (data with
        attach_grad, parameters that take gradients)."""
        return _gradient_mask(self._inputs(flat))

    def _inputs(self, flat):
        return list(flat) + self._param_arrays()

    def _param_arrays(self):
        """Each parameter's array on this graph's device (Parameter.data(ctx), which checks and selects). The
        selection is kept while every parameter keeps its list of per-device arrays (initialization, cast and
        reset_ctx replace it), so a call re-selects only after one of those. (map over operator functions: this
        runs on every call, and C-level checks cost no Python frame per parameter.)"""
        lists = list(map(_DATA, self.params))
        cached = self._param_cache
        if cached is not None and all(map(operator.is_, lists, cached[0])):
            return list(cached[1])
        arrays = [p.data(self.ctx) for p in self.params]      # raises for a parameter without data
        self._param_cache = (lists, arrays)
        return list(arrays)

    def run(self, block, flat):
        """Runs the compiled graph: one tape node per call when autograd records, plain kernels otherwise."""
        self.calls += 1
        inputs = list(flat) + self._param_arrays()
        mode = MODE.get()
        if mode.recording:
            mask = _gradient_mask(inputs)
            if True in mask:
                plan = self._training.get(mask) or self.training(mask)
                outs = plan.run(inputs, mode.training, self.inline_limit)
                return outs[0] if self.out_structure == "x" else unflatten(list(outs), self.out_structure)
        results = self.inference.run(list(map(_DATA, inputs)), mode.training)
        outs = [_wrap(r.copy() if any(r is x._data for x in inputs) else r, self.ctx) for r in results]
        return unflatten(outs, self.out_structure)

    def interpret(self, block, flat, monitor=None):
        """Runs the graph op by op through the dispatch door (each op recorded like eager code): check mode
        and op hooks (monitor(node, inputs, outputs) after each node) observe this run."""
        self.calls += 1
        outs = run_graph(self.graph, dict(zip(self.names, self._inputs(flat))), self.ctx, monitor)
        return unflatten(list(outs), self.out_structure)


_DATA = operator.attrgetter("_data")
_NODE = operator.attrgetter("_node")


def _gradient_mask(inputs):
    """(whether each input has an autograd node), without a Python frame per input."""
    return tuple(map(operator.is_not, map(_NODE, inputs), [None] * len(inputs)))


def input_kinds(args, kwargs):
    """Which of 'NDArray' and 'Symbol' a call's (nested) arguments hold; raises if they mix both (MXNet's
    ValueError: a block runs either on arrays or symbolically, never both at once)."""
    kinds = set()

    def visit(x):
        if isinstance(x, (list, tuple)):
            for item in x:
                visit(item)
        elif isinstance(x, Symbol):
            kinds.add("Symbol")
        elif isinstance(x, NDArray):
            kinds.add("NDArray")

    visit(list(args) + list(kwargs.values()))
    if len(kinds) == 2:
        raise InvalidArgument("a HybridBlock's inputs are all Symbols or all NDArrays; got both (mixed NDArray "
                              "and Symbol inputs are not supported, as in MXNet)")
    return kinds


def call_symbolic(block, args, kwargs):
    """`block(mx.sym.var('data'))`: the block's graph on the given Symbols, as MXNet 1.x returns it. The
    forward runs as hybridize() traces it (F = mx.sym, each parameter as its `Parameter.var()`, children
    inline, node names under the block's prefix), hybridized or not; nothing is cached or compiled."""
    token = TRACING.set(True)
    try:
        return block.forward(*args, **kwargs)
    finally:
        TRACING.reset(token)


def retrace_reason(key, known):
    """Why `key` needed a trace of its own: how it differs from the nearest known signature (the one differing
    in the fewest respects; the newest of those)."""
    if not known:
        return "first call"
    what = ("argument structure", "shapes or dtypes", "device", "training mode")

    def changes(other):
        return [k for k in range(4) if key[k] != other[k]]

    nearest = min(reversed(list(known)), key=lambda other: len(changes(other)))
    return "new " + "; new ".join(f"{what[k]} ({_difference(k, nearest[k], key[k])})" for k in changes(nearest))


def _difference(field, old, new):
    if field == 1 and len(old) == len(new):           # shapes and dtypes: only the inputs that changed
        return ", ".join(f"input {i}: {a[0]} {a[1]} -> {b[0]} {b[1]}"
                         for i, (a, b) in enumerate(zip(old, new)) if a != b)
    return f"{old} -> {new}"


def has_hooks_below(block):
    return any(child._forward_hooks or child._forward_pre_hooks or has_hooks_below(child)
               for child in block._children.values())


_BLOCKS_CHANGED = [0]     # bumped whenever any block gains a child or a forward hook, or loses a hook


def blocks_changed():
    """Called by gluon.Block when a child is registered or a forward hook added or detached: every block's
    CallIndex (whose entries hold only while no child below the block has hooks) starts over."""
    _BLOCKS_CHANGED[0] += 1


class CallIndex(dict):
    """{call key: CachedGraph} for a hybridized block's calls on plain NDArray positional arguments: what the
    repeated call of a training loop finds without the general path (`call_hybridized`: flattening, the
    argument-structure and device checks, the signature with its dtype names and hashed Context, the walk
    looking for hooks below). The key is the training mode and each argument's buffer shape, buffer dtype and
    id(Context); an entry is added only after the general path ran that exact call, and it keeps the
    Contexts it names alive (so their ids stay theirs). The index holds while the block keeps its
    `_cached_graphs` dict (hybridize, register_child and clearing replace it) and no block anywhere changed its
    children or forward hooks (`blocks_changed`); a fresh one replaces it otherwise. A copy (pickle,
    deepcopy) starts empty: its block re-traces."""
    __slots__ = ("graphs", "version")

    LIMIT = 64               # entries: a loop making a new Context object per call must not grow it forever

    def __init__(self, graphs=None, version=-1):
        super().__init__()
        self.graphs, self.version = graphs, version

    def __reduce__(self):
        return CallIndex, ()


MISS = object()


def fast_call(block, args):
    """(result, None) when `args` (positional, every one exactly an NDArray) match a call the block's CallIndex
    knows and nothing asks for the general path (an op hook, check mode, tracing, an eager ancestor); else
    (MISS, key), key being what call_hybridized should index the call under (None: do not index it)."""
    index = block._call_index
    if index is None or index.graphs is not block._cached_graphs or index.version != _BLOCKS_CHANGED[0]:
        index = block._call_index = CallIndex(block._cached_graphs, _BLOCKS_CHANGED[0])
    if block._op_hook is not None or block._checks_left > 0 or TRACING.get() or EAGER.get():
        return MISS, None
    key = [MODE.get().training]
    for a in args:
        if type(a) is not NDArray:
            return MISS, None
        data = a._data
        key += (data.shape, data.dtype, id(a._ctx))
    key = tuple(key)
    entry = index.get(key)
    if entry is None:
        return MISS, (index, key, tuple([a._ctx for a in args]))
    return entry[0].run(block, args), None


def _eager(block, args):
    """Runs the block eagerly, children included (they must not trace graphs of their own meanwhile)."""
    token = EAGER.set(True)
    try:
        return block._run_eager(args, {})
    finally:
        EAGER.reset(token)


def call_hybridized(block, args, index_as=None):
    """Runs a hybridized block on NDArray args: trace on a new signature, then run the cached graph.
    index_as: from fast_call, where the call goes in the block's CallIndex once it has a graph.

    Threads: a new signature is traced under the block's lock, so threads making the same first call at once
    trace (and, with deferred shapes, initialize the parameters) once; the others wait and run that graph."""
    if has_hooks_below(block):
        if not getattr(block, "_warned_hooks", False):
            warn(f"{type(block).__name__} {block.name!r}: a child block has forward hooks, so the block "
                 "runs eagerly (hooks keep firing; results are the same)")
            block._warned_hooks = True
        return _eager(block, args)
    flat, structure = flatten(args)
    _check_argument_structure(block, structure)
    _check_one_device(block, flat)
    key = signature(flat, structure)
    graph = block._cached_graphs.get(key)
    if graph is None:
        with block._trace_lock:
            graph = block._cached_graphs.get(key)
            if graph is None:
                graph, first_result = _trace(block, args, key)
                if first_result is not None:
                    graph.calls += 1
                    return first_result
    if index_as is not None:
        index, fast_key, contexts = index_as
        if len(index) >= CallIndex.LIMIT:
            index.clear()
        index[fast_key] = (graph, contexts)
    if block._op_hook is not None:
        return graph.interpret(block, flat, _op_monitor(*block._op_hook))
    if block._checks_left > 0:
        block._checks_left -= 1
        return checked_call(block, graph, args, flat, _eager)
    return graph.run(block, flat)


def _op_monitor(callback, monitor_all):
    """HybridBlock.register_op_hook's callback(name, op name, array) for each node's outputs (`<node>_output`)
    and, with monitor_all, its inputs first (`<node>_<input name>`), as MXNet names them."""
    def monitor(node, inputs, outputs):
        if monitor_all:
            for name, arr in zip(node.monitor_input_names(), inputs):
                callback(f"{node.name}_{name}", node.op.name, arr)
        for name, arr in zip(node.output_names(), outputs):
            callback(name, node.op.name, arr)
    return monitor


def _check_argument_structure(block, structure):
    """As MXNet's cached op: the structure of the first call's arguments (which are None, how lists nest) is
    fixed until the caches are cleared (ValueError otherwise). A later call may add or drop trailing arguments:
    MXNet allows that for None ones only; mixnet also for given ones, which re-traces (a loss called with and
    without its optional sample_weight works hybridized as it does eagerly)."""
    if not block._cached_graphs:
        block._in_structure = structure
        return
    stored = block._in_structure
    if structure == stored:
        return
    short, long = sorted((stored[1], structure[1]), key=len)
    if len(short) == len(long) or long[:len(short)] != short:
        raise InvalidArgument(f"The argument structure of HybridBlock {block.name!r} does not match the cached "
                              f"version. Stored format = {stored}, input format = {structure}")


def _check_one_device(block, flat):
    """A hybridized block runs on one device (pinned or shared CPU memory counts as the CPU's), as in MXNet."""
    devices = {("cpu", a.context.device_id) if a.context.device_type in ("cpu_pinned", "cpu_shared") else
               (a.context.device_type, a.context.device_id) for a in flat}
    if len(devices) > 1:
        raise InvalidArgument(f"HybridBlock {block.name!r}: found multiple contexts in the input "
                              f"({', '.join(str(a.context) for a in flat)}); after hybridize() a block supports "
                              "one input context")


def _trace(block, args, key):
    """Traces and caches the graph of signature `key`. Returns (graph, the call's result when parameters with
    deferred shapes made it run eagerly to initialize them, else None)."""
    first_result = None
    if any(p._data is None for p in block.collect_params().values()):
        first_result = _eager(block, args)       # deferred shapes: one eager call initializes them exactly
    start = time.perf_counter()
    graph = CachedGraph(block, args)
    graph.trace_seconds = time.perf_counter() - start
    switch = config.LOG_COMPILES
    if _logging.debug_wanted(_LOG, switch):
        _logging.debug(_LOG, switch, "hybridize traced %s %r (graph %d): %s", type(block).__name__, block.name,
                       len(block._cached_graphs) + 1, retrace_reason(key, block._cached_graphs))
    block._cached_graphs[key] = graph
    block._last_graph = graph
    return graph, first_result


def trace_ahead(block, args):
    """HybridBlock.precompile: the graph a call on `args` in the current training mode would run, traced now if
    it is new, without running it. Returns (graph, flat inputs). The parameters must be initialized already
    (otherwise the trace runs the block once eagerly, as a first call does)."""
    flat, structure = flatten(args)
    _check_argument_structure(block, structure)
    _check_one_device(block, flat)
    key = signature(flat, structure)
    with block._trace_lock:
        graph = block._cached_graphs.get(key)
        if graph is None:
            graph, _ = _trace(block, args, key)
    return graph, flat
