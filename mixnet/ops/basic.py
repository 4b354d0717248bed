"""The few shape ops NDArray itself and the gradient rules stand on: Cast, indexing, Reshape, broadcasting and
its inverse (`_sum_to`). Other layout ops live in shape.py."""
import math

import numpy as np

from .attrs import Attr, REQUIRED, parse_any, parse_bool, parse_dtype, parse_int, parse_shape, parse_axis
from .common import call
from .registry import OpDef, OpTest, register


# ---------------------------------------------------------------------------------------------------------
def _cast(xp, x, dtype):
    return x.astype(dtype)


register(OpDef(
    name="Cast", kernel=_cast, aliases=("cast", "amp_cast"), attrs={"dtype": Attr(parse_dtype, REQUIRED)}, kind="unary",
    grad=lambda c, g: (call("Cast", g, dtype=c.inputs[0].dtype),),
    infer=lambda shapes, dtypes, dtype: ([shapes[0]], [dtype]), scalar="{0}",
    test=OpTest(ref=lambda x, dtype: x.astype(dtype), recipe="unary",
                recipe_attrs=({"dtype": "float64"}, {"dtype": "float32"}, {"dtype": "float16"}),
                rtol=1e-3, atol=1e-3)))


def _amp_multicast(xp, *arrays, num_outputs, cast_narrow):
    """Casts every input to the widest (or, with cast_narrow, the narrowest) floating dtype among them."""
    if len(arrays) != num_outputs:
        raise ValueError(f"num_outputs={num_outputs} but {len(arrays)} inputs")
    floats = [a.dtype for a in arrays if a.dtype.kind == "f"]
    if not floats:
        return tuple(a.copy() for a in arrays)
    target = (min if cast_narrow else max)(floats, key=lambda d: d.itemsize)
    return tuple(a.astype(target) if a.dtype.kind == "f" else a.copy() for a in arrays)


register(OpDef(
    name="amp_multicast", kernel=_amp_multicast, inputs=("data",), variadic=True, kind="unary",
    attrs={"num_outputs": Attr(parse_int, REQUIRED), "cast_narrow": Attr(parse_bool, False)},
    num_outputs=lambda a: a["num_outputs"],
    grad=lambda c, *gs: tuple(call("Cast", g, dtype=x.dtype) for g, x in zip(gs, c.inputs)),
    test=OpTest(ref=lambda *xs, num_outputs, cast_narrow: tuple(x.astype(np.float32) for x in xs), cases=(
        (((2, 3), (3,)), {"num_outputs": 2}),)),
    doc="Mixed precision: casts all inputs to their widest float dtype (narrowest with cast_narrow)."))


# ---------------------------------------------------------------------------------------------------------
# indexing: x[key]. `key` is an already-normalized numpy-style index (the eager path builds it), so these two
# ops are internal; the symbol API spells slicing as slice/slice_axis/take.
def _getitem(xp, x, key):
    return x[key]


def _getitem_backward(xp, g, shape, key):
    out = xp.zeros(shape, dtype=g.dtype)
    if isinstance(key, tuple) and any(isinstance(k, np.ndarray) for k in key) or isinstance(key, np.ndarray):
        xp.add.at(out, key, g)            # repeated indices accumulate
    else:
        out[key] = g
    return out


register(OpDef(
    name="_getitem", kernel=_getitem, attrs={"key": Attr(parse_any, REQUIRED)}, hidden=True,
    grad=lambda c, g: (call("_getitem_backward", g, shape=c.inputs[0].shape, key=c.attrs["key"]),),
    test=OpTest(ref=lambda x, key: x[key], cases=(
        (((4, 5),), {"key": (slice(1, 3), 2)}),
        (((4, 5),), {"key": (Ellipsis, slice(None, None, 2))}),
        (((3, 4),), {"key": (np.array([0, 2, 0]),)}),
        (((2, 3, 4),), {"key": (None, 1, slice(0, 3))}),
    ))))
register(OpDef(
    name="_getitem_backward", kernel=_getitem_backward, hidden=True, inputs=("grad",),
    attrs={"shape": Attr(parse_shape, REQUIRED), "key": Attr(parse_any, REQUIRED)},
    grad=lambda c, g: (call("_getitem", g, key=c.attrs["key"]),),
    test=OpTest(ref=lambda g, shape, key: _getitem_backward(np, g, shape, key), cases=(
        (((2,),), {"shape": (4, 5), "key": (slice(1, 3), 2)}),
        (((3, 4),), {"shape": (3, 4), "key": (np.array([0, 2, 0]),)}),
    ))))


# ---------------------------------------------------------------------------------------------------------
# broadcasting and its inverse
def _sum_to(xp, x, shape):
    """Sums x down to `shape` (which x was broadcast from): leading axes, then axes where shape has 1."""
    lead = x.ndim - len(shape)
    if lead < 0:
        raise ValueError(f"cannot sum shape {x.shape} down to {shape}")
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and x.shape[lead + i] != 1)
    out = x.sum(axis=axes, keepdims=True, dtype=x.dtype) if axes else x
    out = out.reshape(shape)
    return out if out is not x else x.copy()


register(OpDef(
    name="_sum_to", kernel=_sum_to, attrs={"shape": Attr(parse_shape, REQUIRED)}, hidden=True, kind="reduce",
    grad=lambda c, g: (call("broadcast_to", g, shape=c.inputs[0].shape),),
    infer=lambda shapes, dtypes, shape: ([shape], [dtypes[0]]),
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
    return out


def _broadcast_to(xp, x, shape):
    return xp.broadcast_to(x, _target_shape(x.shape, shape)).copy()


register(OpDef(
    name="broadcast_to", kernel=_broadcast_to, attrs={"shape": Attr(parse_shape, REQUIRED)},
    grad=lambda c, g: (call("_sum_to", g, shape=c.inputs[0].shape),),
    infer=lambda shapes, dtypes, shape: ([_target_shape(shapes[0], shape)], [dtypes[0]]),
    test=OpTest(ref=lambda x, shape: np.broadcast_to(x, _target_shape(x.shape, shape)), cases=(
        (((1, 4),), {"shape": (3, 4)}), (((3, 1),), {"shape": (3, 5)}), (((4,),), {"shape": (2, 3, 4)}),
        (((2, 1),), {"shape": (0, 3)})))))


def _broadcast_like(xp, x, like, lhs_axes, rhs_axes):
    if lhs_axes is None:
        shape = like.shape
    else:
        lhs_axes, rhs_axes = _axes_tuple(lhs_axes), _axes_tuple(rhs_axes)
        if len(lhs_axes) != len(rhs_axes):
            raise ValueError(f"lhs_axes {lhs_axes} and rhs_axes {rhs_axes} differ in length")
        shape = list(x.shape)
        for la, ra in zip(lhs_axes, rhs_axes):
            shape[la] = like.shape[ra]
    return _broadcast_to(xp, x, tuple(shape))


def _axes_tuple(axes):
    return (axes,) if isinstance(axes, int) else tuple(axes)


register(OpDef(
    name="broadcast_like", kernel=_broadcast_like, inputs=("lhs", "rhs"), nondiff_inputs=(1,),
    attrs={"lhs_axes": Attr(parse_axis, None), "rhs_axes": Attr(parse_axis, None)},
    grad=lambda c, g: (call("_sum_to", g, shape=c.inputs[0].shape), None),
    test=OpTest(ref=lambda x, like, lhs_axes, rhs_axes: _broadcast_like(np, x, like, lhs_axes, rhs_axes), cases=(
        (((1, 4), (3, 4)), {}), (((2, 1), (5, 3)), {"lhs_axes": (1,), "rhs_axes": (1,)})))))


def _broadcast_axis(xp, x, axis, size):
    axis, size = _axes_tuple(() if axis is None else axis), _axes_tuple(() if size is None else size)
    if len(axis) != len(size):
        raise ValueError(f"axis {axis} and size {size} differ in length")
    shape = list(x.shape)
    for a, s in zip(axis, size):
        if shape[a] != 1:
            raise ValueError(f"axis {a} has size {shape[a]}, broadcast_axis needs 1")
        shape[a] = s
    return xp.broadcast_to(x, tuple(shape)).copy()


register(OpDef(
    name="broadcast_axis", kernel=_broadcast_axis, aliases=("broadcast_axes",),
    attrs={"axis": Attr(parse_axis, ()), "size": Attr(parse_axis, ())},
    grad=lambda c, g: (call("_sum_to", g, shape=c.inputs[0].shape),),
    test=OpTest(ref=lambda x, axis, size: _broadcast_axis(np, x, axis, size), cases=(
        (((1, 4),), {"axis": 0, "size": 3}), (((2, 1, 1),), {"axis": (1, 2), "size": (3, 2)})))))


# ---------------------------------------------------------------------------------------------------------
# Reshape with MXNet's special codes (one implementation for eager and, later, traced code)
def reshape_shape(in_shape, spec, reverse=False):
    """Resolves MXNet's reshape codes 0, -1, -2, -3, -4 against `in_shape`."""
    in_shape, spec = tuple(in_shape), tuple(spec)
    if all(d > 0 for d in spec):               # the common case: a plain shape (gradient rules pass these)
        if math.prod(spec) != math.prod(in_shape):
            raise ValueError(f"cannot reshape array of shape {in_shape} (size {math.prod(in_shape)}) into {spec}")
        return spec
    if reverse:
        out = reshape_shape(in_shape[::-1], _reverse_spec(spec))
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


def _reverse_spec(spec):
    """Reverses a spec keeping each -4's two following values in order after reversal."""
    groups, j = [], 0
    while j < len(spec):
        if spec[j] == -4:
            groups.append((-4, spec[j + 2], spec[j + 1])); j += 3
        else:
            groups.append((spec[j],)); j += 1
    return tuple(v for grp in reversed(groups) for v in grp)


def _need(ok, in_shape, spec):
    if not ok:
        raise ValueError(f"reshape {spec} does not fit input shape {in_shape}")


def _reshape(xp, x, shape, reverse):
    return x.reshape(reshape_shape(x.shape, shape, reverse))


register(OpDef(
    name="Reshape", kernel=_reshape, aliases=("reshape",), kind="shape",
    attrs={"shape": Attr(parse_shape, ()), "reverse": Attr(parse_bool, False)},
    grad=lambda c, g: (call("Reshape", g, shape=c.inputs[0].shape),),
    infer=lambda shapes, dtypes, shape, reverse: ([reshape_shape(shapes[0], shape, reverse)], [dtypes[0]]),
    test=OpTest(ref=lambda x, shape, reverse: x.reshape(reshape_shape(x.shape, shape, reverse)), cases=(
        (((2, 3, 4),), {"shape": (4, 0, 2)}), (((2, 3, 4),), {"shape": (6, -1)}),
        (((2, 3, 4),), {"shape": (-2,)}), (((2, 3, 4),), {"shape": (2, -2)}),
        (((2, 3, 4),), {"shape": (-3, 4)}), (((2, 3, 4),), {"shape": (-4, 1, 2, -2)}),
        (((10, 5, 4),), {"shape": (-1, 0)}), (((10, 5, 4),), {"shape": (-1, 0), "reverse": True}),
        (((3, 4),), {"shape": (-1,)}),
    ))))



# ---------------------------------------------------------------------------------------------------------
# A fused elementwise group made by the fusion pass (mixnet/symbol/fuse.py): never built by users, never
# exported; forward and backward plans both use it (graph-mode autodiff runs before fusion, so it needs no
# gradient rule).
def _fused_elemwise(xp, *arrays, kernel, num_outputs, out=None):
    from ..codegen.backend import kernel_for           # Numba for numpy, CUDA for cupy; loaded on first use
    return kernel_for(xp, kernel)(*arrays, out=out)


def _infer_fused(shapes, dtypes, kernel, num_outputs):
    # a group fused with the sum/mean it feeds (codegen/reduction.py) knows its reduced shape
    shape = getattr(kernel, "out_shape", None) or tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    return [shape] * num_outputs, [np.dtype(kernel.dtype)] * num_outputs


register(OpDef(
    name="_fused_elemwise", kernel=_fused_elemwise, inputs=("data",), variadic=True, hidden=True,
    attrs={"kernel": Attr(parse_any, REQUIRED), "num_outputs": Attr(parse_int, 1)}, infer=_infer_fused,
    num_outputs=lambda a: a["num_outputs"], differentiable=False, writes_out=True,
    doc="Internal: a generated kernel for a group of elementwise ops (inference plans of hybridized blocks)."))
