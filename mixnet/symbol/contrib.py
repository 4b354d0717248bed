"""`mx.sym.contrib`: the registry ops named `_contrib_*`, and control flow while hybridize traces.

`foreach` is unrolled at trace time: hybridize traces once per input signature, so the sequence length is known
(each length gets its own graph). `while_loop` and `cond` depend on values, which a trace does not have yet (the
subgraph nodes that will hold them are not written): inside a hybridized block they make the block run eagerly,
with a warning naming the line — the results are the eager ones.
"""
import contextvars

from .._source import user_location
from ..base import MXNetError
from .symbol import EagerFallback, build_functions as _build_functions

_build_functions(globals(), prefix="_contrib_")

# {variable name: shape} of the graph being traced (set by hybridize), so foreach can read the sequence length.
TRACE_SHAPES = contextvars.ContextVar("mixnet_trace_shapes", default=None)


def _shape(data):
    shapes = TRACE_SHAPES.get()
    if shapes is None:
        raise MXNetError("sym.contrib.foreach needs the input shapes to unroll; it works inside hybridized blocks "
                         "(for stand-alone symbols, write the loop with Python and symbol ops)")
    _, out_shapes, _ = data.infer_shape_partial(**{k: v for k, v in shapes.items() if k in data.list_inputs()})
    if not out_shapes or not out_shapes[0]:
        raise MXNetError("sym.contrib.foreach: the shape of the data is unknown while tracing")
    return out_shapes[0]


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _step_slice(d, ndim, i):
    """d[i] with eager (legacy) semantics: 1-D data gives shape (1,) slices, N-D data drops axis 0."""
    from . import slice_axis, squeeze
    piece = slice_axis(d, axis=0, begin=i, end=i + 1)
    return piece if ndim == 1 else squeeze(piece, axis=0)


def foreach(body, data, init_states):
    """body(data_slice, states) -> (outputs, new_states) over axis 0, unrolled; outputs stacked on axis 0."""
    from . import stack
    datas = _as_list(data)
    shapes = [_shape(d) for d in datas]
    states, steps = init_states, []
    for i in range(shapes[0][0]):
        slices = [_step_slice(d, len(shape), i) for d, shape in zip(datas, shapes)]
        outputs, states = body(slices if isinstance(data, (list, tuple)) else slices[0], states)
        steps.append(outputs)
    if not steps:
        raise MXNetError("sym.contrib.foreach: the data has length 0 on axis 0")
    if isinstance(steps[0], (list, tuple)):
        return [stack(*[s[k] for s in steps], axis=0) for k in range(len(steps[0]))], states
    return stack(*steps, axis=0), states


def while_loop(cond, func, loop_vars, max_iterations=None):
    raise EagerFallback(f"contrib.while_loop inside a hybridized block at {user_location()}")


def cond(pred, then_func, else_func):
    raise EagerFallback(f"contrib.cond inside a hybridized block at {user_location()}")


