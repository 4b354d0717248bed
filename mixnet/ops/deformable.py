"""contrib.DeformableConvolution (Deformable ConvNets v1, MXNet's contrib/nn/deformable_im2col.h, CPU path): a 2-D
convolution whose kernel taps are displaced by learned per-position offsets.

offset is (N, num_deformable_group * 2 * kh * kw, Ho, Wo): for deformable group g and tap k = i * kw + j, channel
2k holds the row offset and 2k + 1 the column offset. Tap k of output (ho, wo) reads the input at
(ho * stride_h - pad_h + i * dilate_h + dy, wo * stride_w - pad_w + j * dilate_w + dx), bilinearly
interpolated; a point outside [0, H) x [0, W) reads 0, and on the last row/column the interpolation clamps to it
(MXNet's CPU im2col). The sampled columns then meet the weight as in a grouped convolution.

The kernel is numpy; the gradient (data, offset, weight, bias) replays the same computation written with mixnet
ops (floor and the edge tests are constants, take gathers), so every order of derivative exists.
"""
import numpy as np

from .attrs import REQUIRED, Attr, choice, optional, parse_bool, parse_int, parse_shape
from .common import call, conv_out_size
from .nn_norm import _replayed
from .registry import OpDef, OpTest, register

_ATTRS = {"kernel": Attr(parse_shape, REQUIRED), "stride": Attr(parse_shape, ()), "dilate": Attr(parse_shape, ()),
          "pad": Attr(parse_shape, ()), "num_filter": Attr(parse_int, REQUIRED), "num_group": Attr(parse_int, 1),
          "num_deformable_group": Attr(parse_int, 1), "workspace": Attr(parse_int, 1024),
          "no_bias": Attr(parse_bool, False), "layout": Attr(optional(choice("NCHW")), None)}


def _inputs(a):
    return ("data", "offset", "weight") if a["no_bias"] else ("data", "offset", "weight", "bias")


def _pair(value, default):
    value = tuple(value) or (default, default)
    if len(value) != 2:
        raise ValueError(f"DeformableConvolution is 2-d: expected 2 values, got {value}")
    return value


def _geometry(shapes, a):
    """(kernel, stride, dilate, pad, (Ho, Wo)) after MXNet's shape checks."""
    data, offset, weight = (tuple(s) for s in shapes[:3])
    kernel = _pair(a["kernel"], 1)
    stride, dilate, pad = _pair(a["stride"], 1), _pair(a["dilate"], 1), _pair(a["pad"], 0)
    if len(data) != 4:
        raise ValueError(f"data must be 4-d (NCHW), got shape {data}")
    n, c = data[:2]
    groups, dgroups, filters = a["num_group"], a["num_deformable_group"], a["num_filter"]
    if groups < 1 or dgroups < 1 or c % groups or c % dgroups or filters % groups:
        raise ValueError(f"channels ({c}) and num_filter ({filters}) must divide by num_group ({groups}), and "
                         f"channels by num_deformable_group ({dgroups})")
    out = tuple(conv_out_size(data[2 + i], kernel[i], stride[i], dilate[i], pad[i]) for i in range(2))
    if min(out) < 1:
        raise ValueError(f"the kernel {kernel} (dilate {dilate}) does not fit the padded input {data[2:]}")
    want = (n, dgroups * 2 * kernel[0] * kernel[1]) + out
    if offset != want:
        raise ValueError(f"offset must have shape (N, num_deformable_group * 2 * kh * kw, Ho, Wo) = {want}, got "
                         f"{offset}")
    if weight != (filters, c // groups) + kernel:
        raise ValueError(f"weight must have shape {(filters, c // groups) + kernel}, got {weight}")
    if not a["no_bias"] and tuple(shapes[3]) != (filters,):
        raise ValueError(f"bias must have shape ({filters},), got {tuple(shapes[3])}")
    return kernel, stride, dilate, pad, out


def _infer(shapes, dtypes, **a):
    _, _, _, _, out = _geometry(shapes, a)
    return [(shapes[0][0], a["num_filter"]) + out], [dtypes[0]]


def _taps(kernel, stride, dilate, pad, out, dtype):
    """The undisplaced sampling rows and columns, each (1, 1, K, L) with K = kh * kw taps, L = Ho * Wo."""
    i, j = np.divmod(np.arange(kernel[0] * kernel[1]), kernel[1])
    ho, wo = np.divmod(np.arange(out[0] * out[1]), out[1])
    rows = ho * stride[0] - pad[0] + i[:, None] * dilate[0]
    cols = wo * stride[1] - pad[1] + j[:, None] * dilate[1]
    return rows.astype(dtype)[None, None], cols.astype(dtype)[None, None]


def _columns(xp, data, offset, geometry, dg):
    """The sampled columns (N, C, K, L), computed by `xp` (numpy, or cupy on a GPU)."""
    kernel, stride, dilate, pad, out = geometry
    n, c, height, width = data.shape
    taps, length = kernel[0] * kernel[1], out[0] * out[1]
    off = offset.reshape(n, dg, taps, 2, length)
    rows, cols = (xp.asarray(t) for t in _taps(kernel, stride, dilate, pad, out, data.dtype))
    y, x = rows + off[:, :, :, 0], cols + off[:, :, :, 1]
    valid = (y >= 0) & (x >= 0) & (y < height) & (x < width)
    y0 = xp.clip(xp.floor(y), 0, height - 1).astype(np.int64)
    x0 = xp.clip(xp.floor(x), 0, width - 1).astype(np.int64)
    y_edge, x_edge = y0 >= height - 1, x0 >= width - 1
    ly = xp.where(y_edge, 0, y - y0).astype(data.dtype)
    lx = xp.where(x_edge, 0, x - x0).astype(data.dtype)
    y1, x1 = xp.where(y_edge, y0, y0 + 1), xp.where(x_edge, x0, x0 + 1)
    grouped = data.reshape(n, dg, c // dg, height * width)
    cols_out = 0
    for yy, xx, w in ((y0, x0, (1 - ly) * (1 - lx)), (y0, x1, (1 - ly) * lx), (y1, x0, ly * (1 - lx)),
                      (y1, x1, ly * lx)):
        pos = (yy * width + xx).reshape(n, dg, 1, taps * length)
        values = xp.take_along_axis(grouped, xp.broadcast_to(pos, grouped.shape[:3] + pos.shape[-1:]), axis=3)
        cols_out = cols_out + values.reshape(n, dg, c // dg, taps, length) * (w * valid)[:, :, None]
    return cols_out.reshape(n, c, taps, length)


def _kernel(xp, data, offset, weight, bias=None, **a):
    geometry = _geometry([data.shape, offset.shape, weight.shape] + ([] if bias is None else [bias.shape]), a)
    out = geometry[-1]
    cols = _columns(xp, data, offset, geometry, a["num_deformable_group"])
    n, c, taps, length = cols.shape
    groups, filters = a["num_group"], a["num_filter"]
    cols = cols.reshape(n, groups, c // groups * taps, length)
    w = weight.reshape(groups, filters // groups, c // groups * taps)
    result = xp.einsum("gfk,ngkl->ngfl", w, cols).reshape(n, filters, out[0], out[1])
    if bias is not None:
        result = result + bias.reshape(1, filters, 1, 1)
    return result.astype(data.dtype, copy=False)


def _composite(a, data, offset, weight, bias=None):
    from ..ndarray.ndarray import array  # lazy: ndarray sits above ops
    kernel, stride, dilate, pad, out = _geometry([data.shape, offset.shape, weight.shape]
                                                 + ([] if bias is None else [bias.shape]), a)
    n, c, height, width = data.shape
    dg, taps, length = a["num_deformable_group"], kernel[0] * kernel[1], out[0] * out[1]
    groups, filters = a["num_group"], a["num_filter"]
    ctx, dtype = data.context, data.dtype
    off = call("Reshape", offset, shape=(n, dg, taps, 2, length))
    rows, cols = (array(t, ctx=ctx, dtype=dtype) for t in _taps(kernel, stride, dilate, pad, out, dtype))
    y = call("broadcast_add", call("Reshape", call("slice_axis", off, axis=3, begin=0, end=1),
                                   shape=(n, dg, taps, length)), rows)
    x = call("broadcast_add", call("Reshape", call("slice_axis", off, axis=3, begin=1, end=2),
                                   shape=(n, dg, taps, length)), cols)
    valid = (call("_greater_equal_scalar", y, scalar=0) * call("_greater_equal_scalar", x, scalar=0)
             * call("_lesser_scalar", y, scalar=height) * call("_lesser_scalar", x, scalar=width))
    y0 = call("clip", call("floor", y), a_min=0, a_max=height - 1)
    x0 = call("clip", call("floor", x), a_min=0, a_max=width - 1)
    y_step = call("_lesser_scalar", y0, scalar=height - 1)      # 0 on the last row: no interpolation there
    x_step = call("_lesser_scalar", x0, scalar=width - 1)
    ly, lx = (y - y0) * y_step, (x - x0) * x_step
    base = array(((np.arange(n)[:, None, None] * dg + np.arange(dg)[:, None]) * (c // dg)
                  + np.arange(c // dg)).reshape(n, dg, c // dg, 1, 1) * (height * width), ctx=ctx, dtype=np.int64)
    flat = call("Reshape", data, shape=(-1,))
    columns = None
    for yy, xx, w in ((y0, x0, (1 - ly) * (1 - lx)), (y0, x0 + x_step, (1 - ly) * lx),
                      (y0 + y_step, x0, ly * (1 - lx)), (y0 + y_step, x0 + x_step, ly * lx)):
        pos = call("Cast", call("Reshape", yy * width + xx, shape=(n, dg, 1, taps, length)), dtype="int64")
        values = call("take", flat, call("broadcast_add", pos, base))
        term = call("broadcast_mul", values, call("Reshape", w * valid, shape=(n, dg, 1, taps, length)))
        columns = term if columns is None else columns + term
    # grouped convolution of the columns: (G, F/G, Cg*K) x (G, Cg*K, N*L)
    columns = call("transpose", call("Reshape", columns, shape=(n, groups, c // groups * taps, length)),
                   axes=(1, 2, 0, 3))
    columns = call("Reshape", columns, shape=(groups, c // groups * taps, n * length))
    result = call("batch_dot", call("Reshape", weight, shape=(groups, filters // groups, c // groups * taps)),
                  columns)
    result = call("transpose", call("Reshape", result, shape=(groups, filters // groups, n, length)),
                  axes=(2, 0, 1, 3))
    result = call("Reshape", result, shape=(n, filters) + out)
    if bias is not None:
        result = call("broadcast_add", result, call("Reshape", bias, shape=(1, filters, 1, 1)))
    return (result,)


def _ref(data, offset, weight, bias=None, **a):
    """Tap by tap, output by output, with MXNet's interpolation rule."""
    kernel, stride, dilate, pad, out = _geometry([data.shape, offset.shape, weight.shape]
                                                 + ([] if bias is None else [bias.shape]), a)
    n, c, height, width = data.shape
    groups, dg, filters = a["num_group"], a["num_deformable_group"], a["num_filter"]

    def sample(img, y, x):
        if not (0 <= y < height and 0 <= x < width):
            return 0.0
        y0, x0 = int(np.floor(y)), int(np.floor(x))
        y1, x1 = min(y0 + 1, height - 1), min(x0 + 1, width - 1)
        ly, lx = (y - y0 if y0 < height - 1 else 0.0), (x - x0 if x0 < width - 1 else 0.0)
        return ((1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1] + ly * (1 - lx) * img[y1, x0]
                + ly * lx * img[y1, x1])

    result = np.zeros((n, filters) + out)
    cg, fg = c // groups, filters // groups
    for b, f, ho, wo in np.ndindex(*result.shape):
        g = f // fg
        total = 0.0 if bias is None else float(bias[f])
        for ci, i, j in np.ndindex(cg, *kernel):
            ch = g * cg + ci
            k = 2 * (i * kernel[1] + j) + (ch // (c // dg)) * 2 * kernel[0] * kernel[1]
            y = ho * stride[0] - pad[0] + i * dilate[0] + offset[b, k, ho, wo]
            x = wo * stride[1] - pad[1] + j * dilate[1] + offset[b, k + 1, ho, wo]
            total += weight[f, ci, i, j] * sample(data[b, ch], y, x)
        result[b, f, ho, wo] = total
    return result


register(OpDef(
    name="_contrib_DeformableConvolution", kernel=_kernel, inputs=_inputs, attrs=_ATTRS, infer=_infer,
    grad=_replayed(_composite),
    test=OpTest(ref=_ref, domain=(-1.2, 1.2), grad_rtol=2e-2, cases=(
        (((1, 2, 4, 4), (1, 18, 4, 4), (2, 2, 3, 3), (2,)), {"kernel": (3, 3), "num_filter": 2, "pad": (1, 1)}),
        (((1, 4, 4, 5), (1, 16, 1, 2), (2, 2, 2, 2)), {"kernel": (2, 2), "num_filter": 2, "num_group": 2,
                                                      "num_deformable_group": 2, "stride": (2, 2),
                                                      "dilate": (2, 1), "no_bias": True}),
    )),
    doc="Deformable 2-d convolution: each kernel tap reads the input at its position plus a per-output offset "
        "(bilinear); otherwise a (grouped) Convolution."))
