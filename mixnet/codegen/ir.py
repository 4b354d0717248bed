"""The fusion IR both code generators render: a `Group` of elementwise `Step`s (mixnet/symbol/fuse.py builds it
from graph nodes with `group_from_nodes`; tests and benchmarks write it by hand).

A step is one node: its op name, the op's scalar template from the registry, its numeric attributes, its inputs as
`inp(k)` (the group's k-th external input) / `step(j)` (an earlier step) references, and the user's file:line.
`outputs` are the step indices the kernel writes out. Nothing here knows about a backend.

A group may end in a `Reduction` (its one output summed, or averaged, over all, leading or trailing axes of
C-order data; symbol/fuse.py attaches it when the reduction is the output's only reader): the kernel then
accumulates the output into the reduced result instead of writing it (codegen/numba_reduce.py).
"""
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

__all__ = ["Ref", "inp", "step", "Step", "Reduction", "Group", "group_from_nodes"]


@dataclass(frozen=True)
class Ref:
    kind: str        # 'input' or 'step'
    index: int


def inp(k):
    """The k-th external input of the group."""
    return Ref("input", k)


def step(j):
    """The result of step j (an earlier step)."""
    return Ref("step", j)


@dataclass
class Step:
    op: str                                   # op name, for the comment
    template: str                             # the op's scalar template: "{0} * {scalar}", "max({0}, 0)"
    inputs: tuple                             # Refs, one per {0}, {1}, ...
    attrs: dict = field(default_factory=dict) # numeric attribute values, one per {name}
    location: Optional[str] = None            # the user's "file:line"


@dataclass(frozen=True)
class Reduction:
    """What a group's single output feeds: `kind` 'sum' or 'mean'; `layout` 'trailing' (out[r] reduces row r of
    n // out.size contiguous elements; all axes is one row) or 'leading' (out[c] reduces column c of rows of
    out.size elements). The sizes are the kernel's run-time arguments, so one kernel serves every shape."""
    kind: str
    layout: str
    op: str = ""                              # the reduction node's op name, for the comment
    location: Optional[str] = None            # the user's "file:line"

    def __post_init__(self):
        if self.kind not in ("sum", "mean") or self.layout not in ("trailing", "leading"):
            raise ValueError(f"unsupported reduction {self.kind!r} over {self.layout!r} axes")


@dataclass
class Group:
    steps: list
    outputs: list                             # step indices
    n_inputs: int
    dtype: str = "float32"
    reduce: Optional[Reduction] = None        # the reduction the single output feeds, fused into the kernel


def group_from_nodes(nodes, outputs, dtype="float32"):
    """A Group from graph Nodes (mixnet.symbol.graph) in topological order, each an elementwise op with a scalar
    template. Inputs from outside `nodes` become the group's external inputs. Returns (group, external_entries):
    the (node, output_index) entries the kernel's inputs are, in order."""
    index = {id(n): k for k, n in enumerate(nodes)}
    externals, positions, steps = [], {}, []
    for node in nodes:
        refs = []
        for src, oi in node.inputs:
            if id(src) in index:
                refs.append(step(index[id(src)]))
            else:
                key = (id(src), oi)
                if key not in positions:
                    positions[key] = len(externals)
                    externals.append((src, oi))
                refs.append(inp(positions[key]))
        attrs = {k: v for k, v in node.attrs.items()
                 if isinstance(v, (int, float, np.number)) and not isinstance(v, bool)}
        steps.append(Step(node.op.name, node.op.scalar, tuple(refs), attrs, node.location))
    return Group(steps, [index[id(n)] for n in outputs], len(externals), dtype), externals
