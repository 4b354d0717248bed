"""Sorting and top-k: sort, argsort, topk (MXNet 1.x semantics).

Sorts are stable in both directions (ties keep their original order, as MXNet's results show). axis=None
flattens the input first. Index outputs are float32 unless `dtype` says otherwise and carry no gradient; value
outputs are differentiable: the gradient scatters back through the (hidden) indices with `_put_along_axis_add`.
"""
import math

import numpy as np

from .attrs import Attr, choice, optional, parse_bool, parse_dtype, parse_int
from .common import call
from .registry import OpDef, OpTest, register

_IDX_DTYPE = Attr(parse_dtype, np.dtype(np.float32))


def _flat_shape(shape, axis):
    """(shape, axis) of what is sorted: axis=None means the flattened array."""
    shape = tuple(shape)
    if axis is None:
        return (math.prod(shape),), 0
    if not shape:
        raise ValueError("cannot sort a 0-d array along an axis")
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis {axis} is out of range for a {len(shape)}-d input")
    return shape, axis % len(shape)


def _flat(data, axis):
    """(array, axis) with axis=None meaning the flattened array."""
    shape, ax = _flat_shape(data.shape, axis)
    return data.reshape(shape), ax


def _stable_argsort(xp, x, axis, ascend):
    if ascend:
        return xp.argsort(x, axis=axis, kind="stable")
    # stable descending: sort the reversed array ascending, reverse back, and map positions
    n = x.shape[axis]
    rev = xp.flip(x, axis=axis)
    idx = xp.argsort(rev, axis=axis, kind="stable")
    return (n - 1) - xp.flip(idx, axis=axis)


def _sort(xp, data, axis, is_ascend):
    x, ax = _flat(data, axis)
    idx = _stable_argsort(xp, x, ax, is_ascend)
    return xp.take_along_axis(x, idx, axis=ax), idx.astype(np.float32)


def _values_grad(c, g, idx, k_axis):
    """Gradient of values = take_along_axis(x, idx, axis): scatter g back; reshape for axis=None."""
    data = c.inputs[0]
    axis = c.attrs["axis"]
    if axis is None:
        out = call("_put_along_axis_add", g, idx, shape=(data.size,), axis=0)
        return call("Reshape", out, shape=data.shape)
    return call("_put_along_axis_add", g, idx, shape=data.shape, axis=k_axis)


def _sort_grad(c, g, g_idx=None):
    axis = c.attrs["axis"]
    return (_values_grad(c, g, c.outputs[1], 0 if axis is None else axis % c.inputs[0].ndim),)


def _ref_sort(data, axis, is_ascend):
    x = data.reshape(-1) if axis is None else data
    ax = 0 if axis is None else axis
    out = np.sort(x, axis=ax, kind="stable")
    return out if is_ascend else np.flip(out, axis=ax)


register(OpDef(
    name="sort", kernel=_sort, num_outputs=2, num_visible=1, grad=_sort_grad,
    infer=lambda shapes, dtypes, axis, is_ascend: ([_flat_shape(shapes[0], axis)[0]] * 2,
                                                   [dtypes[0], np.dtype(np.float32)]),
    attrs={"axis": Attr(optional(parse_int), -1), "is_ascend": Attr(parse_bool, True)},
    test=OpTest(ref=_ref_sort, cases=(
        (((3, 5),), {}), (((3, 5),), {"axis": 0, "is_ascend": False}), (((2, 3, 4),), {"axis": None}),
        (((2, 3, 4),), {"axis": 1, "is_ascend": False}), (((0, 3),), {})),
        recipe=None),
    doc="Sorted copy of data along axis (axis=None: flattened)."))


def _argsort(xp, data, axis, is_ascend, dtype):
    x, ax = _flat(data, axis)
    return _stable_argsort(xp, x, ax, is_ascend).astype(dtype)


def _ref_argsort(data, axis, is_ascend, dtype):
    x = data.reshape(-1) if axis is None else data
    ax = 0 if axis is None else axis
    if is_ascend:
        out = np.argsort(x, axis=ax, kind="stable")
    else:   # stable descending: sort by (-value, position) with a python loop over each lane
        out = np.apply_along_axis(lambda v: np.array(sorted(range(len(v)), key=lambda i: (-v[i], i)),
                                                     dtype=np.int64), ax, x) if x.size else \
            np.zeros(x.shape, dtype=np.int64)
    return out.astype(dtype)


register(OpDef(
    name="argsort", kernel=_argsort, differentiable=False, dtype_attr=True,
    infer=lambda shapes, dtypes, axis, is_ascend, dtype: ([_flat_shape(shapes[0], axis)[0]], [dtype]),
    attrs={"axis": Attr(optional(parse_int), -1), "is_ascend": Attr(parse_bool, True), "dtype": _IDX_DTYPE},
    test=OpTest(ref=_ref_argsort, grad=False, grad2=False, cases=(
        (((3, 5),), {}), (((3, 5),), {"axis": 0, "is_ascend": False}), (((2, 3, 4),), {"axis": None}),
        (((2, 6),), {"is_ascend": False, "dtype": "int32"}))),
    doc="Indices that sort data along axis (float32 unless dtype is given)."))


def _topk_k(shape, axis, k):
    """(the shape sorted, its axis, the number of entries kept: k, or all when k <= 0)."""
    shape, ax = _flat_shape(shape, axis)
    n = shape[ax]
    if k > n:
        raise ValueError(f"k must be smaller than {n}, get k = {k}")
    return shape, ax, (n if k <= 0 else k)


def _topk_infer(shapes, dtypes, axis, k, ret_typ, is_ascend, dtype):
    shape, ax, k = _topk_k(shapes[0], axis, k)
    if ret_typ == "mask":
        return [tuple(shapes[0])], [dtypes[0]]
    kept = shape[:ax] + (k,) + shape[ax + 1:]
    if ret_typ == "indices":
        return [kept], [dtype]
    return [kept, kept], [dtypes[0], dtype]


def _topk_parts(xp, data, axis, k, is_ascend):
    x, ax = _flat(data, axis)
    _, _, k = _topk_k(data.shape, axis, k)
    idx = _stable_argsort(xp, x, ax, is_ascend)
    sl = [slice(None)] * x.ndim
    sl[ax] = slice(0, k)
    return x, ax, idx[tuple(sl)]


def _topk(xp, data, axis, k, ret_typ, is_ascend, dtype):
    x, ax, idx = _topk_parts(xp, data, axis, k, is_ascend)
    if ret_typ == "mask":
        mask = xp.zeros(x.shape, dtype=data.dtype)
        xp.put_along_axis(mask, idx, 1, axis=ax)
        return mask.reshape(data.shape)
    if ret_typ == "indices":
        return idx.astype(dtype)
    values = xp.take_along_axis(x, idx, axis=ax)
    return values, idx.astype(dtype)


def _topk_outputs(a):
    return 2 if a["ret_typ"] in ("value", "both") else 1


def _topk_visible(a):
    return 2 if a["ret_typ"] == "both" else 1


def _topk_grad(c, g, *rest):
    if c.attrs["ret_typ"] not in ("value", "both"):
        return (None,)
    axis = c.attrs["axis"]
    return (_values_grad(c, g, c.outputs[1], 0 if axis is None else axis % c.inputs[0].ndim),)


def _ref_topk(data, axis, k, ret_typ, is_ascend, dtype):
    x = data.reshape(-1) if axis is None else data
    ax = 0 if axis is None else axis % data.ndim
    n = x.shape[ax]
    k = n if k <= 0 else k
    idx = _ref_argsort(x, ax, is_ascend, np.int64)
    idx = np.take(idx, np.arange(k), axis=ax)
    if ret_typ == "indices":
        return idx.astype(dtype)
    if ret_typ == "mask":
        mask = np.zeros(x.shape, dtype=data.dtype)
        np.put_along_axis(mask, idx, 1, axis=ax)
        return mask.reshape(data.shape)
    values = np.take_along_axis(x, idx, axis=ax)
    return values if ret_typ == "value" else (values, idx.astype(dtype))


register(OpDef(
    name="topk", kernel=_topk, num_outputs=_topk_outputs, num_visible=_topk_visible, grad=_topk_grad, dtype_attr=True,
    infer=_topk_infer,
    attrs={"axis": Attr(optional(parse_int), -1), "k": Attr(parse_int, 1),
           "ret_typ": Attr(choice("both", "indices", "mask", "value"), "indices"),
           "is_ascend": Attr(parse_bool, False), "dtype": _IDX_DTYPE},
    test=OpTest(ref=_ref_topk, cases=(
        (((3, 5),), {"k": 2, "ret_typ": "value"}), (((3, 5),), {"k": 2, "ret_typ": "both", "axis": 0, "dtype": "float64"}),
        (((2, 3, 4),), {"k": 3, "ret_typ": "value", "axis": None, "is_ascend": True}),
        (((3, 5),), {"k": 2}), (((3, 5),), {"k": 2, "ret_typ": "mask"}),
        (((4, 6),), {"k": 0, "ret_typ": "indices", "dtype": "int32", "is_ascend": True}),
        (((2, 3, 4),), {"k": 2, "ret_typ": "value", "axis": 1}))),
    doc="The k largest (or smallest) along axis: values, indices (float32 by default), both, or a 0/1 mask."))
