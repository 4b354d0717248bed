"""Small pieces every op module shares: calling ops from gradient rules, shape inference helpers, checks."""
import numpy as np

from ..base import MXNetError
from . import dispatch, registry


_PARSED = {}


def call(name, *inputs, **attrs):
    """Applies a registry op from inside a gradient rule (so the rule is recorded under create_graph).
    Parsed attributes are memoized: gradient rules repeat the same few calls every step."""
    op = registry.get(name)
    try:
        key = (name, tuple(attrs.items()))
        parsed = _PARSED.get(key)
    except TypeError:                      # an unhashable attribute value: parse every time
        key = parsed = None
    if parsed is None:
        parsed = op.parse(attrs) if attrs or op.attrs else {}
        if key is not None and len(_PARSED) < 4096:
            _PARSED[key] = parsed
    return dispatch.apply(op, inputs, parsed)


def sum_to(g, shape):
    """Sums a broadcast gradient back to an input's shape (identity when the shapes already agree)."""
    if tuple(g.shape) == tuple(shape):
        return g
    return call("_sum_to", g, shape=tuple(shape))


def same_dtype(op_name, *arrays):
    """MXNet's binary ops need equal input dtypes: it has no type promotion for NDArray-NDArray ops."""
    dtype = arrays[0].dtype
    for a in arrays[1:]:
        if a.dtype != dtype:
            raise MXNetError(f"input dtypes must match, got {', '.join(str(x.dtype) for x in arrays)}; "
                             "convert one with astype() first")


_DTYPE_NAMES = {}


def dtype_name(dtype):
    """np.dtype(dtype).name, memoized: numpy computes `.name` in Python (~20 us on this machine), and the hot paths
    (call signatures, fast-path checks) ask for it on every call."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = np.dtype(dtype).name
    return name


def into(xp, out, result):
    """The out= protocol of ops declaring `writes_out` (planned buffers under hybridize(static_alloc=True)), for a
    result an array API could not write in place: copied into the buffer `out`, which is returned; without a
    buffer (eager), the fresh result itself."""
    if out is None or result is out:
        return result
    if tuple(out.shape) != tuple(result.shape):
        raise ValueError(f"out= buffer of shape {tuple(out.shape)} does not match the result shape "
                         f"{tuple(result.shape)}")
    xp.copyto(out, result, casting="unsafe")
    return out


def broadcast_shapes(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise MXNetError(f"shapes {', '.join(str(tuple(s)) for s in shapes)} cannot be broadcast together") \
            from None


# ---------------------------------------------------------------------------------------------------------
# shape/dtype inference: infer(shapes, dtypes, **attrs) -> (out_shapes, out_dtypes)
def infer_same(shapes, dtypes, **attrs):
    return [tuple(shapes[0])], [dtypes[0]]


def infer_broadcast(shapes, dtypes, **attrs):
    if len(set(np.dtype(d) for d in dtypes)) > 1:
        raise MXNetError(f"input dtypes must match, got {', '.join(str(np.dtype(d)) for d in dtypes)}")
    return [broadcast_shapes(*shapes)], [dtypes[0]]


def infer_by_running(op, shapes, dtypes, attrs):
    """Fallback inference: runs the kernel on zero-size-strided stand-ins.

    Inputs are broadcast views of a single element, so no input memory is allocated; the kernel's own checks
    then raise exactly the errors the eager call would.
    """
    inputs = [np.broadcast_to(np.ones((), dtype=d), tuple(s)) for s, d in zip(shapes, dtypes)]
    kwargs = dict(attrs)
    if op.train_aware:
        kwargs["is_train"] = False
    if op.random:
        kwargs["rng"] = np.random.default_rng(0)
    if op.mutates:
        inputs = [x.copy() for x in inputs]
    out = op.kernel(np, *inputs, **kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    return [o.shape for o in outs], [o.dtype for o in outs]


def infer(op, shapes, dtypes, attrs):
    """Output shapes and dtypes of `op` for the given input shapes/dtypes, from the op's declaration.
    Bad input raises the same kind of error as an eager call: an OpError naming the op, shapes and dtypes."""
    if op.dynamic_shape:
        raise MXNetError(f"{op.name}: the output shape depends on the input values, not only on their shapes")
    try:
        if op.infer is not None:
            return op.infer(shapes, dtypes, **attrs)
        return infer_by_running(op, shapes, dtypes, attrs)
    except (MXNetError, ValueError, TypeError, IndexError) as err:
        stand_ins = [np.broadcast_to(np.zeros((), dtype=d), tuple(s)) for s, d in zip(shapes, dtypes)]
        raise dispatch.op_error(op, stand_ins, attrs, err) from None
