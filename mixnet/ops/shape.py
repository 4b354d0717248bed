"""Layout ops: transpose, expand_dims, squeeze, Flatten, SwapAxis, moveaxis, flip, tile, repeat, Pad, Concat,
stack, SliceChannel/split, _split_v2/split_v2, slice, slice_axis, slice_like, reshape_like, depth_to_space,
space_to_depth, shape_array, size_array, diag, clip.

Semantics follow MXNet 1.9.1 (checked op by op against it), including its restrictions: transpose and flip take
no negative axes; Pad only pads 4-D/5-D inputs, never the first two axes, floats only, and reflect padding must be
smaller than the axis; slice_axis needs begin < end <= size. Gradients are written with mixnet ops (transpose's
with the inverse permutation, concat's with slices, split's with concat, slicing's with `_slice_backward`, which
is itself differentiated by slicing), so every gradient differentiates again.

`split_v2` and `moveaxis` are Python functions in MXNet (over `_split_v2` and `transpose`); here they are ops with
the same Python signatures.
"""
import math

import numpy as np

from .attrs import Attr, REQUIRED, choice, optional, parse_axis, parse_bool, parse_float, parse_int, parse_shape
from .common import call, check_same_dtypes, check_shape, concat_shape, infer_same
from .registry import OpDef, OpTest, register

_NONE = ("None", "none", "")


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _norm_axis(axis, ndim, what="axis"):
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what} {axis} is out of bounds for an array of ndim {ndim}")
    return axis + ndim if axis < 0 else axis


def _zero_like(x):
    return x * 0


# ---------------------------------------------------------------------------------------------------------
# transpose
def _perm(ndim, axes):
    if not axes:
        return tuple(range(ndim))[::-1]
    if len(axes) != ndim:
        raise ValueError(f"axes {tuple(axes)} must list all {ndim} axes")
    for a in axes:
        if not 0 <= a < ndim:
            raise ValueError(f"axes index {a} must be in range [0, {ndim})")
    if sorted(axes) != list(range(ndim)):
        raise ValueError(f"axes {tuple(axes)} is not a permutation of the {ndim} axes")
    return tuple(axes)


def _permuted(shape, perm):
    return tuple(shape[a] for a in perm)


def _transpose(xp, x, axes):
    return xp.ascontiguousarray(xp.transpose(x, _perm(x.ndim, axes)))


def _transpose_grad(c, g):
    perm = _perm(c.inputs[0].ndim, c.attrs["axes"])
    return (call("transpose", g, axes=tuple(int(i) for i in np.argsort(perm))),)


register(OpDef(
    name="transpose", kernel=_transpose, attrs={"axes": Attr(parse_shape, ())}, grad=_transpose_grad, kind="shape",
    named_inputs=False,
    infer=lambda shapes, dtypes, axes: ([_permuted(shapes[0], _perm(len(shapes[0]), axes))], [dtypes[0]]),
    test=OpTest(ref=lambda x, axes: np.transpose(x, axes or None), cases=(
        (((2, 3, 4),), {}), (((2, 3, 4),), {"axes": (1, 0, 2)}), (((2, 3, 4),), {"axes": (2, 0, 1)}),
        (((3,),), {}), (((2, 3),), {"axes": "(1, 0)"}), (((0, 3),), {}))),
    doc="Permutes axes (reverses them by default). Axes must be non-negative, as in MXNet."))


# ---------------------------------------------------------------------------------------------------------
# expand_dims / squeeze / Flatten / reshape_like
def _expand_axis(ndim, axis):
    if not -ndim - 1 <= axis <= ndim:
        raise ValueError(f"axis must be in the range [{-ndim}, {ndim}] ({axis} provided)")
    return axis + ndim + 1 if axis < 0 else axis


def _expand_dims(xp, x, axis):
    return xp.expand_dims(x, _expand_axis(x.ndim, axis)).copy()


def _expanded(shape, axis):
    a = _expand_axis(len(shape), axis)
    return tuple(shape[:a]) + (1,) + tuple(shape[a:])


register(OpDef(
    name="expand_dims", kernel=_expand_dims, attrs={"axis": Attr(parse_int, REQUIRED)}, kind="shape",
    named_inputs=False,
    infer=lambda shapes, dtypes, axis: ([_expanded(shapes[0], axis)], [dtypes[0]]),
    grad=lambda c, g: (call("squeeze", g, axis=_expand_axis(c.inputs[0].ndim, c.attrs["axis"])),),
    test=OpTest(ref=lambda x, axis: np.expand_dims(x, axis), cases=(
        (((2, 3),), {"axis": 0}), (((2, 3),), {"axis": 2}), (((2, 3),), {"axis": -1}), (((2, 3),), {"axis": -3}),
        (((0, 3),), {"axis": 1}))),
    doc="Inserts a size-1 axis at `axis` (range [-ndim-1, ndim])."))


def _squeeze_axes(shape, axis):
    ndim = len(shape)
    if axis is None:
        return tuple(i for i, d in enumerate(shape) if d == 1)
    axes = sorted(_norm_axis(a, ndim) for a in ((axis,) if isinstance(axis, int) else axis))
    for a in axes:
        if shape[a] != 1:
            raise ValueError(f"cannot select an axis to squeeze out which has size={shape[a]} not equal to one")
    if len(set(axes)) != len(axes):
        raise ValueError(f"duplicate axes in {axis}")
    return tuple(axes)


def _squeeze_shape(shape, axis):
    axes = _squeeze_axes(shape, axis)
    out = tuple(d for i, d in enumerate(shape) if i not in axes)
    return out if out or not shape else (1,)


def _squeeze(xp, x, axis):
    return x.reshape(_squeeze_shape(x.shape, axis)).copy()


register(OpDef(
    name="squeeze", kernel=_squeeze, attrs={"axis": Attr(parse_axis, None)}, kind="shape",
    infer=lambda shapes, dtypes, axis: ([_squeeze_shape(tuple(shapes[0]), axis)], [dtypes[0]]),
    grad=lambda c, g: (call("reshape_like", g, c.inputs[0]),),
    test=OpTest(ref=lambda x, axis: x.reshape(_squeeze_shape(x.shape, axis)), cases=(
        (((1, 2, 1),), {}), (((1, 2, 1),), {"axis": 0}), (((1, 2, 1),), {"axis": -1}),
        (((1, 2, 1),), {"axis": (0, 2)}), (((1, 1),), {}), (((2, 3),), {}))),
    doc="Removes size-1 axes (all of them by default). Squeezing every axis leaves shape (1,), as in MXNet."))


def _flat_shape(shape):
    if not shape:
        return (1, 1)
    return (shape[0], math.prod(shape[1:]))


def _flatten(xp, x):
    return x.reshape(_flat_shape(x.shape)).copy()


register(OpDef(
    name="Flatten", kernel=_flatten, aliases=("flatten",), kind="shape",
    named_inputs=False, reshape=True,
    infer=lambda shapes, dtypes: ([_flat_shape(tuple(shapes[0]))], [dtypes[0]]),
    grad=lambda c, g: (call("reshape_like", g, c.inputs[0]),),
    test=OpTest(ref=lambda x: x.reshape(x.shape[0], -1) if x.ndim > 1 else x.reshape(-1, 1), cases=(
        (((2, 3, 4),), {}), (((3,),), {}), (((2, 3),), {}), (((2, 1, 2, 2),), {}))),
    doc="Collapses all axes but the first: (d0, d1*...*dk); a 1-D input becomes (n, 1)."))


def _reshape_like_shape(lshape, rshape, lhs_begin, lhs_end, rhs_begin, rhs_end):
    def bounds(shape, begin, end, side):
        n = len(shape)
        b = 0 if begin is None else (begin + n if begin < 0 else begin)
        e = n if end is None else (end + n if end < 0 else end)
        if not (0 <= b < e <= n) and not (n == 0 and b == e == 0):
            raise ValueError(f"Invalid begin, end, get {side}_begin={begin}, {side}_end={end}")
        return b, e
    lb, le = bounds(lshape, lhs_begin, lhs_end, "lhs")
    rb, re = bounds(rshape, rhs_begin, rhs_end, "rhs")
    out = tuple(lshape[:lb]) + tuple(rshape[rb:re]) + tuple(lshape[le:])
    if math.prod(out) != math.prod(lshape):
        raise ValueError(f"Cannot reshape lhs with shape {tuple(lshape)} to new shape {out} because they have "
                         "different size")
    return out


def _reshape_like(xp, lhs, rhs, lhs_begin, lhs_end, rhs_begin, rhs_end):
    return lhs.reshape(_reshape_like_shape(lhs.shape, rhs.shape, lhs_begin, lhs_end, rhs_begin, rhs_end)).copy()


_OPT_INT = optional(parse_int)
register(OpDef(
    name="reshape_like", kernel=_reshape_like, inputs=("lhs", "rhs"), nondiff_inputs=(1,), kind="shape", reshape=True,
    infer=lambda shapes, dtypes, **a: ([_reshape_like_shape(tuple(shapes[0]), tuple(shapes[1]), **a)], [dtypes[0]]),
    attrs={"lhs_begin": Attr(_OPT_INT, None), "lhs_end": Attr(_OPT_INT, None),
           "rhs_begin": Attr(_OPT_INT, None), "rhs_end": Attr(_OPT_INT, None)},
    grad=lambda c, g: (call("reshape_like", g, c.inputs[0]), None),
    test=OpTest(ref=lambda l, r, lhs_begin, lhs_end, rhs_begin, rhs_end: l.reshape(
        r.shape if lhs_begin is None and lhs_end is None and rhs_begin is None and rhs_end is None else
        l.shape[:lhs_begin or 0] + r.shape[rhs_begin or 0:rhs_end] + (l.shape[lhs_end:] if lhs_end is not None
                                                                      else ())), cases=(
        (((2, 3, 4), (6, 4)), {}),
        (((2, 3, 4), (6, 2)), {"lhs_begin": 0, "lhs_end": 2, "rhs_begin": 0, "rhs_end": 1}),
        (((2, 3, 4), (12,)), {"lhs_begin": 1}),
        (((2, 3, 4), (3, 2, 2)), {"lhs_begin": -1, "rhs_begin": 1}),
        (((2, 3, 4), (3,)), {"lhs_begin": 1, "lhs_end": 2, "rhs_end": 1}))),
    doc="Reshapes lhs to rhs's shape, or replaces lhs's axes [lhs_begin, lhs_end) by rhs's [rhs_begin, rhs_end)."))


# ---------------------------------------------------------------------------------------------------------
# SwapAxis / moveaxis / flip
def _swap_perm(ndim, dim1, dim2):
    a = _norm_axis(dim1, ndim, "axis1") if ndim else 0
    b = _norm_axis(dim2, ndim, "axis2") if ndim else 0
    perm = list(range(ndim))
    if ndim:
        perm[a], perm[b] = perm[b], perm[a]
    return tuple(perm)


def _swapaxis(xp, x, dim1, dim2):
    return xp.ascontiguousarray(xp.transpose(x, _swap_perm(x.ndim, dim1, dim2)))


register(OpDef(
    name="SwapAxis", kernel=_swapaxis, aliases=("swapaxes",), kind="shape",
    infer=lambda shapes, dtypes, dim1, dim2: ([_permuted(shapes[0], _swap_perm(len(shapes[0]), dim1, dim2))],
                                              [dtypes[0]]),
    attrs={"dim1": Attr(parse_int, 0), "dim2": Attr(parse_int, 0)},
    grad=lambda c, g: (call("SwapAxis", g, dim1=c.attrs["dim1"], dim2=c.attrs["dim2"]),),
    test=OpTest(ref=lambda x, dim1, dim2: np.swapaxes(x, dim1, dim2), cases=(
        (((2, 3, 4),), {}), (((2, 3, 4),), {"dim1": 0, "dim2": 2}), (((2, 3, 4),), {"dim1": -1, "dim2": 1}))),
    doc="Swaps two axes (negative axes allowed)."))


def _move_perm(ndim, source, destination):
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    src = tuple(_norm_axis(a, ndim, "source") for a in src)
    dst = tuple(_norm_axis(a, ndim, "destination") for a in dst)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("repeated axis in `source` or `destination`")
    order = [n for n in range(ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return tuple(order)


def _moveaxis(xp, x, source, destination):
    return xp.ascontiguousarray(xp.transpose(x, _move_perm(x.ndim, source, destination)))


register(OpDef(
    name="moveaxis", kernel=_moveaxis, kind="shape",
    infer=lambda shapes, dtypes, source, destination: (
        [_permuted(shapes[0], _move_perm(len(shapes[0]), source, destination))], [dtypes[0]]),
    attrs={"source": Attr(parse_axis, REQUIRED), "destination": Attr(parse_axis, REQUIRED)},
    grad=lambda c, g: (call("transpose", g, axes=tuple(int(i) for i in np.argsort(
        _move_perm(c.inputs[0].ndim, c.attrs["source"], c.attrs["destination"])))),),
    test=OpTest(ref=lambda x, source, destination: np.moveaxis(x, source, destination), cases=(
        (((2, 3, 4),), {"source": 0, "destination": -1}), (((2, 3, 4),), {"source": (0, 1), "destination": (-1, -2)}),
        (((2, 3),), {"source": 1, "destination": 0}))),
    doc="Moves axes to new positions (MXNet's Python-level nd.moveaxis, a transpose)."))


def _flip_axes(ndim, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if not 0 <= a < ndim:
            raise ValueError(f"axis {a} must be in range [0, {ndim})")
    return axes


def _flip_infer(shapes, dtypes, axis):
    _flip_axes(len(shapes[0]), axis)
    return [tuple(shapes[0])], [dtypes[0]]


def _flip(xp, x, axis):
    out = x
    for a in _flip_axes(x.ndim, axis):          # a repeated axis flips twice, as in MXNet
        out = xp.flip(out, a)
    return xp.ascontiguousarray(out)


def _flip_ref(x, axis):
    for a in ((axis,) if isinstance(axis, int) else axis):
        x = x[(slice(None),) * a + (slice(None, None, -1),)]
    return x


register(OpDef(
    name="flip", kernel=_flip, aliases=("reverse",), attrs={"axis": Attr(parse_axis, REQUIRED)}, kind="shape",
    infer=_flip_infer,
    grad=lambda c, g: (call("flip", g, axis=c.attrs["axis"]),),
    test=OpTest(ref=_flip_ref, cases=(
        (((2, 3, 4),), {"axis": 1}), (((2, 3, 4),), {"axis": (0, 2)}), (((3,),), {"axis": 0}),
        (((2, 3),), {"axis": (0, 0)}))),
    doc="Reverses the order of elements along the given axes (non-negative, as in MXNet)."))


# ---------------------------------------------------------------------------------------------------------
# tile / repeat
def _tile_shape(shape, reps):
    """numpy.tile's output shape: the shorter of shape and reps is padded with leading 1s."""
    shape, reps = tuple(shape), tuple(reps)
    for r in reps:
        if r <= 0:
            raise ValueError(f"reps {reps} must be positive")
    n = max(len(shape), len(reps))
    shape = (1,) * (n - len(shape)) + shape
    reps = (1,) * (n - len(reps)) + reps
    return check_shape(tuple(d * r for d, r in zip(shape, reps)))


def _tile(xp, x, reps):
    _tile_shape(x.shape, reps)
    return xp.tile(x, reps) if reps else x.copy()


def _tile_grad(c, g):
    x, reps = c.inputs[0], tuple(c.attrs["reps"])
    if x.size == 0:
        return (_zero_like(x),)
    n = max(len(reps), x.ndim)
    reps = (1,) * (n - len(reps)) + reps
    shape = (1,) * (n - x.ndim) + tuple(x.shape)
    if all(r == 1 for r in reps):
        return (call("reshape_like", g, x),)
    split = tuple(v for r, d in zip(reps, shape) for v in (r, d))
    summed = call("sum", call("Reshape", g, shape=split), axis=tuple(range(0, 2 * n, 2)))
    return (call("reshape_like", summed, x),)


register(OpDef(
    name="tile", kernel=_tile, attrs={"reps": Attr(parse_shape, REQUIRED)}, grad=_tile_grad, kind="shape",
    infer=lambda shapes, dtypes, reps: ([_tile_shape(shapes[0], reps)], [dtypes[0]]),
    test=OpTest(ref=lambda x, reps: np.tile(x, reps), cases=(
        (((2, 3),), {"reps": (2,)}), (((2, 3),), {"reps": (2, 1, 3)}), (((2, 3),), {"reps": (2, 2)}),
        (((3,),), {"reps": ()}), (((1, 2),), {"reps": (3, 1)}))),
    doc="Repeats the whole array `reps` times per axis (numpy.tile)."))


def _repeat_shape(shape, repeats, axis):
    if repeats < 0:
        raise ValueError("repeats cannot be a negative number")
    if axis is None:
        return check_shape((math.prod(shape) * repeats,))
    a = _norm_axis(axis, len(shape))
    return check_shape(tuple(shape[:a]) + (shape[a] * repeats,) + tuple(shape[a + 1:]))


def _repeat(xp, x, repeats, axis):
    _repeat_shape(x.shape, repeats, axis)
    if axis is None:
        return xp.repeat(x.reshape(-1), repeats)
    return xp.repeat(x, repeats, axis=_norm_axis(axis, x.ndim))


def _repeat_grad(c, g):
    x, r, axis = c.inputs[0], c.attrs["repeats"], c.attrs["axis"]
    if x.size == 0 or r == 0:
        return (_zero_like(x),)
    if axis is None:
        shape, red = (x.size, r), 1
    else:
        a = _norm_axis(axis, x.ndim)
        shape, red = tuple(x.shape[:a + 1]) + (r,) + tuple(x.shape[a + 1:]), a + 1
    return (call("reshape_like", call("sum", call("Reshape", g, shape=shape), axis=red), x),)


register(OpDef(
    name="repeat", kernel=_repeat, grad=_repeat_grad, kind="shape",
    infer=lambda shapes, dtypes, repeats, axis: ([_repeat_shape(shapes[0], repeats, axis)], [dtypes[0]]),
    attrs={"repeats": Attr(parse_int, REQUIRED), "axis": Attr(optional(parse_int), None)},
    test=OpTest(ref=lambda x, repeats, axis: np.repeat(x, repeats, axis=axis), cases=(
        (((2, 3),), {"repeats": 2}), (((2, 3),), {"repeats": 2, "axis": 1}), (((2, 3),), {"repeats": 3, "axis": -2}),
        (((4,),), {"repeats": 1, "axis": 0}), (((2, 3),), {"repeats": 0, "axis": 1}))),
    doc="Repeats each element `repeats` times along `axis` (the flattened array when axis is None)."))


# ---------------------------------------------------------------------------------------------------------
# Pad
def _pad_pairs(x_shape, x_dtype, mode, pad_width):
    ndim = len(x_shape)
    if ndim not in (4, 5):
        raise ValueError("Current implementation only supports 4-D or 5-D input.")
    if len(pad_width) != 2 * ndim:
        raise ValueError(f"Input shape vs padding spec mismatch: pad_width {tuple(pad_width)} needs {2 * ndim} "
                         f"values for a {ndim}-D input")
    if any(pad_width[:4]):
        raise ValueError("Current implementation expects padding on the first two axes to be zero.")
    if any(p < 0 for p in pad_width):
        raise ValueError(f"pad_width {tuple(pad_width)} must be non-negative")
    if np.dtype(x_dtype).kind != "f":
        raise ValueError(f"This operation only support floating point types, not {np.dtype(x_dtype).name}")
    pairs = tuple((pad_width[2 * i], pad_width[2 * i + 1]) for i in range(ndim))
    if mode == "reflect":
        for (b, a), d in zip(pairs, x_shape):
            if b >= d or a >= d:
                raise ValueError("Current implementation of reflection padding only supports padding sizes "
                                 "smaller than the input size.")
    return pairs


def _padded_shape(shape, pairs):
    return check_shape(tuple(d + b + a for d, (b, a) in zip(shape, pairs)))


def _pad_infer(shapes, dtypes, mode, pad_width, constant_value):
    return [_padded_shape(shapes[0], _pad_pairs(shapes[0], dtypes[0], mode, pad_width))], [dtypes[0]]


def _pad(xp, x, mode, pad_width, constant_value):
    pairs = _pad_pairs(x.shape, x.dtype, mode, pad_width)
    _padded_shape(x.shape, pairs)
    if mode == "constant":
        # a numpy scalar of x's dtype: cupy.pad converts constant_values through numpy, which a cupy array refuses
        return xp.pad(x, pairs, mode="constant", constant_values=np.asarray(constant_value, dtype=x.dtype)[()])
    return xp.pad(x, pairs, mode=mode)


def _pad_source_index(n, before, after, mode):
    """For each position of the padded axis, the input index it copies (edge/reflect)."""
    i = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(i, 0, n - 1)
    period = 2 * (n - 1) if n > 1 else 1
    i = np.abs(i) % period
    return np.where(i >= n, period - i, i)


def _pad_backward_pairs(g_shape, pad_width, shape):
    """The (before, after) pairs of Pad's adjoint, checking that g_shape is `shape` padded by them."""
    ndim = len(g_shape)
    if len(shape) != ndim or len(pad_width) != 2 * ndim:
        raise ValueError(f"gradient shape {tuple(g_shape)} does not fit shape {tuple(shape)} and pad_width "
                         f"{tuple(pad_width)}")
    pairs = tuple((pad_width[2 * i], pad_width[2 * i + 1]) for i in range(ndim))
    if tuple(g_shape) != tuple(d + b + a for d, (b, a) in zip(shape, pairs)):
        raise ValueError(f"gradient shape {tuple(g_shape)} is not shape {tuple(shape)} padded by {tuple(pad_width)}")
    return pairs


def _pad_backward_infer(shapes, dtypes, mode, pad_width, shape):
    _pad_backward_pairs(shapes[0], pad_width, shape)
    return [tuple(shape)], [dtypes[0]]


def _pad_backward(xp, g, mode, pad_width, shape):
    pairs = _pad_backward_pairs(g.shape, pad_width, shape)
    if mode == "constant":
        key = tuple(slice(b, b + d) for (b, a), d in zip(pairs, shape))
        return g[key].copy()
    out = g
    for ax, ((b, a), n) in enumerate(zip(pairs, shape)):
        if b == 0 and a == 0:
            continue
        src = _pad_source_index(n, b, a, mode)
        moved = xp.moveaxis(out, ax, 0)
        acc = xp.zeros((n,) + moved.shape[1:], dtype=g.dtype)
        xp.add.at(acc, xp.asarray(src), moved)
        out = xp.moveaxis(acc, 0, ax)
    return xp.ascontiguousarray(out)


_PAD_ATTRS = {"mode": Attr(choice("constant", "edge", "reflect"), REQUIRED),
              "pad_width": Attr(parse_shape, REQUIRED),
              "constant_value": Attr(parse_float, 0.0)}


def _np_pad_ref(x, mode, pad_width, constant_value):
    pairs = [(pad_width[2 * i], pad_width[2 * i + 1]) for i in range(x.ndim)]
    if mode == "constant":
        return np.pad(x, pairs, mode="constant", constant_values=constant_value)
    return np.pad(x, pairs, mode=mode)


register(OpDef(
    name="Pad", kernel=_pad, aliases=("pad",), attrs=_PAD_ATTRS, kind="shape", infer=_pad_infer,
    grad=lambda c, g: (call("_pad_backward", g, mode=c.attrs["mode"], pad_width=c.attrs["pad_width"],
                            shape=c.inputs[0].shape),),
    test=OpTest(ref=_np_pad_ref, cases=(
        (((1, 2, 2, 3),), {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1), "constant_value": 1.5}),
        (((1, 2, 2, 3),), {"mode": "edge", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1)}),
        (((1, 2, 3, 3),), {"mode": "reflect", "pad_width": (0, 0, 0, 0, 2, 1, 1, 2)}),
        (((1, 1, 2, 2, 3),), {"mode": "edge", "pad_width": (0, 0, 0, 0, 1, 1, 0, 2, 1, 0)}),
        (((1, 1, 2, 2, 3),), {"mode": "reflect", "pad_width": (0, 0, 0, 0, 1, 1, 1, 0, 2, 2)}))),
    doc="Pads the spatial axes of a 4-D/5-D float array (MXNet's restrictions: the first two axes are never "
        "padded; reflect padding must be smaller than the axis)."))
register(OpDef(
    name="_pad_backward", kernel=_pad_backward, hidden=True, inputs=("grad",), kind="shape",
    infer=_pad_backward_infer,
    attrs={"mode": _PAD_ATTRS["mode"], "pad_width": _PAD_ATTRS["pad_width"], "shape": Attr(parse_shape, REQUIRED)},
    grad=lambda c, g: (call("Pad", g, mode=c.attrs["mode"], pad_width=c.attrs["pad_width"]),),
    test=OpTest(ref=lambda g, mode, pad_width, shape: _pad_backward(np, g, mode, pad_width, shape), cases=(
        (((1, 2, 5, 6),), {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1), "shape": (1, 2, 2, 3)}),
        (((1, 2, 5, 6),), {"mode": "edge", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1), "shape": (1, 2, 2, 3)}),
        (((1, 2, 6, 6),), {"mode": "reflect", "pad_width": (0, 0, 0, 0, 2, 1, 1, 2), "shape": (1, 2, 3, 3)}))),
    doc="Adjoint of Pad: the padded gradient summed back onto the input positions it copied."))


# ---------------------------------------------------------------------------------------------------------
# Concat / stack
def _check_num_args(name, dtypes, num_args):
    if not dtypes:
        raise ValueError(f"{name} needs at least one input")
    if num_args is not None and num_args != len(dtypes):
        raise ValueError(f"Operator {name} expects {num_args} inputs, but got {len(dtypes)} instead")
    check_same_dtypes(dtypes)


def _concat_infer(shapes, dtypes, num_args, dim):
    _check_num_args("Concat", dtypes, num_args)
    return [concat_shape(shapes, dim)[1]], [dtypes[0]]


def _concat(xp, *arrays, num_args, dim):
    _check_num_args("Concat", [x.dtype for x in arrays], num_args)
    a, _ = concat_shape([x.shape for x in arrays], dim)
    return xp.concatenate(arrays, axis=a)


def _concat_grad(c, g):
    ndim = c.inputs[0].ndim
    a = _norm_axis(c.attrs["dim"], ndim)
    grads, start = [], 0
    for x in c.inputs:
        n = x.shape[a]
        grads.append(call("slice_axis", g, axis=a, begin=start, end=start + n) if n else _zero_like(x))
        start += n
    return tuple(grads)


register(OpDef(
    name="Concat", kernel=_concat, aliases=("concat",), inputs=("data",), variadic=True, kind="shape",
    infer=_concat_infer,
    attrs={"num_args": Attr(optional(parse_int), None, "number of inputs (filled in automatically)"),
           "dim": Attr(parse_int, 1)},
    grad=_concat_grad,
    test=OpTest(ref=lambda *xs, num_args, dim: np.concatenate(xs, axis=dim), cases=(
        (((2, 3), (2, 4)), {}), (((2, 3), (1, 3), (3, 3)), {"dim": 0}), (((2, 3, 2), (2, 3, 1)), {"dim": -1}),
        (((2, 3),), {}), (((2, 3), (2, 0)), {"dim": 1}))),
    doc="Joins arrays along `dim` (default 1)."))


def _stack_shape(shapes, dtypes, axis, num_args):
    _check_num_args("stack", dtypes, num_args)
    shapes = [tuple(s) for s in shapes]
    for s in shapes:
        if s != shapes[0]:
            raise ValueError(f"stack needs equal shapes, got {', '.join(str(y) for y in shapes)}")
    a = _norm_axis(axis, len(shapes[0]) + 1)
    return shapes[0][:a] + (len(shapes),) + shapes[0][a:]


def _stack(xp, *arrays, axis, num_args):
    _stack_shape([x.shape for x in arrays], [x.dtype for x in arrays], axis, num_args)
    return xp.stack(arrays, axis=axis)


def _stack_grad(c, g):
    n = len(c.inputs)
    axis = _norm_axis(c.attrs["axis"], c.inputs[0].ndim + 1)
    if c.inputs[0].size == 0:
        return tuple(_zero_like(x) for x in c.inputs)
    return _as_tuple(call("SliceChannel", g, num_outputs=n, axis=axis, squeeze_axis=True)) if n > 1 else \
        (call("reshape_like", g, c.inputs[0]),)


register(OpDef(
    name="stack", kernel=_stack, inputs=("data",), variadic=True, kind="shape",
    infer=lambda shapes, dtypes, axis, num_args: ([_stack_shape(shapes, dtypes, axis, num_args)], [dtypes[0]]),
    attrs={"axis": Attr(parse_int, 0), "num_args": Attr(optional(parse_int), None)},
    grad=_stack_grad,
    test=OpTest(ref=lambda *xs, axis, num_args: np.stack(xs, axis=axis), cases=(
        (((2, 3), (2, 3)), {}), (((2, 3), (2, 3), (2, 3)), {"axis": 2}), (((2, 3), (2, 3)), {"axis": -1}),
        (((3,),), {}), (((2, 3), (2, 3)), {"axis": -3}))),
    doc="Joins equal-shape arrays along a new axis."))


# ---------------------------------------------------------------------------------------------------------
# SliceChannel (split), _split_v2, split_v2
def _piece_shapes(shape, bounds, axis, squeeze_axis):
    """The shapes of the pieces [b, e) along `axis` (squeezed: that axis removed; each piece must have size 1)."""
    shape = tuple(shape)
    out = []
    for b, e in bounds:
        if squeeze_axis:
            if e - b != 1:
                raise ValueError(f"squeeze_axis: expected axis size of 1 but got {e - b}")
            out.append(shape[:axis] + shape[axis + 1:])            # 1-D input: 0-d, as MXNet
        else:
            out.append(shape[:axis] + (e - b,) + shape[axis + 1:])
    return out


def _split_pieces(xp, x, bounds, axis, squeeze_axis):
    shapes = _piece_shapes(x.shape, bounds, axis, squeeze_axis)
    out = [x[(slice(None),) * axis + (slice(b, e),)] for b, e in bounds]
    out = [p.reshape(s).copy() if squeeze_axis else p.copy() for p, s in zip(out, shapes)]
    return tuple(out) if len(out) != 1 else out[0]


def _slice_channel_bounds(shape, num_outputs, axis, squeeze_axis):
    """(the normalized axis, the [begin, end) of each output along it)."""
    if num_outputs < 1:
        raise ValueError(f"num_outputs must be positive, got {num_outputs}")
    a = _norm_axis(axis, len(shape))
    n = shape[a]
    if n % num_outputs:
        raise ValueError(f"You are trying to split the {a}-th axis of input tensor with shape {tuple(shape)} into "
                         f"num_outputs={num_outputs} evenly sized chunks, but this is not possible because "
                         f"{num_outputs} does not evenly divide {n}")
    if squeeze_axis and n != num_outputs:
        raise ValueError(f"If squeeze axis is True, the size of the sliced axis must be the same as num_outputs. "
                         f"Input shape={tuple(shape)}, axis={axis}, num_outputs={num_outputs}.")
    step = n // num_outputs
    return a, [(i * step, (i + 1) * step) for i in range(num_outputs)]


def _slice_channel_infer(shapes, dtypes, num_outputs, axis, squeeze_axis):
    a, bounds = _slice_channel_bounds(shapes[0], num_outputs, axis, squeeze_axis)
    return _piece_shapes(shapes[0], bounds, a, squeeze_axis), [dtypes[0]] * num_outputs


def _slice_channel(xp, x, num_outputs, axis, squeeze_axis):
    a, bounds = _slice_channel_bounds(x.shape, num_outputs, axis, squeeze_axis)
    return _split_pieces(xp, x, bounds, a, squeeze_axis)


def _join_grads(c, grads, axis, squeeze_axis):
    """split's gradient: the output gradients concatenated back (re-expanded when the axis was squeezed)."""
    x = c.inputs[0]
    if x.size == 0:
        return (_zero_like(x),)
    a = _norm_axis(axis, x.ndim)
    parts = [call("expand_dims", g, axis=a) if squeeze_axis else g for g in grads]
    return (parts[0] if len(parts) == 1 else call("Concat", *parts, dim=a),)


register(OpDef(
    name="SliceChannel", kernel=_slice_channel, aliases=("split",), kind="shape", infer=_slice_channel_infer,
    attrs={"num_outputs": Attr(parse_int, REQUIRED), "axis": Attr(parse_int, 1),
           "squeeze_axis": Attr(parse_bool, False)},
    num_outputs=lambda a: a["num_outputs"],
    grad=lambda c, *gs: _join_grads(c, gs, c.attrs["axis"], c.attrs["squeeze_axis"]),
    test=OpTest(ref=lambda x, num_outputs, axis, squeeze_axis: tuple(
        (np.squeeze(p, axis) if squeeze_axis else p) for p in np.split(x, num_outputs, axis=axis)), cases=(
        (((2, 3, 4),), {"num_outputs": 3}), (((2, 3, 4),), {"num_outputs": 3, "squeeze_axis": True}),
        (((2, 3, 4),), {"num_outputs": 2, "axis": -1}), (((2, 3, 4),), {"num_outputs": 1}),
        (((4, 2),), {"num_outputs": 2, "axis": 0}), (((3,),), {"num_outputs": 3, "axis": 0, "squeeze_axis": True}))),
    doc="Splits into `num_outputs` equal parts along `axis` (default 1); squeeze_axis drops the split axis "
        "(only when each part has size 1)."))


def _split_v2_bounds(n, indices, sections):
    if sections > 0:
        if n % sections:
            raise ValueError(f"array split does not result in an equal division: {n} into {sections} sections")
        step = n // sections
        return [(i * step, (i + 1) * step) for i in range(sections)]
    indices = tuple(indices)
    if not indices or indices[0] != 0:
        raise ValueError(f"indices {indices} must start with 0 (the first section's start)")
    ends = indices[1:] + (n,)
    bounds = []
    for k, (b, e) in enumerate(zip(indices, ends)):
        if e > n:
            raise ValueError(f"end {e} is no less than the size of the axis {n}")
        if b > e:
            raise ValueError(f"start {b} is not less than end {e} for subarray {k}")
        bounds.append((b, e))
    return bounds


def _split_v2_kernel(xp, x, indices, axis, squeeze_axis, sections):
    a = _norm_axis(axis, x.ndim)
    return _split_pieces(xp, x, _split_v2_bounds(x.shape[a], indices, sections), a, squeeze_axis)


def _split_v2_infer(shapes, dtypes, indices, axis, squeeze_axis, sections):
    a = _norm_axis(axis, len(shapes[0]))
    out = _piece_shapes(shapes[0], _split_v2_bounds(shapes[0][a], indices, sections), a, squeeze_axis)
    return out, [dtypes[0]] * len(out)


def _split_v2_ref(x, indices, axis, squeeze_axis, sections):
    parts = np.split(x, sections if sections > 0 else list(indices[1:]), axis=axis)
    out = tuple(np.squeeze(p, axis) if squeeze_axis else p for p in parts)
    return out if len(out) != 1 else out[0]


register(OpDef(
    name="_split_v2", kernel=_split_v2_kernel, hidden=True, kind="shape", infer=_split_v2_infer,
    attrs={"indices": Attr(parse_shape, REQUIRED), "axis": Attr(parse_int, 1),
           "squeeze_axis": Attr(parse_bool, False), "sections": Attr(parse_int, 0)},
    num_outputs=lambda a: a["sections"] if a["sections"] > 0 else len(a["indices"]),
    grad=lambda c, *gs: _join_grads(c, gs, c.attrs["axis"], c.attrs["squeeze_axis"]),
    test=OpTest(ref=_split_v2_ref, cases=(
        (((2, 3, 4),), {"indices": (0, 1, 3), "axis": 2}), (((2, 3, 4),), {"indices": (), "sections": 2, "axis": 2}),
        (((2, 3, 4),), {"indices": (0, 1, 2), "squeeze_axis": True}),
        (((2, 3, 4),), {"indices": (0, 2), "axis": -1}), (((4, 3),), {"indices": (0, 0, 2), "axis": 0}))),
    doc="MXNet's registered split op: `indices` are section starts (beginning with 0), or `sections` > 0."))


def _v2_attrs(n, indices_or_sections):
    if isinstance(indices_or_sections, int):
        return (), indices_or_sections
    return (0,) + tuple(indices_or_sections), 0


def _split_v2_public(xp, x, indices_or_sections, axis, squeeze_axis):
    a = _norm_axis(axis, x.ndim)
    indices, sections = _v2_attrs(x.shape[a], indices_or_sections)
    return _split_pieces(xp, x, _split_v2_bounds(x.shape[a], indices, sections), a, squeeze_axis)


def _split_v2_public_infer(shapes, dtypes, indices_or_sections, axis, squeeze_axis):
    a = _norm_axis(axis, len(shapes[0]))
    indices, sections = _v2_attrs(shapes[0][a], indices_or_sections)
    out = _piece_shapes(shapes[0], _split_v2_bounds(shapes[0][a], indices, sections), a, squeeze_axis)
    return out, [dtypes[0]] * len(out)


def _split_v2_public_grad(c, *gs):
    return _join_grads(c, gs, c.attrs["axis"], c.attrs["squeeze_axis"])


register(OpDef(
    name="split_v2", kernel=_split_v2_public, kind="shape", infer=_split_v2_public_infer,
    attrs={"indices_or_sections": Attr(parse_axis, REQUIRED), "axis": Attr(parse_int, 0),
           "squeeze_axis": Attr(parse_bool, False)},
    num_outputs=lambda a: (a["indices_or_sections"] if isinstance(a["indices_or_sections"], int)
                           else len(a["indices_or_sections"]) + 1),
    grad=_split_v2_public_grad,
    test=OpTest(ref=lambda x, indices_or_sections, axis, squeeze_axis: _split_v2_ref(
        x, *_v2_attrs(0, indices_or_sections)[:1], axis, squeeze_axis, _v2_attrs(0, indices_or_sections)[1]),
        cases=((((4, 3),), {"indices_or_sections": 2}), (((4, 3),), {"indices_or_sections": (1, 3)}),
               (((2, 3),), {"indices_or_sections": 3, "axis": 1, "squeeze_axis": True}),
               (((2, 4),), {"indices_or_sections": (1,), "axis": -1}))),
    doc="MXNet's nd.split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False): an int splits into equal "
        "sections, a tuple gives the split points."))


# ---------------------------------------------------------------------------------------------------------
# slice / slice_axis / slice_like, and their shared backward
def parse_opt_int_tuple(value):
    """A tuple whose entries are ints or None: "(None, 1)", (None, 1), [0, -1]."""
    if isinstance(value, str):
        text = value.strip()
        if len(text) >= 2 and (text[0], text[-1]) in (("(", ")"), ("[", "]")):
            text = text[1:-1]
        parts = [p.strip() for p in text.split(",")]
        if parts and parts[-1] == "":
            parts.pop()
        return tuple(None if p in _NONE else parse_int(p) for p in parts)
    if value is None:
        return ()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    if isinstance(value, (tuple, list)):
        return tuple(None if v is None or (isinstance(v, str) and v.strip() in _NONE) else parse_int(v)
                     for v in value)
    raise ValueError(f"expected a tuple of ints or None, got {value!r}")


def _slice_key(ndim, begin, end, step):
    if ndim == 0:
        raise ValueError("slice only works for ndim > 0")
    if len(begin) != len(end):
        raise ValueError(f"begin and end must have the same length ({len(begin)} vs. {len(end)})")
    if step and len(step) != len(begin):
        raise ValueError(f"step must be empty or as long as begin ({len(step)} vs. {len(begin)})")
    if len(begin) > ndim:
        raise ValueError(f"Slicing axis exceeds data dimensions ({len(begin)} vs. {ndim})")
    step = step or (None,) * len(begin)
    for i, s in enumerate(step):
        if s == 0:
            raise ValueError(f"slice op step[{i}] cannot be 0")
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


def slice_shape(shape, begin, end, step):
    """The shape of slice(x, begin, end, step) for x of `shape`. MXNet's GetIndexRange clips begin and end to the
    axis exactly as a Python slice does: a begin past the end (or an empty range) gives a size-0 axis, no error."""
    shape = tuple(shape)
    key = _slice_key(len(shape), begin, end, step)
    return tuple(len(range(*k.indices(d))) for k, d in zip(key, shape)) + shape[len(key):]


def _slice(xp, x, begin, end, step):
    return x[_slice_key(x.ndim, begin, end, step)].copy()


def _slice_backward_check(g_shape, shape, begin, end, step):
    region = slice_shape(shape, begin, end, step)
    if len(g_shape) > len(region) or any(g != 1 and g != r for g, r in zip(g_shape[::-1], region[::-1])):
        raise ValueError(f"gradient of shape {tuple(g_shape)} does not fit the sliced region {region} of shape "
                         f"{tuple(shape)}")
    return check_shape(shape)


def _slice_backward(xp, g, shape, begin, end, step):
    out = xp.zeros(_slice_backward_check(g.shape, shape, begin, end, step), dtype=g.dtype)
    out[_slice_key(len(shape), begin, end, step)] = g
    return out


def _slice_grad(c, g):
    a = c.attrs
    return (call("_slice_backward", g, shape=c.inputs[0].shape, begin=a["begin"], end=a["end"], step=a["step"]),)


_SLICE_ATTRS = {"begin": Attr(parse_opt_int_tuple, REQUIRED), "end": Attr(parse_opt_int_tuple, REQUIRED),
                "step": Attr(parse_opt_int_tuple, ())}


def _slice_ref(x, begin, end, step):
    idx = []
    for i, (b, e) in enumerate(zip(begin, end)):
        s = step[i] if step and step[i] is not None else 1
        idx.append(list(range(x.shape[i]))[slice(b, e, s)])
    out = x
    for i, ix in enumerate(idx):
        out = np.take(out, np.array(ix, dtype=np.int64), axis=i)
    return out


register(OpDef(
    name="slice", kernel=_slice, attrs=_SLICE_ATTRS, grad=_slice_grad, kind="shape", aliases=("crop",),
    named_inputs=False,
    infer=lambda shapes, dtypes, begin, end, step: ([slice_shape(shapes[0], begin, end, step)], [dtypes[0]]),
    test=OpTest(ref=_slice_ref, cases=(
        (((3, 4),), {"begin": (0, 1), "end": (2, 3)}),
        (((3, 4, 2),), {"begin": (None, 1), "end": (None, None)}),
        (((3, 4, 2),), {"begin": (None, None, None), "end": (None, None, None), "step": (-1, -2, 1)}),
        (((3, 4),), {"begin": (-1, 3), "end": (-4, 0), "step": (-1, -1)}),
        (((3, 4),), {"begin": (0, 5), "end": (2, 6)}),
        (((3, 4),), {"begin": "(None, -10)", "end": "(None, 10)", "step": "(2, None)"}),
        (((3, 4),), {"begin": (), "end": ()}))),
    doc="Basic slicing: begin/end/step per leading axis, None entries mean the default (Python slice rules, as "
        "MXNet's: out-of-range begin/end are clipped, so a begin past the end gives a size-0 axis)."))
register(OpDef(
    name="_slice_backward", kernel=_slice_backward, hidden=True, inputs=("grad",), kind="shape",
    infer=lambda shapes, dtypes, shape, begin, end, step: (
        [_slice_backward_check(shapes[0], shape, begin, end, step)], [dtypes[0]]),
    attrs={"shape": Attr(parse_shape, REQUIRED), **_SLICE_ATTRS},
    grad=lambda c, g: (call("slice", g, begin=c.attrs["begin"], end=c.attrs["end"], step=c.attrs["step"]),),
    test=OpTest(ref=lambda g, shape, begin, end, step: _slice_backward(np, g, shape, begin, end, step), cases=(
        (((2, 2),), {"shape": (3, 4), "begin": (0, 1), "end": (2, 3), "step": ()}),
        (((2, 2),), {"shape": (3, 4), "begin": (None, None), "end": (None, None), "step": (-2, -2)}))),
    doc="Adjoint of slicing: zeros of `shape` with the gradient written into the sliced region."))


# _slice_assign (alias _crop_assign) and _slice_assign_scalar: lhs with the sliced region replaced (MXNet's
# x[begin:end] = v without `out=` aliasing; nd.concatenate and old scripts call them through nd._internal)
def _slice_assign_check(lhs_shape, rhs_shape, begin, end, step):
    region = slice_shape(lhs_shape, begin, end, step)
    if rhs_shape is not None and tuple(rhs_shape) != region:
        raise ValueError(f"rhs of shape {tuple(rhs_shape)} does not match the sliced region {region} of lhs "
                         f"{tuple(lhs_shape)}")
    return tuple(lhs_shape)


def _slice_assign(xp, lhs, rhs, begin, end, step):
    _slice_assign_check(lhs.shape, rhs.shape, begin, end, step)
    out = lhs.copy()
    out[_slice_key(lhs.ndim, begin, end, step)] = rhs
    return out


def _slice_assign_scalar(xp, lhs, scalar, begin, end, step):
    out = lhs.copy()
    out[_slice_key(lhs.ndim, begin, end, step)] = scalar
    return out


def _outside_region(c, g):
    """g with the sliced region zeroed: the gradient of lhs, whose region the assignment overwrote."""
    a = c.attrs
    inside = call("_slice_assign_scalar", call("zeros_like", g), scalar=1.0, begin=a["begin"], end=a["end"],
                  step=a["step"])
    return g * (1 - inside)


def _ref_slice_assign(lhs, rhs, begin, end, step):
    out = lhs.copy()
    key = tuple(slice(b, e, (step[i] if step else None)) for i, (b, e) in enumerate(zip(begin, end)))
    out[key] = rhs
    return out


register(OpDef(
    name="_slice_assign", kernel=_slice_assign, inputs=("lhs", "rhs"), attrs=_SLICE_ATTRS, hidden=True,
    aliases=("_crop_assign",),
    infer=lambda shapes, dtypes, begin, end, step: (
        [_slice_assign_check(shapes[0], shapes[1], begin, end, step)], [dtypes[0]]),
    grad=lambda c, g: (_outside_region(c, g), call("slice", g, begin=c.attrs["begin"], end=c.attrs["end"],
                                                    step=c.attrs["step"])),
    test=OpTest(ref=_ref_slice_assign, cases=(
        (((3, 4), (2, 2)), {"begin": (0, 1), "end": (2, 3)}),
        (((2, 3, 4), (2, 1, 3)), {"begin": (0, 0, 0), "end": (2, 1, 3)}),
        (((3, 4), (2, 2)), {"begin": (None, None), "end": (None, None), "step": (2, -2)}))),
    doc="lhs with lhs[begin:end:step] replaced by rhs (a new array)."))
register(OpDef(
    name="_slice_assign_scalar", kernel=_slice_assign_scalar, attrs={"scalar": Attr(parse_float, 0.0),
                                                                     **_SLICE_ATTRS},
    hidden=True, aliases=("_crop_assign_scalar",),
    infer=lambda shapes, dtypes, scalar, begin, end, step: (
        [_slice_assign_check(shapes[0], None, begin, end, step)], [dtypes[0]]),
    grad=lambda c, g: (_outside_region(c, g),),
    test=OpTest(ref=lambda x, scalar, begin, end, step: _ref_slice_assign(x, scalar, begin, end, step), cases=(
        (((3, 4),), {"scalar": 5.0, "begin": (0, 1), "end": (2, 3)}),
        (((2, 3, 4),), {"scalar": -1.5, "begin": (None, 1), "end": (None, None), "step": (None, -1)}))),
    doc="x with x[begin:end:step] set to scalar (a new array)."))


def _slice_axis_bounds(shape, axis, begin, end):
    """(axis, begin, end) of slice_axis, with MXNet's checks (GetSliceAxisParams): negative begin/end count from
    the end; end may not pass the axis and begin must come before end (nothing is clipped, unlike slice); an
    axis of size 0 slices to size 0 whatever begin and end are."""
    ndim = len(shape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for an array of ndim {ndim}")
    a = axis + ndim if axis < 0 else axis
    n = shape[a]
    if n == 0:
        return a, 0, 0
    b = begin + n if begin < 0 else begin
    e = n if end is None else (end + n if end < 0 else end)
    if e > n:
        raise ValueError(f"Invalid end for end={end} as axis_size is {n}")
    if not b < e or e < 0:
        raise ValueError(f"Invalid begin, end, get begin={begin}, end={end} (axis_size is {n})")
    if b < 0:
        raise ValueError(f"Invalid begin for begin={begin} as axis_size is {n}")
    return a, b, e


def _slice_axis_infer(shapes, dtypes, axis, begin, end):
    shape = tuple(shapes[0])
    a, b, e = _slice_axis_bounds(shape, axis, begin, end)
    return [shape[:a] + (e - b,) + shape[a + 1:]], [dtypes[0]]


def _slice_axis(xp, x, axis, begin, end):
    a, b, e = _slice_axis_bounds(x.shape, axis, begin, end)
    return x[(slice(None),) * a + (slice(b, e),)].copy()


def _slice_axis_grad(c, g):
    x = c.inputs[0]
    a, b, e = _slice_axis_bounds(x.shape, c.attrs["axis"], c.attrs["begin"], c.attrs["end"])
    begin = (None,) * a + (b,)
    end = (None,) * a + (e,)
    return (call("_slice_backward", g, shape=x.shape, begin=begin, end=end, step=()),)


register(OpDef(
    name="slice_axis", kernel=_slice_axis, grad=_slice_axis_grad, kind="shape", infer=_slice_axis_infer,
    attrs={"axis": Attr(parse_int, REQUIRED), "begin": Attr(parse_int, REQUIRED),
           "end": Attr(optional(parse_int), REQUIRED)},
    test=OpTest(ref=lambda x, axis, begin, end: np.take(x, np.arange(x.shape[axis])[begin:end], axis=axis), cases=(
        (((3, 4),), {"axis": 1, "begin": 1, "end": 3}), (((3, 4),), {"axis": 0, "begin": 1, "end": None}),
        (((2, 3, 4),), {"axis": -1, "begin": -3, "end": -1}), (((2, 3, 4),), {"axis": 1, "begin": 0, "end": 1}))),
    doc="Slices [begin, end) along one axis; end=None means the axis' end; needs begin < end <= size (an empty "
        "axis stays empty), as MXNet."))


def _slice_like_key(shape, like_shape, axes):
    ndim = len(shape)
    if not axes:
        if ndim != len(like_shape):
            raise ValueError(f"By default slice_axis performs slice on all axes, but ndim mismatch for inputs: "
                             f"{ndim} vs. {len(like_shape)}")
        axes = range(ndim)
    key = [slice(None)] * ndim
    for ax in axes:
        a = _norm_axis(ax, ndim)
        if a >= len(like_shape):
            raise ValueError(f"Slice axis: {ax} exceeds second input: {len(like_shape)}")
        if like_shape[a] > shape[a]:
            raise ValueError(f"Slice axis {a} with size {like_shape[a]} exceeds limit of input with size {shape[a]}")
        key[a] = slice(0, like_shape[a])
    return tuple(key)


def _slice_like(xp, x, like, axes):
    return x[_slice_like_key(x.shape, like.shape, axes)].copy()


def _slice_like_infer(shapes, dtypes, axes):
    key = _slice_like_key(tuple(shapes[0]), tuple(shapes[1]), axes)
    return [tuple(d if k.stop is None else k.stop for k, d in zip(key, shapes[0]))], [dtypes[0]]


def _slice_like_grad(c, g):
    x, like = c.inputs
    key = _slice_like_key(x.shape, like.shape, c.attrs["axes"])
    return (call("_slice_backward", g, shape=x.shape, begin=tuple(k.start for k in key),
                 end=tuple(k.stop for k in key), step=()), None)


register(OpDef(
    name="slice_like", kernel=_slice_like, inputs=("data", "shape_like"), nondiff_inputs=(1,), kind="shape",
    attrs={"axes": Attr(parse_shape, ())}, grad=_slice_like_grad, infer=_slice_like_infer,
    test=OpTest(ref=lambda x, like, axes: x[tuple(slice(0, like.shape[i]) if not axes or i in
                                                  [a % x.ndim for a in axes] else slice(None)
                                                  for i in range(x.ndim))], cases=(
        (((3, 4), (2, 3)), {}), (((2, 3, 4), (1, 2, 3)), {"axes": (0, 2)}), (((2, 3, 4), (1, 2, 3)), {"axes": (-1,)}),
        (((2, 3, 4), (1, 2, 5)), {"axes": (0,)}))),
    doc="Slices `data` to the shape of `shape_like` (on `axes`, or on all axes)."))


# ---------------------------------------------------------------------------------------------------------
# depth_to_space / space_to_depth (DCR layout, as MXNet)
def _check_block(shape, b, name):
    if len(shape) != 4:
        raise ValueError(f"Operation {name} requires exactly 4D tensor, got {len(shape)}-D")
    if b <= 0:
        raise ValueError("block_size must be a positive integer value")
    if 0 in shape:                         # MXNet refuses empty arrays here (a 0 dim is "unknown" to its checks)
        raise ValueError(f"Operation {name}: dimension {shape.index(0)} of {tuple(shape)} cannot be 0")


def _d2s_shape(shape, b):
    _check_block(shape, b, "Depth To Space")
    n, c, h, w = shape
    if c % (b * b):
        raise ValueError(f"Dimension 1 (depth, {c}) should be a multiple of block_size^2 = {b * b}")
    return (n, c // (b * b), h * b, w * b)


def _s2d_shape(shape, b):
    _check_block(shape, b, "Space To Depth")
    n, c, h, w = shape
    if h % b or w % b:
        raise ValueError(f"Dimensions 2 and 3 ({h}, {w}) should be multiples of block_size {b}")
    return (n, c * b * b, h // b, w // b)


def _depth_to_space(xp, x, block_size):
    b = block_size
    out = _d2s_shape(x.shape, b)
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return xp.ascontiguousarray(y).reshape(out)


def _space_to_depth(xp, x, block_size):
    b = block_size
    out = _s2d_shape(x.shape, b)
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return xp.ascontiguousarray(y).reshape(out)


def _d2s_ref(x, block_size):
    b = block_size
    n, c, h, w = x.shape
    out = np.zeros((n, c // (b * b), h * b, w * b), dtype=x.dtype)
    for i in range(b):
        for j in range(b):
            out[:, :, i::b, j::b] = x[:, (i * b + j) * (c // (b * b)):(i * b + j + 1) * (c // (b * b))]
    return out


def _s2d_ref(x, block_size):
    b = block_size
    n, c, h, w = x.shape
    out = np.zeros((n, c * b * b, h // b, w // b), dtype=x.dtype)
    for i in range(b):
        for j in range(b):
            out[:, (i * b + j) * c:(i * b + j + 1) * c] = x[:, :, i::b, j::b]
    return out


_BLOCK = {"block_size": Attr(parse_int, REQUIRED)}
register(OpDef(
    name="depth_to_space", kernel=_depth_to_space, attrs=_BLOCK, kind="shape",
    infer=lambda shapes, dtypes, block_size: ([_d2s_shape(tuple(shapes[0]), block_size)], [dtypes[0]]),
    grad=lambda c, g: (call("space_to_depth", g, block_size=c.attrs["block_size"]),),
    test=OpTest(ref=_d2s_ref, cases=((((1, 8, 2, 3),), {"block_size": 2}), (((2, 9, 1, 2),), {"block_size": 3}),
                                     (((1, 3, 2, 2),), {"block_size": 1}))),
    doc="Moves depth blocks into spatial blocks (DCR ordering, as MXNet)."))
register(OpDef(
    name="space_to_depth", kernel=_space_to_depth, attrs=_BLOCK, kind="shape",
    infer=lambda shapes, dtypes, block_size: ([_s2d_shape(tuple(shapes[0]), block_size)], [dtypes[0]]),
    grad=lambda c, g: (call("depth_to_space", g, block_size=c.attrs["block_size"]),),
    test=OpTest(ref=_s2d_ref, cases=((((1, 2, 4, 6),), {"block_size": 2}), (((2, 1, 3, 6),), {"block_size": 3}))),
    doc="Inverse of depth_to_space."))


# ---------------------------------------------------------------------------------------------------------
# shape_array / size_array
register(OpDef(
    name="shape_array", kernel=lambda xp, x: xp.asarray(x.shape if x.ndim else (), dtype=np.int64).reshape(-1),
    differentiable=False, kind="shape", infer=lambda shapes, dtypes: ([(len(shapes[0]),)], [np.dtype(np.int64)]),
    test=OpTest(ref=lambda x: np.array(x.shape, dtype=np.int64), cases=(
        (((2, 3, 4),), {}), (((5,),), {}), (((0, 3),), {})), grad=False, grad2=False),
    doc="The input's shape as an int64 1-D array."))
register(OpDef(
    name="size_array", kernel=lambda xp, x: xp.asarray([x.size], dtype=np.int64), differentiable=False, kind="shape",
    infer=lambda shapes, dtypes: ([(1,)], [np.dtype(np.int64)]),
    test=OpTest(ref=lambda x: np.array([x.size], dtype=np.int64), cases=((((2, 3, 4),), {}), (((0, 3),), {})),
                grad=False, grad2=False),
    doc="The input's number of elements as an int64 array of shape (1,)."))


# ---------------------------------------------------------------------------------------------------------
# diag
def _diag_axes(ndim, k, axis1, axis2, shape):
    a1, a2 = _norm_axis(axis1, ndim, "axis1"), _norm_axis(axis2, ndim, "axis2")
    if a1 == a2:
        raise ValueError(f"axis1 and axis2 cannot refer to the same axis {a1}")
    if (k > 0 and k > shape[a2]) or (k < 0 and -k > shape[a1]):
        raise ValueError(f"Diagonal does not exist: k={k} for axes of sizes {shape[a1]} and {shape[a2]}")
    return a1, a2


def _diag_shape(shape, k, axis1, axis2):
    """1-D input: the (n + |k|, n + |k|) matrix; otherwise the other axes, then the length of diagonal k."""
    shape = tuple(shape)
    if not shape:
        raise ValueError("diag needs an input with at least one dimension")
    if len(shape) == 1:
        n = shape[0] + abs(k)
        return check_shape((n, n))
    a1, a2 = _diag_axes(len(shape), k, axis1, axis2, shape)
    length = max(0, min(shape[a1], shape[a2] - k) if k >= 0 else min(shape[a1] + k, shape[a2]))
    return tuple(d for i, d in enumerate(shape) if i not in (a1, a2)) + (length,)


def _diag(xp, x, k, axis1, axis2):
    _diag_shape(x.shape, k, axis1, axis2)
    if x.ndim == 1:
        return xp.diag(x, k)
    a1, a2 = _diag_axes(x.ndim, k, axis1, axis2, x.shape)
    return xp.ascontiguousarray(xp.diagonal(x, k, a1, a2))


def _diag_backward_check(g_shape, shape, k, axis1, axis2):
    if len(shape) < 2 or tuple(g_shape) != _diag_shape(shape, k, axis1, axis2):
        raise ValueError(f"gradient of shape {tuple(g_shape)} is not the diagonal {k} of shape {tuple(shape)} "
                         f"over axes {axis1}, {axis2}")
    return check_shape(shape)


def _diag_backward(xp, g, shape, k, axis1, axis2):
    out = xp.zeros(_diag_backward_check(g.shape, shape, k, axis1, axis2), dtype=g.dtype)
    a1, a2 = _norm_axis(axis1, len(shape)), _norm_axis(axis2, len(shape))
    view = xp.moveaxis(out, (a1, a2), (-2, -1))
    i = xp.arange(g.shape[-1])
    view[..., i + max(-k, 0), i + max(k, 0)] = g
    return out


def _diag_grad(c, g):
    x, a = c.inputs[0], c.attrs
    if x.ndim == 1:
        return (call("diag", g, k=a["k"]),)
    return (call("_diag_backward", g, shape=x.shape, k=a["k"], axis1=a["axis1"], axis2=a["axis2"]),)


_DIAG_ATTRS = {"k": Attr(parse_int, 0), "axis1": Attr(parse_int, 0), "axis2": Attr(parse_int, 1)}
register(OpDef(
    name="diag", kernel=_diag, attrs=_DIAG_ATTRS, grad=_diag_grad, kind="shape",
    infer=lambda shapes, dtypes, k, axis1, axis2: ([_diag_shape(shapes[0], k, axis1, axis2)], [dtypes[0]]),
    test=OpTest(ref=lambda x, k, axis1, axis2: np.diag(x, k) if x.ndim == 1 else np.diagonal(x, k, axis1, axis2),
                cases=((((3,),), {}), (((3,),), {"k": 1}), (((3,),), {"k": -2}), (((3, 4),), {}),
                       (((3, 4),), {"k": -1}), (((3, 4),), {"k": 3}), (((2, 3, 4),), {"k": 1}),
                       (((2, 3, 4),), {"axis1": -1, "axis2": 0}), (((2, 3, 4),), {"k": -1, "axis1": 1, "axis2": 2}))),
    doc="1-D input: a matrix with the input on diagonal k; otherwise the k-th diagonal over axis1/axis2 "
        "(numpy.diagonal layout: the diagonal becomes the last axis)."))
register(OpDef(
    name="_diag_backward", kernel=_diag_backward, hidden=True, inputs=("grad",), kind="shape",
    infer=lambda shapes, dtypes, shape, k, axis1, axis2: (
        [_diag_backward_check(shapes[0], shape, k, axis1, axis2)], [dtypes[0]]),
    attrs={"shape": Attr(parse_shape, REQUIRED), **_DIAG_ATTRS},
    grad=lambda c, g: (call("diag", g, k=c.attrs["k"], axis1=c.attrs["axis1"], axis2=c.attrs["axis2"]),),
    test=OpTest(ref=lambda g, shape, k, axis1, axis2: _diag_backward(np, g, shape, k, axis1, axis2), cases=(
        (((3,),), {"shape": (3, 4)}), (((4, 2),), {"shape": (2, 3, 4), "k": 1}),
        (((3, 2),), {"shape": (2, 3, 4), "axis1": 2, "axis2": 0}))),
    doc="Adjoint of diag for inputs of 2 or more dimensions."))


# ---------------------------------------------------------------------------------------------------------
# clip
def _clip(xp, x, a_min, a_max):
    # numpy scalars of x's dtype (the C cast numpy's astype does): cupy takes scalars, not numpy 0-d arrays
    lo = np.asarray(a_min).astype(x.dtype)[()]
    hi = np.asarray(a_max).astype(x.dtype)[()]
    if lo <= hi and (x.dtype.kind in "iu" or (lo != 0 and hi != 0)):
        # xp.clip (one pass, no masks) gives the same bits here: ordered bounds, and no +-0 bound where it could
        # pick the bound's zero instead of x's
        return xp.clip(x, lo, hi, out=xp.empty(x.shape, x.dtype))
    # MXNet's order of tests: above a_max -> a_max, else below a_min -> a_min (matters when a_min > a_max)
    return xp.where(x > hi, hi, xp.where(x < lo, lo, x)).astype(x.dtype)


def _clip_grad(c, g):
    x = c.inputs[0]
    lo, hi = float(np.asarray(c.attrs["a_min"]).astype(x.dtype)), float(np.asarray(c.attrs["a_max"]).astype(x.dtype))
    return (g * ((x >= lo) * (x <= hi)),)


register(OpDef(
    name="clip", kernel=_clip, attrs={"a_min": Attr(parse_float, REQUIRED), "a_max": Attr(parse_float, REQUIRED)},
    grad=_clip_grad, kind="unary", infer=infer_same,
    test=OpTest(ref=lambda x, a_min, a_max: np.clip(x, a_min, a_max), recipe="unary",
                recipe_attrs=({"a_min": -0.55, "a_max": 0.65}, {"a_min": 0.0, "a_max": 10.0}),
                cases=((((3, 4),), {"a_min": -1.05, "a_max": 1.05}),)),
    doc="Clamps to [a_min, a_max]; the gradient passes where a_min <= x <= a_max (bounds included, as MXNet)."))
