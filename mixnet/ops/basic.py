"""The few shape ops NDArray itself and the gradient rules stand on: Cast, indexing, Reshape, broadcasting and
its inverse (`_sum_to`). Other layout ops live in shape.py."""
import math
import numbers

import numpy as np

from ..codegen.backend import kernel_for
from .attrs import Attr, REQUIRED, parse_any, parse_bool, parse_dtype, parse_int, parse_shape, parse_axis
from .common import Memo, broadcast_shapes, call, check_shape, norm_axis, reshape_shape
from .registry import OpDef, OpTest, register


# ---------------------------------------------------------------------------------------------------------
def _cast(xp, x, dtype):
    return x.astype(dtype)


register(OpDef(
    name="Cast", kernel=_cast, aliases=("cast", "amp_cast"), attrs={"dtype": Attr(parse_dtype, REQUIRED)}, kind="unary",
    dtype_attr=True,
    grad=lambda c, g: (call("Cast", g, dtype=c.inputs[0].dtype),),
    infer=lambda shapes, dtypes, dtype: ([shapes[0]], [dtype]), scalar="{0}",
    test=OpTest(ref=lambda x, dtype: x.astype(dtype), recipe="unary",
                recipe_attrs=({"dtype": "float64"}, {"dtype": "float32"}, {"dtype": "float16"}),
                rtol=1e-3, atol=1e-3)))


def _multicast_dtypes(dtypes, num_outputs, cast_narrow):
    """The output dtypes: every floating input becomes the widest (with cast_narrow, the narrowest) of them."""
    if len(dtypes) != num_outputs:
        raise ValueError(f"num_outputs={num_outputs} but {len(dtypes)} inputs")
    dtypes = [np.dtype(d) for d in dtypes]
    floats = [d for d in dtypes if d.kind == "f"]
    if not floats:
        return dtypes
    target = (min if cast_narrow else max)(floats, key=lambda d: d.itemsize)
    return [target if d.kind == "f" else d for d in dtypes]


def _amp_multicast(xp, *arrays, num_outputs, cast_narrow):
    targets = _multicast_dtypes([a.dtype for a in arrays], num_outputs, cast_narrow)
    return tuple(a.astype(t) if t != a.dtype else a.copy() for a, t in zip(arrays, targets))


register(OpDef(
    name="amp_multicast", kernel=_amp_multicast, inputs=("data",), variadic=True, kind="unary",
    attrs={"num_outputs": Attr(parse_int, REQUIRED), "cast_narrow": Attr(parse_bool, False)},
    num_outputs=lambda a: a["num_outputs"],
    infer=lambda shapes, dtypes, num_outputs, cast_narrow: (
        [tuple(s) for s in shapes], _multicast_dtypes(dtypes, num_outputs, cast_narrow)),
    grad=lambda c, *gs: tuple(call("Cast", g, dtype=x.dtype) for g, x in zip(gs, c.inputs)),
    test=OpTest(ref=lambda *xs, num_outputs, cast_narrow: tuple(x.astype(np.float32) for x in xs), cases=(
        (((2, 3), (3,)), {"num_outputs": 2}),)),
    doc="Mixed precision: casts all inputs to their widest float dtype (narrowest with cast_narrow)."))


# ---------------------------------------------------------------------------------------------------------
# indexing: x[key]. `key` is an already-normalized numpy-style index (the eager path builds it), so these two
# ops are internal; the symbol API spells slicing as slice/slice_axis/take.
def _getitem(xp, x, key):
    return x[key]


def _index_parts(key):
    """The parts of an index as (kind, value): 'int', 'slice', 'none', 'ellipsis', 'array' (integers), 'bool'."""
    parts = []
    for k in (key if isinstance(key, tuple) else (key,)):
        if k is None:
            parts.append(("none", None))
        elif k is Ellipsis:
            parts.append(("ellipsis", None))
        elif isinstance(k, slice):
            parts.append(("slice", k))
        elif isinstance(k, (bool, np.bool_)):
            parts.append(("bool", np.asarray(k)))
        elif isinstance(k, numbers.Integral):
            parts.append(("int", int(k)))
        else:
            a = np.asarray(k)
            if a.dtype == np.bool_:
                parts.append(("bool", a))
            elif a.dtype.kind in "iu":
                parts.append(("array", a))
            else:
                raise IndexError("only integers, slices, None, Ellipsis and integer or boolean arrays are valid "
                                 f"indices, got {type(k).__name__} of dtype {a.dtype}")
    return parts


def index_shape(shape, key):
    """The shape of x[key] for an x of `shape`, from the shape alone (numpy's basic and advanced indexing rules;
    the index values are attributes, so their bounds are checked here as numpy would)."""
    shape = tuple(shape)
    parts = _index_parts(key)
    used = sum(1 if k in ("int", "slice", "array") else (v.ndim if k == "bool" else 0) for k, v in parts)
    ellipses = [i for i, (k, _) in enumerate(parts) if k == "ellipsis"]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > len(shape):
        raise IndexError(f"too many indices for an array of shape {shape}: {used} were indexed")
    fill = [("slice", slice(None))] * (len(shape) - used)
    if ellipses:
        parts = parts[:ellipses[0]] + [("ellipsis", None)] + fill + parts[ellipses[0] + 1:]
    else:
        parts = parts + fill
    advanced = any(k in ("array", "bool") for k, _ in parts)
    out, adv_shapes, adv_at, dim = [], [], [], 0
    for pos, (kind, v) in enumerate(parts):
        if kind == "none":
            out.append(1)
        elif kind == "slice":
            out.append(len(range(*v.indices(shape[dim]))))
            dim += 1
        elif kind == "int":
            n = shape[dim]
            if not -n <= v < n:
                raise IndexError(f"index {v} is out of bounds for axis {dim} with size {n}")
            if advanced:
                adv_shapes.append(())
                adv_at.append(pos)
            dim += 1
        elif kind == "array":
            n = shape[dim]
            if v.size and (int(v.max()) >= n or int(v.min()) < -n):
                bad = int(v.max()) if int(v.max()) >= n else int(v.min())
                raise IndexError(f"index {bad} is out of bounds for axis {dim} with size {n}")
            adv_shapes.append(v.shape)
            adv_at.append(pos)
            dim += 1
        elif kind == "bool":
            if v.shape != shape[dim:dim + v.ndim]:
                raise IndexError(f"boolean index of shape {v.shape} does not match the indexed dimensions "
                                 f"{shape[dim:dim + v.ndim]} of an array of shape {shape}")
            adv_shapes.append((int(np.count_nonzero(v)),))
            adv_at.append(pos)
            dim += v.ndim
    if not advanced:
        return tuple(out)
    try:
        adv = tuple(np.broadcast_shapes(*adv_shapes))
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + " ".join(str(s) for s in adv_shapes)) from None
    # the advanced dimensions replace the first advanced index when the advanced indices are adjacent, else
    # they come first (numpy's rule); `out` holds the basic dimensions in order
    if adv_at == list(range(adv_at[0], adv_at[-1] + 1)):
        before = sum(1 for kind, _ in parts[:adv_at[0]] if kind in ("slice", "none"))
        return tuple(out[:before]) + adv + tuple(out[before:])
    return adv + tuple(out)


def _getitem_backward_infer(shapes, dtypes, shape, key):
    selected = index_shape(shape, key)
    if broadcast_shapes(shapes[0], selected) != selected:
        raise ValueError(f"gradient of shape {tuple(shapes[0])} does not fit the selection {selected} of "
                         f"x[{key!r}] for x of shape {tuple(shape)}")
    return [check_shape(shape)], [dtypes[0]]


def _getitem_backward(xp, g, shape, key):
    out = xp.zeros(check_shape(shape), dtype=g.dtype)
    if isinstance(key, tuple) and any(isinstance(k, np.ndarray) for k in key) or isinstance(key, np.ndarray):
        xp.add.at(out, key, g)            # repeated indices accumulate
    else:
        out[key] = g
    return out


register(OpDef(
    name="_getitem", kernel=_getitem, attrs={"key": Attr(parse_any, REQUIRED)}, hidden=True,
    infer=lambda shapes, dtypes, key: ([index_shape(shapes[0], key)], [dtypes[0]]),
    grad=lambda c, g: (call("_getitem_backward", g, shape=c.inputs[0].shape, key=c.attrs["key"]),),
    test=OpTest(ref=lambda x, key: x[key], cases=(
        (((4, 5),), {"key": (slice(1, 3), 2)}),
        (((4, 5),), {"key": (Ellipsis, slice(None, None, 2))}),
        (((3, 4),), {"key": (np.array([0, 2, 0]),)}),
        (((2, 3, 4),), {"key": (None, 1, slice(0, 3))}),
    ))))
register(OpDef(
    name="_getitem_backward", kernel=_getitem_backward, hidden=True, inputs=("grad",),
    attrs={"shape": Attr(parse_shape, REQUIRED), "key": Attr(parse_any, REQUIRED)}, infer=_getitem_backward_infer,
    grad=lambda c, g: (call("_getitem", g, key=c.attrs["key"]),),
    test=OpTest(ref=lambda g, shape, key: _getitem_backward(np, g, shape, key), cases=(
        (((2,),), {"shape": (4, 5), "key": (slice(1, 3), 2)}),
        (((3, 4),), {"shape": (3, 4), "key": (np.array([0, 2, 0]),)}),
    ))))


# ---------------------------------------------------------------------------------------------------------
# broadcasting and its inverse
def _sum_to_axes(x_shape, shape):
    """The axes _sum_to sums over: the leading ones, then those where `shape` (which x_shape was broadcast from)
    has 1."""
    x_shape, shape = tuple(x_shape), tuple(shape)
    lead = len(x_shape) - len(shape)
    if lead < 0 or any(d != 1 and d != x for d, x in zip(shape, x_shape[lead:])):
        raise ValueError(f"cannot sum shape {x_shape} down to {shape}")
    return tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and x_shape[lead + i] != 1)


def _sum_to_infer(shapes, dtypes, shape):
    _sum_to_axes(shapes[0], shape)
    return [tuple(shape)], [dtypes[0]]


_SUM_TO_AXES = Memo()      # (x.shape, shape) -> _sum_to_axes: a Dense layer's bias gradient, every step


def _sum_to(xp, x, shape):
    """Sums x down to `shape` (which x was broadcast from): leading axes, then axes where shape has 1."""
    axes = _SUM_TO_AXES.get((x.shape, shape))
    if axes is None:
        axes = _SUM_TO_AXES.keep((x.shape, shape), _sum_to_axes(x.shape, shape))
    out = x.sum(axis=axes, keepdims=True, dtype=x.dtype) if axes else x
    out = out.reshape(shape)
    return out if out is not x else x.copy()


register(OpDef(
    name="_sum_to", kernel=_sum_to, attrs={"shape": Attr(parse_shape, REQUIRED)}, hidden=True, kind="reduce",
    reduction=lambda attrs, shape: ("sum", _sum_to_axes(shape, attrs["shape"])),
    grad=lambda c, g: (call("broadcast_to", g, shape=c.inputs[0].shape),),
    infer=_sum_to_infer,
    test=OpTest(ref=lambda x, shape: _sum_to(np, x.astype(np.float64), shape), cases=(
        (((3, 4),), {"shape": (4,)}), (((3, 4),), {"shape": (3, 1)}), (((2, 3, 4),), {"shape": (1, 4)}),
        (((2, 3),), {"shape": (2, 3)}))), doc="Inverse of broadcast_to: the gradient of every broadcasting op."))


def _target_shape(x_shape, shape):
    """broadcast_to's shape: a 0 keeps the input's dimension (MXNet)."""
    if len(shape) < len(x_shape):
        raise ValueError(f"cannot broadcast shape {x_shape} to {shape}: fewer dimensions")
    pad = (1,) * (len(shape) - len(x_shape)) + tuple(x_shape)
    out = tuple(p if s == 0 else s for p, s in zip(pad, shape))
    for p, s in zip(pad, out):
        if p != 1 and p != s:
            raise ValueError(f"cannot broadcast shape {x_shape} to {shape}")
    return check_shape(out)


def _broadcast_to(xp, x, shape):
    return xp.broadcast_to(x, _target_shape(x.shape, shape)).copy()


register(OpDef(
    name="broadcast_to", kernel=_broadcast_to, attrs={"shape": Attr(parse_shape, REQUIRED)},
    grad=lambda c, g: (call("_sum_to", g, shape=c.inputs[0].shape),),
    infer=lambda shapes, dtypes, shape: ([_target_shape(shapes[0], shape)], [dtypes[0]]),
    test=OpTest(ref=lambda x, shape: np.broadcast_to(x, _target_shape(x.shape, shape)), cases=(
        (((1, 4),), {"shape": (3, 4)}), (((3, 1),), {"shape": (3, 5)}), (((4,),), {"shape": (2, 3, 4)}),
        (((2, 1),), {"shape": (0, 3)})))))


def _broadcast_like_shape(x_shape, like_shape, lhs_axes, rhs_axes):
    if lhs_axes is None:
        return _target_shape(x_shape, like_shape)
    lhs_axes, rhs_axes = _axes_tuple(lhs_axes), _axes_tuple(rhs_axes)
    if not lhs_axes or not rhs_axes:
        raise ValueError("Empty axes tuple is not allowed (give lhs_axes and rhs_axes, or neither)")
    if len(lhs_axes) != len(rhs_axes):
        raise ValueError(f"lhs_axes {lhs_axes} and rhs_axes {rhs_axes} differ in length")
    shape = list(x_shape)
    for la, ra in zip(lhs_axes, rhs_axes):
        shape[norm_axis(la, len(x_shape), "lhs axis")] = like_shape[norm_axis(ra, len(like_shape), "rhs axis")]
    return _target_shape(x_shape, shape)


def _broadcast_like(xp, x, like, lhs_axes, rhs_axes):
    return xp.broadcast_to(x, _broadcast_like_shape(x.shape, like.shape, lhs_axes, rhs_axes)).copy()


def _axes_tuple(axes):
    return (axes,) if isinstance(axes, int) else tuple(axes)


register(OpDef(
    name="broadcast_like", kernel=_broadcast_like, inputs=("lhs", "rhs"), nondiff_inputs=(1,),
    attrs={"lhs_axes": Attr(parse_axis, None), "rhs_axes": Attr(parse_axis, None)},
    infer=lambda shapes, dtypes, lhs_axes, rhs_axes: (
        [_broadcast_like_shape(shapes[0], shapes[1], lhs_axes, rhs_axes)], [dtypes[0]]),
    grad=lambda c, g: (call("_sum_to", g, shape=c.inputs[0].shape), None),
    test=OpTest(ref=lambda x, like, lhs_axes, rhs_axes: _broadcast_like(np, x, like, lhs_axes, rhs_axes), cases=(
        (((1, 4), (3, 4)), {}), (((2, 1), (5, 3)), {"lhs_axes": (1,), "rhs_axes": (1,)})))))


def _broadcast_axis_shape(x_shape, axis, size):
    axis, size = _axes_tuple(() if axis is None else axis), _axes_tuple(() if size is None else size)
    if len(axis) != len(size):
        raise ValueError(f"axis {axis} and size {size} differ in length")
    shape = list(x_shape)
    for a, s in zip(axis, size):
        a = norm_axis(a, len(shape))
        if shape[a] != 1:
            raise ValueError(f"axis {a} has size {shape[a]}, broadcast_axis needs 1")
        shape[a] = s
    return check_shape(shape)


def _broadcast_axis(xp, x, axis, size):
    return xp.broadcast_to(x, _broadcast_axis_shape(x.shape, axis, size)).copy()


register(OpDef(
    name="broadcast_axis", kernel=_broadcast_axis, aliases=("broadcast_axes",),
    attrs={"axis": Attr(parse_axis, ()), "size": Attr(parse_axis, ())},
    infer=lambda shapes, dtypes, axis, size: ([_broadcast_axis_shape(shapes[0], axis, size)], [dtypes[0]]),
    grad=lambda c, g: (call("_sum_to", g, shape=c.inputs[0].shape),),
    test=OpTest(ref=lambda x, axis, size: _broadcast_axis(np, x, axis, size), cases=(
        (((1, 4),), {"axis": 0, "size": 3}), (((2, 1, 1),), {"axis": (1, 2), "size": (3, 2)})))))


# ---------------------------------------------------------------------------------------------------------
# Reshape with MXNet's special codes (common.reshape_shape: one implementation for eager and traced code)
def _legacy_target_shape(in_shape, target, keep_highest):
    """MXNet's deprecated `target_shape` form: one 0 is inferred from the size; keep_highest keeps dim 0."""
    out = list(target)
    if keep_highest:
        out[0] = in_shape[0]
    free = [i for i in range(1 if keep_highest else 0, len(out)) if out[i] == 0]
    if len(free) == 1:
        rest = math.prod(d for i, d in enumerate(out) if i != free[0])
        out[free[0]] = math.prod(in_shape) // rest if rest else 0
    if math.prod(out) != math.prod(in_shape) or any(d <= 0 for d in out):
        raise ValueError(f"cannot reshape array of shape {tuple(in_shape)} into target_shape {tuple(target)}")
    return tuple(out)


def _reshape_to(in_shape, shape, reverse, target_shape, keep_highest):
    if not shape and target_shape:
        return _legacy_target_shape(in_shape, target_shape, keep_highest)
    return reshape_shape(in_shape, shape, reverse)


_RESHAPES = Memo()         # _reshape_to's arguments -> its shape: a graph's Reshape nodes repeat them every call


def _reshape(xp, x, shape, reverse, target_shape=(), keep_highest=False):
    key = (x.shape, shape, reverse, target_shape, keep_highest)
    to = _RESHAPES.get(key)
    if to is None:
        to = _RESHAPES.keep(key, _reshape_to(*key))
    return x.reshape(to)


register(OpDef(
    name="Reshape", kernel=_reshape, aliases=("reshape",), kind="shape", named_inputs=False, reshape=True,
    attrs={"shape": Attr(parse_shape, ()), "reverse": Attr(parse_bool, False),
           "target_shape": Attr(parse_shape, ()), "keep_highest": Attr(parse_bool, False)},
    grad=lambda c, g: (call("Reshape", g, shape=c.inputs[0].shape),),
    infer=lambda shapes, dtypes, **a: ([_reshape_to(shapes[0], **a)], [dtypes[0]]),
    test=OpTest(ref=lambda x, **a: x.reshape(_reshape_to(x.shape, **a)), cases=(
        (((2, 3, 4),), {"shape": (4, 0, 2)}), (((2, 3, 4),), {"shape": (6, -1)}),
        (((2, 3, 4),), {"shape": (-2,)}), (((2, 3, 4),), {"shape": (2, -2)}),
        (((2, 3, 4),), {"shape": (-3, 4)}), (((2, 3, 4),), {"shape": (-4, 1, 2, -2)}),
        (((10, 5, 4),), {"shape": (-1, 0)}), (((10, 5, 4),), {"shape": (-1, 0), "reverse": True}),
        (((3, 4),), {"shape": (-1,)}), (((64,),), {"shape": (16, 4, -4), "reverse": True}),
        (((2, 3, 5),), {"target_shape": (2, 0)}), (((2, 3, 5),), {"target_shape": (0, 5, 3), "keep_highest": True}),
    ))))



# ---------------------------------------------------------------------------------------------------------
# A fused elementwise group made by the fusion pass (mixnet/symbol/fuse.py): never built by users, never
# exported; forward and backward plans both use it (graph-mode autodiff runs before fusion, so it needs no
# gradient rule).
def _fused_elemwise(xp, *arrays, kernel, num_outputs, group=None, out=None):
    # `group`: the fused ops with this graph's source lines, for graph()/explain()/plot_network (the kernel may be
    # a cached one first built for another graph of the same ops); running needs only the kernel
    return kernel_for(xp, kernel)(*arrays, out=out)


def _infer_fused(shapes, dtypes, kernel, num_outputs, group=None):
    # a group fused with the sum/mean it feeds (codegen/reduction.py) knows its reduced shape
    shape = getattr(kernel, "out_shape", None) or tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    return [shape] * num_outputs, [np.dtype(kernel.dtype)] * num_outputs


register(OpDef(
    name="_fused_elemwise", kernel=_fused_elemwise, inputs=("data",), variadic=True, hidden=True,
    attrs={"kernel": Attr(parse_any, REQUIRED), "num_outputs": Attr(parse_int, 1), "group": Attr(parse_any, None)},
    infer=_infer_fused,
    num_outputs=lambda a: a["num_outputs"], differentiable=False, writes_out=True,
    doc="Internal: a generated kernel for a group of elementwise ops (inference plans of hybridized blocks)."))
