"""Normalization: BatchNorm, LayerNorm, InstanceNorm, GroupNorm, L2Normalization, LRN.

Gradient rules recompute the statistics from the inputs with mixnet ops (`_sum_to` keeps reduced axes as 1), so
they differentiate again. MXNet's extra outputs are reproduced: BatchNorm returns (out, mean, 1/sqrt(var+eps))
— the third output is the inverse std, not the variance, in MXNet 1.9.1 too — and LayerNorm/GroupNorm return
(out, mean, std) with std = sqrt(var + eps).
"""
import numpy as np

from .attrs import Attr, REQUIRED, choice, optional, parse_bool, parse_float, parse_int
from .common import call
from .registry import OpDef, OpTest, register


def _reduce_shape(shape, keep):
    """Shape with every axis not in `keep` set to 1."""
    return tuple(d if i in keep else 1 for i, d in enumerate(shape))


def _norm_core(x, bshape, eps):
    """Mixnet-op statistics over the axes where bshape is 1: (xc, invstd, count)."""
    count = int(np.prod(x.shape)) // int(np.prod(bshape))
    mean = call("_sum_to", x, shape=bshape) / count
    xc = x - mean
    var = call("_sum_to", xc * xc, shape=bshape) / count
    invstd = (var + eps) ** -0.5
    return xc, invstd, count


def _norm_backward(x, dxhat, bshape, eps, gmean=None, gstd=None, ginvstd=None):
    """d/dx of xhat = (x - mean) / sqrt(var + eps) given dL/dxhat, plus gradients arriving at the mean and
    std (or inverse std) outputs. All in mixnet ops."""
    xc, invstd, m = _norm_core(x, bshape, eps)
    xhat = xc * invstd
    mdx = call("_sum_to", dxhat, shape=bshape) / m
    mdxx = call("_sum_to", dxhat * xhat, shape=bshape) / m
    dx = (dxhat - mdx - xhat * mdxx) * invstd
    if gmean is not None:
        dx = dx + gmean / m
    if gstd is not None:                 # std = sqrt(var + eps): d std / dx = xc / (m * std)
        dx = dx + gstd * xc * invstd / m
    if ginvstd is not None:              # invstd: d / dx = -invstd^3 * xc / m
        dx = dx - ginvstd * xc * invstd * invstd * invstd / m
    return dx, xhat


def _as_b(v, bshape):
    return call("Reshape", v, shape=bshape)


def _np_stats(xp, x, axes, eps):
    xf = x.astype(np.float64) if x.dtype == np.float16 else x
    mean = xf.mean(axis=axes, keepdims=True)
    var = ((xf - mean) ** 2).mean(axis=axes, keepdims=True)
    return mean, var


# ---------------------------------------------------------------------------------------------------------
# BatchNorm
def _bn_axis(x, axis):
    a = axis + x.ndim if axis < 0 else axis
    if not 0 <= a < x.ndim:
        raise ValueError(f"axis {axis} is out of range for data of shape {x.shape}")
    return a


def _k_batchnorm(xp, data, gamma, beta, moving_mean, moving_var, *, eps, momentum, fix_gamma, use_global_stats,
                 output_mean_var, axis, cudnn_off, min_calib_range, max_calib_range, is_train):
    ax = _bn_axis(data, axis)
    c = data.shape[ax]
    for name, arr in (("gamma", gamma), ("beta", beta), ("moving_mean", moving_mean), ("moving_var", moving_var)):
        if tuple(arr.shape) != (c,):
            raise ValueError(f"{name} shape {arr.shape} does not match ({c},) (the size of axis {axis})")
    bshape = _reduce_shape(data.shape, (ax,))
    axes = tuple(i for i in range(data.ndim) if i != ax)
    if is_train and not use_global_stats:
        mean, var = _np_stats(xp, data, axes, eps)
        mean, var = mean.reshape(c), var.reshape(c)
        moving_mean *= momentum
        moving_mean += ((1 - momentum) * mean).astype(moving_mean.dtype)
        moving_var *= momentum
        moving_var += ((1 - momentum) * var).astype(moving_var.dtype)
    else:
        mean, var = moving_mean, moving_var
    invstd = 1.0 / xp.sqrt(var + eps)
    g = xp.ones_like(gamma) if fix_gamma else gamma
    scale = (g * invstd).reshape(bshape)
    out = (data - mean.reshape(bshape)) * scale + beta.reshape(bshape)
    dt = data.dtype
    return out.astype(dt, copy=False), mean.astype(dt, copy=True), invstd.astype(dt, copy=False)


def _g_batchnorm(c, g, gmean, ginvstd):
    x, gamma, beta = c.inputs[:3]
    a = c.attrs
    ax = _bn_axis(x, a["axis"])
    ch = x.shape[ax]
    bshape = _reduce_shape(x.shape, (ax,))
    gam = None if a["fix_gamma"] else _as_b(gamma, bshape)
    dxhat = g if gam is None else g * gam
    dbeta = call("Reshape", call("_sum_to", g, shape=bshape), shape=(ch,))
    # The gradient of the function the forward computed: batch statistics if the forward trained, else the
    # moving ones. (MXNet decides by the backward call's train_mode flag instead, so a predict-mode forward
    # followed by a default backward mixes the two; see docs/compatibility.md.)
    if c.is_train and not a["use_global_stats"]:
        dx, xhat = _norm_backward(x, dxhat, bshape, a["eps"], gmean=_as_b(gmean, bshape),
                                  ginvstd=_as_b(ginvstd, bshape))
    else:
        invstd = _as_b((c.inputs[4] + a["eps"]) ** -0.5, bshape)
        dx = dxhat * invstd
        xhat = (x - _as_b(c.inputs[3], bshape)) * invstd
    if a["fix_gamma"]:
        dgamma = gamma * 0
    else:
        dgamma = call("Reshape", call("_sum_to", g * xhat, shape=bshape), shape=(ch,))
    return dx, dgamma, dbeta, None, None


def _ref_batchnorm(x, gamma, beta, mm, mv, eps=1e-3, momentum=0.9, fix_gamma=True, use_global_stats=False,
                   output_mean_var=False, axis=1, **_):
    """Textbook formula in training mode (the generated tests run under autograd.train_mode)."""
    axis = axis % x.ndim
    xt = np.moveaxis(x.astype(np.float64), axis, -1)
    flat = xt.reshape(-1, xt.shape[-1])
    if use_global_stats:
        mean, var = mm.astype(np.float64), mv.astype(np.float64)
    else:
        mean = flat.sum(0) / flat.shape[0]
        var = ((flat - mean) ** 2).sum(0) / flat.shape[0]
    g = np.ones_like(gamma) if fix_gamma else gamma
    y = np.moveaxis((xt - mean) / np.sqrt(var + eps) * g + beta, -1, axis)
    return (y, mean, 1 / np.sqrt(var + eps)) if output_mean_var else y


register(OpDef(
    name="BatchNorm", kernel=_k_batchnorm, inputs=("data", "gamma", "beta", "moving_mean", "moving_var"),
    attrs={"eps": Attr(parse_float, 1e-3), "momentum": Attr(parse_float, 0.9), "fix_gamma": Attr(parse_bool, True),
           "use_global_stats": Attr(parse_bool, False), "output_mean_var": Attr(parse_bool, False),
           "axis": Attr(parse_int, 1), "cudnn_off": Attr(parse_bool, False),
           "min_calib_range": Attr(optional(parse_float), None),
           "max_calib_range": Attr(optional(parse_float), None)},
    grad=_g_batchnorm, num_outputs=3, num_visible=lambda a: 3 if a["output_mean_var"] else 1,
    nondiff_inputs=(3, 4), mutates=(3, 4), train_aware=True,
    test=OpTest(ref=_ref_batchnorm, domain=(0.5, 2.0), cases=(
        (((2, 3, 2, 2), (3,), (3,), (3,), (3,)), {}),
        (((2, 3, 2, 2), (3,), (3,), (3,), (3,)), {"fix_gamma": False, "eps": 1e-5}),
        (((4, 3), (3,), (3,), (3,), (3,)), {"fix_gamma": False, "axis": -1}),
        (((2, 3, 4), (3,), (3,), (3,), (3,)), {"fix_gamma": False, "output_mean_var": True}),
        (((2, 3, 2), (3,), (3,), (3,), (3,)), {"fix_gamma": False, "use_global_stats": True}),
    )),
    doc="Batch normalization. Training (autograd.record / train_mode): batch statistics, and moving_mean / "
        "moving_var are updated in place as m = momentum * m + (1 - momentum) * batch_stat (biased variance). "
        "MXNet performs that update in the backward pass; mixnet does it in the forward pass (so a training-"
        "mode forward without backward also updates). Inference: moving statistics. Outputs (out, mean, "
        "1/sqrt(var + eps)); fix_gamma=True uses gamma = 1 and gives gamma a zero gradient (MXNet also writes "
        "1s into gamma during a training forward; mixnet leaves gamma untouched)."))


# ---------------------------------------------------------------------------------------------------------
# LayerNorm, InstanceNorm, GroupNorm
def _k_layernorm(xp, data, gamma, beta, *, axis, eps, output_mean_var):
    ax = _bn_axis(data, axis)
    d = data.shape[ax]
    for name, arr in (("gamma", gamma), ("beta", beta)):
        if tuple(arr.shape) != (d,):
            raise ValueError(f"{name} shape {arr.shape} does not match ({d},) (the size of axis {axis})")
    mean, var = _np_stats(xp, data, (ax,), eps)
    std = xp.sqrt(var + eps)
    bshape = mean.shape
    pshape = tuple(d if i == ax else 1 for i in range(data.ndim))
    out = (data - mean) / std * gamma.reshape(pshape) + beta.reshape(pshape)
    dt = data.dtype
    return out.astype(dt, copy=False), mean.reshape(bshape).astype(dt), std.reshape(bshape).astype(dt)


def _g_layernorm(c, g, gmean, gstd):
    x, gamma, beta = c.inputs
    ax = _bn_axis(x, c.attrs["axis"])
    d = x.shape[ax]
    bshape = _reduce_shape(x.shape, tuple(i for i in range(x.ndim) if i != ax))   # stats shape (axis -> 1)
    pshape = tuple(d if i == ax else 1 for i in range(x.ndim))
    dxhat = g * call("Reshape", gamma, shape=pshape)
    dx, xhat = _norm_backward(x, dxhat, bshape, c.attrs["eps"], gmean=gmean, gstd=gstd)
    dgamma = call("Reshape", call("_sum_to", g * xhat, shape=pshape), shape=(d,))
    dbeta = call("Reshape", call("_sum_to", g, shape=pshape), shape=(d,))
    return dx, dgamma, dbeta


def _ref_layernorm(x, gamma, beta, axis=-1, eps=1e-5, output_mean_var=False):
    x = x.astype(np.float64)
    mean = x.mean(axis, keepdims=True)
    std = np.sqrt(((x - mean) ** 2).mean(axis, keepdims=True) + eps)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    y = (x - mean) / std * gamma.reshape(shape) + beta.reshape(shape)
    return (y, mean, std) if output_mean_var else y


register(OpDef(
    name="LayerNorm", kernel=_k_layernorm, inputs=("data", "gamma", "beta"), grad=_g_layernorm,
    attrs={"axis": Attr(parse_int, -1), "eps": Attr(parse_float, 1e-5), "output_mean_var": Attr(parse_bool, False)},
    num_outputs=3, num_visible=lambda a: 3 if a["output_mean_var"] else 1,
    test=OpTest(ref=_ref_layernorm, cases=(
        (((3, 4), (4,), (4,)), {}),
        (((2, 3, 4), (3,), (3,)), {"axis": 1, "eps": 1e-3}),
        (((2, 3, 4), (4,), (4,)), {"output_mean_var": True}),
    )),
    doc="Layer normalization over one axis; outputs (out, mean, std) with std = sqrt(var + eps), keepdims."))


def _k_instancenorm(xp, data, gamma, beta, *, eps):
    if data.ndim < 3:
        raise ValueError(f"data must be at least 3-D (batch, channel, spatial...), got shape {data.shape}")
    c = data.shape[1]
    for name, arr in (("gamma", gamma), ("beta", beta)):
        if tuple(arr.shape) != (c,):
            raise ValueError(f"{name} shape {arr.shape} does not match ({c},) (channels)")
    axes = tuple(range(2, data.ndim))
    mean, var = _np_stats(xp, data, axes, eps)
    pshape = (1, c) + (1,) * (data.ndim - 2)
    out = (data - mean) / xp.sqrt(var + eps) * gamma.reshape(pshape) + beta.reshape(pshape)
    return out.astype(data.dtype, copy=False)


def _g_instancenorm(c, g):
    x, gamma, beta = c.inputs
    ch = x.shape[1]
    bshape = x.shape[:2] + (1,) * (x.ndim - 2)
    pshape = (1, ch) + (1,) * (x.ndim - 2)
    dx, xhat = _norm_backward(x, g * call("Reshape", gamma, shape=pshape), bshape, c.attrs["eps"])
    dgamma = call("Reshape", call("_sum_to", g * xhat, shape=pshape), shape=(ch,))
    dbeta = call("Reshape", call("_sum_to", g, shape=pshape), shape=(ch,))
    return dx, dgamma, dbeta


def _ref_instancenorm(x, gamma, beta, eps=1e-3):
    out = np.zeros(x.shape)
    for n in range(x.shape[0]):
        for ch in range(x.shape[1]):
            v = x[n, ch].astype(np.float64)
            out[n, ch] = (v - v.mean()) / np.sqrt(v.var() + eps) * gamma[ch] + beta[ch]
    return out


register(OpDef(
    name="InstanceNorm", kernel=_k_instancenorm, inputs=("data", "gamma", "beta"), grad=_g_instancenorm,
    attrs={"eps": Attr(parse_float, 1e-3)},
    test=OpTest(ref=_ref_instancenorm, cases=(
        (((2, 3, 4), (3,), (3,)), {}), (((1, 2, 3, 3), (2,), (2,)), {"eps": 1e-5})))))


def _k_groupnorm(xp, data, gamma, beta, *, num_groups, eps, output_mean_var):
    n, c = data.shape[:2]
    if c % num_groups:
        raise ValueError(f"channels ({c}) must be divisible by num_groups ({num_groups})")
    for name, arr in (("gamma", gamma), ("beta", beta)):
        if tuple(arr.shape) != (num_groups,):
            raise ValueError(f"{name} shape {arr.shape} does not match ({num_groups},) (num_groups; MXNet 1.9 "
                             "scales per group, not per channel)")
    xg = data.reshape(n, num_groups, -1)
    mean, var = _np_stats(xp, xg, (2,), eps)
    std = xp.sqrt(var + eps)
    out = (xg - mean) / std * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)
    dt = data.dtype
    return (out.reshape(data.shape).astype(dt, copy=False), mean.reshape(n, num_groups).astype(dt),
            std.reshape(n, num_groups).astype(dt))


def _g_groupnorm(c, g, gmean, gstd):
    x, gamma, beta = c.inputs
    n, G = x.shape[0], c.attrs["num_groups"]
    xg = call("Reshape", x, shape=(n, G, -1))
    gg = call("Reshape", g, shape=(n, G, -1))
    dx, xhat = _norm_backward(xg, gg * call("Reshape", gamma, shape=(1, G, 1)), (n, G, 1), c.attrs["eps"],
                              gmean=call("Reshape", gmean, shape=(n, G, 1)),
                              gstd=call("Reshape", gstd, shape=(n, G, 1)))
    dgamma = call("Reshape", call("_sum_to", gg * xhat, shape=(1, G, 1)), shape=(G,))
    dbeta = call("Reshape", call("_sum_to", gg, shape=(1, G, 1)), shape=(G,))
    return call("Reshape", dx, shape=x.shape), dgamma, dbeta


def _ref_groupnorm(x, gamma, beta, num_groups=1, eps=1e-5, output_mean_var=False):
    n = x.shape[0]
    xg = x.reshape(n, num_groups, -1).astype(np.float64)
    mean = xg.mean(-1, keepdims=True)
    std = np.sqrt(xg.var(-1, keepdims=True) + eps)
    y = ((xg - mean) / std * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)).reshape(x.shape)
    return (y, mean[..., 0], std[..., 0]) if output_mean_var else y


register(OpDef(
    name="GroupNorm", kernel=_k_groupnorm, inputs=("data", "gamma", "beta"), grad=_g_groupnorm,
    attrs={"num_groups": Attr(parse_int, 1), "eps": Attr(parse_float, 1e-5),
           "output_mean_var": Attr(parse_bool, False)},
    num_outputs=3, num_visible=lambda a: 3 if a["output_mean_var"] else 1,
    test=OpTest(ref=_ref_groupnorm, cases=(
        (((2, 4, 3), (2,), (2,)), {"num_groups": 2}),
        (((2, 2, 2, 2), (1,), (1,)), {}),
        (((2, 4, 3), (2,), (2,)), {"num_groups": 2, "output_mean_var": True}),
    )),
    doc="Group normalization; gamma/beta have shape (num_groups,) as in MXNet 1.9.1 (per group, not channel)."))


# ---------------------------------------------------------------------------------------------------------
# L2Normalization, LRN
def _l2_keep(ndim, mode):
    if mode == "instance":
        return (0,)
    if mode == "channel":
        return (0,) + tuple(range(2, ndim))
    return (0, 1)


def _k_l2norm(xp, data, *, eps, mode):
    if mode in ("channel", "spatial") and data.ndim < 3:
        raise ValueError(f"at least 3 dimensions are required in {mode} mode, got shape {data.shape}")
    keep = _l2_keep(data.ndim, mode)
    axes = tuple(i for i in range(data.ndim) if i not in keep)
    norm = xp.sqrt((data * data).sum(axis=axes, keepdims=True) + eps)
    return (data / norm).astype(data.dtype, copy=False)


def _g_l2norm(c, g):
    x = c.inputs[0]
    bshape = _reduce_shape(x.shape, _l2_keep(x.ndim, c.attrs["mode"]))
    inv = (call("_sum_to", x * x, shape=bshape) + c.attrs["eps"]) ** -0.5
    y = x * inv
    return ((g - y * call("_sum_to", g * y, shape=bshape)) * inv,)


def _ref_l2norm(x, eps=1e-10, mode="instance"):
    x = x.astype(np.float64)
    out = np.zeros(x.shape)
    if mode == "instance":
        for n in range(x.shape[0]):
            out[n] = x[n] / np.sqrt((x[n] ** 2).sum() + eps)
    elif mode == "channel":
        out = x / np.sqrt((x ** 2).sum(1, keepdims=True) + eps)
    else:
        for n in range(x.shape[0]):
            for ch in range(x.shape[1]):
                out[n, ch] = x[n, ch] / np.sqrt((x[n, ch] ** 2).sum() + eps)
    return out


register(OpDef(
    name="L2Normalization", kernel=_k_l2norm, grad=_g_l2norm,
    attrs={"eps": Attr(parse_float, 1e-10), "mode": Attr(choice("channel", "instance", "spatial"), "instance")},
    test=OpTest(ref=_ref_l2norm, domain=(0.3, 2.0), cases=(
        (((2, 3, 2),), {}), (((2, 3, 2),), {"mode": "channel"}), (((2, 3, 2, 2),), {"mode": "spatial"}),
        (((3, 4),), {"eps": 1e-3})))))


def _k_lrn(xp, data, *, alpha, beta, knorm, nsize):
    if data.ndim != 4:
        raise ValueError(f"LRN needs 4-D (N, C, H, W) data, got shape {data.shape}")
    c = data.shape[1]
    half = nsize // 2
    sq = xp.pad(data * data, [(0, 0), (half, half), (0, 0), (0, 0)])
    s = sum(sq[:, i:i + c] for i in range(nsize))
    return (data * (knorm + alpha / nsize * s) ** -beta).astype(data.dtype, copy=False)


def _g_lrn(c, g):
    x = c.inputs[0]
    a = c.attrs
    n = a["nsize"]
    # scale = k + alpha/n * S, S = channel-window sum of x^2 (a 1-D sum pooling over channels).
    def window_sum(v):
        v5 = call("Reshape", v, shape=(v.shape[0], 1, v.shape[1], -1))
        p = call("Pooling", v5, kernel=(n, 1), stride=(1, 1), pad=(n // 2, 0), pool_type="sum")
        return call("Reshape", p, shape=v.shape)
    scale = window_sum(x * x) * (a["alpha"] / n) + a["knorm"]
    sb = scale ** -a["beta"]
    t = window_sum(g * x * scale ** (-a["beta"] - 1))
    return (g * sb - x * t * (2 * a["alpha"] * a["beta"] / n),)


def _ref_lrn(x, alpha=1e-4, beta=0.75, knorm=2.0, nsize=3):
    x = x.astype(np.float64)
    c = x.shape[1]
    out = np.zeros(x.shape)
    for ch in range(c):
        lo, hi = max(0, ch - nsize // 2), min(c, ch + nsize // 2 + 1)
        s = (x[:, lo:hi] ** 2).sum(1)
        out[:, ch] = x[:, ch] * (knorm + alpha / nsize * s) ** -beta
    return out


register(OpDef(
    name="LRN", kernel=_k_lrn, grad=_g_lrn,
    attrs={"alpha": Attr(parse_float, 1e-4), "beta": Attr(parse_float, 0.75), "knorm": Attr(parse_float, 2.0),
           "nsize": Attr(parse_int, REQUIRED)},
    test=OpTest(ref=_ref_lrn, cases=(
        (((2, 5, 2, 2),), {"nsize": 3}), (((1, 4, 2, 3),), {"nsize": 5, "alpha": 0.5, "beta": 0.5, "knorm": 1.0})))))
