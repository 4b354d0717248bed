"""The pass pipeline: one ordered, printable list of Graph -> Graph passes.

    cse -> epilogue -> drop_identity_reshapes -> fuse -> memory

A `Graph` is a typed Symbol (every node carries its outputs' shapes and dtypes: symbol/typed.py), the names of its
inputs in call order, the passes already run on it (each runs once: a training plan's forward graph comes CSE'd
from the graph it was differentiated from) and, after `memory`, its buffer plan. Each `Pass` is a small function
of the graph and the plan's `Options`; `needs` says what it reads besides the graph's structure ("types": the
shapes and dtypes on the nodes; "device", "static_alloc": options), `when` whether the options turn it on. The
passes themselves live beside the IR (symbol/passes.py, epilogue.py, fuse.py, memory.py), testable alone.
"""
import dataclasses

from .. import config
from ..base import MXNetError
from ..symbol import memory, passes
from ..symbol.epilogue import epilogue
from ..symbol.fuse import fuse
from ..symbol.graph import graph_types

__all__ = ["PIPELINE", "Graph", "Options", "Pass", "Pipeline"]

NO_BUFFERS = ({}, None)      # memory's plan before it runs, or without static_alloc: no entry has a planned slot


@dataclasses.dataclass(frozen=True)
class Options:
    """What a plan is compiled for. compile_now: the fuse pass compiles its Numba kernels here (False: the caller
    loads them once a child process has compiled them, codegen/precompile.py)."""
    device: str = "cpu"
    fusion: bool = True
    static_alloc: bool = False
    compile_now: bool = True


@dataclasses.dataclass(frozen=True)
class Graph:
    """symbol: typed. names: its inputs in call order. done: passes run on it. buffers: ({entry: slot},
    [slot sizes in bytes] or None), memory's plan. fused_groups: fused kernels in it. internal_outputs: positions
    of the outputs only mixnet reads (a training forward's saved values, which its backward reads)."""
    symbol: object
    names: tuple
    done: frozenset = frozenset()
    buffers: tuple = NO_BUFFERS
    fused_groups: int = 0
    internal_outputs: frozenset = frozenset()

    def with_symbol(self, symbol, **changes):
        """The graph after a pass that changed the symbol: its memory is planned again."""
        return dataclasses.replace(self, symbol=symbol, buffers=NO_BUFFERS, done=self.done - {"memory"}, **changes)


@dataclasses.dataclass(frozen=True)
class Pass:
    name: str
    run: object                     # (Graph, Options) -> Graph
    needs: tuple = ()
    when: object = None             # (Options) -> bool; None: always

    def __str__(self):
        return self.name + (f" (needs {', '.join(self.needs)})" if self.needs else "")


class Pipeline(tuple):
    """Passes in order. str(): 'cse -> epilogue -> ...'."""

    def __str__(self):
        return " -> ".join(p.name for p in self)

    def run(self, graph, options):
        """The graph through every pass that `options` turn on and that has not run on it yet (MIXNET_VERIFY=1:
        checked after each one)."""
        for step in self:
            if step.name in graph.done or (step.when is not None and not step.when(options)):
                continue
            graph = step.run(graph, options)
            graph = dataclasses.replace(graph, done=graph.done | {step.name})
            if config.VERIFY:
                passes.verify(graph.symbol)
        return graph

    def until(self, name):
        """The passes before `name`."""
        return Pipeline(self[:self._index(name)])

    def since(self, name):
        """`name` and the passes after it."""
        return Pipeline(self[self._index(name):])

    def _index(self, name):
        for k, step in enumerate(self):
            if step.name == name:
                return k
        raise MXNetError(f"unknown graph pass {name!r} (known: {self})")


def _cse(graph, options):
    return graph.with_symbol(passes.cse(graph.symbol))


def _epilogue(graph, options):
    return graph.with_symbol(epilogue(graph.symbol, internal_outputs=graph.internal_outputs))


def _drop_identity_reshapes(graph, options):
    return graph.with_symbol(passes.drop_identity_reshapes(graph.symbol))


def _fuse(graph, options):
    symbol, groups = fuse(graph.symbol, device=options.device, compile_now=options.compile_now)
    return graph.with_symbol(symbol, fused_groups=groups)


def _plannable(node):
    """Whether a node's outputs may take planned buffers: its kernel writes into given buffers (writes_out), and
    the epilogue pass did not mark it feature-major. A planned buffer is row-major, so a feature-major value
    written into one is computed row-major, and its activation backward runs on that layout too. W2 with
    static_alloc ran 4.6% slower that way than without planned buffers (benchmarks/README.md)."""
    return node.op is not None and node.op.writes_out and not node.attrs.get("feature_major")


def _memory(graph, options):
    """static_alloc: planned buffers for the outputs of ops that write into given buffers and stay in the call
    (feature-major values excepted: _plannable)."""
    symbol = graph.symbol
    heads = {(id(n), i) for n, i in symbol._outputs}
    eligible = [(id(n), i) for n in symbol._nodes() if _plannable(n)
                for i in range(n.num_outputs()) if (id(n), i) not in heads]
    return dataclasses.replace(graph, buffers=memory.assign_buffers(symbol, *graph_types(symbol._outputs),
                                                                    eligible))


PIPELINE = Pipeline((
    Pass("cse", _cse),
    Pass("epilogue", _epilogue, needs=("types",), when=lambda options: config.EPILOGUE),
    Pass("drop_identity_reshapes", _drop_identity_reshapes, needs=("types",)),
    Pass("fuse", _fuse, needs=("types", "device"), when=lambda options: options.fusion),
    Pass("memory", _memory, needs=("types", "static_alloc"), when=lambda options: options.static_alloc),
))
