"""Region-of-interest pooling (MXNet's ROIPooling, contrib.ROIAlign, contrib.PSROIPooling): fixed-size (pooled_h, pooled_w) features
of each box `rois[r] = [batch_index, x1, y1, x2, y2]` (image coordinates, times spatial_scale) of NCHW data.

Both are a *plan* applied to the data: every output element is a weighted sum of a few data elements,
out[r, c, ph, pw] = sum_s weight[r, ., ph, pw, s] * data.flat[index[r, c, ph, pw, s]]. ROIPooling's plan holds
each bin's argmax (weight 1; 0 for an empty bin or a batch index outside the data, whose output is 0), ROIAlign's
the four bilinear neighbours of each sampling point (weights / sample count), PSROIPooling's the cells of each
bin (weights 1 / bin area). The kernel gathers; the gradient
scatter-adds the head gradient along the same plan (`_backward_take`), to data only: the boxes get zeros, as in
MXNet (they are not declared non-differentiable, so graph inference gives them the data's dtype). Plans are computed on the host from the boxes (and, for ROIPooling, the data), in the data's dtype with
MXNet's operation order, so bin edges round as MXNet's do.
"""
import math

import numpy as np

from .attrs import REQUIRED, Attr, parse_bool, parse_float, parse_int, parse_shape
from .common import call
from .registry import OpDef, OpTest, register


def _host(xp, a):
    return a if xp is np else xp.asnumpy(a)


_BOX = {5: "[batch_index, x1, y1, x2, y2]", 6: "[batch_index, center_x, center_y, width, height, degrees]"}


def _check(shapes, pooled_size, spatial_scale, position_sensitive=False, box=5):
    """The output shape (R, C_out, ph, pw), after MXNet's checks."""
    data, rois = tuple(shapes[0]), tuple(shapes[1])
    if len(data) != 4:
        raise ValueError(f"data must be 4-d (NCHW), got shape {data}")
    if len(rois) != 2 or rois[1] != box:
        raise ValueError(f"rois must have shape (num_rois, {box}) of {_BOX[box]}, got {rois}")
    if len(pooled_size) != 2 or min(pooled_size) < 1:
        raise ValueError(f"pooled_size must be two positive integers (h, w), got {tuple(pooled_size)}")
    if not 0.0 <= spatial_scale <= 1.0:
        raise ValueError(f"spatial_scale must be in [0, 1], got {spatial_scale}")
    ph, pw = pooled_size
    channels = data[1]
    if position_sensitive:
        if channels % (ph * pw):
            raise ValueError(f"position_sensitive needs data channels ({channels}) divisible by pooled_h * "
                             f"pooled_w = {ph * pw}")
        channels //= ph * pw
    return (rois[0], channels, ph, pw)


def _batch_index(value, batch, r):
    b = int(value)              # C++'s float-to-int conversion truncates
    if b >= batch:
        raise ValueError(f"rois[{r}] has batch index {b}, but data holds {batch} images")
    return b


def _flat_index(b, channels_in, hw, pos, channel_in):
    """data.flat index of spatial positions `pos` (ph, pw, S) in channel(s) channel_in (C, ph, pw, 1) of image b."""
    return (b * channels_in + channel_in) * hw + pos[None]


# ---------------------------------------------------------------------------------------------------------
# ROIPooling: max over integer bins
def _round_half_away(x):
    """C's std::round (numpy rounds halves to even)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _roi_pool_plan(data, rois, pooled_size, spatial_scale):
    n, channels, height, width = data.shape
    ph_n, pw_n = pooled_size
    dt = data.dtype.type
    index = np.zeros((len(rois), channels, ph_n, pw_n, 1), np.int64)
    weight = np.zeros((len(rois), channels, ph_n, pw_n, 1), data.dtype)
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if not 0 <= b < n:          # MXNet's CPU kernel: a box outside the batch pools to 0
            continue
        start_w, start_h, end_w, end_h = (int(v) for v in _round_half_away(roi[1:] * roi.dtype.type(spatial_scale)))
        bin_h = dt(max(end_h - start_h + 1, 1)) / dt(ph_n)
        bin_w = dt(max(end_w - start_w + 1, 1)) / dt(pw_n)
        for ph in range(ph_n):
            hs = min(max(int(math.floor(dt(ph) * bin_h)) + start_h, 0), height)
            he = min(max(int(math.ceil(dt(ph + 1) * bin_h)) + start_h, 0), height)
            for pw in range(pw_n):
                ws = min(max(int(math.floor(dt(pw) * bin_w)) + start_w, 0), width)
                we = min(max(int(math.ceil(dt(pw + 1) * bin_w)) + start_w, 0), width)
                if he <= hs or we <= ws:
                    continue
                arg = data[b, :, hs:he, ws:we].reshape(channels, -1).argmax(axis=1)   # the first maximum
                pos = (hs + arg // (we - ws)) * width + ws + arg % (we - ws)
                index[r, :, ph, pw, 0] = (b * channels + np.arange(channels)) * height * width + pos
                weight[r, :, ph, pw, 0] = 1
    return index, weight


# ---------------------------------------------------------------------------------------------------------
# ROIAlign: the mean of bilinear samples on a regular grid in each bin
def _bilinear(y, x, height, width):
    """The four neighbours (positions y * width + x) and weights of each sampling point, as MXNet's
    bilinear_interpolate: points more than one pixel outside the map weigh 0, others are clamped to it."""
    dt = y.dtype.type
    outside = (y < -1.0) | (y > height) | (x < -1.0) | (x > width)
    y, x = np.maximum(y, dt(0)), np.maximum(x, dt(0))
    y_low, x_low = y.astype(np.int64), x.astype(np.int64)
    y_edge, x_edge = y_low >= height - 1, x_low >= width - 1
    y_low, x_low = np.where(y_edge, height - 1, y_low), np.where(x_edge, width - 1, x_low)
    y_high, x_high = np.where(y_edge, y_low, y_low + 1), np.where(x_edge, x_low, x_low + 1)
    ly = np.where(y_edge, dt(0), y - y_low.astype(y.dtype))
    lx = np.where(x_edge, dt(0), x - x_low.astype(x.dtype))
    hy, hx = dt(1) - ly, dt(1) - lx
    pos = np.stack([y_low * width + x_low, y_low * width + x_high, y_high * width + x_low,
                    y_high * width + x_high])
    weight = np.stack([hy * hx, hy * lx, ly * hx, ly * lx])
    return np.where(outside, 0, pos), np.where(outside, dt(0), weight)


def _roi_align_plan(data, rois, pooled_size, spatial_scale, sample_ratio, position_sensitive, aligned):
    n, channels_in, height, width = data.shape
    ph_n, pw_n = pooled_size
    channels = channels_in // (ph_n * pw_n) if position_sensitive else channels_in
    dt = data.dtype.type
    if position_sensitive:
        channel_in = (np.arange(channels)[:, None, None] * ph_n + np.arange(ph_n)[:, None]) * pw_n \
            + np.arange(pw_n)
    else:
        channel_in = np.broadcast_to(np.arange(channels)[:, None, None], (channels, ph_n, pw_n))
    plans = []
    for r, roi in enumerate(rois):
        b = _batch_index(roi[0], n, r)
        offset = dt(0.5) if aligned else dt(0)
        start_w, start_h, end_w, end_h = (roi[1:] * dt(spatial_scale) - offset).astype(data.dtype)
        roi_w, roi_h = end_w - start_w, end_h - start_h
        if aligned and (roi_w <= 0 or roi_h <= 0):
            raise ValueError(f"rois[{r}] has a non-positive width or height ({roi_w}, {roi_h}) with aligned=True")
        if not aligned:
            roi_w, roi_h = max(roi_w, dt(1)), max(roi_h, dt(1))
        bin_h, bin_w = roi_h / dt(ph_n), roi_w / dt(pw_n)
        grid_h = sample_ratio if sample_ratio > 0 else int(math.ceil(roi_h / dt(ph_n)))
        grid_w = sample_ratio if sample_ratio > 0 else int(math.ceil(roi_w / dt(pw_n)))
        if b < 0:                   # MXNet skips a negative batch index: no samples, output 0
            grid_h = grid_w = 0
        ys = start_h + np.arange(ph_n, dtype=data.dtype)[:, None] * bin_h \
            + (np.arange(grid_h, dtype=data.dtype) + dt(0.5)) * bin_h / dt(max(grid_h, 1))
        xs = start_w + np.arange(pw_n, dtype=data.dtype)[:, None] * bin_w \
            + (np.arange(grid_w, dtype=data.dtype) + dt(0.5)) * bin_w / dt(max(grid_w, 1))
        y = np.broadcast_to(ys[:, None, :, None], (ph_n, pw_n, grid_h, grid_w))
        x = np.broadcast_to(xs[None, :, None, :], (ph_n, pw_n, grid_h, grid_w))
        pos, weight = _bilinear(y, x, height, width)
        pos = np.moveaxis(pos, 0, -1).reshape(ph_n, pw_n, -1)
        weight = np.moveaxis(weight, 0, -1).reshape(ph_n, pw_n, -1) / dt(max(grid_h * grid_w, 1))
        plans.append((_flat_index(max(b, 0), channels_in, height * width, pos, channel_in[..., None]), weight))
    return _stack_plans(plans, channels, pooled_size, data.dtype)


def _rroi_align_plan(data, rois, pooled_size, spatial_scale, sampling_ratio):
    """RROIAlign: ROIAlign's sampling grid centred on the box and rotated by its angle (counter-clockwise in
    image coordinates, degrees), without aligned or position-sensitive variants."""
    n, channels, height, width = data.shape
    ph_n, pw_n = pooled_size
    dt = data.dtype.type
    channel_in = np.broadcast_to(np.arange(channels)[:, None, None, None], (channels, ph_n, pw_n, 1))
    plans = []
    for r, roi in enumerate(rois):
        b = _batch_index(roi[0], n, r)
        center_w, center_h, roi_w, roi_h = roi[1:5] * dt(spatial_scale)
        theta = dt(float(roi[5]) * math.pi / 180.0)
        roi_w, roi_h = max(roi_w, dt(1)), max(roi_h, dt(1))
        bin_h, bin_w = roi_h / dt(ph_n), roi_w / dt(pw_n)
        grid_h = sampling_ratio if sampling_ratio > 0 else int(math.ceil(roi_h / dt(ph_n)))
        grid_w = sampling_ratio if sampling_ratio > 0 else int(math.ceil(roi_w / dt(pw_n)))
        yy = -roi_h / dt(2) + np.arange(ph_n, dtype=data.dtype)[:, None] * bin_h \
            + (np.arange(grid_h, dtype=data.dtype) + dt(0.5)) * bin_h / dt(grid_h)
        xx = -roi_w / dt(2) + np.arange(pw_n, dtype=data.dtype)[:, None] * bin_w \
            + (np.arange(grid_w, dtype=data.dtype) + dt(0.5)) * bin_w / dt(grid_w)
        yy, xx = yy[:, None, :, None], xx[None, :, None, :]
        cos, sin = np.cos(theta), np.sin(theta)
        x = np.broadcast_to(xx * cos + yy * sin + center_w, (ph_n, pw_n, grid_h, grid_w))
        y = np.broadcast_to(yy * cos - xx * sin + center_h, (ph_n, pw_n, grid_h, grid_w))
        pos, weight = _bilinear(y.astype(data.dtype), x.astype(data.dtype), height, width)
        pos = np.moveaxis(pos, 0, -1).reshape(ph_n, pw_n, -1)
        weight = np.moveaxis(weight, 0, -1).reshape(ph_n, pw_n, -1) / dt(grid_h * grid_w)
        plans.append((_flat_index(b, channels, height * width, pos, channel_in), weight))
    return _stack_plans(plans, channels, pooled_size, data.dtype)


# ---------------------------------------------------------------------------------------------------------
# PSROIPooling (R-FCN): the mean of each bin, read from the bin's own channel group
def _group_size(a):
    return a["group_size"] or a["pooled_size"]


def _psroi_pool_plan(data, rois, spatial_scale, output_dim, pooled_size, group_size):
    n, channels_in, height, width = data.shape
    size, group = pooled_size, group_size or pooled_size
    dt = data.dtype.type
    scale = dt(spatial_scale)
    # the channel group of bin (ph, pw), as MXNet's floor(p * group / pooled) clamped to the group
    g = np.clip(np.floor(np.arange(size, dtype=data.dtype) * dt(group) / dt(size)).astype(np.int64), 0, group - 1)
    channel_in = (np.arange(output_dim)[:, None, None] * group + g[:, None]) * group + g
    plans = []
    for r, roi in enumerate(rois):
        b = _batch_index(roi[0], n, r)
        corners = _round_half_away(roi[1:]).astype(data.dtype)
        start_w, start_h = corners[0] * scale, corners[1] * scale
        end_w, end_h = (corners[2] + dt(1)) * scale, (corners[3] + dt(1)) * scale
        bin_h = max(end_h - start_h, dt(0.1)) / dt(size)
        bin_w = max(end_w - start_w, dt(0.1)) / dt(size)
        bins = {}
        for ph in range(size):
            hs = min(max(int(math.floor(dt(ph) * bin_h + start_h)), 0), height)
            he = min(max(int(math.ceil(dt(ph + 1) * bin_h + start_h)), 0), height)
            for pw in range(size):
                ws = min(max(int(math.floor(dt(pw) * bin_w + start_w)), 0), width)
                we = min(max(int(math.ceil(dt(pw + 1) * bin_w + start_w)), 0), width)
                bins[ph, pw] = (np.arange(hs, he)[:, None] * width + np.arange(ws, we)).reshape(-1)
        samples = max(len(v) for v in bins.values())
        pos = np.zeros((size, size, samples), np.int64)
        weight = np.zeros((size, size, samples), data.dtype)
        for (ph, pw), cells in bins.items():
            pos[ph, pw, :len(cells)] = cells
            weight[ph, pw, :len(cells)] = dt(1) / dt(max(len(cells), 1))      # an empty bin stays 0
        plans.append((_flat_index(max(b, 0), channels_in, height * width, pos, channel_in[..., None]),
                      weight if b >= 0 else np.zeros_like(weight)))
    return _stack_plans(plans, output_dim, (size, size), data.dtype)


def _stack_plans(plans, channels, pooled, dtype):
    """One (index, weight) plan for all boxes from each box's (index (C, ph, pw, S_r), weight (ph, pw, S_r)),
    padded to the largest S_r with weight 0."""
    samples = max([w.shape[-1] for _, w in plans], default=0)
    index = np.zeros((len(plans), channels) + tuple(pooled) + (samples,), np.int64)
    weight = np.zeros((len(plans), 1) + tuple(pooled) + (samples,), dtype)
    for r, (i, w) in enumerate(plans):
        index[r, ..., :i.shape[-1]] = i
        weight[r, 0, ..., :w.shape[-1]] = w
    return index, weight


# ---------------------------------------------------------------------------------------------------------
# the shared kernel and gradient of a plan
def _plan_kernel(plan, out_shape):
    def kernel(xp, data, rois, **attrs):
        shape = out_shape([data.shape, rois.shape], attrs)
        index, weight = plan(_host(xp, data), _host(xp, rois), **attrs)
        if not index.size:
            return xp.zeros(shape, data.dtype)
        out = (data.reshape(-1)[xp.asarray(index)] * xp.asarray(weight)).sum(axis=-1)
        return out.astype(data.dtype, copy=False).reshape(shape)
    return kernel


def _plan_grad(plan):
    def rule(c, g):
        from ..ndarray.ndarray import array  # lazy: ndarray sits above ops
        data, rois = c.inputs
        index, weight = plan(data.asnumpy(), rois.asnumpy(), **c.attrs)
        if not index.size:
            return (call("zeros_like", data), None)
        spread = call("broadcast_mul", call("Reshape", g, shape=g.shape + (1,)),
                      array(weight, ctx=data.context, dtype=weight.dtype))
        flat = call("_backward_take", spread, array(index, ctx=data.context, dtype=np.int64),
                    shape=(data.size,), axis=0, mode="clip")
        return (call("Reshape", flat, shape=data.shape), None)
    return rule


def _roi_pool_shape(shapes, a):
    return _check(shapes, a["pooled_size"], a["spatial_scale"])


def _roi_align_shape(shapes, a):
    return _check(shapes, a["pooled_size"], a["spatial_scale"], a["position_sensitive"])


def _rroi_align_shape(shapes, a):
    return _check(shapes, a["pooled_size"], a["spatial_scale"], box=6)


def _psroi_pool_shape(shapes, a):
    _check(shapes, (a["pooled_size"],) * 2, a["spatial_scale"])
    group = _group_size(a)
    if a["output_dim"] < 1 or group < 1:
        raise ValueError(f"output_dim and group_size must be positive, got {a['output_dim']} and {group}")
    if shapes[0][1] != a["output_dim"] * group * group:
        raise ValueError(f"data has {shapes[0][1]} channels, but output_dim * group_size^2 = "
                         f"{a['output_dim'] * group * group}")
    return (shapes[1][0], a["output_dim"], a["pooled_size"], a["pooled_size"])


def _infer(out_shape):
    def infer(shapes, dtypes, **attrs):
        if np.dtype(dtypes[0]) != np.dtype(dtypes[1]):
            raise ValueError(f"data and rois must have the same dtype, got {np.dtype(dtypes[0])} and "
                             f"{np.dtype(dtypes[1])}")
        return [out_shape(shapes, attrs)], [dtypes[0]]
    return infer


# ---------------------------------------------------------------------------------------------------------
# references: MXNet's loops, element by element
def _ref_roi_pool(data, rois, pooled_size, spatial_scale):
    out = np.zeros((len(rois), data.shape[1]) + tuple(pooled_size))
    dt = data.dtype.type
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if not 0 <= b < data.shape[0]:
            continue
        sw, sh, ew, eh = (int(v) for v in _round_half_away(roi[1:] * roi.dtype.type(spatial_scale)))
        bh, bw = dt(max(eh - sh + 1, 1)) / dt(pooled_size[0]), dt(max(ew - sw + 1, 1)) / dt(pooled_size[1])
        for c, ph, pw in np.ndindex(*out.shape[1:]):
            hs, he = (min(max(int(f(dt(p) * bh)) + sh, 0), data.shape[2]) for f, p in ((math.floor, ph),
                                                                                      (math.ceil, ph + 1)))
            ws, we = (min(max(int(f(dt(p) * bw)) + sw, 0), data.shape[3]) for f, p in ((math.floor, pw),
                                                                                      (math.ceil, pw + 1)))
            if he > hs and we > ws:
                out[r, c, ph, pw] = data[b, c, hs:he, ws:we].max()
    return out


def _ref_sample(img, y, x):
    """Bilinear interpolation of one point, MXNet's way (clamped to the map, 0 beyond one pixel outside)."""
    height, width = img.shape
    if y < -1 or y > height or x < -1 or x > width:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = min(int(y), height - 1), min(int(x), width - 1)
    y1, x1 = min(y0 + 1, height - 1), min(x0 + 1, width - 1)
    ly, lx = (y - y0 if y0 < height - 1 else 0.0), (x - x0 if x0 < width - 1 else 0.0)
    return ((1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1] + ly * (1 - lx) * img[y1, x0]
            + ly * lx * img[y1, x1])


def _ref_roi_align(data, rois, pooled_size, spatial_scale, sample_ratio, position_sensitive, aligned):
    ph_n, pw_n = pooled_size
    c_in = data.shape[1]
    out = np.zeros((len(rois), c_in // (ph_n * pw_n) if position_sensitive else c_in, ph_n, pw_n))
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if b < 0:
            continue
        off = 0.5 if aligned else 0.0
        sw, sh, ew, eh = roi[1:] * spatial_scale - off
        rw, rh = (ew - sw, eh - sh) if aligned else (max(ew - sw, 1.0), max(eh - sh, 1.0))
        gh = sample_ratio if sample_ratio > 0 else math.ceil(rh / ph_n)
        gw = sample_ratio if sample_ratio > 0 else math.ceil(rw / pw_n)
        for c, ph, pw in np.ndindex(*out.shape[1:]):
            ch = (c * ph_n + ph) * pw_n + pw if position_sensitive else c
            total = sum(_ref_sample(data[b, ch], sh + ph * rh / ph_n + (iy + 0.5) * rh / ph_n / gh,
                               sw + pw * rw / pw_n + (ix + 0.5) * rw / pw_n / gw)
                        for iy in range(gh) for ix in range(gw))
            out[r, c, ph, pw] = total / (gh * gw)
    return out


def _ref_psroi_pool(data, rois, spatial_scale, output_dim, pooled_size, group_size):
    size, group = pooled_size, group_size or pooled_size
    out = np.zeros((len(rois), output_dim, size, size))
    for r, roi in enumerate(rois):
        b = int(roi[0])
        x1, y1, x2, y2 = _round_half_away(roi[1:])
        sw, sh, ew, eh = x1 * spatial_scale, y1 * spatial_scale, (x2 + 1) * spatial_scale, (y2 + 1) * spatial_scale
        bh, bw = max(eh - sh, 0.1) / size, max(ew - sw, 0.1) / size
        for c, ph, pw in np.ndindex(*out.shape[1:]):
            hs, he = (min(max(int(f(p * bh + sh)), 0), data.shape[2]) for f, p in ((math.floor, ph),
                                                                                  (math.ceil, ph + 1)))
            ws, we = (min(max(int(f(p * bw + sw)), 0), data.shape[3]) for f, p in ((math.floor, pw),
                                                                                  (math.ceil, pw + 1)))
            gh, gw = min(ph * group // size, group - 1), min(pw * group // size, group - 1)
            if b >= 0 and he > hs and we > ws:
                out[r, c, ph, pw] = data[b, (c * group + gh) * group + gw, hs:he, ws:we].mean()
    return out


def _ref_rroi_align(data, rois, pooled_size, spatial_scale, sampling_ratio):
    ph_n, pw_n = pooled_size
    out = np.zeros((len(rois), data.shape[1], ph_n, pw_n))
    for r, roi in enumerate(rois):
        cx, cy, w, h = roi[1:5] * spatial_scale
        theta = roi[5] * math.pi / 180.0
        w, h = max(w, 1.0), max(h, 1.0)
        gh = sampling_ratio if sampling_ratio > 0 else math.ceil(h / ph_n)
        gw = sampling_ratio if sampling_ratio > 0 else math.ceil(w / pw_n)
        for ph, pw, iy, ix in np.ndindex(ph_n, pw_n, gh, gw):
            yy = -h / 2 + ph * h / ph_n + (iy + 0.5) * h / ph_n / gh
            xx = -w / 2 + pw * w / pw_n + (ix + 0.5) * w / pw_n / gw
            x = xx * math.cos(theta) + yy * math.sin(theta) + cx
            y = yy * math.cos(theta) - xx * math.sin(theta) + cy
            for c in range(data.shape[1]):
                out[r, c, ph, pw] += _ref_sample(data[int(roi[0]), c], y, x) / (gh * gw)
    return out


_POOL_ATTRS = {"pooled_size": Attr(parse_shape, REQUIRED), "spatial_scale": Attr(parse_float, REQUIRED)}
# boxes drawn as integers in [0, 3): a valid batch index for 3 images, corners inside a 5 x 6 map. The plans'
# gradients do not depend on the data (a fixed scatter for given boxes and argmaxes), so there is no second
# order to test (grad2=False).
_ROI_INPUTS = {1: (0, 3)}

register(OpDef(
    name="ROIPooling", kernel=_plan_kernel(_roi_pool_plan, _roi_pool_shape), inputs=("data", "rois"),
    attrs=_POOL_ATTRS, infer=_infer(_roi_pool_shape), grad=_plan_grad(_roi_pool_plan),
    json_outputs=2,
    test=OpTest(ref=_ref_roi_pool, int_inputs=_ROI_INPUTS, grad2=False, cases=(
        (((3, 2, 5, 6), (4, 5)), {"pooled_size": (2, 2), "spatial_scale": 1.0}),
        (((3, 1, 5, 6), (2, 5)), {"pooled_size": (3, 2), "spatial_scale": 0.5}),
    )),
    doc="Max pooling of each box [batch_index, x1, y1, x2, y2] (scaled by spatial_scale, rounded to pixels) "
        "into pooled_size bins; output (num_rois, C, pooled_h, pooled_w)."))

register(OpDef(
    name="_contrib_ROIAlign", kernel=_plan_kernel(_roi_align_plan, _roi_align_shape), inputs=("data", "rois"),
    attrs=dict(_POOL_ATTRS, sample_ratio=Attr(parse_int, -1), position_sensitive=Attr(parse_bool, False),
               aligned=Attr(parse_bool, False)),
    infer=_infer(_roi_align_shape), grad=_plan_grad(_roi_align_plan),
    test=OpTest(ref=_ref_roi_align, int_inputs=_ROI_INPUTS, grad2=False, cases=(
        (((3, 2, 5, 6), (3, 5)), {"pooled_size": (2, 2), "spatial_scale": 1.0}),
        (((3, 4, 5, 6), (2, 5)), {"pooled_size": (2, 2), "spatial_scale": 1.0, "sample_ratio": 2,
                                  "position_sensitive": True}),
        (((3, 1, 5, 6), (2, 5)), {"pooled_size": (1, 2), "spatial_scale": 0.75, "sample_ratio": 1}),
    )),
    doc="ROIAlign (Mask R-CNN): the mean of bilinear samples on a regular grid in each of the pooled_size bins "
        "of each box; position_sensitive reads bin (i, j) from its own channel group (R-FCN), aligned shifts "
        "the boxes by half a pixel."))

register(OpDef(
    name="_contrib_PSROIPooling", kernel=_plan_kernel(_psroi_pool_plan, _psroi_pool_shape), inputs=("data", "rois"),
    attrs={"spatial_scale": Attr(parse_float, REQUIRED), "output_dim": Attr(parse_int, REQUIRED),
           "pooled_size": Attr(parse_int, REQUIRED), "group_size": Attr(parse_int, 0)},
    infer=_infer(_psroi_pool_shape), grad=_plan_grad(_psroi_pool_plan),
    test=OpTest(ref=_ref_psroi_pool, int_inputs=_ROI_INPUTS, grad2=False, cases=(
        (((3, 8, 5, 6), (3, 5)), {"spatial_scale": 1.0, "output_dim": 2, "pooled_size": 2}),
        (((3, 4, 5, 6), (2, 5)), {"spatial_scale": 0.5, "output_dim": 1, "pooled_size": 3, "group_size": 2}),
    )),
    doc="Position-sensitive ROI pooling (R-FCN): the mean of bin (i, j) of each box, read from channel group "
        "(i, j) of output_dim * group_size^2 channels; output (num_rois, output_dim, pooled_size, pooled_size)."))

register(OpDef(
    name="_contrib_RROIAlign", kernel=_plan_kernel(_rroi_align_plan, _rroi_align_shape), inputs=("data", "rois"),
    attrs=dict(_POOL_ATTRS, sampling_ratio=Attr(parse_int, -1)), infer=_infer(_rroi_align_shape),
    grad=_plan_grad(_rroi_align_plan),
    test=OpTest(ref=_ref_rroi_align, int_inputs=_ROI_INPUTS, grad2=False, cases=(
        (((3, 2, 5, 6), (2, 6)), {"pooled_size": (2, 2), "spatial_scale": 1.0}),
        (((3, 1, 5, 6), (2, 6)), {"pooled_size": (1, 2), "spatial_scale": 1.0, "sampling_ratio": 2}),
    )),
    doc="Rotated ROIAlign: boxes [batch_index, center_x, center_y, width, height, degrees]; the bilinear "
        "sampling grid of each bin is rotated about the box centre. (MXNet has no backward for it; mixnet's "
        "gradient scatters along the same samples.)"))
