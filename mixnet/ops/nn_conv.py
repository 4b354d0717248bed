"""FullyConnected, Convolution, Deconvolution, Pooling, UpSampling.

Every linear op here is one of a closed family of bilinear primitives, so gradients of any order exist:
  conv(x, w) = y,   _conv_data_grad(g, w) = dx (the transposed convolution),   _conv_weight_grad(x, g) = dw.
Each is the derivative of the others (T(x, w, g) = <g, conv(x, w)> is a trilinear form), which is what lets
mixnet differentiate a convolution twice (WGAN-GP); MXNet cannot. FullyConnected uses the same trick with
_fc_data_grad / _fc_weight_grad. Pooling's backward passes are hidden primitives with their own gradients.
Layouts: channel-first only (NCW / NCHW / NCDHW), as MXNet's CPU kernels.
"""
import itertools
import math
import types

import numpy as np

from ..base import MXNetError
from . import _fastpath
from ._conv_fast import conv_data_grad_fast, conv_forward_fast, conv_weight_grad_fast, max_pool_backward_fast
from .attrs import Attr, REQUIRED, choice, optional, parse_bool, parse_int, parse_shape
from .common import call, check_shape, conv_out_size, into, pool_out_size, result_dtype
from . import registry
from .registry import OpDef, OpTest, ParamShapes, register


def _as_strided(xp, x, shape, strides):
    if xp is np:
        return np.lib.stride_tricks.as_strided(x, shape=shape, strides=strides, writeable=False)
    return xp.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)


def _tup(v, n, fill):
    v = tuple(v) if v else ()
    if not v:
        return (fill,) * n
    if len(v) != n:
        raise ValueError(f"expected {n} values, got {v}")
    return v


# ---------------------------------------------------------------------------------------------------------
# convolution geometry and the three bilinear kernels
def _geometry(kernel, stride, dilate, pad):
    nd = len(kernel)
    if nd not in (1, 2, 3):
        raise ValueError(f"kernel must have 1 to 3 dimensions, got {kernel}")
    return tuple(kernel), _tup(stride, nd, 1), _tup(dilate, nd, 1), _tup(pad, nd, 0)


def _windows(xp, x, out, kernel, stride, dilate, pad, value=0.0):
    """A strided view (N, C, *out, *kernel) of x padded by `pad` in front and as needed at the end."""
    nd = len(kernel)
    spatial = x.shape[2:]
    widths = [(0, 0), (0, 0)]
    for L, o, k, s, d, p in zip(spatial, out, kernel, stride, dilate, pad):
        need = (o - 1) * s + d * (k - 1) + 1
        widths.append((p, max(need - L - p, 0)))
    if any(w != (0, 0) for w in widths):
        x = xp.pad(x, widths, mode="constant", constant_values=value)
    st = x.strides
    shape = x.shape[:2] + tuple(out) + tuple(kernel)
    strides = st[:2] + tuple(st[2 + i] * stride[i] for i in range(nd)) + tuple(st[2 + i] * dilate[i]
                                                                            for i in range(nd))
    return _as_strided(xp, x, shape, strides)


def _im2col(xp, x, out, kernel, stride, dilate, pad, group):
    """(group, C/group * prod(kernel), N * prod(out)) copy of the patches.

    Rows are (channel, *kernel), columns (batch, *out): the copy then runs along the contiguous output width,
    which is several times faster than the (N*P, C*K) layout whose innermost run is one kernel row.
    """
    n, c = x.shape[:2]
    nd = len(kernel)
    win = _windows(xp, x, out, kernel, stride, dilate, pad)            # N, C, *O, *K
    perm = (1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd))
    cols = xp.ascontiguousarray(win.transpose(perm))                   # C, *K, N, *O
    return cols.reshape(group, (c // group) * int(np.prod(kernel)), n * int(np.prod(out)))


def _grad_cols(xp, g, group):
    """(group, F/group, N * prod(out)) copy of the output gradient (N, F, *out)."""
    n, f = g.shape[:2]
    p = int(np.prod(g.shape[2:]))                                       # explicit: n may be 0
    return xp.ascontiguousarray(g.reshape(n, f, p).transpose(1, 0, 2)).reshape(group, f // group, n * p)


def _gemm(xp, a, b, out=None):
    """Grouped a @ b for (group, m, k) @ (group, k, n), written into out (group, m, n) when given: one 2-D GEMM per
    group. numpy's batched matmul does not hand transposed operands to BLAS (it was 10x slower here), 2-D matmul
    does."""
    if out is None:
        out = xp.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=np.result_type(a.dtype, b.dtype))
    for i in range(a.shape[0]):
        xp.matmul(a[i], b[i], out=out[i])
    return out


def _writable(xp, buf, shape, dtype, *inputs):
    """buf when a kernel can write its result straight into it: an out= buffer (writes_out) that is C-contiguous
    (the kernels write through reshaped views of it), of the result's shape and dtype, and apart from the inputs
    (they are read while it is written); else None, and the kernel's fresh result is copied into buf (`into`)."""
    if (buf is None or tuple(buf.shape) != tuple(shape) or buf.dtype != dtype or not buf.flags.c_contiguous
            or any(a is not None and xp.may_share_memory(buf, a) for a in inputs)):
        return None
    return buf


def _scatter_slices(kidx, dilate, out, stride, pad, shape):
    """(source, target) slices for adding the values of kernel offset kidx at the output positions (*out) back
    into an input of spatial `shape`: only the positions t with 0 <= t*s - p + k*d < L, so no padded buffer is
    needed; None when no position of that offset lands inside the input."""
    src, dst = [], []
    for k, d, o, s, p, L in zip(kidx, dilate, out, stride, pad, shape):
        a = k * d - p
        lo = -(a // s) if a < 0 else 0                  # the first t with a + t*s >= 0
        hi = min(o, (L - 1 - a) // s + 1) if a <= L - 1 else 0
        if hi <= lo:
            return None
        src.append(slice(lo, hi))
        dst.append(slice(a + lo * s, a + (hi - 1) * s + 1, s))
    return tuple(src), tuple(dst)


_GEMM_COLUMNS = 4096        # output positions per forward GEMM of the generic path (as _conv_fast's blocks)


def _check_group(c, f, group, what):
    if group < 1 or c % group or f % group:
        raise ValueError(f"{what}: channels ({c}) and num_filter ({f}) must be divisible by num_group ({group})")


def conv_shape(x_shape, w_shape, kernel, stride, dilate, pad, group, out=None):
    """The output shape (N, F, *out) of convolving data of x_shape with a weight of w_shape, after checking that
    they fit; out is the output's spatial size (computed when empty)."""
    kernel, stride, dilate, pad = _geometry(kernel, stride, dilate, pad)
    nd = len(kernel)
    x_shape, w_shape = tuple(x_shape), tuple(w_shape)
    if len(x_shape) != nd + 2:
        raise ValueError(f"data must be {nd + 2}-D (batch, channel, {nd} spatial) for a {nd}-D kernel, "
                         f"got shape {x_shape}")
    if not w_shape:
        raise ValueError("the weight must have at least one dimension")
    n, c = x_shape[:2]
    f = w_shape[0]
    _check_group(c, f, group, "Convolution")
    if w_shape != (f, c // group) + kernel:
        raise ValueError(f"weight shape {w_shape} does not match {(f, c // group) + kernel} "
                         "(num_filter, channels / num_group, *kernel)")
    if out is None or not out:
        out = tuple(conv_out_size(L, k, s, d, p) for L, k, s, d, p in zip(x_shape[2:], kernel, stride, dilate, pad))
    if any(o <= 0 for o in out):
        raise ValueError(f"kernel {kernel} (dilate {dilate}) is larger than the padded input {x_shape[2:]} "
                         f"with pad {pad}")
    return check_shape((n, f) + tuple(out))


def conv_forward(xp, x, w, kernel, stride, dilate, pad, group, out=None, bias=None, dest=None):
    """Convolution of x (N, C, *spatial) with w (F, C/group, *kernel), plus bias (F,) when given; out is the
    output's spatial size (computed when empty). The result is written into dest when it can take it
    (`_writable`), else into a fresh array."""
    n, f, *out = conv_shape(x.shape, w.shape, kernel, stride, dilate, pad, group, out)
    kernel, stride, dilate, pad = _geometry(kernel, stride, dilate, pad)
    nd = len(kernel)
    if bias is not None:
        _check_bias(bias, f)
    out = tuple(out)
    dtype = np.result_type(x.dtype, w.dtype)
    dest = _writable(xp, dest, (n, f) + out, dtype, x, w, bias) if dtype == x.dtype else None
    nk = _fastpath.numba_kernels(xp, x, w) if nd < 3 else None
    if nk is not None:
        return conv_forward_fast(nk, x, w, bias, out, kernel, stride, dilate, pad, group, dest)
    cols = _im2col(xp, x, out, kernel, stride, dilate, pad, group)      # g, Cg*K, N*P
    fg, npos = f // group, int(np.prod(out))
    wm = w.reshape(group, fg, -1)                                        # g, Fg, Cg*K
    y = xp.empty((n, f) + out, dtype=dtype) if dest is None else dest
    y4 = y.reshape(n, group, fg, npos)
    b = None if bias is None else bias.astype(dtype, copy=False).reshape(group, fg, 1)
    # The GEMM's (g, Fg, M*P) is not the NCHW layout: it runs on chunks of M samples into one chunk-sized
    # temporary, each chunk transposed into the result (+ bias) while in cache. A GEMM per sample, straight into
    # the result, measured up to 2x slower on LeNet's conv2 (Fg x Cg*K x P = 50 x 500 x 64).
    step = max(1, min(n, -(-_GEMM_COLUMNS // max(npos, 1))))
    tmp = xp.empty(group * fg * step * npos, dtype=dtype)
    for n0 in range(0, n, step):
        m = min(n, n0 + step) - n0
        part = tmp[:group * fg * m * npos].reshape(group, fg, m * npos)     # contiguous, for BLAS
        _gemm(xp, wm, cols[:, :, n0 * npos:(n0 + m) * npos], part)
        part4 = part.reshape(group, fg, m, npos).transpose(2, 0, 1, 3)    # M, g, Fg, P view
        if b is None:
            xp.copyto(y4[n0:n0 + m], part4)
        else:
            xp.add(part4, b, out=y4[n0:n0 + m])
    return y.astype(x.dtype, copy=False)


def conv_data_grad_shape(g_shape, w_shape, shape, kernel, stride, dilate, pad, group):
    """The shape (N, C, *shape) of the transposed convolution of g with w, after checking that they fit."""
    kernel, stride, dilate, pad = _geometry(kernel, stride, dilate, pad)
    nd = len(kernel)
    g_shape, w_shape = tuple(g_shape), tuple(w_shape)
    if len(g_shape) != nd + 2:
        raise ValueError(f"data must be {nd + 2}-D for a {nd}-D kernel, got shape {g_shape}")
    n, f = g_shape[:2]
    if len(w_shape) != nd + 2 or w_shape[0] != f or w_shape[2:] != kernel:
        raise ValueError(f"weight shape {w_shape} does not match ({f}, num_filter / num_group, *{kernel})")
    if group < 1 or f % group:
        raise ValueError(f"input channels ({f}) must be divisible by num_group ({group})")
    if len(shape) != nd:
        raise ValueError(f"the output's spatial shape {tuple(shape)} must have {nd} dimensions")
    return check_shape((n, w_shape[1] * group) + tuple(shape))


def conv_data_grad(xp, g, w, shape, kernel, stride, dilate, pad, group, dest=None):
    """Transposed convolution: the gradient of conv w.r.t. data of spatial size `shape`, written into dest when
    it can take it (`_writable`)."""
    n, c, *shape = conv_data_grad_shape(g.shape, w.shape, shape, kernel, stride, dilate, pad, group)
    kernel, stride, dilate, pad = _geometry(kernel, stride, dilate, pad)
    nd = len(kernel)
    f = g.shape[1]
    out = g.shape[2:]
    shape = tuple(shape)
    cg = w.shape[1]
    dtype = np.result_type(g.dtype, w.dtype)
    dest = _writable(xp, dest, (n, c) + shape, dtype, g, w) if dtype == g.dtype else None
    nk = _fastpath.numba_kernels(xp, g, w) if nd < 3 else None
    if nk is not None:
        return conv_data_grad_fast(nk, g, w, shape, kernel, stride, dilate, pad, group, dest)
    gm = _grad_cols(xp, g, group)                                        # g, Fg, N*P
    wm = w.reshape(group, f // group, cg * int(np.prod(kernel)))
    cols = _gemm(xp, wm.transpose(0, 2, 1), gm)                          # g, Cg*K, N*P
    cols = cols.reshape((c,) + kernel + (n,) + tuple(out))               # C, *K, N, *O
    res = xp.zeros((n, c) + shape, dtype=dtype) if dest is None else dest
    if dest is not None:
        res[...] = 0
    res_cn = res.transpose((1, 0) + tuple(range(2, 2 + nd)))             # col2im, each offset added in place
    for kidx in itertools.product(*(range(k) for k in kernel)):
        sl = _scatter_slices(kidx, dilate, out, stride, pad, shape)
        if sl is not None:
            res_cn[(slice(None), slice(None)) + sl[1]] += cols[(slice(None),) + kidx + (slice(None),) + sl[0]]
    return res.astype(g.dtype, copy=False)


def conv_weight_grad_shape(x_shape, g_shape, kernel, stride, dilate, pad, group):
    """The weight gradient's shape (F, C / group, *kernel), after checking that data and gradient fit."""
    kernel, stride, dilate, pad = _geometry(kernel, stride, dilate, pad)
    nd = len(kernel)
    x_shape, g_shape = tuple(x_shape), tuple(g_shape)
    if len(x_shape) != nd + 2 or len(g_shape) != nd + 2 or x_shape[0] != g_shape[0]:
        raise ValueError(f"data {x_shape} and gradient {g_shape} must both be {nd + 2}-D with one batch size for "
                         f"a {nd}-D kernel")
    c, f = x_shape[1], g_shape[1]
    _check_group(c, f, group, "Convolution")
    return (f, c // group) + kernel


def conv_weight_grad(xp, x, g, kernel, stride, dilate, pad, group, dest=None):
    """The gradient of conv w.r.t. the weight, written into dest when it can take it (`_writable`): under
    hybridize that is the parameter's gradient buffer, which the GEMMs then write directly."""
    conv_weight_grad_shape(x.shape, g.shape, kernel, stride, dilate, pad, group)
    kernel, stride, dilate, pad = _geometry(kernel, stride, dilate, pad)
    n, c = x.shape[:2]
    f = g.shape[1]
    out = g.shape[2:]
    dtype = np.result_type(x.dtype, g.dtype)
    dest = _writable(xp, dest, (f, c // group) + kernel, dtype, x, g) if dtype == x.dtype else None
    nk = _fastpath.numba_kernels(xp, x, g) if len(kernel) < 3 else None
    if nk is not None:
        return conv_weight_grad_fast(nk, x, g, kernel, stride, dilate, pad, group, dest)
    cols = _im2col(xp, x, out, kernel, stride, dilate, pad, group)      # g, Cg*K, N*P
    gm = _grad_cols(xp, g, group)                                        # g, Fg, N*P
    if dest is not None:
        _gemm(xp, gm, cols.transpose(0, 2, 1), dest.reshape(group, f // group, -1))
        return dest
    dw = _gemm(xp, gm, cols.transpose(0, 2, 1))                          # g, Fg, Cg*K
    return dw.reshape((f, c // group) + kernel).astype(x.dtype, copy=False)


_GEOM = {"kernel": Attr(parse_shape, REQUIRED), "stride": Attr(parse_shape, ()), "dilate": Attr(parse_shape, ()),
         "pad": Attr(parse_shape, ()), "num_group": Attr(parse_int, 1)}


def _geo(attrs):
    return {k: attrs[k] for k in ("kernel", "stride", "dilate", "pad", "num_group")}


# The convolution kernels write their result straight into an out= buffer (writes_out) that can take it; `into`
# copies only when it cannot (another dtype, not C-contiguous, overlapping an input).
def _k_conv(xp, data, weight, kernel, stride, dilate, pad, num_group, out_size, out=None):
    return into(xp, out, conv_forward(xp, data, weight, kernel, stride, dilate, pad, num_group, out_size,
                                      dest=out))


def _k_conv_dgrad(xp, grad, weight, kernel, stride, dilate, pad, num_group, shape, out=None):
    return into(xp, out, conv_data_grad(xp, grad, weight, shape, kernel, stride, dilate, pad, num_group, out))


def _k_conv_wgrad(xp, data, grad, kernel, stride, dilate, pad, num_group, out=None):
    return into(xp, out, conv_weight_grad(xp, data, grad, kernel, stride, dilate, pad, num_group, out))


def _g_conv(c, g):
    x, w = c.inputs
    geo = _geo(c.attrs)
    return (call("_conv_data_grad", g, w, shape=x.shape[2:], **geo),
            call("_conv_weight_grad", x, g, **geo))


def _g_conv_dgrad(c, h):
    g, w = c.inputs
    geo = _geo(c.attrs)
    return (call("_conv", h, w, out_size=g.shape[2:], **geo), call("_conv_weight_grad", h, g, **geo))


def _g_conv_wgrad(c, h):
    x, g = c.inputs
    geo = _geo(c.attrs)
    return (call("_conv_data_grad", g, h, shape=x.shape[2:], **geo), call("_conv", x, h, out_size=g.shape[2:], **geo))


def _ref_conv(x, w, kernel, stride=(), dilate=(), pad=(), num_group=1, out_size=()):
    """Direct loop convolution (float64) for tests."""
    out = out_size
    kernel, stride, dilate, pad = _geometry(kernel, stride, dilate, pad)
    x = x.astype(np.float64)
    n, c = x.shape[:2]
    f = w.shape[0]
    cg, fg = c // num_group, f // num_group
    if not out:
        out = tuple(conv_out_size(L, k, s, d, p) for L, k, s, d, p in zip(x.shape[2:], kernel, stride, dilate, pad))
    y = np.zeros((n, f) + tuple(out))
    for o in itertools.product(*(range(v) for v in out)):
        for kidx in itertools.product(*(range(k) for k in kernel)):
            pos = [oi * s - p + ki * d for oi, s, p, ki, d in zip(o, stride, pad, kidx, dilate)]
            if any(q < 0 or q >= L for q, L in zip(pos, x.shape[2:])):
                continue
            xv = x[(slice(None), slice(None)) + tuple(pos)]              # N, C
            for grp in range(num_group):
                y[(slice(None), slice(grp * fg, (grp + 1) * fg)) + o] += \
                    xv[:, grp * cg:(grp + 1) * cg] @ w[(slice(grp * fg, (grp + 1) * fg), slice(None)) + kidx].T
    return y


def _ref_conv_dgrad(g, w, kernel, stride=(), dilate=(), pad=(), num_group=1, shape=()):
    """Transposed convolution by brute force: the adjoint of _ref_conv, through its Jacobian."""
    n, f = g.shape[:2]
    c = w.shape[1] * num_group
    size = int(np.prod(shape)) * c
    jac = np.zeros((n, c) + tuple(shape))
    out = np.zeros(jac.shape)
    for i in range(size):
        e = np.zeros((1, c) + tuple(shape))
        e.reshape(-1)[i] = 1
        col = _ref_conv(e, w, kernel, stride, dilate, pad, num_group, out_size=g.shape[2:])      # 1, F, *O
        out.reshape(n, -1)[:, i] = (g.reshape(n, -1) * col.reshape(1, -1)).sum(1)
    return out


def _ref_conv_wgrad(x, g, kernel, stride=(), dilate=(), pad=(), num_group=1):
    f = g.shape[1]
    c = x.shape[1]
    wshape = (f, c // num_group) + tuple(kernel)
    dw = np.zeros(wshape)
    for i in range(int(np.prod(wshape))):
        e = np.zeros(wshape)
        e.reshape(-1)[i] = 1
        dw.reshape(-1)[i] = (g * _ref_conv(x, e, kernel, stride, dilate, pad, num_group, out_size=g.shape[2:])).sum()
    return dw


def _conv_infer(shapes, dtypes, kernel, stride, dilate, pad, num_group, out_size):
    return [conv_shape(shapes[0], shapes[1], kernel, stride, dilate, pad, num_group, out_size)], [dtypes[0]]


def _conv_dgrad_infer(shapes, dtypes, kernel, stride, dilate, pad, num_group, shape):
    return [conv_data_grad_shape(shapes[0], shapes[1], shape, kernel, stride, dilate, pad, num_group)], [dtypes[0]]


def _conv_wgrad_infer(shapes, dtypes, kernel, stride, dilate, pad, num_group):
    return [conv_weight_grad_shape(shapes[0], shapes[1], kernel, stride, dilate, pad, num_group)], [dtypes[0]]


# the fast path of the convolutions (OpDef.fast)
_CONV_FAST = "_numba_kernels.im2col / col2im (ops/_conv_fast.py) around a BLAS GEMM"


register(OpDef(
    name="_conv", fast=_CONV_FAST,
    kernel=_k_conv, inputs=("data", "weight"), attrs=dict(_GEOM, out_size=Attr(parse_shape, ())),
    grad=_g_conv, hidden=True, writes_out=True, infer=_conv_infer,
    test=OpTest(ref=_ref_conv, cases=(
        (((1, 2, 5), (3, 2, 3)), {"kernel": (3,), "stride": (2,), "pad": (1,), "out_size": (3,)}),
        (((1, 2, 5), (3, 2, 2)), {"kernel": (2,), "stride": (2,), "out_size": (3,)}),
    ))))
register(OpDef(
    name="_conv_data_grad", fast=_CONV_FAST,
    kernel=_k_conv_dgrad, inputs=("grad", "weight"),
    attrs=dict(_GEOM, shape=Attr(parse_shape, REQUIRED)), grad=_g_conv_dgrad, hidden=True, writes_out=True,
    infer=_conv_dgrad_infer,
    test=OpTest(ref=_ref_conv_dgrad, cases=(
        (((1, 2, 3), (2, 3, 3)), {"kernel": (3,), "stride": (2,), "pad": (1,), "shape": (5,)}),
        (((1, 4, 2, 2), (4, 1, 2, 2)), {"kernel": (2, 2), "stride": (2, 1), "num_group": 2, "shape": (4, 3)}),
        (((1, 2, 3), (2, 1, 3)), {"kernel": (3,), "stride": (2,), "shape": (8,)}),
    ))))
register(OpDef(
    name="_conv_weight_grad", fast=_CONV_FAST,
    kernel=_k_conv_wgrad, inputs=("data", "grad"), attrs=_GEOM,
    grad=_g_conv_wgrad, hidden=True, writes_out=True, infer=_conv_wgrad_infer,
    test=OpTest(ref=_ref_conv_wgrad, cases=(
        (((1, 2, 5), (1, 3, 3)), {"kernel": (3,), "stride": (2,), "pad": (1,)}),
        (((1, 4, 4, 3), (1, 2, 3, 2)), {"kernel": (2, 2), "dilate": (1, 2), "num_group": 2}),
    ))))


# ---------------------------------------------------------------------------------------------------------
# Convolution / Deconvolution
_LAYOUTS = (None, "NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC")


def _check_layout(layout, nd):
    if layout is None:
        return
    want = {1: "NCW", 2: "NCHW", 3: "NCDHW"}[nd]
    if layout != want:
        raise ValueError(f"layout {layout} is not supported for a {nd}-D kernel; only {want} (channel-first, as "
                         "MXNet's CPU kernels); transpose the data first")


def _bias_shape(f, nd):
    return (1, f) + (1,) * nd


def _check_bias(bias, f):
    _check_bias_shape(bias.shape, f)


def _check_bias_shape(shape, f):
    if tuple(shape) != (f,):
        raise ValueError(f"bias shape {tuple(shape)} does not match ({f},) (num_filter,)")


def _conv_inputs(a):
    return ("data", "weight") if a["no_bias"] else ("data", "weight", "bias")


def _convolution_shape(shapes, kernel, stride, dilate, pad, num_filter, num_group, layout):
    _check_layout(layout, len(kernel))
    if tuple(shapes[1][0:1]) != (num_filter,):
        raise ValueError(f"weight shape {tuple(shapes[1])} does not match num_filter={num_filter}")
    if len(shapes) > 2:
        _check_bias_shape(shapes[2], num_filter)
    return conv_shape(shapes[0], shapes[1], kernel, stride, dilate, pad, num_group)


def _convolution_infer(shapes, dtypes, *, kernel, stride, dilate, pad, num_filter, num_group, layout, **_):
    return [_convolution_shape(shapes, kernel, stride, dilate, pad, num_filter, num_group, layout)], [dtypes[0]]


def _k_convolution(xp, data, weight, bias=None, *, kernel, stride, dilate, pad, num_filter, num_group, workspace,
                   no_bias, cudnn_tune, cudnn_off, layout, out=None):
    _check_layout(layout, len(kernel))
    if weight.shape[0:1] != (num_filter,):
        raise ValueError(f"weight shape {weight.shape} does not match num_filter={num_filter}")
    return into(xp, out, conv_forward(xp, data, weight, kernel, stride, dilate, pad, num_group, bias=bias,
                                      dest=out))


def _in_graph(x):
    """Whether backward can use a gradient for x (it drops gradients of arrays outside the graph, e.g. the input
    batch of a network), so the rule may skip computing it."""
    return x._node is not None


def _g_convolution(c, g):
    x, w = c.inputs[:2]
    geo = _geo(c.attrs)
    grads = (call("_conv_data_grad", g, w, shape=x.shape[2:], **geo) if _in_graph(x) else None,
             call("_conv_weight_grad", x, g, **geo) if _in_graph(w) else None)
    if len(c.inputs) == 3:
        nd = len(c.attrs["kernel"])
        grads += (call("Reshape", call("_sum_to", g, shape=_bias_shape(w.shape[0], nd)), shape=(w.shape[0],))
                  if _in_graph(c.inputs[2]) else None,)
    return grads


_CONV_ATTRS = {
    "kernel": Attr(parse_shape, REQUIRED), "stride": Attr(parse_shape, ()), "dilate": Attr(parse_shape, ()),
    "pad": Attr(parse_shape, ()), "num_filter": Attr(parse_int, REQUIRED), "num_group": Attr(parse_int, 1),
    "workspace": Attr(parse_int, 1024), "no_bias": Attr(parse_bool, False),
    "cudnn_tune": Attr(optional(choice("fastest", "limited_workspace", "off")), None),
    "cudnn_off": Attr(parse_bool, False), "layout": Attr(optional(choice(*_LAYOUTS[1:])), None)}


def _ref_convolution(x, w, b=None, **a):
    y = _ref_conv(x, w, a["kernel"], a.get("stride", ()), a.get("dilate", ()), a.get("pad", ()),
                  a.get("num_group", 1))
    if b is not None:
        y = y + b.reshape(_bias_shape(len(b), len(a["kernel"])))
    return y


def _conv_params(a, s):
    """weight (num_filter, C / num_group, *kernel) (channels last for an NWC-type layout) and bias from the data."""
    if s[0] is None:
        return {}
    layout = a.get("layout")
    channels_last = bool(layout) and layout.endswith("C")
    c = s[0][len(s[0]) - 1 if channels_last else 1]
    k = tuple(a["kernel"])
    w = (a["num_filter"],) + k + (c // a["num_group"],) if channels_last else (a["num_filter"], c // a["num_group"]) + k
    return {1: w, 2: (a["num_filter"],)}


register(OpDef(
    name="Convolution", fast=_CONV_FAST,
    kernel=_k_convolution, inputs=_conv_inputs, attrs=_CONV_ATTRS, grad=_g_convolution,
    writes_out=True, infer=_convolution_infer, param_shapes=ParamShapes(_conv_params, partial=True),
    test=OpTest(ref=_ref_convolution, grad_rtol=2e-2, cases=(
        (((2, 3, 5, 5), (4, 3, 3, 3), (4,)), {"kernel": (3, 3), "num_filter": 4}),
        (((1, 2, 6, 5), (2, 2, 3, 2)), {"kernel": (3, 2), "num_filter": 2, "stride": (2, 1), "pad": (1, 1),
                                        "no_bias": True}),
        (((1, 4, 7, 7), (6, 2, 3, 3), (6,)), {"kernel": (3, 3), "num_filter": 6, "num_group": 2,
                                              "dilate": (2, 2), "stride": (2, 2), "pad": (1, 1)}),
        (((2, 2, 7), (3, 2, 3), (3,)), {"kernel": (3,), "num_filter": 3, "stride": (2,), "pad": (1,)}),
        (((1, 2, 4, 4, 3), (2, 2, 2, 2, 2), (2,)), {"kernel": (2, 2, 2), "num_filter": 2, "stride": (2, 1, 1)}),
        (((1, 4, 5, 5), (4, 1, 3, 3)), {"kernel": (3, 3), "num_filter": 4, "num_group": 4, "no_bias": True,
                                        "pad": (1, 1)}),
    )),
    doc="N-D convolution (im2col + matmul). The data/weight gradients are _conv_data_grad / _conv_weight_grad, "
        "which are themselves differentiable (second-order gradients work, unlike MXNet)."))


def _deconv_geometry(shape_in, kernel, stride, dilate, pad, adj, target_shape):
    """Output spatial size and the front padding (crop) of a transposed convolution (MXNet's rules)."""
    nd = len(kernel)
    kernel, stride, dilate, pad = _geometry(kernel, stride, dilate, pad)
    adj = _tup(adj, nd, 0)
    use_target = bool(target_shape) and any(t > 0 for t in target_shape)
    out, front = [], []
    for i in range(nd):
        full = stride[i] * (shape_in[i] - 1) + dilate[i] * (kernel[i] - 1) + 1
        if use_target:
            t = _tup(target_shape, nd, 0)[i]
            total = full - t
            if total < 0:
                raise ValueError(f"target_shape {target_shape} is larger than the full output size {full}")
            p = (total + 1) // 2
            out.append(t)
        else:
            if adj[i] >= max(stride[i], dilate[i]):
                raise ValueError(f"adj {adj} must be smaller than stride {stride} (or dilate)")
            p = pad[i]
            out.append(full - 2 * pad[i] + adj[i])
        front.append(p)
    if any(o <= 0 for o in out):
        raise ValueError(f"output size {tuple(out)} is not positive")
    return tuple(out), tuple(front)


def _deconvolution_shape(shapes, kernel, stride, dilate, pad, adj, target_shape, num_filter, num_group, layout):
    """(the output's spatial size, the front padding (crop)) after checking data, weight (and bias)."""
    nd = len(kernel)
    _check_layout(layout, nd)
    data = tuple(shapes[0])
    if len(data) != nd + 2:
        raise ValueError(f"data must be {nd + 2}-D for a {nd}-D kernel, got shape {data}")
    c = data[1]
    want = (c, num_filter // max(num_group, 1)) + tuple(kernel)
    if num_filter % max(num_group, 1) or c % max(num_group, 1):
        raise ValueError(f"channels ({c}) and num_filter ({num_filter}) must be divisible by num_group "
                         f"({num_group})")
    if tuple(shapes[1]) != want:
        raise ValueError(f"weight shape {tuple(shapes[1])} does not match {want} "
                         "(in_channels, num_filter / num_group, *kernel)")
    if len(shapes) > 2:
        _check_bias_shape(shapes[2], num_filter)
    size, front = _deconv_geometry(data[2:], kernel, stride, dilate, pad, adj, target_shape)
    check_shape((data[0], num_filter) + size)
    return size, front


def _deconvolution_infer(shapes, dtypes, *, kernel, stride, dilate, pad, adj, target_shape, num_filter, num_group,
                         layout, **_):
    size, _ = _deconvolution_shape(shapes, kernel, stride, dilate, pad, adj, target_shape, num_filter, num_group,
                                   layout)
    return [(shapes[0][0], num_filter) + size], [dtypes[0]]


def _k_deconvolution(xp, data, weight, bias=None, *, kernel, stride, dilate, pad, adj, target_shape, num_filter,
                     num_group, workspace, no_bias, cudnn_tune, cudnn_off, layout, out=None):
    nd = len(kernel)
    shapes = [data.shape, weight.shape] + ([] if bias is None else [bias.shape])
    size, front = _deconvolution_shape(shapes, kernel, stride, dilate, pad, adj, target_shape, num_filter,
                                       num_group, layout)
    # the transposed convolution writes into out= directly, unless out holds the bias it adds afterwards
    dest = None if out is None or (bias is not None and xp.may_share_memory(out, bias)) else out
    y = conv_data_grad(xp, data, weight, size, kernel, stride, dilate, front, num_group, dest)
    if bias is not None:
        y += bias.reshape(_bias_shape(num_filter, nd)).astype(y.dtype, copy=False)      # y is fresh or out
    return into(xp, out, y)


def _deconv_geo(c, data_shape):
    a = c.attrs
    _, front = _deconv_geometry(data_shape, a["kernel"], a["stride"], a["dilate"], a["pad"], a["adj"],
                                a["target_shape"])
    return {"kernel": a["kernel"], "stride": a["stride"], "dilate": a["dilate"], "pad": front,
            "num_group": a["num_group"]}


def _g_deconvolution(c, h):
    x, w = c.inputs[:2]
    geo = _deconv_geo(c, x.shape[2:])
    grads = (call("_conv", h, w, out_size=x.shape[2:], **geo), call("_conv_weight_grad", h, x, **geo))
    if len(c.inputs) == 3:
        f = c.attrs["num_filter"]
        grads += (call("Reshape", call("_sum_to", h, shape=_bias_shape(f, len(c.attrs["kernel"]))), shape=(f,)),)
    return grads


def _deconv_inputs(a):
    return ("data", "weight") if a["no_bias"] else ("data", "weight", "bias")


def _ref_deconvolution(x, w, b=None, **a):
    out, front = _deconv_geometry(x.shape[2:], a["kernel"], a.get("stride", ()), a.get("dilate", ()),
                                  a.get("pad", ()), a.get("adj", ()), a.get("target_shape", ()))
    y = _ref_conv_dgrad(x.astype(np.float64), w.astype(np.float64), a["kernel"], a.get("stride", ()),
                        a.get("dilate", ()), front, a.get("num_group", 1), shape=out)
    if b is not None:
        y = y + b.reshape(_bias_shape(len(b), len(a["kernel"])))
    return y


def _deconv_params(a, s):
    if s[0] is None:
        return {}
    return {1: (s[0][1], a["num_filter"] // a["num_group"]) + tuple(a["kernel"]), 2: (a["num_filter"],)}


register(OpDef(
    name="Deconvolution", fast=_CONV_FAST,
    kernel=_k_deconvolution, inputs=_deconv_inputs, grad=_g_deconvolution, writes_out=True,
    infer=_deconvolution_infer, param_shapes=ParamShapes(_deconv_params, partial=True),
    attrs={"kernel": Attr(parse_shape, REQUIRED), "stride": Attr(parse_shape, ()), "dilate": Attr(parse_shape, ()),
           "pad": Attr(parse_shape, ()), "adj": Attr(parse_shape, ()), "target_shape": Attr(parse_shape, ()),
           "num_filter": Attr(parse_int, REQUIRED), "num_group": Attr(parse_int, 1),
           "workspace": Attr(parse_int, 512), "no_bias": Attr(parse_bool, True),
           "cudnn_tune": Attr(optional(choice("fastest", "limited_workspace", "off")), None),
           "cudnn_off": Attr(parse_bool, False), "layout": Attr(optional(choice(*_LAYOUTS[1:])), None)},
    test=OpTest(ref=_ref_deconvolution, grad_rtol=2e-2, cases=(
        (((1, 2, 3, 3), (2, 3, 3, 3)), {"kernel": (3, 3), "num_filter": 3, "stride": (2, 2)}),
        (((1, 2, 3, 3), (2, 3, 3, 3), (3,)), {"kernel": (3, 3), "num_filter": 3, "stride": (2, 2), "pad": (1, 1),
                                              "adj": (1, 1), "no_bias": False}),
        (((1, 2, 3, 3), (2, 3, 3, 3)), {"kernel": (3, 3), "num_filter": 3, "stride": (2, 2),
                                        "target_shape": (6, 6)}),
        (((1, 4, 4), (4, 1, 3)), {"kernel": (3,), "num_filter": 2, "num_group": 2, "stride": (2,),
                                  "dilate": (2,), "pad": (1,)}),
        (((1, 2, 2, 2, 2), (2, 1, 2, 2, 2)), {"kernel": (2, 2, 2), "num_filter": 1, "stride": (2, 2, 2)}),
    )),
    doc="Transposed convolution. Output size s*(in-1) + d*(k-1) + 1 - 2*pad + adj; with target_shape the padding "
        "is (full - target + 1) // 2 in front (MXNet's rule) and pad/adj are ignored."))


# ---------------------------------------------------------------------------------------------------------
# FullyConnected and its two bilinear partners
# Both are a @ b, written by BLAS into `out` when given (writes_out) and of the product's dtype, else copied there.
# Written out in each kernel: they run on every backward of a Dense layer, where a shared helper is a Python
# call more.
def _k_fc_dgrad(xp, grad, weight, *, feature_major=False, out=None):
    if out is None:
        # feature_major: the transposed product, the shape BLAS runs faster here (ops/nn_epilogue.py), but for
        # one row (a vector-matrix product)
        if feature_major and xp is np and grad.shape[0] > 1:
            return xp.matmul(weight.T, grad.T).T
        return xp.matmul(grad, weight)
    if out.dtype == result_dtype(grad.dtype, weight.dtype):
        return xp.matmul(grad, weight, out=out)
    return into(xp, out, xp.matmul(grad, weight))


def _k_fc_wgrad(xp, grad, data, out=None):
    if out is None:
        return xp.matmul(grad.T, data)
    if out.dtype == result_dtype(grad.dtype, data.dtype):
        return xp.matmul(grad.T, data, out=out)
    return into(xp, out, xp.matmul(grad.T, data))


def _infer_matmul(transpose_lhs):
    """Shapes of grad @ weight (_fc_data_grad) and grad.T @ data (_fc_weight_grad), without running a GEMM."""
    def infer(shapes, dtypes, **attrs):
        a, b = (tuple(s) for s in shapes)
        rows, inner = (a[1], a[0]) if transpose_lhs else (a[0], a[1])
        if len(a) != 2 or len(b) != 2 or inner != b[0]:
            raise MXNetError(f"cannot multiply {'the transpose of ' if transpose_lhs else ''}{a} by {b}")
        return [(rows, b[1])], [np.result_type(*dtypes)]
    return infer


register(OpDef(
    name="_fc_data_grad", kernel=_k_fc_dgrad, inputs=("grad", "weight"), hidden=True, infer=_infer_matmul(False),
    writes_out=True, attrs={"feature_major": Attr(parse_bool, False)},
    grad=lambda c, h: (call("FullyConnected", h, c.inputs[1], num_hidden=c.inputs[1].shape[0], no_bias=True),
                       call("_fc_weight_grad", c.inputs[0], h)),
    test=OpTest(ref=lambda g, w, feature_major=False: g.astype(np.float64) @ w,
                cases=((((3, 4), (4, 5)), {}), (((3, 4), (4, 5)), {"feature_major": True}))),
    doc="grad @ weight, a Dense layer's data gradient. feature_major: written as the transpose of a C-contiguous "
        "array (the epilogue pass sets it where an activation backward reads it: ops/nn_epilogue.py)."))
register(OpDef(
    name="_fc_weight_grad", kernel=_k_fc_wgrad, inputs=("grad", "data"), hidden=True, infer=_infer_matmul(True),
    writes_out=True,
    grad=lambda c, h: (call("FullyConnected", c.inputs[1], h, num_hidden=h.shape[0], no_bias=True),
                       call("_fc_data_grad", c.inputs[0], h)),
    test=OpTest(ref=lambda g, x: g.T.astype(np.float64) @ x, cases=((((3, 4), (3, 5)), {}),))))


def _fc_inputs(a):
    return ("data", "weight") if a["no_bias"] else ("data", "weight", "bias")


def weight_shape_error(weight, num_hidden, k):
    return ValueError(f"weight shape {weight.shape} does not match ({num_hidden}, {k}) (num_hidden, input features)")


def _k_fc(xp, data, weight, bias=None, *, num_hidden, no_bias, flatten, out=None):
    if flatten:
        x2 = data.reshape(data.shape[0], -1) if data.ndim != 2 else data
        out_shape = (data.shape[0], num_hidden)
    else:
        x2 = data.reshape(-1, data.shape[-1])
        out_shape = data.shape[:-1] + (num_hidden,)
    if tuple(weight.shape) != (num_hidden, x2.shape[1]):
        raise weight_shape_error(weight, num_hidden, x2.shape[1])
    if bias is not None and tuple(bias.shape) != (num_hidden,):
        raise ValueError(f"bias shape {bias.shape} does not match ({num_hidden},) (num_hidden,)")
    if out is not None:
        if out.dtype != result_dtype(x2.dtype, weight.dtype) or out.dtype != data.dtype \
                or tuple(out.shape) != out_shape or not out.flags.c_contiguous:
            return into(xp, out, _k_fc(xp, data, weight, bias, num_hidden=num_hidden, no_bias=no_bias,
                                       flatten=flatten))
        y = xp.matmul(x2, weight.T, out=out.reshape(x2.shape[0], num_hidden))    # BLAS writes the buffer
        if bias is not None:
            xp.add(y, bias, out=y, casting="unsafe")
        return out
    y = xp.matmul(x2, weight.T)                            # one GEMM; BLAS takes the transposed weight as is
    if bias is not None:
        if y.dtype == result_dtype(y.dtype, bias.dtype):
            y += bias                                      # y is fresh: add in place, no second temporary
        else:
            y = y + bias
    return y.reshape(out_shape).astype(data.dtype, copy=False)


def _infer_fc(shapes, dtypes, num_hidden, no_bias, flatten):
    data, weight = tuple(shapes[0]), tuple(shapes[1])
    k = int(np.prod(data[1:], dtype=np.int64)) if flatten else (data[-1] if data else 1)
    if weight != (num_hidden, k):
        raise MXNetError(f"weight shape {weight} does not match ({num_hidden}, {k}) (num_hidden, input features)")
    if not no_bias and len(shapes) > 2 and tuple(shapes[2]) != (num_hidden,):
        raise MXNetError(f"bias shape {tuple(shapes[2])} does not match ({num_hidden},) (num_hidden,)")
    out = (data[0], num_hidden) if flatten else data[:-1] + (num_hidden,)
    return [out], [np.dtype(dtypes[0])]


def _g_fc(c, g):
    x, w = c.inputs[:2]
    k = w.shape[1]
    g2 = call("Reshape", g, shape=(-1, w.shape[0]))
    x2 = call("Reshape", x, shape=(-1, k))
    dx = call("Reshape", call("_fc_data_grad", g2, w), shape=x.shape) if _in_graph(x) else None
    grads = (dx, call("_fc_weight_grad", g2, x2) if _in_graph(w) else None)
    if len(c.inputs) == 3:
        # summed straight to the bias's (N,) shape (_sum_to drops the leading axes): no Reshape node after it
        grads += (call("_sum_to", g2, shape=(w.shape[0],)) if _in_graph(c.inputs[2]) else None,)
    return grads


def _ref_fc(x, w, b=None, num_hidden=None, no_bias=False, flatten=True):
    x = x.astype(np.float64)
    x2 = x.reshape(x.shape[0], -1) if flatten else x
    y = np.einsum("...k,hk->...h", x2, w)
    return y if b is None else y + b


def fc_params(a, s):
    """weight (num_hidden, units) and bias (num_hidden,) from the data's shape (units: its flattened width)."""
    if s[0] is None:
        return {}
    units = math.prod(s[0][1:]) if a["flatten"] else s[0][-1]
    return {1: (a["num_hidden"], units), 2: (a["num_hidden"],)}


register(OpDef(
    name="FullyConnected", kernel=_k_fc, inputs=_fc_inputs, grad=_g_fc, infer=_infer_fc, writes_out=True,
    param_shapes=ParamShapes(fc_params, partial=True),
    attrs={"num_hidden": Attr(parse_int, REQUIRED), "no_bias": Attr(parse_bool, False),
           "flatten": Attr(parse_bool, True)},
    test=OpTest(ref=_ref_fc, cases=(
        (((3, 4), (5, 4), (5,)), {"num_hidden": 5}),
        (((2, 3, 2), (4, 6)), {"num_hidden": 4, "no_bias": True}),
        (((2, 3, 2), (4, 2), (4,)), {"num_hidden": 4, "flatten": False}),
    ))))


# ---------------------------------------------------------------------------------------------------------
# Pooling
def _pool_geometry(spatial, kernel, pool_type, global_pool, pooling_convention, stride, pad):
    """(kernel, stride, pad, out, end_pad) for the spatial dims."""
    nd = len(spatial)
    if global_pool:
        return tuple(spatial), (1,) * nd, (0,) * nd, (1,) * nd
    if len(kernel) != nd:
        raise ValueError(f"kernel {kernel} must have {nd} dimensions for data with {nd} spatial dimensions")
    stride = _tup(stride, nd, 1)
    if pooling_convention == "same":       # it computes its own padding (MXNet reads pad only to refuse it)
        if any(pad or ()):
            raise ValueError(f"pooling_convention='same' computes its own padding; pad must be zeros, got "
                             f"{tuple(pad)}")
        pad = (0,) * nd
    pad = _tup(pad, nd, 0)
    out = []
    for L, k, s, p in zip(spatial, kernel, stride, pad):
        o = pool_out_size(L, k, s, p, pooling_convention)
        if k > L + 2 * p and pooling_convention != "same":
            raise ValueError(f"kernel {tuple(kernel)} is larger than the padded input {tuple(spatial)} "
                             f"(pad {tuple(pad)})")
        out.append(o)
    if pooling_convention == "same":
        pad = tuple(max((o - 1) * s + k - L, 0) // 2 for o, s, k, L in zip(out, stride, kernel, spatial))
    return tuple(kernel), stride, pad, tuple(out)


def _pool_setup(shape, kernel, pool_type, global_pool, pooling_convention, stride, pad, layout):
    """(kernel, stride, pad, out) of pooling data of `shape`, after checking the data and attributes."""
    nd = len(shape) - 2
    if nd not in (1, 2, 3):
        raise ValueError(f"data must be 3-D to 5-D (batch, channel, spatial...), got shape {tuple(shape)}")
    _check_layout(layout, nd)
    if not global_pool and not kernel:
        raise ValueError("kernel is required unless global_pool=True")
    return _pool_geometry(tuple(shape[2:]), kernel, pool_type, global_pool, pooling_convention, stride, pad)


def _pooled_shape(shape, a, pool_type=None):
    """The shape Pooling with attributes `a` gives for data of `shape`."""
    *_, out = _pool_setup(shape, a["kernel"], pool_type or a["pool_type"], a["global_pool"],
                          a["pooling_convention"], a["stride"], a["pad"], a["layout"])
    return tuple(shape[:2]) + tuple(out)


def _pooling_infer(shapes, dtypes, **a):
    return [_pooled_shape(shapes[0], a)], [dtypes[0]]


def _pool_max_bwd_infer(shapes, dtypes, **a):
    if _pooled_shape(shapes[1], a, "max") != tuple(shapes[0]):
        raise ValueError(f"gradient shape {tuple(shapes[0])} does not match the pooled shape of the data "
                         f"{tuple(shapes[1])}")
    return [tuple(shapes[1])], [np.result_type(*dtypes)]


def _pool_max_gather_infer(shapes, dtypes, **a):
    if tuple(shapes[0]) != tuple(shapes[1]):
        raise ValueError(f"head shape {tuple(shapes[0])} does not match the data shape {tuple(shapes[1])}")
    return [_pooled_shape(shapes[1], a, "max")], [np.result_type(*dtypes)]


def _pool_lin_bwd_infer(shapes, dtypes, shape, **a):
    g = tuple(shapes[0])
    if len(g) < 2 or _pooled_shape(g[:2] + tuple(shape), a) != g:
        raise ValueError(f"gradient shape {g} does not match the pooled shape of data with spatial shape "
                         f"{tuple(shape)}")
    return [check_shape(g[:2] + tuple(shape))], [dtypes[0]]


def _pool_count(xp, spatial, kernel, stride, pad, out, include_pad, dtype):
    """Number of elements each window averages over (MXNet: pad counts unless excluded; beyond it never)."""
    nd = len(spatial)
    mask = xp.ones((1, 1) + tuple(spatial), dtype=dtype)
    if include_pad:
        mask = xp.pad(mask, [(0, 0), (0, 0)] + [(p, p) for p in pad], mode="constant", constant_values=1)
        win = _windows(xp, mask, out, kernel, stride, (1,) * nd, (0,) * nd)
    else:
        win = _windows(xp, mask, out, kernel, stride, (1,) * nd, pad)
    return win.sum(axis=tuple(range(2 + nd, 2 + 2 * nd)))


def _pool_forward(xp, x, kernel, pool_type, global_pool, pooling_convention, stride, pad, p_value,
                  count_include_pad, layout, out_buf=None):
    """out_buf: a buffer the max path's running maximum starts in (out=); the caller copies other results."""
    kernel, stride, pad, out = _pool_setup(x.shape, kernel, pool_type, global_pool, pooling_convention, stride, pad,
                                           layout)
    nd = len(kernel)
    kaxes = tuple(range(2 + nd, 2 + 2 * nd))
    dil = (1,) * nd
    if pool_type == "max":
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        win = _windows(xp, x, out, kernel, stride, dil, pad, fill)
        offsets = _kernel_offsets(kernel)
        if len(offsets) > _MAX_LOOP:
            return win.max(axis=kaxes)
        first = win[(Ellipsis,) + offsets[0]]
        if out_buf is not None and out_buf.dtype == x.dtype and out_buf.shape == first.shape:
            xp.copyto(out_buf, first)
            best = out_buf
        else:
            best = first.copy()                            # a running maximum over strided views: no reduce over
        for k in offsets[1:]:                              # window axes (numpy's is ~10x slower there)
            xp.maximum(best, win[(Ellipsis,) + k], out=best)
        return best
    if pool_type == "lp":
        p = 2 if p_value is None else p_value
        s = _windows(xp, x ** p if p != 1 else x, out, kernel, stride, dil, pad).sum(axis=kaxes)
        return (xp.power(s, 1.0 / p) if p != 1 else s).astype(x.dtype, copy=False)
    s = _windows(xp, x, out, kernel, stride, dil, pad).sum(axis=kaxes)
    if pool_type == "sum":
        return s.astype(x.dtype, copy=False)
    include = True if count_include_pad is None else count_include_pad
    return (s / _pool_count(xp, x.shape[2:], kernel, stride, pad, out, include, x.dtype)).astype(x.dtype,
                                                                                                   copy=False)


def _k_pooling(xp, data, out=None, **a):
    a.pop("cudnn_off")
    return into(xp, out, _pool_forward(xp, data, out_buf=out, **a))


def _scatter_windows(xp, vals, shape, kernel, stride, pad, out, dest=None):
    """Adjoint of _windows: vals (N, C, *out, *kernel) summed back into an array of spatial `shape` (dest when it
    can take it, `_writable`), each kernel offset added in place."""
    n, c = vals.shape[:2]
    shape = tuple(shape)
    dest = _writable(xp, dest, (n, c) + shape, vals.dtype, vals)
    res = xp.zeros((n, c) + shape, dtype=vals.dtype) if dest is None else dest
    if dest is not None:
        res[...] = 0
    every = (slice(None), slice(None))
    for kidx in itertools.product(*(range(k) for k in kernel)):
        sl = _scatter_slices(kidx, (1,) * len(kidx), out, stride, pad, shape)
        if sl is not None:
            res[every + sl[1]] += vals[every + sl[0] + kidx]
    return res


_MAX_LOOP = 32      # windows up to this size are scanned offset by offset; larger ones use reductions


def _kernel_offsets(kernel):
    return list(itertools.product(*(range(k) for k in kernel)))


def _max_onehot(xp, data, kernel, stride, pad, out):
    """(N, C, *out, *kernel) 0/1: where each window's (first) maximum sits."""
    nd = len(kernel)
    fill = -np.inf if data.dtype.kind == "f" else np.iinfo(data.dtype).min
    win = _windows(xp, data, out, kernel, stride, (1,) * nd, pad, fill)
    flat = win.reshape(win.shape[:2 + nd] + (-1,))
    idx = flat.argmax(axis=-1)
    onehot = (xp.arange(flat.shape[-1]) == idx[..., None]).astype(data.dtype)
    return onehot.reshape(win.shape)


def _max_hits(xp, data, kernel, stride, pad, out):
    """[(kernel offset, (N, C, *out) bool)]: where each window's first maximum sits, offset by offset (the
    one-hot of _max_onehot without a reduction over window axes); None when the window is too large for the
    offset loop or the data has NaNs (then argmax's NaN rule applies through _max_onehot)."""
    offsets = _kernel_offsets(kernel)
    if len(offsets) > _MAX_LOOP:
        return None
    nd = len(kernel)
    fill = -np.inf if data.dtype.kind == "f" else np.iinfo(data.dtype).min
    win = _windows(xp, data, out, kernel, stride, (1,) * nd, pad, fill)
    views = [win[(Ellipsis,) + k] for k in offsets]
    best = views[0].copy()
    for v in views[1:]:
        xp.maximum(best, v, out=best)
    if data.dtype.kind in "fc" and xp.isnan(best).any():
        return None
    hits = []
    claimed = None
    for k, v in zip(offsets, views):
        hit = v == best
        if claimed is None:
            claimed = hit.copy()
        else:
            hit &= ~claimed                                # ties: the first maximum in row-major order wins
            claimed |= hit
        hits.append((k, hit))
    return hits


_POOL_ATTRS = {
    "kernel": Attr(parse_shape, ()), "pool_type": Attr(choice("max", "avg", "sum", "lp"), "max"),
    "global_pool": Attr(parse_bool, False), "cudnn_off": Attr(parse_bool, False),
    "pooling_convention": Attr(choice("valid", "full", "same"), "valid"), "stride": Attr(parse_shape, ()),
    "pad": Attr(parse_shape, ()), "p_value": Attr(optional(parse_int), None),
    "count_include_pad": Attr(optional(parse_bool), None),
    "layout": Attr(optional(choice(*_LAYOUTS[1:])), None)}


def _pool_attrs(c, **over):
    a = dict(c.attrs)
    a.update(over)
    return a


def _k_pool_max_bwd(xp, grad, data, out=None, **a):
    """out=: the given buffer (writes_out) takes the result directly when it can (`_writable`)."""
    return into(xp, out, _pool_max_bwd(xp, grad, data, out, **a))


def _pool_max_bwd(xp, grad, data, dest, **a):
    a.pop("cudnn_off")
    kernel, stride, pad, out = _pool_setup(data.shape, a["kernel"], "max", a["global_pool"], a["pooling_convention"],
                                           a["stride"], a["pad"], a["layout"])
    shape, dtype = tuple(data.shape), np.result_type(data.dtype, grad.dtype)
    nk = _fastpath.numba_kernels(xp, grad, data) if len(kernel) < 3 else None
    if nk is not None and grad.shape == data.shape[:2] + tuple(out):
        return max_pool_backward_fast(nk, data, grad, kernel, stride, pad, out,
                                      _writable(xp, dest, shape, dtype, grad, data))
    hits = _max_hits(xp, data, kernel, stride, pad, out)
    nd = len(kernel)
    if hits is None:
        onehot = _max_onehot(xp, data, kernel, stride, pad, out)
        vals = onehot * grad.reshape(grad.shape + (1,) * nd)
        return _scatter_windows(xp, vals, data.shape[2:], kernel, stride, pad, out, dest)
    dest = _writable(xp, dest, shape, dtype, grad, data)
    # windows that tile the input exactly (the usual 2x2 / stride 2) write every element once: no zero-fill
    tiles = all(s == k and p == 0 and o * s == L for o, s, k, L, p in zip(out, stride, kernel, shape[2:], pad))
    if dest is None:
        res = (xp.empty if tiles else xp.zeros)(shape, dtype=dtype)
    else:
        res = dest
        if not tiles:
            res[...] = 0
    every = (slice(None), slice(None))
    for kidx, hit in hits:
        if tiles:
            sl = tuple(slice(ki, None, s) for ki, s in zip(kidx, stride))
            xp.multiply(grad, hit, out=res[every + sl])
            continue
        sl = _scatter_slices(kidx, (1,) * nd, out, stride, pad, shape[2:])
        if sl is not None:
            src = every + sl[0]
            res[every + sl[1]] += grad[src] * hit[src]
    return res


def _k_pool_max_gather(xp, head, data, out=None, **a):
    return into(xp, out, _pool_max_gather(xp, head, data, **a))


def _pool_max_gather(xp, head, data, **a):
    a.pop("cudnn_off")
    kernel, stride, pad, out = _pool_setup(data.shape, a["kernel"], "max", a["global_pool"], a["pooling_convention"],
                                           a["stride"], a["pad"], a["layout"])
    nd = len(kernel)
    win = _windows(xp, head, out, kernel, stride, (1,) * nd, pad)
    hits = _max_hits(xp, data, kernel, stride, pad, out)
    if hits is None:
        onehot = _max_onehot(xp, data, kernel, stride, pad, out)
        return (win * onehot).sum(axis=tuple(range(2 + nd, 2 + 2 * nd)))
    dtype = np.result_type(data.dtype, head.dtype)
    res = None
    for kidx, hit in hits:
        term = xp.multiply(win[(Ellipsis,) + kidx], hit, dtype=dtype)
        if res is None:
            res = term
        else:
            res += term
    return res


def _k_pool_lin_bwd(xp, grad, shape, out=None, **a):
    return into(xp, out, _pool_lin_bwd(xp, grad, shape, out, **a))


def _pool_lin_bwd(xp, grad, shape, dest, **a):
    """Adjoint of avg/sum pooling of an input with spatial size `shape`."""
    a.pop("cudnn_off")
    kernel, stride, pad, out = _pool_setup(grad.shape[:2] + tuple(shape), a["kernel"], a["pool_type"],
                                           a["global_pool"], a["pooling_convention"], a["stride"], a["pad"],
                                           a["layout"])
    if tuple(grad.shape[2:]) != tuple(out):
        raise ValueError(f"gradient shape {grad.shape} does not match the pooled shape {out}")
    check_shape(grad.shape[:2] + tuple(shape))
    nd = len(kernel)
    g = grad
    if a["pool_type"] == "avg":
        include = True if a["count_include_pad"] is None else a["count_include_pad"]
        g = g / _pool_count(xp, tuple(shape), kernel, stride, pad, out, include, grad.dtype)
    vals = xp.broadcast_to(g.reshape(g.shape + (1,) * nd), g.shape + tuple(kernel))
    return _scatter_windows(xp, vals, tuple(shape), kernel, stride, pad, out, dest).astype(grad.dtype, copy=False)


def _g_pooling(c, g):
    x = c.inputs[0]
    t = c.attrs["pool_type"]
    if t == "max":
        return (call("_pool_max_bwd", g, x, **c.attrs),)
    if t in ("avg", "sum"):
        return (call("_pool_lin_bwd", g, shape=x.shape[2:], **c.attrs),)
    p = 2 if c.attrs["p_value"] is None else c.attrs["p_value"]
    y = c.outputs[0]
    gs = g if p == 1 else g * y ** (1 - p)
    back = call("_pool_lin_bwd", gs, shape=x.shape[2:], **_pool_attrs(c, pool_type="sum"))
    return (back if p == 1 else back * x ** (p - 1),)


def _g_pool_lin_bwd(c, h):
    a = dict(c.attrs)
    a.pop("shape")
    return (call("Pooling", h, **a),)


def _ref_pool_max_bwd(g, x, **a):
    """Jacobian-vector product by perturbing each input element of max pooling (finite, exact for max)."""
    out = np.zeros(x.shape)
    base = _ref_pooling(x, **a)
    for i in range(x.size):
        e = x.astype(np.float64).copy()
        e.reshape(-1)[i] += 1e-3
        out.reshape(-1)[i] = ((_ref_pooling(e, **a) - base) * g).sum() / 1e-3
    return out


def _ref_pool_gather(h, x, **a):
    out = np.zeros(_ref_pooling(x, **a).shape)
    kernel, stride, pad, o = _pool_geometry(x.shape[2:], a["kernel"], "max", a.get("global_pool", False),
                                            a.get("pooling_convention", "valid"), a.get("stride", ()),
                                            a.get("pad", ()))
    for n in range(x.shape[0]):
        for ch in range(x.shape[1]):
            for pos in itertools.product(*(range(v) for v in o)):
                best, where = -np.inf, None
                for kidx in itertools.product(*(range(k) for k in kernel)):
                    q = tuple(pi * s - pp + ki for pi, s, pp, ki in zip(pos, stride, pad, kidx))
                    if all(0 <= qq < L for qq, L in zip(q, x.shape[2:])) and x[(n, ch) + q] > best:
                        best, where = x[(n, ch) + q], q
                out[(n, ch) + pos] = h[(n, ch) + where]
    return out


def _ref_pooling(x, kernel=(), pool_type="max", global_pool=False, cudnn_off=False, pooling_convention="valid",
                 stride=(), pad=(), p_value=None, count_include_pad=None, layout=None):
    """Loop reference: each output position scans its window directly."""
    x = x.astype(np.float64)
    kernel, stride, pad, out = _pool_geometry(x.shape[2:], kernel, pool_type, global_pool, pooling_convention,
                                              stride, pad)
    spatial = x.shape[2:]
    y = np.zeros(x.shape[:2] + out)
    include = True if count_include_pad is None else count_include_pad
    p = 2 if p_value is None else p_value
    for pos in itertools.product(*(range(v) for v in out)):
        vals, count = [], 0
        for kidx in itertools.product(*(range(k) for k in kernel)):
            q = tuple(pi * s - pp + ki for pi, s, pp, ki in zip(pos, stride, pad, kidx))
            inside = all(0 <= qq < L for qq, L in zip(q, spatial))
            in_pad = all(-pp <= qq < L + pp for qq, L, pp in zip(q, spatial, pad))
            if inside:
                vals.append(x[(slice(None), slice(None)) + q])
                count += 1
            elif in_pad and include:
                count += 1
        v = np.stack(vals, -1)
        idx = (slice(None), slice(None)) + pos
        if pool_type == "max":
            y[idx] = v.max(-1)
        elif pool_type == "sum":
            y[idx] = v.sum(-1)
        elif pool_type == "avg":
            y[idx] = v.sum(-1) / count
        else:
            y[idx] = (v ** p).sum(-1) ** (1.0 / p)
    return y


def _ref_pool_lin_bwd(g, shape, **a):
    n, c = g.shape[:2]
    x0 = np.zeros((n, c) + tuple(shape))
    out = np.zeros(x0.shape)
    for i in range(x0.size):
        e = x0.copy()
        e.reshape(-1)[i] = 1
        out.reshape(-1)[i] = (_ref_pooling(e, **a) * g).sum()
    return out


register(OpDef(
    name="Pooling", kernel=_k_pooling, attrs=_POOL_ATTRS, grad=_g_pooling, writes_out=True, infer=_pooling_infer,
    # MXNet 1.9.1's (oneDNN) max pooling records a hidden workspace output in -symbol.json files
    json_outputs=lambda a: 2 if a["pool_type"] == "max" and not a["global_pool"] else 1,
    test=OpTest(ref=_ref_pooling, domain=(0.2, 2.0), cases=(
        (((2, 2, 5, 5),), {"kernel": (2, 2), "stride": (2, 2)}),
        (((1, 2, 5, 5),), {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg"}),
        (((1, 2, 5, 5),), {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg",
                           "count_include_pad": False}),
        (((1, 1, 4, 4),), {"kernel": (3, 3), "stride": (2, 2), "pooling_convention": "full", "pool_type": "avg"}),
        (((1, 1, 6, 5),), {"kernel": (3, 2), "stride": (2, 2), "pooling_convention": "full"}),
        (((1, 2, 4, 4),), {"kernel": (2, 2), "stride": (2, 2), "pool_type": "sum"}),
        (((1, 2, 4, 4),), {"kernel": (2, 2), "stride": (2, 2), "pool_type": "lp", "p_value": 2}),
        (((1, 2, 4, 4),), {"kernel": (2, 2), "stride": (1, 1), "pool_type": "lp", "p_value": 3}),
        (((2, 3, 4, 3),), {"global_pool": True, "pool_type": "avg"}),
        (((2, 3, 4, 3),), {"global_pool": True, "kernel": (2, 2)}),
        (((1, 2, 7),), {"kernel": (3,), "stride": (2,), "pool_type": "max"}),
        (((1, 2, 7),), {"kernel": (3,), "stride": (2,), "pooling_convention": "same"}),
        (((1, 1, 4, 3, 4),), {"kernel": (2, 2, 2), "stride": (2, 1, 2), "pool_type": "avg"}),
    )),
    doc="Max/avg/sum/lp pooling, 1-3D. 'full' rounds the output size up; 'same' is ceil(L / stride) with "
        "TF-style centred padding (MXNet 1.9.1 documents it for 1-D max pooling but its kernel crashes). "
        "lp pooling is (sum x^p)^(1/p) without abs (MXNet)."))
register(OpDef(
    name="_pool_max_bwd", fast="_numba_kernels.max_pool_backward (ops/_conv_fast.py)",
    kernel=_k_pool_max_bwd, inputs=("grad", "data"), attrs=_POOL_ATTRS, hidden=True,
    writes_out=True, infer=_pool_max_bwd_infer,
    nondiff_inputs=(1,),
    grad=lambda c, h: (call("_pool_max_gather", h, c.inputs[1], **c.attrs), None),
    test=OpTest(ref=_ref_pool_max_bwd, domain=(0.2, 2.0), grad2=False, cases=(
        (((1, 2, 2, 2), (1, 2, 5, 5)), {"kernel": (2, 2), "stride": (2, 2)}),
        (((1, 1, 3, 3), (1, 1, 4, 5)), {"kernel": (3, 3), "stride": (2, 2), "pooling_convention": "full",
                                        "pad": (1, 1)})))))
register(OpDef(
    name="_pool_max_gather", kernel=_k_pool_max_gather, inputs=("head", "data"), attrs=_POOL_ATTRS, hidden=True,
    writes_out=True, infer=_pool_max_gather_infer,
    nondiff_inputs=(1,),
    grad=lambda c, g: (call("_pool_max_bwd", g, c.inputs[1], **c.attrs), None),
    test=OpTest(ref=_ref_pool_gather, domain=(0.2, 2.0), grad2=False, cases=(
        (((1, 2, 5, 5), (1, 2, 5, 5)), {"kernel": (2, 2), "stride": (2, 2)}),
        (((1, 1, 4, 5), (1, 1, 4, 5)), {"kernel": (3, 3), "stride": (2, 2), "pooling_convention": "full",
                                        "pad": (1, 1)})))))
register(OpDef(
    name="_pool_lin_bwd", kernel=_k_pool_lin_bwd, inputs=("grad",), hidden=True, writes_out=True,
    infer=_pool_lin_bwd_infer,
    attrs=dict(_POOL_ATTRS, shape=Attr(parse_shape, REQUIRED)), grad=_g_pool_lin_bwd,
    test=OpTest(ref=_ref_pool_lin_bwd, cases=(
        (((1, 2, 3, 3),), {"shape": (5, 5), "kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg",
                           "count_include_pad": False}),
        (((1, 1, 2, 2),), {"shape": (4, 4), "kernel": (3, 3), "stride": (2, 2), "pooling_convention": "full",
                           "pool_type": "avg"}),
        (((1, 1, 2, 2),), {"shape": (4, 4), "kernel": (2, 2), "stride": (2, 2), "pool_type": "sum"})))))


# ---------------------------------------------------------------------------------------------------------
# UpSampling: nearest (1..N inputs) or bilinear (data and weight: a depthwise Deconvolution, as MXNet does it)
def _up_scales(shapes, scale):
    for s in shapes:
        if len(s) != 4 or not s[2] or not s[3]:
            raise ValueError(f"UpSampling needs 4-D (N, C, H, W) inputs with H, W > 0, got {tuple(s)}")
    out = (shapes[0][2] * scale, shapes[0][3] * scale)
    scales = []
    for s in shapes:
        if out[0] % s[2] or out[1] % s[3] or out[0] // s[2] != out[1] // s[3]:
            raise ValueError(f"input of shape {s} cannot be scaled to the output size {out}")
        scales.append(out[0] // s[2])
    return scales


def _bilinear_deconv_attrs(scale, channels):
    """The Deconvolution MXNet runs for bilinear UpSampling: one filter per channel (num_group = channels), kernel
    2 * scale - scale % 2, stride scale, pad ceil((scale - 1) / 2), so the output is exactly scale times larger."""
    k, p = 2 * scale - scale % 2, -(-(scale - 1) // 2)
    return registry.get("Deconvolution").parse({"kernel": (k, k), "stride": (scale, scale), "pad": (p, p),
                                                "num_filter": channels, "num_group": channels, "no_bias": True})


def _bilinear_upsampling_shape(shapes, scale, num_filter):
    if len(shapes) != 2:
        raise ValueError(f"sample_type='bilinear' takes two inputs (data, weight), got {len(shapes)}")
    data, weight = (tuple(s) for s in shapes)
    if len(data) != 4:
        raise ValueError(f"data must be 4-D (N, C, H, W), got {data}")
    k = 2 * scale - scale % 2
    if weight != (data[1], 1, k, k):
        raise ValueError(f"weight must have shape (channels, 1, kernel, kernel) = {(data[1], 1, k, k)}, got {weight}")
    if num_filter != data[1]:
        raise ValueError(f"num_filter ({num_filter}) must equal the number of channels ({data[1]}) for bilinear "
                         "upsampling")
    return check_shape(data[:2] + (data[2] * scale, data[3] * scale))


def _upsampling_shape(shapes, scale, sample_type, multi_input_mode, num_args):
    """(each input's scale, the output shape) of nearest upsampling."""
    if len(shapes) != num_args:
        raise ValueError(f"num_args={num_args} but {len(shapes)} inputs were given")
    if scale < 1:
        raise ValueError(f"scale must be positive, got {scale}")
    scales = _up_scales(shapes, scale)
    ups = [tuple(s[:2]) + (s[2] * k, s[3] * k) for s, k in zip(shapes, scales)]
    if len(ups) > 1 and multi_input_mode == "sum":
        if any(u != ups[0] for u in ups):
            raise ValueError("number of channels must be the same when multi_input_mode='sum'")
        return scales, check_shape(ups[0])
    return scales, check_shape(ups[0][:1] + (sum(u[1] for u in ups),) + ups[0][2:])


def _k_upsampling(xp, *data, scale, num_filter, sample_type, multi_input_mode, num_args, workspace):
    if sample_type == "bilinear":
        _bilinear_upsampling_shape([d.shape for d in data], scale, num_filter)
        return _k_deconvolution(xp, *data, **_bilinear_deconv_attrs(scale, num_filter))
    scales, _ = _upsampling_shape([d.shape for d in data], scale, sample_type, multi_input_mode, num_args)
    ups = [d.repeat(s, axis=2).repeat(s, axis=3) for d, s in zip(data, scales)]
    if len(ups) == 1:
        return ups[0]
    if multi_input_mode == "sum":
        out = ups[0].copy()
        for u in ups[1:]:
            out += u
        return out
    return xp.concatenate(ups, axis=1)


def _g_upsampling(c, g):
    if c.attrs["sample_type"] == "bilinear":
        deconv = types.SimpleNamespace(inputs=c.inputs, attrs=_bilinear_deconv_attrs(c.attrs["scale"],
                                                                                      c.attrs["num_filter"]))
        return _g_deconvolution(deconv, g)
    scales = _up_scales([x.shape for x in c.inputs], c.attrs["scale"])
    grads, start = [], 0
    for x, s in zip(c.inputs, scales):
        if c.attrs["multi_input_mode"] == "sum" or len(c.inputs) == 1:
            part = g
        else:
            part = g[:, start:start + x.shape[1]]
            start += x.shape[1]
        grads.append(part if s == 1 else call("Pooling", part, kernel=(s, s), stride=(s, s), pool_type="sum"))
    return tuple(grads)


def _upsampling_infer(shapes, dtypes, scale, num_filter, sample_type, multi_input_mode, num_args, workspace):
    if sample_type == "bilinear":
        return [_bilinear_upsampling_shape(shapes, scale, num_filter)], [dtypes[0]]
    return [_upsampling_shape(shapes, scale, sample_type, multi_input_mode, num_args)[1]], [dtypes[0]]


def _ref_upsampling(*data, scale, sample_type, num_args=1, multi_input_mode="concat", **_):
    if sample_type == "bilinear":
        return _ref_deconvolution(*data, **_bilinear_deconv_attrs(scale, data[0].shape[1]))
    H = data[0].shape[2] * scale
    ups = [np.kron(d, np.ones((H // d.shape[2], H // d.shape[2]))) for d in data]
    return sum(ups) if multi_input_mode == "sum" else np.concatenate(ups, axis=1)


register(OpDef(
    name="UpSampling", kernel=_k_upsampling, inputs=("data",), variadic=True, grad=_g_upsampling,
    infer=_upsampling_infer,
    param_shapes=ParamShapes(lambda a, s: {1: (s[0][1], 1) + (2 * a["scale"] - a["scale"] % 2,) * 2}
                             if a["sample_type"] == "bilinear" and s[0] is not None else {}),
    attrs={"scale": Attr(parse_int, REQUIRED), "num_filter": Attr(parse_int, 0),
           "sample_type": Attr(choice("nearest", "bilinear"), REQUIRED),
           "multi_input_mode": Attr(choice("concat", "sum"), "concat"), "num_args": Attr(parse_int, 1),
           "workspace": Attr(parse_int, 512)},
    test=OpTest(ref=_ref_upsampling, cases=(
        (((1, 2, 2, 3),), {"scale": 2, "sample_type": "nearest"}),
        (((1, 1, 2, 2), (1, 2, 4, 4)), {"scale": 2, "sample_type": "nearest", "num_args": 2}),
        (((1, 2, 2, 2), (1, 2, 1, 1)), {"scale": 2, "sample_type": "nearest", "num_args": 2,
                                        "multi_input_mode": "sum"}),
        (((1, 2, 2, 3), (2, 1, 4, 4)), {"scale": 2, "sample_type": "bilinear", "num_filter": 2, "num_args": 2}),
        (((1, 1, 2, 2), (1, 1, 5, 5)), {"scale": 3, "sample_type": "bilinear", "num_filter": 1, "num_args": 2}),
    )),
    doc="Nearest-neighbour upsampling: several inputs are each scaled to the first input's size * scale and "
        "concatenated (or summed). Bilinear: data and a weight (channels, 1, k, k), k = 2 * scale - scale % 2, "
        "applied as a per-channel Deconvolution with stride scale (MXNet's definition; the weight is learnable)."))
