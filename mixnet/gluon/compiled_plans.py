"""What a hybridized block has compiled (`HybridBlock.compiled_plans()`) and compiling ahead of the first call
(`HybridBlock.precompile()`), e.g. one plan per bucket shape of a FixedBucketSampler.

A hybridized block traces one graph per input signature (shapes, dtypes, device, argument nesting, training
mode; cached_graph.py) and builds its plans (cached_op.py) on first use: an inference plan for calls that record
nothing, one training plan (forward + backward) per set of differentiated inputs for recorded calls. All of them
read the block's one set of parameters. Planned buffers (hybridize(static_alloc=True)) belong to each plan: memory
grows with the number of signatures (`planned_bytes` says by how much); without static_alloc, the default, plans
hold no buffers between calls.
"""
import dataclasses
import itertools
import numbers

from .. import autograd
from ..base import MXNetError
from ..context import current_context
from ..ndarray.ndarray import NDArray
from . import cached_graph
from .. import ndarray as nd

__all__ = ["PlanRecord", "CompiledPlans", "compiled_plans", "precompile"]


@dataclasses.dataclass(frozen=True)
class PlanRecord:
    """One traced input signature of a hybridized block and the plans compiled for it.

    block: the block's name. inputs: ((shape, dtype name), ...) of the flattened inputs. train_mode: the
    autograd training mode the signature was traced in. device: where it runs. reason: why it was traced (what
    differed from the signature traced before it: 'first call', 'new shapes or dtypes (...)', ...).
    inference: whether the inference plan is built. training: how many training plans are built (one per set
    of differentiated inputs). compiles: plans built in all. fused_kernels: fused elementwise kernels in the
    built plans (forward and backward; kernels still compiling in the background count once swapped in).
    calls: how many calls ran this signature. seconds: time spent tracing and building its plans.
    planned_bytes: static_alloc buffers its plans hold (None without static_alloc)."""
    block: str
    inputs: tuple
    train_mode: bool
    device: str
    reason: str
    inference: bool
    training: int
    compiles: int
    fused_kernels: int
    calls: int
    seconds: float
    planned_bytes: object

    @property
    def shapes(self):
        return tuple(shape for shape, _ in self.inputs)


class CompiledPlans(list):
    """A list of PlanRecord whose text form is a table (print it)."""

    def __str__(self):
        if not self:
            return "no compiled plans (hybridize() the block and call it, or precompile it)"
        blocks = sorted({r.block for r in self})
        head = (f"{len(self)} signature(s) traced, {sum(r.compiles for r in self)} plan(s) compiled, "
                f"{sum(r.calls for r in self)} call(s) - {', '.join(blocks)}")
        rows = [("#", "inputs", "mode", "plans", "fused", "calls", "seconds", "why traced")]
        for k, r in enumerate(self):
            plans = "+".join((["inference"] if r.inference else []) + ([f"train x{r.training}"] if r.training else []))
            inputs = ", ".join(f"{'x'.join(map(str, s)) or 'scalar'} {d}" for s, d in r.inputs)
            rows.append((str(k), inputs, "train" if r.train_mode else "predict", plans or "-",
                         str(r.fused_kernels), str(r.calls), f"{r.seconds:.2f}", r.reason))
        widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]) - 1)]
        lines = [head] + ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in rows]
        return "\n".join(line.rstrip() for line in lines)

    def __repr__(self):
        return self.__str__()


def _record(block, key, graph, earlier):
    built = graph.built_plans()
    plans = [p for _, group in built for p in group]
    planned = [p.planned_bytes for p in plans]
    return PlanRecord(
        block=block.name or type(block).__name__, inputs=key[1], train_mode=bool(key[3]), device=str(key[2]),
        reason=cached_graph.retrace_reason(key, earlier),
        inference=any(kind == "inference" for kind, _ in built),
        training=sum(kind == "training" for kind, _ in built), compiles=len(built),
        fused_kernels=sum(p.fused_groups for p in plans), calls=graph.calls,
        seconds=graph.trace_seconds + graph.build_seconds,
        planned_bytes=(sum(b for b in planned if b) if graph.static_alloc else None))


def compiled_plans(block, keys=None):
    """The PlanRecords of `block` and of its descendants that were called hybridized on their own, in trace
    order (keys: only these signatures of `block`)."""
    records = CompiledPlans()

    def visit(b):
        graphs = dict(getattr(b, "_cached_graphs", {}))
        earlier = {}
        for key, graph in graphs.items():
            if keys is None or b is not block or key in keys:
                records.append(_record(b, key, graph, earlier))
            earlier[key] = graph
        if keys is None:
            for child in b._children.values():
                visit(child)

    visit(block)
    return records


def _is_shape(spec):
    return isinstance(spec, (tuple, list)) and all(isinstance(d, numbers.Integral) for d in spec) and \
        not isinstance(spec, NDArray)


def _arguments(spec, dtypes, ctx):
    """A call's positional arguments from a precompile entry: NDArrays as given, shapes as arrays of ones of
    the next dtype (ones: valid token ids and valid lengths should a deferred initialization run them)."""

    def build(item):
        if item is None or isinstance(item, NDArray):
            return item
        if _is_shape(item):
            try:
                dtype = next(dtypes)
            except StopIteration:
                raise MXNetError("precompile: fewer dtypes than inputs") from None
            return nd.ones(tuple(int(d) for d in item), ctx=ctx, dtype=dtype)
        if isinstance(item, (list, tuple)):
            return type(item)(build(x) for x in item)
        raise MXNetError(f"precompile: an input is a shape (tuple of ints), an NDArray, None or a list of them; "
                         f"got {type(item).__name__}")

    if isinstance(spec, NDArray) or _is_shape(spec):
        return (build(spec),)
    if not isinstance(spec, (list, tuple)):
        raise MXNetError(f"precompile: each entry is the inputs of one call (a shape, an NDArray, or a tuple of "
                         f"them, one per argument); got {type(spec).__name__}")
    return tuple(build(x) for x in spec)


def _dtype_iter(dtype):
    return iter(dtype) if isinstance(dtype, (list, tuple)) else itertools.repeat(dtype)


def precompile(block, inputs, dtype="float32", train=True, progress=True, ctx=None):
    """See HybridBlock.precompile."""
    if not getattr(block, "_active", False):
        raise MXNetError(f"{type(block).__name__} {block.name!r}: precompile() compiles a hybridized block's "
                         "plans; call hybridize() first")
    modes = {True: (True,), False: (False,), "both": (True, False)}.get(train) if isinstance(train, (bool, str)) \
        else None
    if modes is None:
        raise MXNetError(f"precompile: train must be True, False or 'both'; got {train!r}")
    if isinstance(inputs, NDArray) or _is_shape(inputs):
        raise MXNetError("precompile: give a list of entries, one per call signature: [(32, 50), (32, 80)] or "
                         "[((32, 50), (32,)), ...] for a call with two arguments")
    ctx = ctx or current_context()
    calls = [_arguments(spec, _dtype_iter(dtype), ctx) for spec in inputs]
    from tqdm.auto import tqdm
    keys = set()
    with tqdm(total=len(calls) * len(modes), desc=f"precompile {block.name}", unit="plan",
              disable=not progress) as bar:
        for args in calls:
            # Deferred parameter shapes: one eager call in predict mode, not recorded, initializes them (running
            # statistics untouched, dropout off) as the first real call would.
            with autograd.pause(train_mode=False):
                if any(p._data is None for p in block.collect_params().values()):
                    cached_graph._eager(block, args)
            for mode in modes:
                bar.set_postfix_str(f"{'train' if mode else 'predict'} {_shape_text(args)}")
                with autograd.pause(train_mode=mode):     # nothing is recorded: plans are built, never run
                    graph, flat = cached_graph.trace_ahead(block, args)
                    keys.add(cached_graph.signature(flat, cached_graph.flatten(args)[1]))
                    mask = graph.gradient_mask(flat)
                    plans = graph.training(mask) if mode and any(mask) else graph.inference
                for plan in (plans.forward, plans.backward) if hasattr(plans, "forward") else (plans,):
                    if plan is not None:
                        plan.wait_fused()
                bar.update()
    return compiled_plans(block, keys)


def _shape_text(args):
    flat, _ = cached_graph.flatten(args)
    return ", ".join("x".join(map(str, a.shape)) for a in flat)
