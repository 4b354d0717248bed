"""What Jupyter shows for a Block, a Parameter and a ParameterDict (their `_repr_html_`).

A block's view is a tree of its children with each one's output shapes from the last call, parameter shapes and
counts (`?` where deferred initialization has not fixed a dimension yet), and for a hybridized block a badge with
the number of plans compiled (`compiled_plans()`). Output shapes: `Block.__call__` keeps only the shapes of an
eager call's outputs (`record_outputs`), never the arrays. Children of a hybridized block run inside its
compiled graph, so what is kept for them is the Symbol the trace gave them plus the trace's input shapes; their
shapes are inferred from those when the block is displayed, once per trace, never on the call path; a copy or
pickle of the block leaves the Symbols behind.
"""
import numpy as np

from .. import _display
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..symbol import Group, Symbol
from ..symbol.control_flow import TRACE_SHAPES

__all__ = ["record_outputs", "block_html", "parameter_html", "parameter_dict_html"]


def _leaves(out, into):
    """Appends the non-None leaves of nested lists/tuples `out` to `into`."""
    if isinstance(out, (list, tuple)):
        for item in out:
            _leaves(item, into)
    elif out is not None:
        into.append(out)
    return into


class _Traced:
    """What a block's call inside a hybridize trace returned: Symbols, and the trace's input shapes to infer
    theirs from. Copies and pickles of a block carry none of it (the next trace or call records it again)."""
    __slots__ = ("symbols", "shapes")

    def __init__(self, symbols, shapes):
        self.symbols, self.shapes = symbols, shapes

    def __reduce__(self):
        return (_Traced, ([], {}))


def record_outputs(block, out):
    """Keeps in `block._outputs_seen` what its call returned, for display: the output shapes of an eager call,
    a _Traced for a call inside a hybridize trace, None for anything else. On every call: cheap."""
    if isinstance(out, NDArray):
        block.__dict__["_outputs_seen"] = (out.shape,)      # not through Block.__setattr__: the call path
        return
    leaves, seen = _leaves(out, []), None
    arrays = [x.shape for x in leaves if isinstance(x, NDArray)]
    if leaves and len(arrays) == len(leaves):
        seen = tuple(arrays)
    elif not arrays and TRACE_SHAPES.get() is not None and leaves and all(isinstance(x, Symbol) for x in leaves):
        seen = _Traced(leaves, TRACE_SHAPES.get())
    block.__dict__["_outputs_seen"] = seen


def _known(shape):
    return shape is not None and all(d > 0 for d in shape)


def _resolve_traces(blocks):
    """{id(block): [shape or None per output]} for the blocks last called inside a trace: one shape inference
    per trace over everything its blocks returned."""
    by_trace = {}
    for block in blocks:
        seen = getattr(block, "_outputs_seen", None)
        if isinstance(seen, _Traced) and seen.symbols:
            by_trace.setdefault(id(seen.shapes), (seen.shapes, []))[1].append(block)
    resolved = {}
    for shapes, members in by_trace.values():
        outs = [(block, sym[i]) for block in members for sym in block._outputs_seen.symbols
                for i in range(len(sym.list_outputs()))]
        try:
            group = Group([sym for _, sym in outs])
            inputs = set(group.list_inputs())
            _, out_shapes, _ = group.infer_shape_partial(**{k: v for k, v in shapes.items() if k in inputs})
        except MXNetError:
            out_shapes = [None] * len(outs)
        for (block, _), shape in zip(outs, out_shapes):
            resolved.setdefault(id(block), []).append(tuple(shape) if _known(shape) else None)
    return resolved


def _tree(block, depth=0, key=None):
    yield block, depth, key
    for name, child in block._children.items():
        yield from _tree(child, depth + 1, name)


def _shape_text(shape):
    """(2, ?) for a parameter shape with unknown (0) dims; ? for no shape at all."""
    if shape is None:
        return "?"
    return "(" + ", ".join("?" if d == 0 else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _count(params):
    """(number of elements of the parameters whose shape is known, whether some are not)."""
    known = [p for p in params if _known(p.shape)]
    return sum(int(np.prod(p.shape)) for p in known), len(known) < len(params)


def _describe(block):
    """The block's repr when it is one line ('Dense(5 -> 10, Activation(relu))'), else its class name (the
    children have rows of their own)."""
    text = repr(block)
    if "\n" in text:
        return type(block).__name__
    return text if len(text) <= 90 else text[:87] + "..."


def _plans_badge(block):
    plans = block.compiled_plans()
    n = sum(r.compiles for r in plans)
    return _display.badge(f"hybridized: {n} plan{'' if n == 1 else 's'}", title=str(plans))


def block_html(block):
    blocks = list(_tree(block))
    traced = _resolve_traces([b for b, _, _ in blocks])
    rows, seen, total, trainable, partial = [], set(), 0, 0, False
    for b, depth, key in blocks:
        own = [p for p in b._reg_params.values() if id(p) not in seen]
        seen.update(id(p) for p in own)
        n, unknown = _count(own)
        total += n
        trainable += _count([p for p in own if p.grad_req != "null"])[0]
        partial = partial or unknown
        outputs = getattr(b, "_outputs_seen", None)
        shapes = traced.get(id(b)) if isinstance(outputs, _Traced) else outputs
        out_text = ", ".join(_shape_text(s) for s in shapes) if shapes else "-"
        layer = _display.Html("&nbsp;" * (2 * depth) + _display.esc(("" if key is None else f"({key}) ")
                                                                     + _describe(b)))
        params = ", ".join(f"{name} {_shape_text(p.shape)}" for name, p in b._reg_params.items())
        rows.append([layer, b.name, out_text, params or "-", f"{n}{'?' if unknown else ''}" if b._reg_params else ""])
    mark = "?" if partial else ""
    badges = []
    if getattr(block, "_active", False):
        badges.append(_plans_badge(block))
    if any(p._data is None for b, _, _ in blocks for p in (*b._reg_params.values(), *b.params.values())):
        badges.append(_display.badge("not initialized" + (": ? until the first call" if partial else "")))
    title = _display.heading(type(block).__name__, block.name, *badges)
    footer = f"parameters: {total}{mark} (trainable {trainable}{mark}, non-trainable {total - trainable}{mark})"
    return _display.box(title, _display.table(rows, ["layer", "name", "output shape", "parameters", "#"]),
                        _display.Html(f"<div>{_display.esc(footer)}</div>"))


def _state(param):
    if param._data is not None:
        return "yes (" + ", ".join(str(c) for c in param.list_ctx()) + ")"
    return "deferred (at the first call)" if param._deferred_init is not None else "no"


def _param_row(param):
    row = [param.name, _shape_text(param.shape), np.dtype(param.dtype).name, param.grad_req, _state(param)]
    return row + [param._stype if param._stype == param._grad_stype else f"{param._stype}, grad {param._grad_stype}"]


_HEADER = ["name", "shape", "dtype", "grad_req", "initialized", "stype"]


def parameter_html(param):
    kind = "Constant" if type(param).__name__ == "Constant" else "Parameter"
    return _display.box(_display.heading(kind, param.name), _display.table([_param_row(param)], _HEADER))


def parameter_dict_html(params):
    values = list(params.values())
    n, unknown = _count(values)
    title = _display.heading("ParameterDict", params.prefix, f"{len(values)} parameters, {n}{'?' if unknown else ''}"
                             " values")
    return _display.box(title, _display.table([_param_row(p) for p in values], _HEADER))
