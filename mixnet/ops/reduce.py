"""Reductions: sum/mean/prod/max/min/nansum/nanprod, norm, argmax/argmin/argmax_channel, moments.

MXNet 1.x semantics (checked against MXNet 1.9.1):
* `axis=None` or `axis=()` reduces every axis; `exclude=True` reduces every axis except the listed ones
  (`axis=()` with exclude still reduces everything, as in MXNet). Negative axes count from the end; an axis out of
  range or a duplicate (after normalisation) is an error.
* A reduction that removes every axis returns shape `(1,)` (legacy: no 0-d arrays); `keepdims=True` keeps each
  reduced axis as 1.
* Results keep the input dtype (int32 sums stay int32; an int mean truncates toward zero like MXNet). float16 is
  accumulated in float32 and cast back.
* argmax/argmin return indices in the input dtype (float32 for float32 input); `axis` is an int or None (None:
  index into the flattened array, shape (1,)). Ties give the first index; a NaN counts as the maximum.

Gradients (all written with mixnet ops, so they differentiate again):
* max/min: like MXNet, every element equal to the result receives the full output gradient (ties are not split).
* prod: the product of the *other* elements, computed so that zeros do not produce NaN (MXNet returns NaN where
  an input is 0): y / x where x != 0, and prod(x with its zero replaced by 1) where x is the group's only zero.
  The second derivative is exact for groups with at most one zero.
* nanprod/nansum: NaNs count as 1/0 and get zero gradient (MXNet's rule).
* norm: ord=2 gives x / ||x|| (0 where the norm is 0; MXNet gives NaN there), ord=1 gives sign(x).
"""
import math

import numpy as np

from .attrs import Attr, optional, parse_axis, parse_bool, parse_dtype, parse_int
from .common import Memo, call, infer_same, reduce_axes, reduced_shape
from .registry import OpDef, OpTest, register

_REDUCE_ATTRS = {
    "axis": Attr(parse_axis, None, "axis or axes to reduce; None or () reduces all"),
    "keepdims": Attr(parse_bool, False, "keep reduced axes with size 1"),
    "exclude": Attr(parse_bool, False, "reduce every axis except `axis`"),
}


# ---------------------------------------------------------------------------------------------------------
# axis handling shared by every reduction: common.reduce_axes / common.reduced_shape (also used by fuse.py)
def _reduce_infer(shapes, dtypes, axis, keepdims, exclude):
    shape = tuple(shapes[0])
    return [reduced_shape(shape, reduce_axes(shape, axis, exclude), keepdims)], [dtypes[0]]


def _extreme_axes(name, shape, axis, exclude):
    axes = reduce_axes(shape, axis, exclude)
    if any(shape[a] == 0 for a in axes):
        raise ValueError(f"{name} of an empty axis (shape {tuple(shape)}) has no identity")
    return axes


def _extreme_infer(name):
    def infer(shapes, dtypes, axis, keepdims, exclude):
        shape = tuple(shapes[0])
        return [reduced_shape(shape, _extreme_axes(name, shape, axis, exclude), keepdims)], [dtypes[0]]
    return infer


def _acc_dtype(dtype):
    return np.float32 if dtype == np.float16 else dtype


def _finish(xp, result, x, axes, keepdims):
    """Casts back to the input dtype and applies MXNet's output shape."""
    result = xp.asarray(result)
    if result.dtype != x.dtype:
        result = result.astype(x.dtype)
    return result.reshape(reduced_shape(x.shape, axes, keepdims))


def unreduce(g, x_shape, axes, keepdims):
    """g has the reduction's output shape; returns it broadcast to x_shape (mixnet ops, differentiable)."""
    if not axes:
        return g if tuple(g.shape) == tuple(x_shape) else call("Reshape", g, shape=tuple(x_shape))
    if keepdims:
        gk = g
    else:                # the reduced axes back as 1s: one Reshape (a view; ~3 us, an expand_dims ~10 us per axis)
        gk = call("Reshape", g, shape=reduced_shape(x_shape, axes, True))
    if tuple(gk.shape) == tuple(x_shape):
        return gk
    return call("broadcast_to", gk, shape=tuple(x_shape))


def _axes_of(ctx):
    return reduce_axes(ctx.inputs[0].shape, ctx.attrs["axis"], ctx.attrs.get("exclude", False))


def _broadcast_out(ctx, y):
    x = ctx.inputs[0]
    return unreduce(y, x.shape, _axes_of(ctx), ctx.attrs.get("keepdims", False))


def _zero_like(x):
    return x * 0


# ---------------------------------------------------------------------------------------------------------
# sum, mean, prod, max, min, nansum, nanprod
def _sum_kernel(xp, x, axis, keepdims, exclude):
    axes = reduce_axes(x.shape, axis, exclude)
    return _finish(xp, x.sum(axis=axes, dtype=_acc_dtype(x.dtype)), x, axes, keepdims)


_MEAN_PLANS = Memo()      # (shape, axis, keepdims, exclude) -> (axes, count, output shape): a loss's mean, every step


def _mean_kernel(xp, x, axis, keepdims, exclude):
    key = (x.shape, axis, keepdims, exclude)
    plan = _MEAN_PLANS.get(key)
    if plan is None:
        axes = reduce_axes(x.shape, axis, exclude)
        plan = _MEAN_PLANS.keep(key, (axes, math.prod(x.shape[a] for a in axes),
                                      reduced_shape(x.shape, axes, keepdims)))
    axes, n, out_shape = plan
    if n == 1:
        # every reduced axis has length 1 (a loss of shape (batch, 1) averaged per sample): the mean is x itself,
        # x / 1 exactly in every dtype; one copy instead of a sum, a division and a cast (~20 us on (128, 1))
        return x.reshape(out_shape).copy()
    if x.dtype.kind in "iub":
        total = x.sum(axis=axes, dtype=np.int64)
        result = xp.trunc(total / n) if n else total.astype(np.float64) * np.nan
    else:
        acc = np.dtype(_acc_dtype(x.dtype)).type
        total = x.sum(axis=axes, dtype=acc)
        result = total / acc(n) if n else total * acc(np.nan)
    return _finish(xp, result, x, axes, keepdims)


def _prod_kernel(xp, x, axis, keepdims, exclude):
    axes = reduce_axes(x.shape, axis, exclude)
    return _finish(xp, x.prod(axis=axes, dtype=_acc_dtype(x.dtype)), x, axes, keepdims)


def _extreme_kernel(fn, name):
    def run(xp, x, axis, keepdims, exclude):
        axes = _extreme_axes(name, x.shape, axis, exclude)
        return _finish(xp, getattr(x, fn)(axis=axes), x, axes, keepdims)
    return run


def _nansum_kernel(xp, x, axis, keepdims, exclude):
    axes = reduce_axes(x.shape, axis, exclude)
    clean = xp.where(xp.isnan(x), 0, x) if x.dtype.kind == "f" else x
    return _finish(xp, clean.sum(axis=axes, dtype=_acc_dtype(x.dtype)), x, axes, keepdims)


def _nanprod_kernel(xp, x, axis, keepdims, exclude):
    axes = reduce_axes(x.shape, axis, exclude)
    clean = xp.where(xp.isnan(x), 1, x) if x.dtype.kind == "f" else x
    return _finish(xp, clean.prod(axis=axes, dtype=_acc_dtype(x.dtype)), x, axes, keepdims)


def _sum_grad(ctx, g):
    x = ctx.inputs[0]
    if x.size == 0:
        return (_zero_like(x),)
    return (_broadcast_out(ctx, g),)


def _mean_grad(ctx, g):
    x = ctx.inputs[0]
    if x.size == 0:
        return (_zero_like(x),)
    axes = _axes_of(ctx)
    n = math.prod(x.shape[a] for a in axes)
    g = _broadcast_out(ctx, g)
    return (g / n if n != 1 else g,)         # / 1 would be one more op (a pass and a buffer) that changes nothing


def _extreme_grad(ctx, g):
    x = ctx.inputs[0]
    if x.size == 0:
        return (_zero_like(x),)
    mask = x == _broadcast_out(ctx, ctx.outputs[0])       # 0/1 in x's dtype, a constant to autograd
    return (_broadcast_out(ctx, g) * mask,)


def prod_others(x, y_b, axes):
    """For each element of x: the product of the other elements of its reduction group (y_b: the group product,
    broadcast to x's shape). Zero-safe: no division by zero; exact (also for second derivatives) when a group has
    at most one zero."""
    zero = x == 0                                          # constant masks
    nonzero = 1 - zero
    x_safe = x * nonzero + zero                            # zeros -> the constant 1 (no dependence on them)
    from_div = y_b / x_safe                                # right where x != 0 (y is 0 if another element is 0)
    # where x is zero: the product of the others = prod(x with zeros -> 1), if it is the group's only zero
    nzeros = call("sum", zero, axis=axes, keepdims=True)
    only_zero = call("broadcast_like", nzeros == 1, x)
    others = call("broadcast_like", call("prod", x_safe, axis=axes, keepdims=True), x)
    return from_div * nonzero + others * zero * only_zero


def _prod_grad(ctx, g):
    x = ctx.inputs[0]
    if x.size == 0:
        return (_zero_like(x),)
    axes = _axes_of(ctx)
    if not axes:
        return (g,)
    y_b = _broadcast_out(ctx, ctx.outputs[0])
    return (_broadcast_out(ctx, g) * prod_others(x, y_b, axes),)


def _nansum_grad(ctx, g):
    x = ctx.inputs[0]
    if x.size == 0:
        return (_zero_like(x),)
    return (_broadcast_out(ctx, g) * (1 - call("isnan", x)),)


def _nanprod_grad(ctx, g):
    x = ctx.inputs[0]
    if x.size == 0:
        return (_zero_like(x),)
    axes = _axes_of(ctx)
    notnan = 1 - call("isnan", x)
    clean = call("_nan_to_one", x)
    if not axes:
        return (g * notnan,)
    y_b = _broadcast_out(ctx, ctx.outputs[0])
    return (_broadcast_out(ctx, g) * prod_others(clean, y_b, axes) * notnan,)


def _ref(fn):
    """numpy reference through a different path: loop-free numpy on float64 with MXNet's shape rules."""
    def ref(x, axis, keepdims, exclude):
        ndim = x.ndim
        if axis is None or axis == ():
            axes = tuple(range(ndim))
        else:
            axes = tuple(sorted(a % ndim for a in ((axis,) if isinstance(axis, int) else axis)))
            if exclude:
                axes = tuple(sorted(set(range(ndim)) - set(axes)))
        out = fn(x.astype(np.float64), axes)
        if keepdims:
            out = np.reshape(out, [1 if i in axes else d for i, d in enumerate(x.shape)])
        out = np.asarray(out)
        return (out.reshape(1) if out.ndim == 0 else out).astype(x.dtype)
    return ref


_REDUCE_CASES = (
    (((3, 4),), {}),
    (((2, 3, 4),), {"axis": 1}),
    (((2, 3, 4),), {"axis": -1, "keepdims": True}),
    (((2, 3, 4),), {"axis": (0, 2)}),
    (((2, 3, 4),), {"axis": (0, 2), "exclude": True}),
    (((2, 3, 4),), {"axis": 1, "exclude": True, "keepdims": True}),
    (((2, 3, 4),), {"axis": (), "keepdims": True}),
    (((2, 3),), {"axis": (0, 1), "exclude": True}),
    (((5,),), {"axis": 0}),
    (((1, 3),), {"axis": "(0,)"}),
)
_SIZE0_CASES = ((((0, 3),), {"axis": 0}), (((2, 0),), {"axis": 0}), (((0, 3),), {"axis": 1, "keepdims": True}))


def _reduction(name, kernel, grad, ref, aliases=(), cases=_REDUCE_CASES, domain=(-2.0, 2.0), doc="",
               infer=_reduce_infer, fusible=False, **kw):
    """fusible: a sum-type reduction (sum, mean) that the fusion pass can append to an elementwise kernel."""
    reduction = (lambda attrs, shape: (name, reduce_axes(shape, attrs["axis"], attrs["exclude"]))) if fusible else None
    register(OpDef(name=name, kernel=kernel, attrs=_REDUCE_ATTRS, grad=grad, aliases=aliases, kind="reduce",
                   infer=infer, reduction=reduction,
                   test=OpTest(ref=_ref(ref), cases=cases, domain=domain, **kw), doc=doc))


def _np_mean(x, axes):
    return x.mean(axis=axes) if axes else x


_reduction("sum", _sum_kernel, _sum_grad, lambda x, a: x.sum(axis=a), aliases=("sum_axis",),
           cases=_REDUCE_CASES + _SIZE0_CASES, fusible=True, doc="Sum over the given axes.")
_reduction("mean", _mean_kernel, _mean_grad, _np_mean, cases=_REDUCE_CASES + _SIZE0_CASES[1:2] + (
               (((4, 1),), {"axis": 0, "exclude": True}), (((2, 1, 3),), {"axis": 1, "keepdims": True})),
           fusible=True, doc="Mean over the given axes.")
_reduction("prod", _prod_kernel, _prod_grad, lambda x, a: x.prod(axis=a), cases=_REDUCE_CASES + _SIZE0_CASES,
           domain=(0.5, 1.5), doc="Product over the given axes (zero-safe gradient).")
_reduction("max", _extreme_kernel("max", "max"), _extreme_grad, lambda x, a: x.max(axis=a), aliases=("max_axis",),
           cases=_REDUCE_CASES + _SIZE0_CASES[1:2], infer=_extreme_infer("max"), doc="Maximum over the given axes.")
_reduction("min", _extreme_kernel("min", "min"), _extreme_grad, lambda x, a: x.min(axis=a), aliases=("min_axis",),
           cases=_REDUCE_CASES + _SIZE0_CASES[1:2], infer=_extreme_infer("min"), doc="Minimum over the given axes.")
_reduction("nansum", _nansum_kernel, _nansum_grad, lambda x, a: np.nansum(x, axis=a),
           doc="Sum treating NaN as 0.")
_reduction("nanprod", _nanprod_kernel, _nanprod_grad, lambda x, a: np.nanprod(x, axis=a), domain=(0.5, 1.5),
           doc="Product treating NaN as 1.")


def _nan_to_one(xp, x):
    return xp.where(xp.isnan(x), xp.asarray(1, dtype=x.dtype), x) if x.dtype.kind == "f" else x.copy()


register(OpDef(
    name="_nan_to_one", kernel=_nan_to_one, hidden=True, kind="unary", infer=infer_same,
    grad=lambda c, g: (g * (1 - call("isnan", c.inputs[0])),),
    test=OpTest(ref=lambda x: np.where(np.isnan(x), 1, x), recipe="unary"),
    doc="NaN -> 1 (nanprod's gradient); its gradient is zero at NaNs."))


# ---------------------------------------------------------------------------------------------------------
# norm
_NORM_ATTRS = {
    "ord": Attr(parse_int, 2, "1 or 2"),
    "axis": Attr(parse_axis, None, "axes to reduce; None reduces all"),
    "out_dtype": Attr(optional(parse_dtype), None, "output dtype (default: the input's)"),
    "keepdims": Attr(parse_bool, False),
}


def _norm_axes(shape, ord, axis):
    if ord not in (1, 2):
        raise ValueError("norm only supports ord=1 and ord=2")
    return reduce_axes(shape, axis)


def _norm_infer(shapes, dtypes, ord, axis, out_dtype, keepdims):
    shape = tuple(shapes[0])
    return [reduced_shape(shape, _norm_axes(shape, ord, axis), keepdims)], [out_dtype or dtypes[0]]


def _norm_kernel(xp, x, ord, axis, out_dtype, keepdims):
    axes = _norm_axes(x.shape, ord, axis)
    acc = np.float64 if x.dtype.kind in "iub" else _acc_dtype(x.dtype)
    xa = x.astype(acc, copy=False)
    if ord == 1:
        result = xp.abs(xa).sum(axis=axes)
    else:
        result = xp.sqrt((xa * xa).sum(axis=axes))
    out = _finish(xp, result, x, axes, keepdims)
    return out if out_dtype is None else out.astype(out_dtype)


def _norm_grad(ctx, g):
    x = ctx.inputs[0]
    if x.size == 0:
        return (_zero_like(x),)
    axes = reduce_axes(x.shape, ctx.attrs["axis"])
    keep = ctx.attrs["keepdims"]
    y = ctx.outputs[0]
    if ctx.attrs["out_dtype"] is not None and np.dtype(ctx.attrs["out_dtype"]) != x.dtype:
        g = call("Cast", g, dtype=x.dtype)
        y = call("Cast", y, dtype=x.dtype)
    g_b = unreduce(g, x.shape, axes, keep)
    if ctx.attrs["ord"] == 1:
        return (g_b * call("sign", x),)
    y_b = unreduce(y, x.shape, axes, keep)
    return (g_b * x / (y_b + (y_b == 0)),)


def _norm_ref(x, ord, axis, out_dtype, keepdims):
    ax = None if axis in (None, ()) else ((axis,) if isinstance(axis, int) else tuple(axis))
    xf = x.astype(np.float64)
    r = np.abs(xf).sum(axis=ax, keepdims=keepdims) if ord == 1 else np.sqrt((xf ** 2).sum(axis=ax,
                                                                                           keepdims=keepdims))
    r = np.asarray(r)
    r = r.reshape(1) if r.ndim == 0 else r
    return r.astype(out_dtype or x.dtype)


register(OpDef(
    name="norm", kernel=_norm_kernel, attrs=_NORM_ATTRS, grad=_norm_grad, kind="reduce", infer=_norm_infer,
    test=OpTest(ref=_norm_ref, domain=(0.3, 2.0), cases=(
        (((3, 4),), {}), (((3, 4),), {"ord": 1}), (((2, 3, 4),), {"axis": 1}),
        (((2, 3, 4),), {"axis": (0, -1), "keepdims": True}), (((2, 3, 4),), {"ord": 1, "axis": -1}),
        (((2, 3),), {"out_dtype": "float64"}), (((4,),), {"keepdims": True}))),
    doc="L1 or L2 norm over the given axes (the whole array by default). out_dtype casts the result (MXNet "
        "1.9's eager path rejects out_dtype differing from the input; mixnet casts). Integer inputs are "
        "computed in float64 and cast back (MXNet gives wrong values there)."))


# ---------------------------------------------------------------------------------------------------------
# argmax / argmin / argmax_channel
def _arg_shape(shape, axis, keepdims):
    """(the axis argmax/argmin reduces or None for all, the output shape)."""
    shape = tuple(shape)
    if axis is None:
        if 0 in shape:
            raise ValueError("attempt to get argmax/argmin of an empty array")
        return None, (1,) * len(shape) if keepdims and shape else (1,)
    ndim = len(shape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} exceeds the input dimension of {ndim}")
    a = axis + ndim if axis < 0 else axis
    if shape[a] == 0:
        raise ValueError(f"attempt to get argmax/argmin of an empty axis {axis} (shape {shape})")
    return a, reduced_shape(shape, (a,), keepdims)


def _arg_kernel(fn):
    def run(xp, x, axis, keepdims):
        a, out_shape = _arg_shape(x.shape, axis, keepdims)
        idx = getattr(xp, fn)(x.reshape(-1) if a is None else x, axis=0 if a is None else a)
        return xp.asarray(idx).astype(x.dtype).reshape(out_shape)
    return run


def _arg_ref(fn):
    def ref(x, axis, keepdims):
        if axis is None:
            flat = list(x.reshape(-1))
            best = flat.index(fn(flat))
            return np.full((1,) * x.ndim if keepdims and x.ndim else (1,), best, dtype=x.dtype)
        out = np.apply_along_axis(lambda v: list(v).index(fn(list(v))), axis, x)
        if keepdims:
            out = np.expand_dims(out, axis)
        out = np.asarray(out)
        return (out.reshape(1) if out.ndim == 0 else out).astype(x.dtype)
    return ref


_ARG_CASES = ((((3, 4),), {}), (((3, 4),), {"axis": 1}), (((2, 3, 4),), {"axis": -1, "keepdims": True}),
              (((2, 3, 4),), {"axis": 0}), (((2, 3, 4),), {"keepdims": True}), (((5,),), {"axis": 0}))
for _name, _fn, _pick in (("argmax", "argmax", max), ("argmin", "argmin", min)):
    register(OpDef(
        name=_name, kernel=_arg_kernel(_fn), kind="reduce", differentiable=False,
        infer=lambda shapes, dtypes, axis, keepdims: ([_arg_shape(shapes[0], axis, keepdims)[1]], [dtypes[0]]),
        attrs={"axis": Attr(optional(parse_int), None), "keepdims": Attr(parse_bool, False)},
        test=OpTest(ref=_arg_ref(_pick), cases=_ARG_CASES, grad=False, grad2=False),
        doc=f"Indices of the {_fn[3:]}imum along an axis, in the input dtype (float32 for float32 input)."))


def _argmax_channel(xp, x):
    return _arg_kernel("argmax")(xp, x, axis=1, keepdims=False)


register(OpDef(
    name="argmax_channel", kernel=_argmax_channel, kind="reduce", differentiable=False,
    infer=lambda shapes, dtypes: ([_arg_shape(shapes[0], 1, False)[1]], [dtypes[0]]),
    test=OpTest(ref=lambda x: _arg_ref(max)(x, 1, False), cases=((((3, 4),), {}), (((2, 3, 4),), {})),
                grad=False, grad2=False),
    doc="argmax along axis 1, in the input dtype."))


# ---------------------------------------------------------------------------------------------------------
# moments
def _moments_axes(shape, axes):
    if axes is None or axes == ():
        raise ValueError("Empty axes is not supported, if you would like to do global moments, please pass all "
                         "axes to axes argument")
    return reduce_axes(shape, axes)


def _moments_infer(shapes, dtypes, axes, keepdims):
    shape = tuple(shapes[0])
    out = reduced_shape(shape, _moments_axes(shape, axes), keepdims)
    return [out, out], [dtypes[0]] * 2


def _moments_kernel(xp, x, axes, keepdims):
    red = _moments_axes(x.shape, axes)
    acc = np.float64 if x.dtype.kind in "iub" else _acc_dtype(x.dtype)
    xa = x.astype(acc, copy=False)
    mean = xa.mean(axis=red, keepdims=True)
    var = ((xa - mean) ** 2).mean(axis=red)
    return _finish(xp, mean, x, red, keepdims), _finish(xp, var, x, red, keepdims)


def _moments_grad(ctx, g_mean, g_var):
    x = ctx.inputs[0]
    if x.size == 0:
        return (_zero_like(x),)
    axes = reduce_axes(x.shape, ctx.attrs["axes"])
    keep = ctx.attrs["keepdims"]
    n = int(np.prod([x.shape[a] for a in axes]))
    mean_b = unreduce(ctx.outputs[0], x.shape, axes, keep)
    gm = unreduce(g_mean, x.shape, axes, keep)
    gv = unreduce(g_var, x.shape, axes, keep)
    return ((gm + gv * 2 * (x - mean_b)) / n,)


def _moments_ref(x, axes, keepdims):
    ax = (axes,) if isinstance(axes, int) else tuple(axes)
    xf = x.astype(np.float64)
    m, v = xf.mean(axis=ax, keepdims=keepdims), xf.var(axis=ax, keepdims=keepdims)
    fix = (lambda a: a.reshape(1) if a.ndim == 0 else a)
    return fix(np.asarray(m)).astype(x.dtype), fix(np.asarray(v)).astype(x.dtype)


register(OpDef(
    name="moments", kernel=_moments_kernel, grad=_moments_grad, num_outputs=2, kind="reduce", infer=_moments_infer,
    attrs={"axes": Attr(parse_axis, None, "axes to reduce (required in practice: None is an error)"),
           "keepdims": Attr(parse_bool, False)},
    test=OpTest(ref=_moments_ref, cases=(
        (((3, 4),), {"axes": 1}), (((2, 3, 4),), {"axes": (0, 2)}), (((2, 3, 4),), {"axes": (-1,), "keepdims": True}),
        (((2, 3),), {"axes": (0, 1)}))),
    doc="Mean and (population) variance over `axes`: two outputs."))
