"""Indexing and gather/scatter operators: take, pick, batch_take, gather_nd, scatter_nd, one_hot, where,
ravel/unravel, and the contrib boolean_mask, index_copy, index_array, arange_like.

Index inputs are never differentiated. Float indices are truncated toward zero (MXNet casts them to int).
Gradients scatter back through two hidden primitive pairs, each the other's gradient, so every order exists:
`_take_along_axis` / `_put_along_axis_add` (pick, batch_take, sort, topk) and `_backward_take` (take), plus
`_backward_gather_nd` (gather_nd, scatter_nd).
"""
import math

import numpy as np

from ..base import MXNetError
from . import _fastpath
from .attrs import Attr, REQUIRED, choice, optional, parse_bool, parse_ctx, parse_dtype, parse_float, parse_int, \
    parse_shape
from .common import call, check_same_dtypes, check_shape, norm_axis
from .registry import OpDef, OpTest, register


def _as_index(xp, idx):
    """Index data (any dtype) -> int64, truncating floats toward zero like MXNet's cast."""
    return idx.astype(np.int64) if idx.dtype != np.int64 else idx


def _norm_axis(axis, ndim, op="op"):
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"axis {axis} is out of range for a {ndim}-d input")
    return axis % ndim if ndim else 0


def _fix_mode(xp, idx, n, mode, op):
    """MXNet's out-of-range index handling: clip to [0, n-1], wrap modulo n, or raise."""
    if mode == "clip":         # maximum/minimum: a quarter of np.clip's call overhead on small index arrays
        return xp.minimum(xp.maximum(idx, 0), max(n - 1, 0))
    if mode == "wrap":
        return xp.mod(idx, n) if n else idx
    if idx.size and (bool((idx < 0).any()) or bool((idx >= n).any())):
        raise ValueError(f"{op} operator contains indices out of bound (axis size {n})")
    return idx


def _zeros_like_nd(x):
    return call("zeros_like", x)


# A classifier's (batch, classes) pick and its gradient run every training step on small arrays, where each numpy
# call costs about a microsecond here: these helpers do the (batch, 1) index case in a few calls (one copy that
# truncates, two in-place clips, one fancy index over memoized row coordinates) instead of the general path's ~15.
# Like the Numba fast paths they are switched off by `_fastpath.ENABLED = False`, which the tests compare against.
_ROW_COORDS = {}


def _row_coords(rows):
    """np.arange(rows), read-only and memoized for a few batch sizes."""
    coords = _ROW_COORDS.get(rows)
    if coords is None:
        coords = np.arange(rows)
        coords.flags.writeable = False
        if len(_ROW_COORDS) < 32:
            _ROW_COORDS[rows] = coords
    return coords


def _class_positions(index, rows, n, mode):
    """The (rows,) int64 positions along axis 1 of a (rows, n) numpy array for an index of shape (rows,) or
    (rows, 1), truncated toward zero and clipped or wrapped as _fix_mode does; None for other shapes and modes
    (the general path handles them, and raises its errors)."""
    if (index.shape != (rows,) and index.shape != (rows, 1)) or mode == "raise" or n == 0:
        return None
    pos = index.reshape(rows).astype(np.int64)         # a copy, so the clipping below may write into it
    if mode == "clip":
        np.maximum(pos, 0, out=pos)
        np.minimum(pos, n - 1, out=pos)
    else:
        np.mod(pos, n, out=pos)
    return pos


# ---------------------------------------------------------------------------------------------------------
# the gather/scatter primitive pair along one axis (out-of-range indices: clip, wrap or raise, as take)
_MODE = choice("clip", "raise", "wrap")

def _along_axis_shape(data_shape, index_shape, axis):
    """(axis, output shape) of take_along_axis: the index and data have the same ndim and broadcast against each
    other on every axis but `axis`, where the index's length is taken."""
    data_shape, index_shape = tuple(data_shape), tuple(index_shape)
    if len(data_shape) != len(index_shape):
        raise ValueError(f"index shape {index_shape} must have as many dimensions as the data shape {data_shape}")
    a = _norm_axis(axis, len(data_shape))
    try:
        out = np.broadcast_shapes(data_shape[:a] + (1,) + data_shape[a + 1:], index_shape)
    except ValueError:
        raise ValueError(f"index shape {index_shape} does not broadcast with the data shape {data_shape} "
                         f"outside axis {axis}") from None
    return a, tuple(out)


def _take_along_axis(xp, data, index, axis, mode):
    axis, _ = _along_axis_shape(data.shape, index.shape, axis)
    idx = _fix_mode(xp, _as_index(xp, index), data.shape[axis], mode, "take")
    return xp.take_along_axis(data, idx, axis=axis)


def _put_along_axis_infer(shapes, dtypes, shape, axis, mode):
    _along_axis_shape(shape, shapes[1], axis)
    index = tuple(shapes[1])
    try:
        fits = np.broadcast_shapes(tuple(shapes[0]), index) == index
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"gradient shape {tuple(shapes[0])} does not fit index shape {index}")
    return [check_shape(shape)], [dtypes[0]]


def _put_along_axis_add(xp, g, index, shape, axis, mode):
    if (xp is np and _fastpath.ENABLED and len(shape) == 2 and axis % 2 == 1
            and g.shape == index.shape == (shape[0], 1)):
        pos = _class_positions(index, shape[0], shape[1], mode)      # pick's gradient on (batch, classes)
        if pos is not None:
            out = np.zeros(tuple(shape), dtype=g.dtype)
            coords = _ROW_COORDS.get(shape[0])        # _row_coords' memo read in line (every step)
            out[coords if coords is not None else _row_coords(shape[0]), pos] = g.reshape(shape[0])
            return out
    axis = _norm_axis(axis, len(shape))
    idx = _fix_mode(xp, _as_index(xp, index), shape[axis], mode, "take")
    out = xp.zeros(check_shape(shape), dtype=g.dtype)
    # every position of the index array adds its gradient into out at (..., idx, ...) along `axis`
    grids = list(xp.ix_(*(xp.arange(n) for n in idx.shape)))    # an open grid (cupy's indices has no sparse=)
    grids[axis] = idx
    xp.add.at(out, tuple(grids), g)
    return out


register(OpDef(
    name="_take_along_axis", kernel=_take_along_axis, inputs=("data", "index"), nondiff_inputs=(1,),
    attrs={"axis": Attr(parse_int, -1), "mode": Attr(_MODE, "clip")}, hidden=True,
    infer=lambda shapes, dtypes, axis, mode: ([_along_axis_shape(shapes[0], shapes[1], axis)[1]], [dtypes[0]]),
    grad=lambda c, g: (call("_put_along_axis_add", g, c.inputs[1], shape=c.inputs[0].shape,
                            axis=c.attrs["axis"], mode=c.attrs["mode"]), None),
    test=OpTest(ref=lambda d, i, axis, mode: np.take_along_axis(d, i.astype(np.int64), axis),
                int_inputs={1: (0, 3)},
                cases=((((4, 3), (4, 2)), {"axis": 1}), (((3, 2, 4), (2, 2, 4)), {"axis": 0}))),
    doc="out[..., j, ...] = data[..., index[..., j, ...], ...] along `axis` (numpy take_along_axis)."))
register(OpDef(
    name="_put_along_axis_add", kernel=_put_along_axis_add, inputs=("grad", "index"), nondiff_inputs=(1,),
    attrs={"shape": Attr(parse_shape, REQUIRED), "axis": Attr(parse_int, -1), "mode": Attr(_MODE, "clip")},
    hidden=True, infer=_put_along_axis_infer,
    grad=lambda c, g: (call("_take_along_axis", g, c.inputs[1], axis=c.attrs["axis"], mode=c.attrs["mode"]),
                       None),
    test=OpTest(ref=lambda g, i, shape, axis, mode: _ref_put_add(g, i, shape, axis), int_inputs={1: (0, 3)},
                cases=((((4, 5), (4, 5)), {"shape": (4, 3), "axis": 1}),
                       (((2, 3), (2, 3)), {"shape": (3, 3), "axis": 0}))),
    doc="Zeros of `shape`, then out[..., index[..., j, ...], ...] += grad[..., j, ...]: the inverse scatter."))


def _ref_put_add(g, index, shape, axis):
    out = np.zeros(shape)
    axis %= len(shape)
    for pos in np.ndindex(*g.shape):
        target = list(pos)
        target[axis] = int(index[pos])
        out[tuple(target)] += g[pos]
    return out


# ---------------------------------------------------------------------------------------------------------
# take
def _take_shape(a_shape, indices_shape, axis):
    """(axis, output shape): a's axis replaced by the indices' shape."""
    a_shape = tuple(a_shape)
    if not a_shape:
        raise ValueError("take needs an input with at least one dimension")
    axis = _norm_axis(axis, len(a_shape))
    return axis, a_shape[:axis] + tuple(indices_shape) + a_shape[axis + 1:]


def _backward_take_infer(shapes, dtypes, shape, axis, mode):
    _, taken = _take_shape(shape, shapes[1], axis)
    if math.prod(taken) != math.prod(shapes[0]):
        raise ValueError(f"gradient shape {tuple(shapes[0])} does not fit take's output {taken}")
    return [check_shape(shape)], [dtypes[0]]


def _take(xp, a, indices, axis, mode):
    axis, _ = _take_shape(a.shape, indices.shape, axis)
    idx = _fix_mode(xp, _as_index(xp, indices), a.shape[axis], mode, "take")
    return xp.take(a, idx, axis=axis)


def _backward_take(xp, g, indices, shape, axis, mode):
    shape = check_shape(shape)
    axis = _norm_axis(axis, len(shape))
    idx = _fix_mode(xp, _as_index(xp, indices), shape[axis], mode, "take").reshape(-1)
    out = xp.zeros(shape, dtype=g.dtype)
    g = g.reshape(shape[:axis] + (idx.size,) + shape[axis + 1:])
    xp.add.at(xp.moveaxis(out, axis, 0), idx, xp.moveaxis(g, axis, 0))
    return out


def _ref_take(a, indices, axis, mode):
    axis %= a.ndim
    n = a.shape[axis]
    idx = np.trunc(indices).astype(np.int64)
    idx = np.clip(idx, 0, n - 1) if mode == "clip" else idx % n
    out = np.stack([np.take(a, int(i), axis=axis) for i in idx.reshape(-1)], axis=axis) if idx.size else \
        np.take(a, idx.reshape(-1), axis=axis)
    a_shape = a.shape
    return out.reshape(a_shape[:axis] + idx.shape + a_shape[axis + 1:])


_TAKE_ATTRS = {"axis": Attr(parse_int, 0), "mode": Attr(choice("clip", "raise", "wrap"), "clip")}
register(OpDef(
    name="take", kernel=_take, inputs=("a", "indices"), nondiff_inputs=(1,), attrs=_TAKE_ATTRS,
    infer=lambda shapes, dtypes, axis, mode: ([_take_shape(shapes[0], shapes[1], axis)[1]], [dtypes[0]]),
    grad=lambda c, g: (call("_backward_take", g, c.inputs[1], shape=c.inputs[0].shape, axis=c.attrs["axis"],
                            mode=c.attrs["mode"]), None),
    test=OpTest(ref=_ref_take, int_inputs={1: (-2, 7)}, cases=(
        (((5, 3), (4,)), {}), (((5, 3), (2, 3)), {"mode": "wrap"}), (((2, 6, 2), (3,)), {"axis": 1}),
        (((2, 3, 4), (2, 2)), {"axis": -1, "mode": "wrap"}), (((4,), (6,)), {}))),
    doc="Gathers slices of `a` along `axis` at `indices` (clip, wrap, or raise on out-of-range indices)."))
register(OpDef(
    name="_backward_take", kernel=_backward_take, inputs=("grad", "indices"), nondiff_inputs=(1,), hidden=True,
    infer=_backward_take_infer,
    attrs={"shape": Attr(parse_shape, REQUIRED), **_TAKE_ATTRS},
    grad=lambda c, g: (call("take", g, c.inputs[1], axis=c.attrs["axis"], mode=c.attrs["mode"]), None),
    test=OpTest(ref=lambda g, i, shape, axis, mode: _ref_backward_take(g, i, shape, axis, mode),
                int_inputs={1: (-2, 7)}, cases=(
                    (((4, 3), (4,)), {"shape": (5, 3)}), (((2, 3, 2), (3,)), {"shape": (2, 6, 2), "axis": 1,
                                                                            "mode": "wrap"}))),
    doc="take's gradient: scatter-adds `grad` back into zeros of `shape` (repeated indices accumulate)."))


def _ref_backward_take(g, indices, shape, axis, mode):
    axis %= len(shape)
    n = shape[axis]
    idx = np.trunc(indices).astype(np.int64).reshape(-1)
    idx = np.clip(idx, 0, n - 1) if mode == "clip" else idx % n
    out = np.zeros(shape)
    g = g.reshape(shape[:axis] + (idx.size,) + shape[axis + 1:])
    for j, i in enumerate(idx):
        src = [slice(None)] * len(shape)
        src[axis] = j
        dst = list(src)
        dst[axis] = i
        out[tuple(dst)] += g[tuple(src)]
    return out


# ---------------------------------------------------------------------------------------------------------
# pick and batch_take
def _pick_shapes(data_shape, index_shape, axis):
    """(axis, the index reshaped with a 1 at axis, the output without keepdims) of pick; the index has the data's
    shape without `axis`, or with a 1 there."""
    if axis is None:
        raise ValueError("axis=None is not supported by pick yet. Must specify an axis.")
    data_shape, index_shape = tuple(data_shape), tuple(index_shape)
    axis = _norm_axis(axis, len(data_shape))
    want = data_shape[:axis] + (1,) + data_shape[axis + 1:]
    rest = data_shape[:axis] + data_shape[axis + 1:]
    if index_shape not in (want, rest):
        raise ValueError(f"index shape {index_shape} does not fit data shape {data_shape} with axis={axis}")
    return axis, want, rest


def _pick_infer(shapes, dtypes, axis, keepdims, mode):
    _, want, rest = _pick_shapes(shapes[0], shapes[1], axis)
    return [want if keepdims else rest], [dtypes[0]]


def _pick_index(xp, data, index, axis, keepdims, mode):
    axis, want, _ = _pick_shapes(data.shape, index.shape, axis)
    idx = _fix_mode(xp, _as_index(xp, index).reshape(want), data.shape[axis], mode, "pick")
    return axis, idx


def _pick(xp, data, index, axis, keepdims, mode):
    if xp is np and _fastpath.ENABLED and data.ndim == 2 and (axis == 1 or axis == -1):
        rows = data.shape[0]
        pos = _class_positions(index, rows, data.shape[1], mode)
        if pos is not None:
            coords = _ROW_COORDS.get(rows)            # _row_coords' memo read in line (every step)
            out = data[coords if coords is not None else _row_coords(rows), pos]
            return out.reshape(rows, 1) if keepdims else out
    axis, idx = _pick_index(xp, data, index, axis, keepdims, mode)
    out = xp.take_along_axis(data, idx, axis=axis)
    return out if keepdims else out.reshape(data.shape[:axis] + data.shape[axis + 1:])


def _pick_grad(c, g):
    data, index = c.inputs
    axis = c.attrs["axis"] % data.ndim
    want = data.shape[:axis] + (1,) + data.shape[axis + 1:]
    idx = call("Reshape", index, shape=want)
    gg = call("Reshape", g, shape=want)
    return call("_put_along_axis_add", gg, idx, shape=data.shape, axis=axis, mode=c.attrs["mode"]), None


def _ref_pick(data, index, axis, keepdims, mode):
    axis %= data.ndim
    n = data.shape[axis]
    rest = data.shape[:axis] + data.shape[axis + 1:]
    index = index.reshape(rest)
    out = np.empty(rest, dtype=data.dtype)
    for pos in np.ndindex(*rest):
        i = int(index[pos])
        i = min(max(i, 0), n - 1) if mode == "clip" else i % n
        out[pos] = data[pos[:axis] + (i,) + pos[axis:]]
    return np.expand_dims(out, axis) if keepdims else out


register(OpDef(
    name="pick", kernel=_pick, inputs=("data", "index"), nondiff_inputs=(1,), aliases=("choose_element_0index",),
    attrs={"axis": Attr(optional(parse_int), -1), "keepdims": Attr(parse_bool, False),
           "mode": Attr(choice("clip", "wrap"), "clip")},
    grad=_pick_grad, infer=_pick_infer,
    test=OpTest(ref=_ref_pick, int_inputs={1: (-1, 5)}, cases=(
        (((3, 4), (3,)), {}), (((3, 4), (4,)), {"axis": 0, "mode": "wrap"}),
        (((2, 3, 4), (2, 4)), {"axis": 1, "keepdims": True}), (((2, 3), (2, 1)), {"axis": 1}))),
    doc="Picks one element per position along `axis`: out[i] = data[i, index[i]] for axis=-1 on 2-d data."))


# ---------------------------------------------------------------------------------------------------------
# MXNet's legacy row-element functions: fill_element_0index and _onehot_encode (nd.onehot_encode)
def _row_index_check(op, lhs_shape, index_shape, value_shape=None):
    if len(lhs_shape) != 2:
        raise ValueError(f"{op} needs a 2-d lhs, got shape {tuple(lhs_shape)}")
    for name, shape in (("index", index_shape), ("value", value_shape)):
        if shape is not None and tuple(shape) != (lhs_shape[0],):
            raise ValueError(f"{op} needs a 1-d {name} of length {lhs_shape[0]} (one per row of lhs "
                             f"{tuple(lhs_shape)}), got shape {tuple(shape)}")


def _fill_element(xp, lhs, mhs, rhs):
    _row_index_check("fill_element_0index", lhs.shape, rhs.shape, mhs.shape)
    out = lhs.copy()
    out[xp.arange(lhs.shape[0]), _fix_mode(xp, _as_index(xp, rhs), lhs.shape[1], "raise", "fill_element_0index")] \
        = mhs
    return out


def _fill_element_grad(c, g):
    lhs, _, rhs = c.inputs
    filled = call("one_hot", rhs, depth=lhs.shape[1], dtype=g.dtype)
    return g * (1 - filled), call("pick", g, rhs, axis=1), None


def _ref_fill_element(lhs, mhs, rhs):
    out = lhs.copy()
    for i in range(lhs.shape[0]):
        out[i, int(rhs[i])] = mhs[i]
    return out


def _fill_element_infer(shapes, dtypes):
    _row_index_check("fill_element_0index", shapes[0], shapes[2], shapes[1])
    return [tuple(shapes[0])], [dtypes[0]]


register(OpDef(
    name="fill_element_0index", kernel=_fill_element, inputs=("lhs", "mhs", "rhs"), nondiff_inputs=(2,),
    grad=_fill_element_grad, infer=_fill_element_infer,
    test=OpTest(ref=_ref_fill_element, int_inputs={2: (0, 2)}, cases=((((3, 4), (3,), (3,)), {}),
                                                                     (((1, 2), (1,), (1,)), {}))),
    doc="A copy of lhs with out[i, rhs[i]] = mhs[i] for each row i (MXNet's legacy function; an index outside "
        "[0, lhs.shape[1]) is an error)."))


def _onehot_encode(xp, indices, out_like):
    """Indices outside [0, depth) give all-zero rows, as one_hot does."""
    _row_index_check("_onehot_encode", out_like.shape, indices.shape)
    return (_as_index(xp, indices)[:, None] == xp.arange(out_like.shape[1])).astype(out_like.dtype)


def _onehot_encode_infer(shapes, dtypes):
    _row_index_check("_onehot_encode", shapes[1], shapes[0])
    return [tuple(shapes[1])], [dtypes[1]]


register(OpDef(
    name="_onehot_encode", kernel=_onehot_encode, inputs=("lhs", "rhs"), differentiable=False,
    infer=_onehot_encode_infer, hidden=True,
    test=OpTest(ref=lambda idx, like: np.eye(like.shape[1], dtype=like.dtype)[idx.astype(np.int64)],
                int_inputs={0: (0, 4)}, grad=False, grad2=False, cases=((((3,), (3, 4)), {}),)),
    doc="One-hot rows shaped like rhs (nd.onehot_encode(indices, out) writes them into out; use one_hot)."))


def _batch_take_check(a_shape, indices_shape, indices_dtype):
    """The number of rows of `a` seen as (-1, a.shape[-1]); one index per row."""
    if len(a_shape) < 1:
        raise ValueError("batch_take needs an input with at least one dimension")
    if np.dtype(indices_dtype).kind not in "iu":
        raise ValueError(f"batch_take needs integer indices (int32), got {np.dtype(indices_dtype)}")
    if a_shape[-1] == 0:
        raise ValueError(f"batch_take needs a non-empty last axis, got shape {tuple(a_shape)}")
    rows = math.prod(a_shape[:-1])
    if math.prod(indices_shape) != rows:
        raise ValueError(f"batch_take: {math.prod(indices_shape)} indices for {rows} rows of {tuple(a_shape)}")
    return rows


def _batch_take_infer(shapes, dtypes):
    _batch_take_check(shapes[0], shapes[1], dtypes[1])
    return [tuple(shapes[1])], [dtypes[0]]


def _batch_take(xp, a, indices):
    _batch_take_check(a.shape, indices.shape, indices.dtype)
    m = a.shape[-1]
    flat = a.reshape(-1, m)
    idx = xp.clip(_as_index(xp, indices).reshape(-1), 0, m - 1)
    return flat[xp.arange(flat.shape[0]), idx].reshape(indices.shape)


def _batch_take_grad(c, g):
    a, indices = c.inputs
    m = a.shape[-1]
    rows = a.size // m if m else 0
    idx = call("Reshape", indices, shape=(rows, 1))
    out = call("_put_along_axis_add", call("Reshape", g, shape=(rows, 1)), idx, shape=(rows, m), axis=1,
               mode="clip")
    return call("Reshape", out, shape=a.shape), None


register(OpDef(
    name="batch_take", kernel=_batch_take, inputs=("a", "indices"), nondiff_inputs=(1,), grad=_batch_take_grad,
    infer=_batch_take_infer,
    test=OpTest(ref=lambda a, i: np.array([row[min(max(int(k), 0), a.shape[-1] - 1)] for row, k in
                                           zip(a.reshape(-1, a.shape[-1]), i.reshape(-1))],
                                          dtype=a.dtype).reshape(i.shape),
                int_inputs={1: (-1, 5, "int32")},
                cases=((((3, 4), (3,)), {}), (((2, 3, 4), (6,)), {}))),
    doc="out[i] = a[i, indices[i]] (indices clipped), with `a` seen as (-1, a.shape[-1])."))


# ---------------------------------------------------------------------------------------------------------
# gather_nd / scatter_nd
def _nd_shape(data_shape, indices_shape, op):
    """The shape gather_nd gives (and scatter_nd's data has): indices.shape[1:] + data_shape[indices.shape[0]:]."""
    if len(indices_shape) < 1:
        raise ValueError(f"{op}: indices need at least one dimension")
    m = indices_shape[0]
    if m > len(data_shape):
        raise ValueError(f"{op}: indices.shape[0]={m} exceeds the data's {len(data_shape)} dimensions")
    return tuple(indices_shape[1:]) + tuple(data_shape[m:])


def _nd_key(xp, data_shape, indices, op):
    _nd_shape(data_shape, indices.shape, op)
    idx = _as_index(xp, indices)
    m = idx.shape[0]
    for k in range(m):
        n = data_shape[k]
        if idx[k].size and (bool((idx[k] >= n).any()) or bool((idx[k] < -n).any())):
            raise IndexError(f"index {int(idx[k].max())} is out of bounds for axis {k} with size {n}")
    return tuple(idx[k] for k in range(m))


def _gather_nd(xp, data, indices):
    return data[_nd_key(xp, data.shape, indices, "gather_nd")]


def _scatter_infer(op):
    def infer(shapes, dtypes, shape):
        want = _nd_shape(shape, shapes[1], op)
        if tuple(shapes[0]) != want:
            raise ValueError(f"{op}: data shape {tuple(shapes[0])} does not fit indices {tuple(shapes[1])} and shape "
                             f"{tuple(shape)} (expected {want})")
        return [check_shape(shape)], [dtypes[0]]
    return infer


def _backward_gather_nd(xp, g, indices, shape):
    out = xp.zeros(check_shape(shape), dtype=g.dtype)
    xp.add.at(out, _nd_key(xp, tuple(shape), indices, "gather_nd"), g)
    return out


def _scatter_nd(xp, data, indices, shape):
    shape = _scatter_infer("scatter_nd")([data.shape, indices.shape], [data.dtype, indices.dtype], shape)[0][0]
    key = _nd_key(xp, shape, indices, "scatter_nd")
    out = xp.zeros(shape, dtype=data.dtype)
    out[key] = data
    return out


def _ref_gather_nd(data, indices):
    idx = indices.astype(np.int64)
    m = idx.shape[0]
    out = np.empty(idx.shape[1:] + data.shape[m:], dtype=data.dtype)
    for pos in np.ndindex(*idx.shape[1:]):
        out[pos] = data[tuple(int(idx[(k,) + pos]) for k in range(m))]
    return out


def _ref_scatter_nd(data, indices, shape):
    idx = indices.astype(np.int64)
    m = idx.shape[0]
    out = np.zeros(shape, dtype=data.dtype)
    for pos in np.ndindex(*idx.shape[1:]):
        out[tuple(int(idx[(k,) + pos]) for k in range(m))] = data[pos]
    return out


register(OpDef(
    name="gather_nd", kernel=_gather_nd, inputs=("data", "indices"), nondiff_inputs=(1,),
    infer=lambda shapes, dtypes: ([_nd_shape(shapes[0], shapes[1], "gather_nd")], [dtypes[0]]),
    grad=lambda c, g: (call("_backward_gather_nd", g, c.inputs[1], shape=c.inputs[0].shape), None),
    test=OpTest(ref=_ref_gather_nd, int_inputs={1: (0, 3)}, cases=(
        (((3, 4), (2, 5)), {}), (((3, 3, 2), (1, 4)), {}), (((3, 3, 2), (2, 2, 2)), {}))),
    doc="out[y...] = data[indices[0, y...], indices[1, y...], ...]: the first axis of indices indexes data."))
register(OpDef(
    name="_backward_gather_nd", kernel=_backward_gather_nd, inputs=("data", "indices"), nondiff_inputs=(1,),
    attrs={"shape": Attr(parse_shape, REQUIRED)}, hidden=True, infer=_scatter_infer("gather_nd"),
    grad=lambda c, g: (call("gather_nd", g, c.inputs[1]), None),
    test=OpTest(ref=lambda g, i, shape: _ref_backward_gather_nd(g, i, shape), int_inputs={1: (0, 3)}, cases=(
        (((5,), (2, 5)), {"shape": (3, 4)}), (((4, 3, 2), (1, 4)), {"shape": (3, 3, 2)}))),
    doc="gather_nd's gradient: scatter_nd that accumulates repeated indices."))


def _ref_backward_gather_nd(g, indices, shape):
    idx = indices.astype(np.int64)
    m = idx.shape[0]
    out = np.zeros(shape)
    for pos in np.ndindex(*idx.shape[1:]):
        out[tuple(int(idx[(k,) + pos]) for k in range(m))] += g[pos]
    return out


register(OpDef(
    name="scatter_nd", kernel=_scatter_nd, inputs=("data", "indices"), nondiff_inputs=(1,),
    attrs={"shape": Attr(parse_shape, REQUIRED)}, infer=_scatter_infer("scatter_nd"),
    grad=lambda c, g: (call("gather_nd", g, c.inputs[1]), None),
    # unique indices (repeated ones are undefined in MXNet): an arange-like index set per case
    test=OpTest(ref=_ref_scatter_nd, int_inputs={1: (0, 3)}, cases=(
        (((1,), (2, 1)), {"shape": (3, 4)}), (((1, 2), (1, 1)), {"shape": (4, 2)}),
        (((1, 4), (2, 1)), {"shape": (3, 3, 4)}))),
    doc="Zeros of `shape` with data written at the positions of indices (gather_nd's inverse)."))


# ---------------------------------------------------------------------------------------------------------
# one_hot, where
def _one_hot_shape(indices_shape, depth):
    if depth < 0:
        raise ValueError(f"depth must be non-negative, got {depth}")
    return check_shape(tuple(indices_shape) + (depth,))


def _one_hot(xp, indices, depth, on_value, off_value, dtype):
    _one_hot_shape(indices.shape, depth)
    idx = _as_index(xp, indices)
    eq = idx[..., None] == xp.arange(depth)
    return xp.where(eq, xp.asarray(on_value).astype(dtype), xp.asarray(off_value).astype(dtype)).astype(dtype)


def _ref_one_hot(indices, depth, on_value, off_value, dtype):
    out = np.full(indices.shape + (depth,), off_value, dtype=np.float64)
    for pos in np.ndindex(*indices.shape):
        i = int(indices[pos])
        if 0 <= i < depth:
            out[pos + (i,)] = on_value
    return out.astype(dtype)


register(OpDef(
    name="one_hot", kernel=_one_hot, inputs=("indices",), differentiable=False, dtype_attr=True,
    infer=lambda shapes, dtypes, depth, on_value, off_value, dtype: ([_one_hot_shape(shapes[0], depth)], [dtype]),
    attrs={"depth": Attr(parse_int, REQUIRED), "on_value": Attr(parse_float, 1.0),
           "off_value": Attr(parse_float, 0.0), "dtype": Attr(parse_dtype, np.dtype(np.float32))},
    test=OpTest(ref=_ref_one_hot, int_inputs={0: (-1, 6)}, grad=False, grad2=False, cases=(
        (((4,),), {"depth": 5}), (((2, 3),), {"depth": 4, "on_value": 8, "off_value": -1, "dtype": "int32"}),
        (((0,),), {"depth": 3}))),
    doc="One-hot rows of length `depth` (indices outside [0, depth) give all off_value); a negative depth is an "
        "error, as in MXNet."))


def _where_check(cond_shape, x_shape, y_shape, x_dtype, y_dtype):
    """Whether the condition is 1-d over x's first axis (else it has x's shape)."""
    cond_shape, x_shape, y_shape = tuple(cond_shape), tuple(x_shape), tuple(y_shape)
    if x_shape != y_shape:
        raise ValueError(f"x and y must have the same shape, got {x_shape} and {y_shape}")
    check_same_dtypes([x_dtype, y_dtype], "x and y")
    if cond_shape == x_shape:
        return False
    if len(cond_shape) == 1 and x_shape and cond_shape[0] == x_shape[0]:
        return True
    raise ValueError(f"condition shape {cond_shape} must equal x's {x_shape} or be 1-d of length x.shape[0]")


def _where_infer(shapes, dtypes):
    _where_check(*shapes, dtypes[1], dtypes[2])
    return [tuple(shapes[1])], [dtypes[1]]


def _where(xp, condition, x, y):
    if _where_check(condition.shape, x.shape, y.shape, x.dtype, y.dtype):
        condition = condition.reshape(condition.shape + (1,) * (x.ndim - 1))
    return xp.where(condition != 0, x, y)


def _where_grad(c, g):
    cond = c.inputs[0]
    zero = call("zeros_like", g)
    return None, call("where", cond, g, zero), call("where", cond, zero, g)


def _ref_where(cond, x, y):
    if cond.shape != x.shape:
        cond = cond.reshape(cond.shape + (1,) * (x.ndim - 1))
    out = x.copy()
    for pos in np.ndindex(*x.shape):
        c = cond[tuple(p if s > 1 else 0 for p, s in zip(pos, cond.shape))]
        out[pos] = x[pos] if c != 0 else y[pos]
    return out


register(OpDef(
    name="where", kernel=_where, inputs=("condition", "x", "y"), nondiff_inputs=(0,), grad=_where_grad,
    infer=_where_infer,
    test=OpTest(ref=_ref_where, int_inputs={0: (0, 2)}, cases=(
        (((3, 4), (3, 4), (3, 4)), {}), (((3,), (3, 2, 2), (3, 2, 2)), {}), (((0,), (0,), (0,)), {}))),
    doc="x where condition is non-zero, else y; condition has x's shape or is 1-d over x's first axis."))


# ---------------------------------------------------------------------------------------------------------
# ravel_multi_index / unravel_index
def _ravel_shape(data_shape, shape):
    if shape is None:
        raise ValueError("shape is required")
    if len(data_shape) < 1 or data_shape[0] != len(shape):
        raise ValueError(f"data.shape[0] must equal len(shape)={len(shape)}, got data shape {tuple(data_shape)}")
    return tuple(data_shape[1:])


def _unravel_shape(data_shape, shape):
    if not shape:
        raise ValueError("shape is required")
    return (len(shape),) + tuple(data_shape)


def _ravel(xp, data, shape):
    _ravel_shape(data.shape, shape)
    idx = _as_index(xp, data)
    out = xp.zeros(data.shape[1:], dtype=np.int64)
    for k, n in enumerate(shape):
        out = out * n + idx[k]
    return out.astype(data.dtype)


def _unravel(xp, data, shape):
    _unravel_shape(data.shape, shape)
    idx = _as_index(xp, data)
    parts = []
    for n in reversed(shape[1:]):
        parts.append(idx % n)
        idx = idx // n
    parts.append(idx % shape[0] if shape and shape[0] > 0 else idx)
    return xp.stack(parts[::-1]).astype(data.dtype)


def _ref_unravel(data, shape):
    shape = tuple(shape)
    if shape[0] <= 0:
        shape = (np.iinfo(np.int32).max,) + shape[1:]
    return np.array(np.unravel_index(data.astype(np.int64), shape)).astype(data.dtype)


register(OpDef(
    name="_ravel_multi_index", kernel=_ravel, aliases=("ravel_multi_index",), differentiable=False,
    infer=lambda shapes, dtypes, shape: ([_ravel_shape(shapes[0], shape)], [dtypes[0]]),
    attrs={"shape": Attr(optional(parse_shape), None)},
    test=OpTest(ref=lambda d, shape: np.ravel_multi_index(d.astype(np.int64), shape).astype(d.dtype),
                int_inputs={0: (0, 4)}, grad=False, grad2=False,
                cases=((((2, 5),), {"shape": (4, 6)}), (((3, 2, 2),), {"shape": (5, 4, 7)}))),
    doc="Flat indices from a (ndim, ...) array of coordinates into an array of `shape`."))
register(OpDef(
    name="_unravel_index", kernel=_unravel, aliases=("unravel_index",), differentiable=False,
    infer=lambda shapes, dtypes, shape: ([_unravel_shape(shapes[0], shape)], [dtypes[0]]),
    attrs={"shape": Attr(optional(parse_shape), None)},
    test=OpTest(ref=_ref_unravel, int_inputs={0: (0, 24)}, grad=False, grad2=False,
                cases=((((5,),), {"shape": (4, 6)}), (((2, 3),), {"shape": (2, 3, 4)}),
                       (((4,),), {"shape": (-1, 6)}))),
    doc="Coordinates (ndim, ...) of flat indices into an array of `shape` (the first dimension may be -1)."))


# ---------------------------------------------------------------------------------------------------------
# contrib
def _boolean_mask_check(data_shape, index_shape, axis):
    if axis != 0:
        raise ValueError(f"boolean_mask supports axis=0 only (got axis={axis}), as MXNet")
    if len(index_shape) != 1 or len(data_shape) < 1 or index_shape[0] != data_shape[0]:
        raise ValueError(f"index must be 1-d with length data.shape[0]={data_shape[0] if data_shape else None}, "
                         f"got shape {tuple(index_shape)}")


def _boolean_mask_infer(shapes, dtypes, axis):
    _boolean_mask_check(shapes[0], shapes[1], axis)
    raise MXNetError("the output shape depends on the input values, not only on their shapes (it has as many rows "
                     "as the index has non-zero entries)")


def _boolean_mask(xp, data, index, axis):
    _boolean_mask_check(data.shape, index.shape, axis)
    return data[index != 0]


def _boolean_mask_grad(c, g):
    data, index = c.inputs
    rows = np.nonzero(index.asnumpy() != 0)[0]
    return call("_getitem_backward", g, shape=data.shape, key=(rows,)), None


register(OpDef(
    name="_contrib_boolean_mask", kernel=_boolean_mask, inputs=("data", "index"), nondiff_inputs=(1,), dynamic_shape=True,
    attrs={"axis": Attr(parse_int, 0)}, grad=_boolean_mask_grad, infer=_boolean_mask_infer,
    test=OpTest(ref=lambda d, i, axis: np.stack([r for r, k in zip(d, i) if k != 0]) if (i != 0).any()
                else d[:0], int_inputs={1: (0, 2)}, cases=(
                    (((5, 3), (5,)), {}), (((4,), (4,)), {}), (((6, 2, 2), (6,)), {}))),
    doc="The rows of data (along axis 0) whose index entry is non-zero."))


def _index_copy_check(old_shape, index_shape, new_shape, old_dtype, new_dtype):
    check_same_dtypes([old_dtype, new_dtype], "old_tensor and new_tensor")
    old_shape, index_shape, new_shape = tuple(old_shape), tuple(index_shape), tuple(new_shape)
    if len(old_shape) < 1:
        raise ValueError("old_tensor needs at least one dimension")
    if len(index_shape) != 1 or new_shape != index_shape + old_shape[1:]:
        raise ValueError(f"new_tensor shape {new_shape} must be (len(index_vector),) + old_tensor.shape[1:] "
                         f"= {index_shape + old_shape[1:] if len(index_shape) == 1 else '?'}")


def _index_copy_infer(shapes, dtypes):
    _index_copy_check(*shapes, dtypes[0], dtypes[2])
    return [tuple(shapes[0])], [dtypes[0]]


def _index_copy(xp, old, index, new):
    _index_copy_check(old.shape, index.shape, new.shape, old.dtype, new.dtype)
    idx = _as_index(xp, index)
    n = old.shape[0]
    if idx.size and (bool((idx < 0).any()) or bool((idx >= n).any())):
        raise ValueError(f"index_vector has entries outside [0, {n})")
    out = old.copy()
    out[idx] = new
    return out


def _index_copy_grad(c, g):
    old, index, new = c.inputs
    return (call("_contrib_index_copy", g, index, call("zeros_like", new)), None,
            call("take", g, index, axis=0))


def _ref_index_copy(old, index, new):
    out = old.copy()
    for j, i in enumerate(index.astype(np.int64)):
        out[i] = new[j]
    return out


register(OpDef(
    name="_contrib_index_copy", kernel=_index_copy, inputs=("old_tensor", "index_vector", "new_tensor"),
    nondiff_inputs=(1,), grad=_index_copy_grad, infer=_index_copy_infer,
    test=OpTest(ref=_ref_index_copy, int_inputs={1: (0, 4)}, cases=(
        (((5, 3), (1,), (1, 3)), {}), (((4,), (1,), (1,)), {}))),
    doc="A copy of old_tensor with rows index_vector[j] replaced by new_tensor[j]."))


def _index_array_axes(ndim, axes):
    if axes is None:
        return tuple(range(ndim))
    return tuple(norm_axis(a, ndim) for a in axes)


def _index_array(xp, data, axes):
    axes = _index_array_axes(data.ndim, axes)
    grids = xp.indices(data.shape, dtype=np.int64) if data.ndim else xp.zeros((0,), dtype=np.int64)
    return xp.stack([grids[a] for a in axes], axis=-1) if axes else \
        xp.zeros(data.shape + (0,), dtype=np.int64)


def _ref_index_array(data, axes):
    axes = list(range(data.ndim)) if axes is None else [a % data.ndim for a in axes]
    out = np.zeros(data.shape + (len(axes),), dtype=np.int64)
    for pos in np.ndindex(*data.shape):
        out[pos] = [pos[a] for a in axes]
    return out


register(OpDef(
    name="_contrib_index_array", kernel=_index_array, differentiable=False,
    infer=lambda shapes, dtypes, axes: ([tuple(shapes[0]) + (len(_index_array_axes(len(shapes[0]), axes)),)],
                                        [np.dtype(np.int64)]),
    attrs={"axes": Attr(optional(parse_shape), None)},
    test=OpTest(ref=_ref_index_array, grad=False, grad2=False, cases=(
        (((2, 3),), {}), (((2, 3, 4),), {"axes": (1,)}), (((2, 3, 4),), {"axes": (-1, 0)}))),
    doc="int64 coordinates of every element: shape data.shape + (len(axes),)."))


def _arange_like_shape(shape, repeat, axis):
    if repeat < 1:
        raise ValueError(f"repeat must be positive, got {repeat}")
    return tuple(shape) if axis is None else (shape[_norm_axis(axis, len(shape))],)


def _arange_like(xp, data, start, step, repeat, ctx, axis):
    _arange_like_shape(data.shape, repeat, axis)
    n = data.size if axis is None else data.shape[_norm_axis(axis, data.ndim)]
    vals = start + step * (xp.arange(n, dtype=np.float64) // repeat)
    out = vals.astype(data.dtype)
    return out.reshape(data.shape) if axis is None else out


def _ref_arange_like(data, start, step, repeat, ctx, axis):
    n = data.size if axis is None else data.shape[axis]
    out = np.array([start + step * (i // repeat) for i in range(n)]).astype(data.dtype)
    return out.reshape(data.shape) if axis is None else out


register(OpDef(
    name="_contrib_arange_like", kernel=_arange_like, differentiable=False,
    infer=lambda shapes, dtypes, start, step, repeat, ctx, axis: ([_arange_like_shape(shapes[0], repeat, axis)],
                                                                  [dtypes[0]]),
    attrs={"start": Attr(parse_float, 0.0), "step": Attr(parse_float, 1.0), "repeat": Attr(parse_int, 1),
           "ctx": Attr(parse_ctx, None), "axis": Attr(optional(parse_int), None)},
    test=OpTest(ref=_ref_arange_like, grad=False, grad2=False, cases=(
        (((2, 3),), {}), (((2, 3),), {"start": 1, "step": 2, "repeat": 2, "axis": 1}),
        (((5,),), {"repeat": 2}), (((2, 4),), {"axis": -1, "step": 0.5}))),
    doc="start, start+step, ... (each repeated `repeat` times) shaped like data, or along `axis` only."))
