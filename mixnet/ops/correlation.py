"""Correlation (FlowNet's correlation layer, MXNet's src/operator/correlation*): patch comparisons between two
NCHW feature maps.

For output position (i, j) the patch of data1 starts at (y1, x1) = (i, j) * stride1 + max_displacement in the
zero-padded maps (MXNet's CPU kernel puts the patch's top-left corner there, not its centre), and output channel
q compares it with the patch of data2 displaced by (dy, dx) = (q // grid - r, q % grid - r) * stride2, where
r = max_displacement // stride2 and grid = 2r + 1. The comparison is sum(a * b) (is_multiply) or sum(|a - b|)
over the kernel_size^2 patch and all channels, divided by kernel_size^2 * channels.

The kernel runs one vectorised product per displacement; the gradient replays the same computation written with
mixnet ops (pad, slice, sum, sum-pooling, concat), so every order of derivative exists. |a - b| is written
(a - b) * s with s = +1 where a >= b, -1 elsewhere (s not differentiated), so a tie gives data1 +1 and data2 -1,
as MXNet's backward does.
"""
import math
from typing import NamedTuple

import numpy as np

from .attrs import Attr, parse_bool, parse_int
from .common import call
from .nn_norm import _replayed
from .registry import OpDef, OpTest, register

_ATTRS = {"kernel_size": Attr(parse_int, 1), "max_displacement": Attr(parse_int, 1), "stride1": Attr(parse_int, 1),
          "stride2": Attr(parse_int, 1), "pad_size": Attr(parse_int, 0), "is_multiply": Attr(parse_bool, True)}


class _Geometry(NamedTuple):
    top_h: int          # output height and width
    top_w: int
    radius: int         # neighbourhood radius in units of stride2
    span_h: int         # rows and columns of the padded maps the patches of data1 cover
    span_w: int


def _geometry(shape1, shape2, kernel_size, max_displacement, stride1, stride2, pad_size):
    if len(shape1) != 4 or len(shape2) != 4:
        raise ValueError(f"data1 and data2 must be 4-d (NCHW), got shapes {tuple(shape1)} and {tuple(shape2)}")
    if tuple(shape1) != tuple(shape2):
        raise ValueError(f"data1 and data2 must have the same shape, got {tuple(shape1)} and {tuple(shape2)}")
    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be a positive odd number, got {kernel_size}")
    if stride1 < 1 or stride2 < 1 or max_displacement < 0 or pad_size < 0:
        raise ValueError(f"stride1, stride2 must be >= 1 and max_displacement, pad_size >= 0, got stride1={stride1}, "
                         f"stride2={stride2}, max_displacement={max_displacement}, pad_size={pad_size}")
    border = max_displacement + (kernel_size - 1) // 2
    top_h = math.ceil((shape1[2] + 2 * pad_size - 2 * border) / stride1)
    top_w = math.ceil((shape1[3] + 2 * pad_size - 2 * border) / stride1)
    if top_h < 1 or top_w < 1:
        raise ValueError(f"the neighbourhood (max_displacement {max_displacement}) and kernel (kernel_size "
                         f"{kernel_size}) do not fit in a {shape1[2]}x{shape1[3]} map padded by {pad_size}")
    return _Geometry(top_h, top_w, max_displacement // stride2, (top_h - 1) * stride1 + kernel_size,
                     (top_w - 1) * stride1 + kernel_size)


def _displacements(g, stride2):
    """(dy, dx) of each output channel, in MXNet's channel order."""
    grid = 2 * g.radius + 1
    return [((q // grid - g.radius) * stride2, (q % grid - g.radius) * stride2) for q in range(grid * grid)]


def _infer(shapes, dtypes, kernel_size, max_displacement, stride1, stride2, pad_size, is_multiply):
    g = _geometry(shapes[0], shapes[1], kernel_size, max_displacement, stride1, stride2, pad_size)
    grid = 2 * g.radius + 1
    return [(shapes[0][0], grid * grid, g.top_h, g.top_w)], [dtypes[0]]


def _kernel(xp, data1, data2, kernel_size, max_displacement, stride1, stride2, pad_size, is_multiply):
    g = _geometry(data1.shape, data2.shape, kernel_size, max_displacement, stride1, stride2, pad_size)
    pad = ((0, 0), (0, 0), (pad_size, pad_size), (pad_size, pad_size))
    p1, p2 = xp.pad(data1, pad), xp.pad(data2, pad)
    md, ks = max_displacement, kernel_size
    a = p1[:, :, md:md + g.span_h, md:md + g.span_w]
    outs = []
    for dy, dx in _displacements(g, stride2):
        b = p2[:, :, md + dy:md + dy + g.span_h, md + dx:md + dx + g.span_w]
        m = (a * b if is_multiply else xp.abs(a - b)).sum(axis=1)
        # the kernel_size^2 box sums at stride1 (a cumulative-sum table: four lookups per output)
        table = xp.pad(m.cumsum(axis=1).cumsum(axis=2), ((0, 0), (1, 0), (1, 0)))
        top, left = slice(0, g.span_h - ks + 1, stride1), slice(0, g.span_w - ks + 1, stride1)
        bottom, right = slice(ks, g.span_h + 1, stride1), slice(ks, g.span_w + 1, stride1)
        outs.append(table[:, bottom, right] - table[:, top, right] - table[:, bottom, left] + table[:, top, left])
    out = xp.stack(outs, axis=1) / (ks * ks * data1.shape[1])
    return out.astype(data1.dtype, copy=False)


def _composite(a, data1, data2):
    ks, md, s1, p = a["kernel_size"], a["max_displacement"], a["stride1"], a["pad_size"]
    g = _geometry(data1.shape, data2.shape, ks, md, s1, a["stride2"], p)
    pad = dict(mode="constant", pad_width=(0, 0, 0, 0, p, p, p, p))
    p1, p2 = call("Pad", data1, **pad), call("Pad", data2, **pad)

    def window(x, dy, dx):
        return call("slice", x, begin=(None, None, md + dy, md + dx), end=(None, None, md + dy + g.span_h,
                                                                            md + dx + g.span_w))
    first = window(p1, 0, 0)
    outs = []
    for dy, dx in _displacements(g, a["stride2"]):
        second = window(p2, dy, dx)
        if a["is_multiply"]:
            m = first * second
        else:
            diff = first - second
            m = diff * (call("broadcast_greater_equal", first, second) * 2.0 - 1.0)
        m = call("sum", m, axis=1, keepdims=True)
        outs.append(call("Pooling", m, kernel=(ks, ks), stride=(s1, s1), pool_type="sum"))
    out = outs[0] if len(outs) == 1 else call("Concat", *outs, dim=1)
    return (out * (1.0 / (ks * ks * data1.shape[1])),)


def _ref(data1, data2, kernel_size, max_displacement, stride1, stride2, pad_size, is_multiply):
    """MXNet's loops, position by position."""
    g = _geometry(data1.shape, data2.shape, kernel_size, max_displacement, stride1, stride2, pad_size)
    pad = ((0, 0), (0, 0), (pad_size, pad_size), (pad_size, pad_size))
    p1, p2 = np.pad(data1.astype(np.float64), pad), np.pad(data2.astype(np.float64), pad)
    shifts = _displacements(g, stride2)
    out = np.zeros((data1.shape[0], len(shifts), g.top_h, g.top_w))
    for i in range(g.top_h):
        for j in range(g.top_w):
            y1, x1 = i * stride1 + max_displacement, j * stride1 + max_displacement
            for q, (dy, dx) in enumerate(shifts):
                a = p1[:, :, y1:y1 + kernel_size, x1:x1 + kernel_size]
                b = p2[:, :, y1 + dy:y1 + dy + kernel_size, x1 + dx:x1 + dx + kernel_size]
                out[:, q, i, j] = (a * b if is_multiply else np.abs(a - b)).sum(axis=(1, 2, 3))
    return out / (kernel_size ** 2 * data1.shape[1])


register(OpDef(
    name="Correlation", kernel=_kernel, inputs=("data1", "data2"), attrs=_ATTRS, infer=_infer,
    grad=_replayed(_composite), json_outputs=3,
    test=OpTest(ref=_ref, cases=(
        (((1, 2, 4, 4), (1, 2, 4, 4)), {"max_displacement": 1, "pad_size": 1}),
        (((2, 1, 5, 4), (2, 1, 5, 4)), {"kernel_size": 3, "max_displacement": 1, "stride1": 2, "pad_size": 2,
                                        "is_multiply": False}),
        (((1, 1, 5, 5), (1, 1, 5, 5)), {"max_displacement": 2, "stride2": 2, "pad_size": 1}),
    )),
    doc="Correlation of two NCHW maps: for each position, the patch products (is_multiply) or absolute "
        "differences with data2's patches in a (2 * max_displacement / stride2 + 1)^2 neighbourhood, one output "
        "channel per displacement, averaged over the patch and channels."))
