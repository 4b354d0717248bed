"""Compiled plans: a graph through the pipeline (pipeline.py), compiled to straight-line Python (symbol/compile.py).

`typed_graph` makes the pipeline's input (the Symbol typed once); `compile_plan` runs the passes and compiles;
`fused_plan` runs what is left of the pipeline after an unfused plan (fuse -> memory) once its kernels are
compiled (in a child process when they are not in the on-disk cache yet: codegen/precompile.py).
"""
import dataclasses
import threading

import numpy as np

from .._shape_mode import shape_is_unknown
from ..symbol import memory
from ..symbol.compile import CompiledGraph
from ..symbol.graph import graph_types, topo_order
from ..symbol.typed import typed
from .pipeline import PIPELINE, Graph
from ..codegen import precompile

__all__ = ["CompiledPlan", "compile_plan", "fused_plan", "typed_graph"]

_ONE_COMPILER = threading.Lock()     # one compiling child at a time: the machine has few cores


def typed_graph(symbol, names, shapes, dtypes, done=()):
    """The pipeline's input: `symbol` typed from {input name: shape/dtype}; `done`: passes it has had already."""
    return Graph(typed(symbol, shapes, dtypes), tuple(names), frozenset(done))


class CompiledPlan:
    """One graph through the pipeline, compiled. graph: the typed Symbol that runs; names: its inputs in call
    order; types: ({entry: shape}, {entry: dtype}); slots: static_alloc buffer sizes in bytes (None without);
    fused_groups: fused kernels in it; code: the CompiledGraph, writing into one set of planned buffers
    (`new_buffers()` makes another: code.with_buffers)."""
    __slots__ = ("_ctx", "_slot_of", "code", "fused_groups", "graph", "names", "slots", "types")

    def __init__(self, graph, ctx, destinations=False):
        symbol = graph.symbol
        self.graph, self.names, self.fused_groups, self._ctx = symbol, graph.names, graph.fused_groups, ctx
        self.types = graph_types(symbol._outputs)
        self._slot_of, self.slots = graph.buffers
        self.code = CompiledGraph(symbol, graph.names, ctx, _creation_shapes(symbol), self.new_buffers(),
                                  destinations, self.types)

    def new_buffers(self):
        """One buffer set: {entry: a view of its slot's flat byte arena}."""
        eshape, edtype = self.types
        arenas = [self._ctx.xp.empty(size, dtype=np.uint8) for size in self.slots or []]
        views = {}
        for key, slot in self._slot_of.items():
            dtype, shape = np.dtype(edtype[key]), eshape[key]
            count = int(np.prod(shape, dtype=np.int64))
            views[key] = arenas[slot][:count * dtype.itemsize].view(dtype).reshape(shape)
        return views

    def memory_report(self):
        return memory.report(self.graph, *self.types, self.slots)


def _creation_shapes(symbol):
    """{id(node): shape} for creation nodes whose declared shape has unknown dims (their types know it)."""
    return {id(n): n.types[0][0] for n in topo_order(symbol._outputs)
            if n.op is not None and n.op.creates and shape_is_unknown(n.attrs.get("shape", (1,)))}


def compile_plan(graph, options, ctx, destinations=False, pipeline=PIPELINE):
    """(the graph after `pipeline`, its CompiledPlan)."""
    graph = pipeline.run(graph, options)
    return graph, CompiledPlan(graph, ctx, destinations)


def fused_plan(graph, options, ctx, destinations=False, elsewhere=False):
    """The CompiledPlan of `graph` (after every pass before fuse) through fuse -> memory, or None when nothing
    fuses. elsewhere: Numba kernels missing from the on-disk cache compile in a child process, then load here
    (CUDA kernels compile at their first launch instead)."""
    options = dataclasses.replace(options, fusion=True, compile_now=not elsewhere)
    graph = PIPELINE.since("fuse").run(graph, options)
    if not graph.fused_groups:
        return None
    if elsewhere and options.device == "cpu":
        eshape, _ = graph_types(graph.symbol._outputs)
        jobs = [(n.attrs["kernel"], n.attrs["kernel"].variant_for(int(np.prod(eshape[(id(n), 0)]))))
                for n in graph.symbol._nodes() if n.op is not None and n.op.name == "_fused_elemwise"]
        with _ONE_COMPILER:
            pending = [job for job in jobs if not precompile.is_cached(job[0])]
            if pending:
                precompile.compile_elsewhere(pending)
        for kernel, variant in jobs:
            kernel.ensure_compiled(variant)
    return CompiledPlan(graph, ctx, destinations)
