"""Small pieces every op module shares: calling ops from gradient rules, checks, and the shape rules that both a
kernel and its op's `infer` use (so each output-shape rule is written once): reduction axes, reshape codes,
convolution and pooling output sizes, the element-count limit, and `infer` itself.

For the kernels' hot paths (a hybridized graph calls the same kernels on the same shapes every step, where each
Python call is a measurable share of a small step): `Memo`, a bounded memo of a pure per-(shape, attrs) result,
and `result_dtype`, np.result_type of two dtypes memoized (numpy's own goes through a Python dispatcher).
"""
import functools
import math
from typing import Any, NamedTuple

import numpy as np

from .. import config
from .._mode import MODE, Mode
from ..base import MXNetError, dtype_name
from ..context import Context, cpu
from . import dispatch, registry


_PARSED = {}


class Memo(dict):
    """A memo of a pure function of shapes and attributes (no config, no data), for a kernel's hot path:

        axes = _AXES.get(key)            # dict's own get: no Python call on a hit
        if axes is None:
            axes = _AXES.keep(key, compute(...))

    `keep` stores until LIMIT entries (then it only returns the value: a process reshaping many shapes keeps a
    bounded memo), and a computation that raises stores nothing. Entries are immutable and dict's get and set are
    atomic, so threads sharing a memo at most compute an entry twice."""
    __slots__ = ()
    LIMIT = 4096

    def keep(self, key, value):
        if len(self) < self.LIMIT:
            self[key] = value
        return value


# np.result_type(a, b) for two dtypes: lru_cache's hits run in C
result_dtype = functools.lru_cache(maxsize=1024)(np.result_type)


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


def device_of(xp, arrays):
    """The Context of raw arrays of the array module xp (numpy: the CPU; cupy: the first array's GPU)."""
    if xp is np:
        return cpu()
    device = getattr(arrays[0], "device", None) if arrays else None
    return Context("gpu", getattr(device, "id", 0))


def run_ops(xp, fn, arrays, is_train=False, ctx=None):
    """fn(*NDArrays wrapping the raw `arrays`), from inside a kernel: the ops fn applies (a gradient rule, a
    subgraph) run through the dispatch door, neither recorded nor traced. Returns what fn returns. ctx: the
    arrays' device where the kernel knows it (device_of cannot tell cpu(k) from cpu(0))."""
    ctx = ctx or device_of(xp, arrays)
    token = MODE.set(Mode(recording=False, training=is_train, tracer=None))
    try:
        return fn(*[dispatch.WRAP(a, ctx) for a in arrays])
    finally:
        MODE.reset(token)


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
# shape rules shared by kernels and their infer functions
def check_shape(shape, what="output"):
    """`shape` as a tuple of ints, after refusing a negative dimension or more elements than config.MAX_ELEMENTS
    (MIXNET_MAX_ELEMENTS). Kernels that allocate an array whose shape comes from attributes call it before
    allocating; `infer` calls it on every inferred output shape."""
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise MXNetError(f"{what} shape {shape} has a negative dimension")
    count = math.prod(shape)
    if count > config.MAX_ELEMENTS:
        raise MXNetError(f"{what} shape {shape} has {count} elements, more than the limit of {config.MAX_ELEMENTS} "
                         "(MIXNET_MAX_ELEMENTS)")
    return shape


def norm_axis(axis, ndim, what="axis"):
    """axis in [0, ndim) from one in [-ndim, ndim)."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what} {axis} is out of range for a {ndim}-d input")
    return axis + ndim if axis < 0 else axis


def reduce_axes(shape, axis, exclude=False, what="Reduction"):
    """The sorted tuple of axes a reduction removes (MXNet's rules for None, (), negatives, exclude)."""
    ndim = len(shape)
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if not axes:
        return tuple(range(ndim))
    norm = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"{what} axis {a} exceeds input dimensions {tuple(shape)}")
        norm.append(a + ndim if a < 0 else a)
    norm = sorted(norm)
    for a, b in zip(norm, norm[1:]):
        if a == b:
            raise ValueError(f"{what} axes have duplicates {tuple(axes)}")
    if exclude:
        return tuple(a for a in range(ndim) if a not in norm)
    return tuple(norm)


def reduced_shape(shape, axes, keepdims):
    """A reduction's output shape: reduced axes kept as 1 (keepdims) or removed, and (1,) rather than () (MXNet 1.x
    has no 0-d results)."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    out = tuple(d for i, d in enumerate(shape) if i not in axes)
    return out if out else (1,)


def reshape_shape(in_shape, spec, reverse=False):
    """Resolves MXNet's reshape codes 0, -1, -2, -3, -4 against `in_shape`."""
    in_shape, spec = tuple(in_shape), tuple(spec)
    if all(d > 0 for d in spec):               # the common case: a plain shape (gradient rules pass these)
        if math.prod(spec) != math.prod(in_shape):
            raise ValueError(f"cannot reshape array of shape {in_shape} (size {math.prod(in_shape)}) into {spec}")
        return spec
    if reverse:       # MXNet reverses both plainly, so a -4's two values come before it in a reversed spec
        out = reshape_shape(in_shape[::-1], spec[::-1])
        return out[::-1]
    out, i, j, infer_at = [], 0, 0, None
    while j < len(spec):
        code = spec[j]
        if code == 0:
            _need(i < len(in_shape), in_shape, spec)
            out.append(in_shape[i]); i += 1
        elif code == -1:
            if infer_at is not None:
                raise ValueError(f"reshape {spec}: at most one -1")
            infer_at = len(out); out.append(1); i += 1
        elif code == -2:
            out.extend(in_shape[i:]); i = len(in_shape)
        elif code == -3:
            _need(i + 1 < len(in_shape), in_shape, spec)
            out.append(in_shape[i] * in_shape[i + 1]); i += 2
        elif code == -4:
            _need(i < len(in_shape) and j + 2 < len(spec), in_shape, spec)
            d, a, b = in_shape[i], spec[j + 1], spec[j + 2]
            if a == -1 and b == -1:
                raise ValueError(f"reshape {spec}: -4 cannot split into two -1")
            if a == -1:
                a = d // b if b else 0
            if b == -1:
                b = d // a if a else 0
            if a * b != d:
                raise ValueError(f"reshape {spec}: -4 splits {d} into {a} x {b}")
            out.extend((a, b)); i += 1; j += 2
        elif code > 0:
            out.append(code); i += 1
        else:
            raise ValueError(f"reshape {spec}: invalid code {code}")
        j += 1
    total = math.prod(in_shape)
    if infer_at is not None:
        known = math.prod(out)
        if known == 0 or total % known:
            raise ValueError(f"cannot reshape {in_shape} into {spec}: size {total} does not divide")
        out[infer_at] = total // known
    if math.prod(out) != total:
        raise ValueError(f"cannot reshape array of shape {in_shape} (size {total}) into {tuple(out)}")
    return tuple(out)


def _need(ok, in_shape, spec):
    if not ok:
        raise ValueError(f"reshape {spec} does not fit input shape {in_shape}")


def conv_out_size(size, kernel, stride, dilate, pad):
    """Output length of a convolution along one axis."""
    return (size + 2 * pad - dilate * (kernel - 1) - 1) // stride + 1


def pool_out_size(size, kernel, stride, pad, convention):
    """Output length of pooling along one axis: 'valid' rounds down, 'full' up, 'same' is ceil(size / stride)."""
    if convention == "valid":
        return (size + 2 * pad - kernel) // stride + 1
    if convention == "full":
        return -(-(size + 2 * pad - kernel) // stride) + 1
    return -(-size // stride)


def concat_shape(shapes, dim):
    """(the normalized axis, the output shape) of concatenating `shapes` along `dim`."""
    shapes = [tuple(s) for s in shapes]
    first = shapes[0]
    ndim = len(first)
    if not -ndim <= dim < ndim:
        raise ValueError(f"axis {dim} exceeds the input dimension of {ndim}")
    a = dim + ndim if dim < 0 else dim
    for s in shapes:
        if len(s) != ndim or s[:a] != first[:a] or s[a + 1:] != first[a + 1:]:
            raise ValueError(f"Incompatible input shapes for concat along axis {dim}: "
                             f"{', '.join(str(y) for y in shapes)}")
    return a, first[:a] + (sum(s[a] for s in shapes),) + first[a + 1:]


def check_same_dtypes(dtypes, what="input"):
    """MXNet has no type promotion between arrays: the dtypes of an op's inputs must be equal."""
    first = dtypes[0] if dtypes else None
    for d in dtypes:
        if d != first:                   # dtype objects and numpy type classes compare equal across kinds
            raise ValueError(f"{what} dtypes must match, got {', '.join(dtype_name(x) for x in dtypes)}")


# ---------------------------------------------------------------------------------------------------------
# shape/dtype inference: every OpDef declares infer(shapes, dtypes, **attrs) -> (out_shapes, out_dtypes), computed
# from the shapes alone (no kernel runs, nothing of the data's size is allocated)
def infer_same(shapes, dtypes, **attrs):
    return [tuple(shapes[0])], [dtypes[0]]


def infer_broadcast(shapes, dtypes, **attrs):
    if len(set(np.dtype(d) for d in dtypes)) > 1:
        raise MXNetError(f"input dtypes must match, got {', '.join(str(np.dtype(d)) for d in dtypes)}")
    return [broadcast_shapes(*shapes)], [dtypes[0]]


class _Spec(NamedTuple):
    """What an error message shows of an input: its shape and dtype (there is no array)."""
    shape: tuple
    dtype: Any


def infer(op, shapes, dtypes, attrs):
    """Output shapes and dtypes of `op` for the given input shapes/dtypes, from the op's declared `infer`. Bad input
    raises the same kind of error as an eager call: an OpError naming the op, shapes and dtypes. Every output shape
    is checked against the element-count limit (check_shape)."""
    try:
        out_shapes, out_dtypes = op.infer(shapes, dtypes, **attrs)
        out_shapes = [check_shape(s, f"output {i}") for i, s in enumerate(out_shapes)]
    except (MXNetError, ValueError, TypeError, IndexError, ArithmeticError) as err:
        specs = [_Spec(tuple(s), np.dtype(d) if d is not None else None) for s, d in zip(shapes, dtypes)]
        raise dispatch.op_error(op, specs, attrs, err) from None
    return out_shapes, list(out_dtypes)
