"""Normalization: BatchNorm, LayerNorm, InstanceNorm, GroupNorm, L2Normalization, LRN.

Gradient rules recompute the statistics from the inputs with mixnet ops (`_sum_to` keeps reduced axes as 1), so
they differentiate again. MXNet's extra outputs are reproduced: BatchNorm returns (out, mean, 1/sqrt(var+eps))
— the third output is the inverse std, not the variance, in MXNet 1.9.1 too — and LayerNorm/GroupNorm return
(out, mean, std) with std = sqrt(var + eps).

Fused kernels (BatchNorm, LayerNorm). The composite rules above are ~20 mixnet ops, i.e. ~20 passes over memory
and as many temporaries. When the gradient will not be differentiated again (`_final_gradient`), the rules call
one hidden op instead (`_layernorm_bwd`, `_batchnorm_bwd`, `_batchnorm_global_bwd`) that computes dx, dgamma and
dbeta together: a Numba loop of two passes on CPU float32/float64 (ops/_numba_kernels.py via ops/_fastpath.py),
numpy/cupy code otherwise. The forwards take a Numba path too. The hidden ops recompute the statistics from x
(as the composite does) and are differentiable: their rule replays the composite rule on the tape.
"""
import numpy as np

from .. import _mode
from . import _fastpath
from .attrs import Attr, REQUIRED, choice, optional, parse_bool, parse_float, parse_int
from .common import call, into
from .registry import OpDef, OpTest, ParamShapes, register


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


def _final_gradient():
    """True when the gradient a rule returns will not be differentiated again, so it may come from a fused op
    without a composite graph behind it: eager backward without create_graph (autograd runs the rules with
    recording off), and graph-mode autodiff (symbol/autodiff.py traces the rules with recording off into the
    compiled backward of a hybridized block, which is never differentiated; higher-order gradients through a
    hybridized block replay it eagerly on the tape, with recording on)."""
    return not _mode.MODE.get().recording


def _replayed(composite):
    """The gradient rule of a fused backward op: its composite form `composite(attrs, *inputs)`, written with
    mixnet ops, re-run on recorded copies of the inputs and swept locally (as RNN's rule does), so any order of
    derivative exists. In a traced backward graph it becomes an eager node (autograd.local_gradients)."""
    def rule(c, *out_grads):
        from .. import autograd  # lazy: autograd sits above ops
        with autograd.record(train_mode=c.is_train):
            proxies = [call("_copy", x) for x in c.inputs]
            outs = composite(c.attrs, *proxies)
        return tuple(autograd.local_gradients(list(outs), list(out_grads), proxies))
    return rule


def rows_last(x, ax):
    """numpy x as a C-contiguous (A, D) array whose rows run along axis `ax` (a copy unless `ax` is last and x is
    contiguous); for the Numba row loops. The common case (a view) is tested first: each numpy call costs about
    a microsecond here, as much as a small softmax's exp."""
    if ax == x.ndim - 1 and x.flags.c_contiguous:
        return x.reshape(-1, x.shape[-1])
    if ax != x.ndim - 1:
        x = np.moveaxis(x, ax, -1)
    x = np.ascontiguousarray(x)
    return x.reshape(-1, x.shape[-1])


def rows_back(y, shape, ax):
    """The inverse of rows_last for a result y (A, D): an array of `shape`, C-contiguous."""
    if ax == len(shape) - 1:
        return y.reshape(shape)
    moved = shape[:ax] + shape[ax + 1:] + (shape[ax],)
    return np.ascontiguousarray(np.moveaxis(y.reshape(moved), -1, ax))


def _deliver(xp, out, results):
    """The out= protocol for several outputs: each result copied into its buffer (skipped where the kernel wrote
    there already); without buffers, the results."""
    if out is None:
        return results
    return tuple(into(xp, o, r) for o, r in zip(out, results))


def _direct(out, shape, dtype):
    """A given output buffer the Numba loops can write into as it is, reshaped to `shape`; else None."""
    if out is not None and out.dtype == dtype and out.flags.c_contiguous:
        return out.reshape(shape)
    return None


def _check_params(data, axis, ax, **params):
    n = data.shape[ax]
    for name, arr in params.items():
        if tuple(arr.shape) != (n,):
            raise ValueError(f"{name} shape {tuple(arr.shape)} does not match ({n},) (the size of axis {axis})")


def _infer_params(names, n_stats_like):
    """infer for the norm ops: outputs (data's shape, then per-axis or statistics shapes), all data's dtype.
    The parameters must have the size of the normalized axis; `n_stats_like(shape, ax)` gives the extra
    output shapes."""
    def infer(shapes, dtypes, **attrs):
        shape = tuple(shapes[0])
        ax = _bn_axis_of(len(shape), attrs["axis"], shape)
        for name, k in names:
            if tuple(shapes[k]) != (shape[ax],):
                raise ValueError(f"{name} shape {tuple(shapes[k])} does not match ({shape[ax]},) (the size of "
                                 f"axis {attrs['axis']})")
        extra = n_stats_like(shape, ax)
        return [shape] + extra, [dtypes[0]] * (1 + len(extra))
    return infer


# ---------------------------------------------------------------------------------------------------------
# BatchNorm
def _bn_axis_of(ndim, axis, shape):
    a = axis + ndim if axis < 0 else axis
    if not 0 <= a < ndim:
        raise ValueError(f"axis {axis} is out of range for data of shape {tuple(shape)}")
    return a


def _bn_axis(x, axis):
    return _bn_axis_of(x.ndim, axis, x.shape)


def _acb(x, ax):
    """x (C-contiguous) viewed as (A, C, B) around axis ax, for the BatchNorm loops."""
    a = int(np.prod(x.shape[:ax], dtype=np.int64))
    return x.reshape(a, x.shape[ax], -1)


_NO_GRAD = np.zeros((0, 0, 0))          # the loops' "no g operand" (they test its shape)


def _bn_batch_stats(nk, x3):
    """(mean, var) per channel in float64, one pass (shifted by each channel's first element)."""
    shift = x3[0, :, 0].astype(np.float64)
    sums = np.empty((4, x3.shape[1]))
    nk.batchnorm_sums(x3, _NO_GRAD.astype(x3.dtype), shift, sums)
    n = x3.shape[0] * x3.shape[2]
    d = sums[0] / n
    return shift + d, np.maximum(sums[1] / n - d * d, 0.0), sums


def _k_batchnorm(xp, data, gamma, beta, moving_mean, moving_var, *, eps, momentum, fix_gamma, use_global_stats,
                 output_mean_var, axis, cudnn_off, min_calib_range, max_calib_range, is_train):
    ax = _bn_axis(data, axis)
    c = data.shape[ax]
    _check_params(data, axis, ax, gamma=gamma, beta=beta, moving_mean=moving_mean, moving_var=moving_var)
    batch = is_train and not use_global_stats
    dt = data.dtype
    nk = _fastpath.numba_kernels(xp, data, gamma, beta) if data.size else None
    if nk is not None:
        x3 = _acb(np.ascontiguousarray(data), ax)
        if batch:
            mean64, var64, _ = _bn_batch_stats(nk, x3)
            mean, var = mean64.astype(dt), var64.astype(dt)
        else:
            mean, var = moving_mean, moving_var
            mean64, var64 = mean.astype(np.float64), var.astype(np.float64)
        invstd64 = 1.0 / np.sqrt(var64 + eps)
        scale = invstd64 if fix_gamma else gamma * invstd64
        out = np.empty(x3.shape, dt)
        nk.channel_affine(x3, _NO_GRAD.astype(dt), mean64, scale, scale, beta.astype(np.float64), out)
        out = out.reshape(data.shape)
        invstd = invstd64.astype(dt)
    else:
        bshape = _reduce_shape(data.shape, (ax,))
        axes = tuple(i for i in range(data.ndim) if i != ax)
        if batch:
            mean, var = _np_stats(xp, data, axes, eps)
            mean, var = mean.reshape(c), var.reshape(c)
        else:
            mean, var = moving_mean, moving_var
        invstd = 1.0 / xp.sqrt(var + eps)
        g = xp.ones_like(gamma) if fix_gamma else gamma
        scale = (g * invstd).reshape(bshape)
        out = (data - mean.reshape(bshape)) * scale + beta.reshape(bshape)
    if batch:
        moving_mean *= momentum
        moving_mean += ((1 - momentum) * mean).astype(moving_mean.dtype)
        moving_var *= momentum
        moving_var += ((1 - momentum) * var).astype(moving_var.dtype)
    return out.astype(dt, copy=False), mean.astype(dt, copy=True), invstd.astype(dt, copy=False)


def _bn_composite(x, g, gamma, gmean, ginvstd, a, batch, moving=None):
    """The BatchNorm gradient in mixnet ops (differentiable again): (dx, dgamma, dbeta)."""
    ax = _bn_axis(x, a["axis"])
    ch = x.shape[ax]
    bshape = _reduce_shape(x.shape, (ax,))
    gam = None if a["fix_gamma"] else _as_b(gamma, bshape)
    dxhat = g if gam is None else g * gam
    dbeta = call("Reshape", call("_sum_to", g, shape=bshape), shape=(ch,))
    if batch:
        dx, xhat = _norm_backward(x, dxhat, bshape, a["eps"], gmean=_as_b(gmean, bshape),
                                  ginvstd=_as_b(ginvstd, bshape))
    else:
        invstd = _as_b((moving[1] + a["eps"]) ** -0.5, bshape)
        dx = dxhat * invstd
        xhat = (x - _as_b(moving[0], bshape)) * invstd
    if a["fix_gamma"]:
        dgamma = gamma * 0
    else:
        dgamma = call("Reshape", call("_sum_to", g * xhat, shape=bshape), shape=(ch,))
    return dx, dgamma, dbeta


def _g_batchnorm(c, g, gmean, ginvstd):
    x, gamma = c.inputs[:2]
    a = c.attrs
    # The gradient of the function the forward computed: batch statistics if the forward trained, else the
    # moving ones. (MXNet decides by the backward call's train_mode flag instead, so a predict-mode forward
    # followed by a default backward mixes the two; see docs/compatibility.md.)
    batch = c.is_train and not a["use_global_stats"]
    if _final_gradient():
        fused = dict(eps=a["eps"], fix_gamma=a["fix_gamma"], axis=a["axis"])
        if batch:
            grads = call("_batchnorm_bwd", x, g, gamma, gmean, ginvstd, **fused)
        else:
            grads = call("_batchnorm_global_bwd", x, g, gamma, c.inputs[3], c.inputs[4], **fused)
    else:
        grads = _bn_composite(x, g, gamma, gmean, ginvstd, a, batch, moving=c.inputs[3:5])
    return tuple(grads) + (None, None)


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


_BN_PARAMS = (("gamma", 1), ("beta", 2), ("moving_mean", 3), ("moving_var", 4))

def channel_params(n_inputs, axis=None):
    """A norm's parameter rule: inputs 1 .. n_inputs-1 (gamma, beta, running statistics) are (C,), C the data's
    size along `axis` (None: the op's axis attribute, default 1)."""
    def rule(a, s):
        if s[0] is None:
            return {}
        c = s[0][(a.get("axis", 1) if axis is None else axis) % len(s[0])]
        return {i: (c,) for i in range(1, n_inputs)}
    return ParamShapes(rule, partial=True)


register(OpDef(
    name="BatchNorm", fast="_numba_kernels.batchnorm_sums / channel_affine",
    kernel=_k_batchnorm, inputs=("data", "gamma", "beta", "moving_mean", "moving_var"),
    param_shapes=channel_params(5), input_init={"moving_mean": '["zero", {}]', "moving_var": '["one", {}]'},
    attrs={"eps": Attr(parse_float, 1e-3), "momentum": Attr(parse_float, 0.9), "fix_gamma": Attr(parse_bool, True),
           "use_global_stats": Attr(parse_bool, False), "output_mean_var": Attr(parse_bool, False),
           "axis": Attr(parse_int, 1), "cudnn_off": Attr(parse_bool, False),
           "min_calib_range": Attr(optional(parse_float), None),
           "max_calib_range": Attr(optional(parse_float), None)},
    grad=_g_batchnorm, num_outputs=3, num_visible=lambda a: 3 if a["output_mean_var"] else 1,
    infer=_infer_params(_BN_PARAMS, lambda shape, ax: [(shape[ax],), (shape[ax],)]),
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


# the fused BatchNorm backward ---------------------------------------------------------------------------
def _bn_bwd_coefficients(m, invstd, sg, sgx, gam, s1, s2, batch):
    """BatchNorm's backward in closed form, per channel: dx = (x - mean) * coef + g * big + const, from the channel
    sums sg = sum(g) and sgx = sum(g * xhat) over its m elements. Returns (coef, big, const); coef and const are
    None without batch statistics (dx = g * gamma * invstd: x plays no part). Both paths of _k_bn_bwd evaluate
    it: the Numba one on (C,) float64 vectors, the array one on the dtype's broadcast shapes."""
    big = gam * invstd
    if not batch:
        return None, big, None
    # d/dx of (xhat * gam + beta) through the batch mean and variance, plus the gradients s1 (at the mean output)
    # and s2 (at the inverse-std output): dx = big * (g - sg/m - xhat * sgx/m) + s1/m - s2 * xhat * invstd^2/m
    coef = -(big * sgx + s2 * invstd * invstd) / m * invstd
    const = s1 / m - big * sg / m
    return coef, big, const


def _k_bn_bwd(xp, data, grad, gamma, s1, s2, *, eps, fix_gamma, axis, batch, out=None):
    """dx, dgamma, dbeta of BatchNorm. batch: (s1, s2) = the gradients arriving at the mean and inverse-std
    outputs, statistics from data; else (s1, s2) = (moving_mean, moving_var)."""
    ax = _bn_axis(data, axis)
    _check_params(data, axis, ax, gamma=gamma, **({"gmean": s1, "ginvstd": s2} if batch else
                                                    {"moving_mean": s1, "moving_var": s2}))
    if tuple(grad.shape) != tuple(data.shape):
        raise ValueError(f"gradient shape {tuple(grad.shape)} does not match the data shape {tuple(data.shape)}")
    dt = data.dtype
    c = data.shape[ax]
    nk = _fastpath.numba_kernels(xp, data, grad, gamma) if data.size else None
    if nk is not None:
        x3 = _acb(np.ascontiguousarray(data), ax)
        g3 = _acb(np.ascontiguousarray(grad), ax)
        gam = np.ones(c) if fix_gamma else gamma.astype(np.float64)
        if batch:
            mean, var, sums = _bn_batch_stats_g(nk, x3, g3)
            invstd = 1.0 / np.sqrt(var + eps)
            sg = sums[2]
            sgx = invstd * (sums[3] - (mean - x3[0, :, 0]) * sg)    # sum(g * xhat)
        else:
            mean, invstd = s1.astype(np.float64), 1.0 / np.sqrt(s2.astype(np.float64) + eps)
            sums = np.empty((4, c))
            nk.batchnorm_sums(x3, g3, mean, sums)
            sg, sgx = sums[2], invstd * sums[3]
        coef, big, const = _bn_bwd_coefficients(x3.shape[0] * x3.shape[2], invstd, sg, sgx, gam, s1, s2, batch)
        dx = _direct(out[0] if out is not None else None, x3.shape, dt)
        target = np.empty(x3.shape, dt) if dx is None else dx
        if batch:
            nk.channel_affine(x3, g3, mean, coef, big, const, target)
        else:
            zero = np.zeros(c)
            nk.channel_affine(g3, _NO_GRAD.astype(dt), zero, big, big, zero, target)
        results = ((out[0] if dx is not None else target.reshape(data.shape)),
                   gamma * 0 if fix_gamma else sgx.astype(dt), sg.astype(dt))
        return _deliver(xp, out, results)
    bshape = _reduce_shape(data.shape, (ax,))
    axes = tuple(i for i in range(data.ndim) if i != ax)
    wide = np.float64 if dt == np.float16 else dt
    x = data.astype(wide, copy=False)
    g = grad.astype(wide, copy=False)
    if batch:
        mean, var = _np_stats(xp, x, axes, eps)
    else:
        mean, var = s1.astype(wide).reshape(bshape), s2.astype(wide).reshape(bshape)
    invstd = 1.0 / xp.sqrt(var + eps)
    gam = 1.0 if fix_gamma else gamma.astype(wide).reshape(bshape)
    sg = g.sum(axis=axes, keepdims=True)
    sgx = (g * (x - mean)).sum(axis=axes, keepdims=True) * invstd
    coef, big, const = _bn_bwd_coefficients(data.size // c, invstd, sg, sgx, gam, s1.astype(wide).reshape(bshape),
                                            s2.astype(wide).reshape(bshape), batch)
    dx = g * big if coef is None else (x - mean) * coef + g * big + const
    results = (dx.astype(dt, copy=False), gamma * 0 if fix_gamma else sgx.reshape(c).astype(dt),
               sg.reshape(c).astype(dt))
    return _deliver(xp, out, results)


def _bn_batch_stats_g(nk, x3, g3):
    """Batch mean and variance (float64) and the four channel sums of batchnorm_sums, in one pass over x and g."""
    shift = x3[0, :, 0].astype(np.float64)
    sums = np.empty((4, x3.shape[1]))
    nk.batchnorm_sums(x3, g3, shift, sums)
    n = x3.shape[0] * x3.shape[2]
    d = sums[0] / n
    return shift + d, np.maximum(sums[1] / n - d * d, 0.0), sums


def _ref_bn_bwd(batch):
    def ref(x, g, gamma, s1, s2, eps=1e-3, fix_gamma=True, axis=1):
        """Textbook BatchNorm backward (Ioffe & Szegedy, eq. after Alg. 1) on channels-last float64 rows, plus the
        terms from gradients arriving at the mean / inverse-std outputs (batch) or moving statistics (global)."""
        axis %= x.ndim
        xt = np.moveaxis(x.astype(np.float64), axis, -1).reshape(-1, x.shape[axis])
        gt = np.moveaxis(g.astype(np.float64), axis, -1).reshape(-1, x.shape[axis])
        m = xt.shape[0]
        gam = np.ones_like(gamma) if fix_gamma else gamma
        if batch:
            mu = xt.mean(0)
            var = ((xt - mu) ** 2).mean(0)
        else:
            mu, var = s1, s2
        xmu = xt - mu
        inv = 1 / np.sqrt(var + eps)
        dxhat = gt * gam
        if batch:
            dvar = (dxhat * xmu).sum(0) * -0.5 * inv ** 3
            dmu = -(dxhat * inv).sum(0) + dvar * -2 * xmu.mean(0)
            dx = dxhat * inv + dvar * 2 * xmu / m + dmu / m
            dx += s1 / m - s2 * inv ** 3 * xmu / m            # d mean / dx = 1/m; d invstd / dx = -inv^3 xmu / m
        else:
            dx = dxhat * inv
        dgamma = np.zeros_like(gamma) if fix_gamma else (gt * xmu * inv).sum(0)
        shape = np.moveaxis(x, axis, -1).shape
        return np.moveaxis(dx.reshape(shape), -1, axis), dgamma, gt.sum(0)
    return ref


def _bn_bwd_composite(batch):
    def composite(a, x, g, gamma, s1, s2):
        if batch:
            return _bn_composite(x, g, gamma, s1, s2, a, True)
        return _bn_composite(x, g, gamma, None, None, a, False, moving=(s1, s2))
    return composite


_BN_BWD_ATTRS = {"eps": Attr(parse_float, 1e-3), "fix_gamma": Attr(parse_bool, True), "axis": Attr(parse_int, 1)}
_BN_BWD_CASES = (
    (((2, 3, 2, 2), (2, 3, 2, 2), (3,), (3,), (3,)), {}),
    (((2, 3, 5), (2, 3, 5), (3,), (3,), (3,)), {"fix_gamma": False, "eps": 1e-5}),
    (((4, 3), (4, 3), (3,), (3,), (3,)), {"fix_gamma": False, "axis": -1}),
    (((3, 2, 3), (3, 2, 3), (3,), (3,), (3,)), {"fix_gamma": False, "axis": 2}),
)
for _name, _batch, _last in (("_batchnorm_bwd", True, ("gmean", "ginvstd")),
                             ("_batchnorm_global_bwd", False, ("moving_mean", "moving_var"))):
    register(OpDef(
        name=_name, fast="_numba_kernels.batchnorm_sums / channel_affine",
        kernel=(lambda b: lambda xp, *arrays, out=None, **attrs: _k_bn_bwd(
            xp, *arrays, batch=b, out=out, **attrs))(_batch),
        inputs=("data", "grad", "gamma") + _last, attrs=_BN_BWD_ATTRS, grad=_replayed(_bn_bwd_composite(_batch)),
        infer=_infer_params((("gamma", 2), (_last[0], 3), (_last[1], 4)),
                            lambda shape, ax: [(shape[ax],), (shape[ax],)]),
        num_outputs=3, nondiff_inputs=() if _batch else (3, 4), hidden=True, writes_out=True,
        test=OpTest(ref=_ref_bn_bwd(_batch), domain=(0.5, 2.0), cases=_BN_BWD_CASES, grad2=False),
        doc="BatchNorm's fused backward (dx, dgamma, dbeta) given the head gradient `grad`, "
            + ("statistics of the batch and the gradients at the mean / inverse-std outputs."
               if _batch else "the moving statistics (inference or use_global_stats).")))


# ---------------------------------------------------------------------------------------------------------
# LayerNorm, InstanceNorm, GroupNorm
def _k_layernorm(xp, data, gamma, beta, *, axis, eps, output_mean_var, out=None):
    ax = _bn_axis(data, axis)
    _check_params(data, axis, ax, gamma=gamma, beta=beta)
    dt = data.dtype
    bshape = _reduce_shape(data.shape, tuple(i for i in range(data.ndim) if i != ax))
    nk = _fastpath.numba_kernels(xp, data, gamma, beta) if data.size else None
    if nk is not None:
        rows = rows_last(data, ax)
        a_ = rows.shape[0]
        last = ax == data.ndim - 1
        y = _direct(out[0], rows.shape, dt) if out is not None and last else None
        mean = _direct(out[1], (a_,), dt) if out is not None else None
        std = _direct(out[2], (a_,), dt) if out is not None else None
        ys = np.empty(rows.shape, dt) if y is None else y
        ms = np.empty(a_, dt) if mean is None else mean
        ss = np.empty(a_, dt) if std is None else std
        nk.layernorm_forward(rows, np.ascontiguousarray(gamma), np.ascontiguousarray(beta), eps, ys, ms, ss)
        results = (out[0] if y is not None else rows_back(ys, data.shape, ax),
                   out[1] if mean is not None else ms.reshape(bshape),
                   out[2] if std is not None else ss.reshape(bshape))
        return _deliver(xp, out, results)
    mean, var = _np_stats(xp, data, (ax,), eps)
    std = xp.sqrt(var + eps)
    pshape = tuple(data.shape[ax] if i == ax else 1 for i in range(data.ndim))
    y = (data - mean) / std * gamma.reshape(pshape) + beta.reshape(pshape)
    return _deliver(xp, out, (y.astype(dt, copy=False), mean.astype(dt), std.astype(dt)))


def _ln_composite(a, x, g, gamma, gmean, gstd):
    """The LayerNorm gradient in mixnet ops (differentiable again): (dx, dgamma, dbeta)."""
    ax = _bn_axis(x, a["axis"])
    d = x.shape[ax]
    bshape = _reduce_shape(x.shape, tuple(i for i in range(x.ndim) if i != ax))   # stats shape (axis -> 1)
    pshape = tuple(d if i == ax else 1 for i in range(x.ndim))
    dxhat = g * call("Reshape", gamma, shape=pshape)
    dx, xhat = _norm_backward(x, dxhat, bshape, a["eps"], gmean=gmean, gstd=gstd)
    dgamma = call("Reshape", call("_sum_to", g * xhat, shape=pshape), shape=(d,))
    dbeta = call("Reshape", call("_sum_to", g, shape=pshape), shape=(d,))
    return dx, dgamma, dbeta


def _g_layernorm(c, g, gmean, gstd):
    x, gamma, _ = c.inputs
    a = c.attrs
    if _final_gradient():
        return tuple(call("_layernorm_bwd", x, g, gamma, gmean, gstd, axis=a["axis"], eps=a["eps"]))
    return _ln_composite(a, x, g, gamma, gmean, gstd)


def _ref_layernorm(x, gamma, beta, axis=-1, eps=1e-5, output_mean_var=False):
    x = x.astype(np.float64)
    mean = x.mean(axis, keepdims=True)
    std = np.sqrt(((x - mean) ** 2).mean(axis, keepdims=True) + eps)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    y = (x - mean) / std * gamma.reshape(shape) + beta.reshape(shape)
    return (y, mean, std) if output_mean_var else y


def _ln_stats_shapes(shape, ax):
    stats = tuple(1 if i == ax else d for i, d in enumerate(shape))
    return [stats, stats]


register(OpDef(
    name="LayerNorm", fast="_numba_kernels.layernorm_forward",
    kernel=_k_layernorm, inputs=("data", "gamma", "beta"), grad=_g_layernorm,
    param_shapes=channel_params(3),
    attrs={"axis": Attr(parse_int, -1), "eps": Attr(parse_float, 1e-5), "output_mean_var": Attr(parse_bool, False)},
    num_outputs=3, num_visible=lambda a: 3 if a["output_mean_var"] else 1, writes_out=True,
    infer=_infer_params((("gamma", 1), ("beta", 2)), _ln_stats_shapes),
    test=OpTest(ref=_ref_layernorm, cases=(
        (((3, 4), (4,), (4,)), {}),
        (((2, 3, 4), (3,), (3,)), {"axis": 1, "eps": 1e-3}),
        (((2, 3, 4), (4,), (4,)), {"output_mean_var": True}),
    )),
    doc="Layer normalization over one axis; outputs (out, mean, std) with std = sqrt(var + eps), keepdims."))


# the fused LayerNorm backward ---------------------------------------------------------------------------
def _k_ln_bwd(xp, data, grad, gamma, gmean, gstd, *, axis, eps, out=None):
    ax = _bn_axis(data, axis)
    _check_params(data, axis, ax, gamma=gamma)
    stats = _reduce_shape(data.shape, tuple(i for i in range(data.ndim) if i != ax))
    for name, arr, want in (("grad", grad, data.shape), ("gmean", gmean, stats), ("gstd", gstd, stats)):
        if tuple(arr.shape) != tuple(want):
            raise ValueError(f"{name} shape {tuple(arr.shape)} does not match {tuple(want)}")
    dt = data.dtype
    d = data.shape[ax]
    nk = _fastpath.numba_kernels(xp, data, grad, gamma, gmean, gstd) if data.size else None
    if nk is not None:
        rows, grows = rows_last(data, ax), rows_last(grad, ax)
        last = ax == data.ndim - 1
        dx = _direct(out[0], rows.shape, dt) if out is not None and last else None
        target = np.empty(rows.shape, dt) if dx is None else dx
        dgamma, dbeta = np.empty(d, dt), np.empty(d, dt)
        nk.layernorm_backward(rows, grows, np.ascontiguousarray(gamma), np.ascontiguousarray(gmean).reshape(-1),
                              np.ascontiguousarray(gstd).reshape(-1), eps, target, dgamma, dbeta)
        first = out[0] if dx is not None else rows_back(target, data.shape, ax)
        return _deliver(xp, out, (first, dgamma, dbeta))
    wide = np.float64 if dt == np.float16 else dt
    x, g = data.astype(wide, copy=False), grad.astype(wide, copy=False)
    mean, var = _np_stats(xp, x, (ax,), eps)
    r = 1.0 / xp.sqrt(var + eps)
    xhat = (x - mean) * r
    pshape = tuple(d if i == ax else 1 for i in range(data.ndim))
    dxhat = g * gamma.astype(wide).reshape(pshape)
    dx = (dxhat - dxhat.mean(axis=ax, keepdims=True) - xhat * (dxhat * xhat).mean(axis=ax, keepdims=True)) * r \
        + gmean.astype(wide) / d + gstd.astype(wide) * xhat / d
    axes = tuple(i for i in range(data.ndim) if i != ax)
    return _deliver(xp, out, (dx.astype(dt, copy=False), (g * xhat).sum(axis=axes).astype(dt),
                              g.sum(axis=axes).astype(dt)))


def _ref_ln_bwd(x, g, gamma, gmean, gstd, axis=-1, eps=1e-5):
    """LayerNorm's backward per row, as the Jacobian-vector product of the textbook formula on channels-last
    float64 rows (the axis moved last): dx_i = sum_j g_j gamma_j d xhat_j / d x_i + the mean / std terms."""
    axis %= x.ndim
    xt = np.moveaxis(x.astype(np.float64), axis, -1)
    gt = np.moveaxis(g.astype(np.float64), axis, -1)
    shape = xt.shape
    xr, gr = xt.reshape(-1, shape[-1]), gt.reshape(-1, shape[-1])
    gm, gs = np.moveaxis(gmean, axis, -1).reshape(-1), np.moveaxis(gstd, axis, -1).reshape(-1)
    d = shape[-1]
    dx = np.empty_like(xr)
    for k in range(xr.shape[0]):
        mu = xr[k].mean()
        sd = np.sqrt(((xr[k] - mu) ** 2).mean() + eps)
        xh = (xr[k] - mu) / sd
        jac = (np.eye(d) - 1.0 / d - np.outer(xh, xh) / d) / sd       # d xhat_j / d x_i (symmetric)
        dx[k] = jac @ (gr[k] * gamma) + gm[k] / d + gs[k] * xh / d
    xh = (xr - xr.mean(1, keepdims=True)) / np.sqrt(xr.var(1, keepdims=True) + eps)
    return np.moveaxis(dx.reshape(shape), -1, axis), (gr * xh).sum(0), gr.sum(0)


register(OpDef(
    name="_layernorm_bwd", fast="_numba_kernels.layernorm_backward",
    kernel=_k_ln_bwd, inputs=("data", "grad", "gamma", "gmean", "gstd"),
    attrs={"axis": Attr(parse_int, -1), "eps": Attr(parse_float, 1e-5)}, num_outputs=3, hidden=True,
    writes_out=True, grad=_replayed(_ln_composite),
    infer=_infer_params((("gamma", 2),), lambda shape, ax: [(shape[ax],), (shape[ax],)]),
    test=OpTest(ref=_ref_ln_bwd, grad2=False, cases=(
        (((3, 4), (3, 4), (4,), (3, 1), (3, 1)), {}),
        (((2, 3, 4), (2, 3, 4), (3,), (2, 1, 4), (2, 1, 4)), {"axis": 1, "eps": 1e-3}),
        (((2, 5), (2, 5), (2,), (1, 5), (1, 5)), {"axis": 0}),
    )),
    doc="LayerNorm's fused backward (dx, dgamma, dbeta) given the head gradient `grad` and the gradients at the "
        "mean / std outputs; statistics recomputed from data."))


def _instancenorm_check(shapes):
    data = tuple(shapes[0])
    if len(data) < 3:
        raise ValueError(f"data must be at least 3-D (batch, channel, spatial...), got shape {data}")
    for name, shape in zip(("gamma", "beta"), shapes[1:]):
        if tuple(shape) != (data[1],):
            raise ValueError(f"{name} shape {tuple(shape)} does not match ({data[1]},) (channels)")
    return data


def _k_instancenorm(xp, data, gamma, beta, *, eps):
    _instancenorm_check([data.shape, gamma.shape, beta.shape])
    c = data.shape[1]
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
    param_shapes=channel_params(3, axis=1),
    infer=lambda shapes, dtypes, eps: ([_instancenorm_check(shapes)], [dtypes[0]]),
    attrs={"eps": Attr(parse_float, 1e-3)},
    test=OpTest(ref=_ref_instancenorm, cases=(
        (((2, 3, 4), (3,), (3,)), {}), (((1, 2, 3, 3), (2,), (2,)), {"eps": 1e-5})))))


def _groupnorm_shapes(shapes, num_groups):
    """The outputs' shapes: data's, then (N, num_groups) for the mean and the std."""
    data = tuple(shapes[0])
    if len(data) < 2:
        raise ValueError(f"data must be at least 2-D (batch, channel, ...), got shape {data}")
    if num_groups < 1 or data[1] % num_groups:
        raise ValueError(f"channels ({data[1]}) must be divisible by num_groups ({num_groups})")
    for name, shape in zip(("gamma", "beta"), shapes[1:]):
        if tuple(shape) != (num_groups,):
            raise ValueError(f"{name} shape {tuple(shape)} does not match ({num_groups},) (num_groups; MXNet 1.9 "
                             "scales per group, not per channel)")
    return [data, (data[0], num_groups), (data[0], num_groups)]


def _k_groupnorm(xp, data, gamma, beta, *, num_groups, eps, output_mean_var):
    _groupnorm_shapes([data.shape, gamma.shape, beta.shape], num_groups)
    n = data.shape[0]
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
    infer=lambda shapes, dtypes, num_groups, eps, output_mean_var: (_groupnorm_shapes(shapes, num_groups),
                                                                    [dtypes[0]] * 3),
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


def _l2norm_check(shape, mode):
    if mode in ("channel", "spatial") and len(shape) < 3:
        raise ValueError(f"at least 3 dimensions are required in {mode} mode, got shape {tuple(shape)}")
    if not shape:
        raise ValueError("L2Normalization needs at least 1 dimension (the batch)")
    return tuple(shape)


def _k_l2norm(xp, data, *, eps, mode):
    _l2norm_check(data.shape, mode)
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
    infer=lambda shapes, dtypes, eps, mode: ([_l2norm_check(shapes[0], mode)], [dtypes[0]]),
    attrs={"eps": Attr(parse_float, 1e-10), "mode": Attr(choice("channel", "instance", "spatial"), "instance")},
    test=OpTest(ref=_ref_l2norm, domain=(0.3, 2.0), cases=(
        (((2, 3, 2),), {}), (((2, 3, 2),), {"mode": "channel"}), (((2, 3, 2, 2),), {"mode": "spatial"}),
        (((3, 4),), {"eps": 1e-3})))))


def _lrn_check(shape):
    if len(shape) != 4:
        raise ValueError(f"LRN needs 4-D (N, C, H, W) data, got shape {tuple(shape)}")
    return tuple(shape)


def _k_lrn(xp, data, *, alpha, beta, knorm, nsize):
    _lrn_check(data.shape)
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
    infer=lambda shapes, dtypes, alpha, beta, knorm, nsize: ([_lrn_check(shapes[0])], [dtypes[0]]),
    attrs={"alpha": Attr(parse_float, 1e-4), "beta": Attr(parse_float, 0.75), "knorm": Attr(parse_float, 2.0),
           "nsize": Attr(parse_int, REQUIRED)},
    test=OpTest(ref=_ref_lrn, cases=(
        (((2, 5, 2, 2),), {"nsize": 3}), (((1, 4, 2, 3),), {"nsize": 5, "alpha": 0.5, "beta": 0.5, "knorm": 1.0})))))
