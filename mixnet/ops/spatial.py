"""Spatial sampling and image-layout ops: GridGenerator, BilinearSampler and SpatialTransformer (the three pieces
of a spatial transformer network), contrib.BilinearResize2D, contrib.AdaptiveAvgPooling2D, im2col and col2im.

Most of these are linear in their data, so each gradient is the adjoint map, declared as an op of its own whose
gradient is the forward map again (second-order gradients come for free):
* resizing and adaptive average pooling are separable, out = Mh @ x @ Mw.T with one small interpolation matrix
  per spatial axis; both run on the hidden `_resample2d`, whose `adjoint=True` form applies the transposes;
* im2col and col2im are each other's adjoint (MXNet says so too);
* an affine GridGenerator is a matrix product with the fixed target grid; `_backward_GridGenerator` is its adjoint.
The bilinear sampler is not linear in its grid: its gradient is the hidden op `_backward_BilinearSampler`
(MXNet's formulas, vectorised), which has no gradient of its own.
"""
import itertools
import math

import numpy as np

from .attrs import Attr, REQUIRED, choice, optional, parse_bool, parse_float, parse_int, parse_shape
from .common import call, check_shape
from .registry import OpDef, OpTest, register


def _float_dtype(dtype):
    return dtype if np.dtype(dtype).kind == "f" else np.dtype(np.float32)


def _need_4d(what, shape):
    if len(shape) != 4:
        raise ValueError(f"{what} must be 4-D (batch, channel, height, width), got shape {tuple(shape)}")


def _axis_step(size):
    """2 / (size - 1): the spacing of `size` points spread over [-1, 1]. A side of 1 gives NaN coordinates, as in
    MXNet (0 * inf)."""
    return np.divide(2.0, size - 1) if size > 1 else np.inf


# ---------------------------------------------------------------------------------------------------------
# GridGenerator: an affine matrix (N, 6) or an optical flow (N, 2, H, W) -> a sampling grid (N, 2, H, W) of
# normalized source coordinates (x in channel 0, y in channel 1, both in [-1, 1] inside the image)
def _grid_dst(height, width, dtype):
    """(3, H*W): each target pixel's normalized (x, y, 1), row-major (MXNet's layout)."""
    index = np.arange(height * width)
    x = -1.0 + (index % width) * _axis_step(width)
    y = -1.0 + (index // width) * _axis_step(height)
    return np.stack([x, y, np.ones(height * width)]).astype(dtype)


def _warp_scale(height, width, dtype):
    """(1, 2, 1, 1): pixels per normalized unit along x and y."""
    return np.array([(width - 1) / 2.0, (height - 1) / 2.0], dtype=dtype).reshape(1, 2, 1, 1)


def _grid_shape(shape, transform_type, target_shape):
    if transform_type == "affine":
        if len(shape) != 2 or shape[1] != 6:
            raise ValueError(f"an affine transform takes data of shape (batch, 6), got {tuple(shape)}")
        if len(target_shape) != 2 or min(target_shape) < 1:
            raise ValueError(f"target_shape must be (height, width) with both > 0, got {tuple(target_shape)}")
        return (shape[0], 2) + tuple(target_shape)
    if len(shape) != 4 or shape[1] != 2:
        raise ValueError(f"a warp transform takes an optical flow of shape (batch, 2, height, width), "
                         f"got {tuple(shape)}")
    return tuple(shape)


def _k_grid_generator(xp, data, transform_type, target_shape):
    shape = _grid_shape(data.shape, transform_type, target_shape)
    n, _, h, w = shape
    dtype = _float_dtype(data.dtype)
    if transform_type == "affine":
        grid = xp.matmul(data.reshape(n, 2, 3).astype(dtype, copy=False), xp.asarray(_grid_dst(h, w, dtype)))
        return grid.reshape(shape)
    base = np.stack(np.meshgrid(np.arange(w), np.arange(h))).astype(dtype)      # (2, H, W): pixel x, y
    return ((data + xp.asarray(base)) / xp.asarray(_warp_scale(h, w, dtype)) - 1).astype(dtype, copy=False)


def _g_grid_generator(c, g):
    return (call("_backward_GridGenerator", g, **c.attrs),)


def _k_grid_generator_adjoint(xp, grad, transform_type, target_shape):
    _need_4d("GridGenerator's output gradient", grad.shape)
    n, _, h, w = grad.shape
    if transform_type == "affine":
        dst = xp.asarray(_grid_dst(h, w, grad.dtype))
        return xp.matmul(grad.reshape(n, 2, h * w), dst.T).reshape(n, 6)
    return (grad / xp.asarray(_warp_scale(h, w, grad.dtype))).astype(grad.dtype, copy=False)


def _grid_adjoint_infer(shapes, dtypes, transform_type, target_shape):
    _need_4d("GridGenerator's output gradient", shapes[0])
    return [(shapes[0][0], 6) if transform_type == "affine" else tuple(shapes[0])], [dtypes[0]]


def _g_grid_generator_adjoint(c, g):
    a = c.attrs
    if a["transform_type"] == "affine":
        return (call("GridGenerator", g, transform_type="affine", target_shape=tuple(c.inputs[0].shape[2:])),)
    return (call("_backward_GridGenerator", g, **a),)


def _ref_grid_generator(data, transform_type, target_shape):
    if transform_type == "affine":
        h, w = target_shape
        ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
        theta = data.astype(np.float64).reshape(-1, 2, 3)
        return np.einsum("nij,jhw->nihw", theta, np.stack([xs, ys, np.ones_like(xs)]))
    h, w = data.shape[2:]
    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    return np.stack([(data[:, 0] + xs) * 2 / (w - 1) - 1, (data[:, 1] + ys) * 2 / (h - 1) - 1], axis=1)


_GRID_ATTRS = {"transform_type": Attr(choice("affine", "warp"), REQUIRED), "target_shape": Attr(parse_shape, (0, 0))}

register(OpDef(
    name="GridGenerator", kernel=_k_grid_generator, attrs=_GRID_ATTRS, grad=_g_grid_generator, json_outputs=2,
    infer=lambda shapes, dtypes, transform_type, target_shape: (
        [_grid_shape(shapes[0], transform_type, target_shape)], [dtypes[0]]),
    test=OpTest(ref=_ref_grid_generator, cases=(
        (((2, 6),), {"transform_type": "affine", "target_shape": (3, 4)}),
        (((1, 2, 3, 5),), {"transform_type": "warp"}),
    )),
    doc="A sampling grid for BilinearSampler: 'affine' maps the target grid (target_shape) through each (2, 3) "
        "matrix of data (batch, 6); 'warp' adds the optical flow data (batch, 2, H, W) to the pixel grid and "
        "normalizes to [-1, 1]."))
register(OpDef(
    name="_backward_GridGenerator", kernel=_k_grid_generator_adjoint, inputs=("grad",), attrs=_GRID_ATTRS,
    grad=_g_grid_generator_adjoint, hidden=True, infer=_grid_adjoint_infer,
    test=OpTest(ref=lambda g, transform_type, target_shape: _k_grid_generator_adjoint(
        np, g.astype(np.float64), transform_type, target_shape), cases=(
        (((2, 2, 3, 4),), {"transform_type": "affine", "target_shape": (3, 4)}),
        (((1, 2, 3, 5),), {"transform_type": "warp"}),
    )),
    doc="The adjoint of GridGenerator (its gradient)."))


# ---------------------------------------------------------------------------------------------------------
# BilinearSampler: out[n, c, i, j] = data[n, c] interpolated at grid[n, :, i, j]; points outside read zeros
_CORNERS = ((0, 0), (0, 1), (1, 0), (1, 1))      # (dy, dx): top-left, top-right, bottom-left, bottom-right


def _sampler_shape(data, grid):
    _need_4d("data", data)
    if len(grid) != 4 or grid[1] != 2 or grid[0] != data[0]:
        raise ValueError(f"grid must have shape (batch={data[0]}, 2, height, width), got {tuple(grid)}")
    return tuple(data[:2]) + tuple(grid[2:])


def _neighbours(xp, data, grid):
    """For each of the four neighbours of every sampling point: its value per channel (0 outside the image) as
    (N, C, Ho*Wo), and its bilinear weight as (N, 1, Ho*Wo); plus the fractional offsets (fy, fx) and the flat
    indices and in-image masks the backward pass scatters through."""
    n, c, h, w = data.shape
    x = ((grid[:, 0] + 1) * (w - 1) / 2).reshape(n, 1, -1)
    y = ((grid[:, 1] + 1) * (h - 1) / 2).reshape(n, 1, -1)
    x0, y0 = xp.floor(x), xp.floor(y)
    fx, fy = x - x0, y - y0
    # clipped before the cast so that huge or NaN coordinates stay out of the image without overflowing
    xi = xp.clip(xp.nan_to_num(x0, nan=-2.0), -2, w).astype(np.int64)
    yi = xp.clip(xp.nan_to_num(y0, nan=-2.0), -2, h).astype(np.int64)
    flat = data.reshape(n, c, h * w)
    corners = []
    for dy, dx in _CORNERS:
        cy, cx = yi + dy, xi + dx
        inside = (cy >= 0) & (cy < h) & (cx >= 0) & (cx < w)
        index = xp.where(inside, cy * w + cx, 0)
        value = xp.take_along_axis(flat, xp.broadcast_to(index, (n, c, index.shape[-1])), axis=2)
        value = xp.where(inside, value, 0).astype(data.dtype, copy=False)
        weight = (fy if dy else 1 - fy) * (fx if dx else 1 - fx)
        corners.append((value, weight, index, inside))
    return corners, fy, fx


def _k_bilinear_sampler(xp, data, grid, cudnn_off=None):
    out_shape = _sampler_shape(data.shape, grid.shape)
    corners, _, _ = _neighbours(xp, data, grid)
    out = sum(value * weight for value, weight, _, _ in corners)
    return out.reshape(out_shape).astype(data.dtype, copy=False)


def _k_bilinear_sampler_backward(xp, grad, data, grid):
    n, c, h, w = data.shape
    corners, fy, fx = _neighbours(xp, data, grid)
    g = grad.reshape(n, c, -1)
    # gradient of data: each output gradient, weighted, scattered back to the (in-image) neighbours it read
    offsets = (xp.arange(n * c) * (h * w)).reshape(n, c, 1)
    index = xp.concatenate([xp.broadcast_to(offsets + i, g.shape) for _, _, i, _ in corners], axis=2)
    contrib = xp.concatenate([g * (wt * inside) for _, wt, _, inside in corners], axis=2)
    gdata = xp.bincount(index.ravel(), weights=contrib.ravel(), minlength=n * c * h * w)
    # gradient of the grid: d out / d (fractional offset), through the pixel scale of each axis
    tl, tr, bl, br = (value for value, _, _, _ in corners)
    gy = (g * ((bl - tl) * (1 - fx) + (br - tr) * fx)).sum(axis=1)
    gx = (g * ((tr - tl) * (1 - fy) + (br - bl) * fy)).sum(axis=1)
    ggrid = xp.stack([gx * ((w - 1) / 2), gy * ((h - 1) / 2)], axis=1).reshape(grid.shape)
    return gdata.reshape(data.shape).astype(data.dtype, copy=False), ggrid.astype(grid.dtype, copy=False)


def _g_bilinear_sampler(c, g):
    return call("_backward_BilinearSampler", g, c.inputs[0], c.inputs[1])


def _ref_bilinear_sampler(data, grid, cudnn_off=None):
    """Point by point, straight from the definition."""
    n, c, h, w = data.shape
    out = np.zeros((n, c) + grid.shape[2:])
    for b, i, j in itertools.product(range(n), range(grid.shape[2]), range(grid.shape[3])):
        x = (grid[b, 0, i, j] + 1) * (w - 1) / 2
        y = (grid[b, 1, i, j] + 1) * (h - 1) / 2
        for py, px in itertools.product((math.floor(y), math.floor(y) + 1), (math.floor(x), math.floor(x) + 1)):
            if 0 <= py < h and 0 <= px < w:
                out[b, :, i, j] += data[b, :, py, px] * (1 - abs(y - py)) * (1 - abs(x - px))
    return out


register(OpDef(
    name="BilinearSampler", kernel=_k_bilinear_sampler, inputs=("data", "grid"), grad=_g_bilinear_sampler,
    attrs={"cudnn_off": Attr(optional(parse_bool), None)}, json_outputs=2,
    infer=lambda shapes, dtypes, cudnn_off: ([_sampler_shape(shapes[0], shapes[1])], [dtypes[0]]),
    test=OpTest(ref=_ref_bilinear_sampler, grad2=False, domain=(-1.3, 1.3), cases=(
        (((1, 2, 3, 4), (1, 2, 2, 3)), {}),
        (((2, 1, 4, 3), (2, 2, 3, 2)), {"cudnn_off": True}),
    )),
    doc="Samples data (N, C, H, W) at the normalized source coordinates of grid (N, 2, Ho, Wo) (x in channel 0, "
        "y in channel 1, -1..1 spanning the image) by bilinear interpolation; points outside read zeros. "
        "cudnn_off is accepted and ignored."))
def _ref_bilinear_sampler_backward(grad, data, grid):
    """Point by point: each neighbour's weight times the output gradient goes to the neighbour; the grid gets the
    derivative of the interpolated value along x and y (scaled from pixels to normalized units)."""
    n, c, h, w = data.shape
    gdata, ggrid = np.zeros(data.shape), np.zeros(grid.shape)
    for b, i, j in itertools.product(range(n), range(grid.shape[2]), range(grid.shape[3])):
        x = (grid[b, 0, i, j] + 1) * (w - 1) / 2
        y = (grid[b, 1, i, j] + 1) * (h - 1) / 2
        for py, px in itertools.product((math.floor(y), math.floor(y) + 1), (math.floor(x), math.floor(x) + 1)):
            if 0 <= py < h and 0 <= px < w:
                wy, wx = 1 - abs(y - py), 1 - abs(x - px)
                gdata[b, :, py, px] += grad[b, :, i, j] * wy * wx
                g_v = float((grad[b, :, i, j] * data[b, :, py, px]).sum())
                ggrid[b, 0, i, j] += g_v * wy * np.sign(px - x) * (w - 1) / 2
                ggrid[b, 1, i, j] += g_v * wx * np.sign(py - y) * (h - 1) / 2
    return gdata, ggrid


register(OpDef(
    name="_backward_BilinearSampler", kernel=_k_bilinear_sampler_backward, inputs=("grad", "data", "grid"),
    num_outputs=2, hidden=True,
    test=OpTest(ref=_ref_bilinear_sampler_backward, grad=False, grad2=False, domain=(-1.3, 1.3), rtol=1e-3,
                atol=1e-4, cases=((((1, 2, 2, 3), (1, 2, 3, 4), (1, 2, 2, 3)), {}),)),
    infer=lambda shapes, dtypes: ([tuple(shapes[1]), tuple(shapes[2])], [dtypes[1], dtypes[2]]),
    doc="The gradients of BilinearSampler's data and grid (no gradient of its own)."))


# ---------------------------------------------------------------------------------------------------------
# SpatialTransformer: GridGenerator(affine) then BilinearSampler, as one op (MXNet's name and attributes)
def _st_shape(data, loc, target_shape, transform_type, sampler_type):
    _need_4d("data", data)
    if len(loc) != 2 or loc[1] != 6 or loc[0] != data[0]:
        raise ValueError(f"loc must have shape (batch={data[0]}, 6), got {tuple(loc)}")
    return tuple(data[:2]) + _grid_shape(loc, transform_type, target_shape)[2:]


def _k_spatial_transformer(xp, data, loc, target_shape, transform_type, sampler_type, cudnn_off):
    _st_shape(data.shape, loc.shape, target_shape, transform_type, sampler_type)
    grid = _k_grid_generator(xp, loc, "affine", target_shape)
    return _k_bilinear_sampler(xp, data, grid)


def _g_spatial_transformer(c, g):
    data, loc = c.inputs
    target = c.attrs["target_shape"]
    grid = call("GridGenerator", loc, transform_type="affine", target_shape=target)
    gdata, ggrid = call("_backward_BilinearSampler", g, data, grid)
    return gdata, call("_backward_GridGenerator", ggrid, transform_type="affine", target_shape=target)


register(OpDef(
    name="SpatialTransformer", kernel=_k_spatial_transformer, inputs=("data", "loc"), grad=_g_spatial_transformer,
    json_outputs=3, attrs={
        "target_shape": Attr(parse_shape, (0, 0)), "transform_type": Attr(choice("affine"), REQUIRED),
        "sampler_type": Attr(choice("bilinear"), REQUIRED), "cudnn_off": Attr(optional(parse_bool), None)},
    infer=lambda shapes, dtypes, target_shape, transform_type, sampler_type, cudnn_off: (
        [_st_shape(shapes[0], shapes[1], target_shape, transform_type, sampler_type)], [dtypes[0]]),
    test=OpTest(ref=lambda data, loc, target_shape, **_: _ref_bilinear_sampler(
        data, _ref_grid_generator(loc, "affine", target_shape)), grad2=False, domain=(-1.0, 1.0), cases=(
        (((2, 2, 4, 5), (2, 6)), {"target_shape": (3, 3), "transform_type": "affine", "sampler_type": "bilinear"}),
    )),
    doc="Spatial transformer: each (2, 3) affine matrix of loc (batch, 6) maps the target grid (target_shape) to "
        "source points of data, sampled bilinearly (zeros outside)."))


# ---------------------------------------------------------------------------------------------------------
# separable linear resampling: contrib.BilinearResize2D and contrib.AdaptiveAvgPooling2D
def _bilinear_matrix(in_size, out_size, align_corners):
    """(out_size, in_size): MXNet's bilinear weights of each input pixel for each output pixel (computed in
    float32 as MXNet does; align_corners=False uses half-pixel centres clamped at 0)."""
    if out_size > 1:
        scale = np.float32((in_size - 1) / (out_size - 1) if align_corners else in_size / out_size)
    else:
        scale = np.float32(0)
    dst = np.arange(out_size, dtype=np.float32)
    src = scale * dst if align_corners else np.maximum(scale * (dst + np.float32(0.5)) - np.float32(0.5), 0)
    lo = src.astype(np.int64)
    frac = (src - lo).astype(np.float64)
    hi = lo + (lo < in_size - 1)
    m = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    np.add.at(m, (rows, lo), 1 - frac)
    np.add.at(m, (rows, hi), frac)
    return m


def _area_matrix(in_size, out_size):
    """(out_size, in_size): adaptive average pooling, output o averaging input [floor(o*in/out), ceil((o+1)*in/out))."""
    m = np.zeros((out_size, in_size))
    for o in range(out_size):
        start = math.floor(np.float32(o * in_size) / np.float32(out_size))
        end = math.ceil(np.float32((o + 1) * in_size) / np.float32(out_size))
        m[o, start:end] = 1.0 / (end - start)
    return m


def _resample_matrix(method, in_size, out_size, align_corners):
    if method == "area":
        return _area_matrix(in_size, out_size)
    return _bilinear_matrix(in_size, out_size, align_corners)


def _resample_infer(shapes, dtypes, method, in_size, out_size, align_corners, adjoint):
    _need_4d("data", shapes[0])
    given, made = (out_size, in_size) if adjoint else (in_size, out_size)
    if tuple(shapes[0][2:]) != tuple(given):
        raise ValueError(f"data's spatial size {tuple(shapes[0][2:])} is not {tuple(given)}")
    return [tuple(shapes[0][:2]) + tuple(made)], [dtypes[0]]


def _k_resample(xp, data, method, in_size, out_size, align_corners, adjoint):
    _resample_infer([data.shape], [data.dtype], method, in_size, out_size, align_corners, adjoint)
    dtype = _float_dtype(data.dtype)
    mh, mw = (_resample_matrix(method, i, o, align_corners).astype(dtype) for i, o in zip(in_size, out_size))
    if adjoint:
        mh, mw = mh.T, mw.T
    return xp.matmul(xp.matmul(xp.asarray(mh), data.astype(dtype, copy=False)), xp.asarray(mw.T))


def _g_resample(c, g):
    return (call("_resample2d", g, **{**c.attrs, "adjoint": not c.attrs["adjoint"]}),)


def _ref_resample(x, method, in_size, out_size, align_corners, adjoint):
    mh, mw = (_resample_matrix(method, i, o, align_corners) for i, o in zip(in_size, out_size))
    if adjoint:
        mh, mw = mh.T, mw.T
    return np.einsum("oh,nchw,pw->ncop", mh, x.astype(np.float64), mw)


register(OpDef(
    name="_resample2d", kernel=_k_resample, grad=_g_resample, hidden=True, infer=_resample_infer,
    attrs={"method": Attr(choice("bilinear", "area"), REQUIRED), "in_size": Attr(parse_shape, REQUIRED),
           "out_size": Attr(parse_shape, REQUIRED), "align_corners": Attr(parse_bool, True),
           "adjoint": Attr(parse_bool, False)},
    test=OpTest(ref=_ref_resample, cases=(
        (((1, 2, 3, 4),), {"method": "bilinear", "in_size": (3, 4), "out_size": (5, 2)}),
        (((1, 1, 5, 2),), {"method": "bilinear", "in_size": (3, 4), "out_size": (5, 2), "adjoint": True,
                           "align_corners": False}),
        (((2, 1, 5, 4),), {"method": "area", "in_size": (5, 4), "out_size": (3, 3)}),
    )),
    doc="out = Mh @ data @ Mw.T with the bilinear or area (adaptive average) matrices from in_size to out_size; "
        "adjoint=True applies the transposes (out_size to in_size)."))


def _positive_int(value):
    number = parse_int(value)
    if number < 1:
        raise ValueError(f"expected an integer >= 1, got {value!r}")
    return number


def _resize_size(shape, like, height, width, scale_height, scale_width, mode):
    """The (height, width) BilinearResize2D produces for data of `shape` (MXNet's modes)."""
    _need_4d("data", shape)
    h, w = shape[2:]
    if mode == "size":
        # MXNet lets scale_height's presence decide both sides; each scale decides its own side here
        return (int(scale_height * h) if scale_height is not None else height,
                int(scale_width * w) if scale_width is not None else width)
    if mode == "odd_scale":
        if scale_height is None or scale_width is None:
            raise ValueError("mode='odd_scale' needs scale_height and scale_width")
        return tuple(int(s * d) if d % 2 == 0 else int((d - 1) * s) + 1 for d, s in ((h, scale_height),
                                                                                       (w, scale_width)))
    if mode == "like":
        _need_4d("like", like)
        return tuple(like[2:])
    even = mode.startswith("to_even")
    step = 1 if mode.endswith("_up") else -1
    return tuple(d if (d % 2 == 0) == even else d + step for d in (h, w))


def _resize_infer(shapes, dtypes, height, width, scale_height, scale_width, mode, align_corners):
    size = _resize_size(shapes[0], shapes[1] if mode == "like" else None, height, width, scale_height,
                        scale_width, mode)
    if min(size) < 1:
        raise ValueError(f"the output size {size} has a side below 1")
    return [check_shape(tuple(shapes[0][:2]) + size)], [dtypes[0]]


def _k_resize(xp, data, like=None, *, height, width, scale_height, scale_width, mode, align_corners):
    shapes = [data.shape] + ([like.shape] if like is not None else [])
    (out_shape,), _ = _resize_infer(shapes, [data.dtype], height, width, scale_height, scale_width, mode, align_corners)
    return _k_resample(xp, data, "bilinear", data.shape[2:], out_shape[2:], align_corners, False)


def _g_resize(c, g):
    x = c.inputs[0]
    grad = call("_resample2d", g, method="bilinear", in_size=tuple(x.shape[2:]), out_size=tuple(g.shape[2:]),
                align_corners=c.attrs["align_corners"], adjoint=True)
    return (grad,) + (None,) * (len(c.inputs) - 1)


def _ref_resize(x, like=None, *, align_corners, **attrs):
    """Pixel by pixel with MXNet's formula (source index, its lower neighbour, the weight of the upper one)."""
    size = _resize_size(x.shape, None if like is None else like.shape, **attrs)
    out = np.zeros(x.shape[:2] + size)

    def source(i, n_in, n_out):
        if n_out <= 1:
            return 0, 0, 0.0
        s = i * (n_in - 1) / (n_out - 1) if align_corners else max((i + 0.5) * n_in / n_out - 0.5, 0.0)
        lo = int(s)
        return lo, lo + (lo < n_in - 1), s - lo

    for i, j in itertools.product(range(size[0]), range(size[1])):
        h0, h1, fh = source(i, x.shape[2], size[0])
        w0, w1, fw = source(j, x.shape[3], size[1])
        out[:, :, i, j] = ((1 - fh) * ((1 - fw) * x[:, :, h0, w0] + fw * x[:, :, h0, w1])
                           + fh * ((1 - fw) * x[:, :, h1, w0] + fw * x[:, :, h1, w1]))
    return out


register(OpDef(
    name="_contrib_BilinearResize2D", kernel=_k_resize, grad=_g_resize, nondiff_inputs=(1,),
    inputs=lambda a: ("data", "like") if a["mode"] == "like" else ("data",), infer=_resize_infer,
    attrs={"height": Attr(_positive_int, 1), "width": Attr(_positive_int, 1),
           "scale_height": Attr(optional(parse_float), None), "scale_width": Attr(optional(parse_float), None),
           "mode": Attr(choice("size", "odd_scale", "like", "to_even_down", "to_even_up", "to_odd_down",
                               "to_odd_up"), "size"),
           "align_corners": Attr(parse_bool, True)},
    test=OpTest(ref=_ref_resize, cases=(
        (((1, 2, 3, 4),), {"height": 5, "width": 7}),
        (((2, 1, 6, 5),), {"height": 4, "width": 2, "align_corners": False}),
        (((1, 1, 4, 4),), {"scale_height": 0.5, "scale_width": 1.5}),
        (((1, 1, 5, 4),), {"mode": "odd_scale", "scale_height": 2.0, "scale_width": 0.5}),
        (((1, 1, 5, 4),), {"mode": "to_odd_up"}),
        (((1, 2, 3, 4), (1, 1, 6, 2)), {"mode": "like"}),
    )),
    doc="Bilinear resize of NCHW data to (height, width), to scale_height/scale_width times its size, to the size "
        "of `like` (mode='like'), or by the odd_scale / to_even_* / to_odd_* rules; align_corners=False uses "
        "half-pixel centres."))


def _pool_size(output_size):
    """contrib.AdaptiveAvgPooling2D's output_size: () -> (1, 1), (k,) -> (k, k), (h, w)."""
    if len(output_size) > 2 or min(output_size, default=1) < 1:
        raise ValueError(f"output_size must be an int or (height, width) of positive ints, got {output_size}")
    return {0: (1, 1), 1: tuple(output_size) * 2, 2: tuple(output_size)}[len(output_size)]


def _adaptive_infer(shapes, dtypes, output_size):
    _need_4d("data", shapes[0])
    return [tuple(shapes[0][:2]) + _pool_size(output_size)], [dtypes[0]]


def _ref_adaptive(x, output_size):
    oh, ow = _pool_size(output_size)
    h, w = x.shape[2:]
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i, j in itertools.product(range(oh), range(ow)):
        rows = slice(i * h // oh, -(-(i + 1) * h // oh))
        cols = slice(j * w // ow, -(-(j + 1) * w // ow))
        out[:, :, i, j] = x[:, :, rows, cols].mean(axis=(2, 3))
    return out


def _k_adaptive(xp, data, output_size):
    _adaptive_infer([data.shape], [data.dtype], output_size)
    return _k_resample(xp, data, "area", data.shape[2:], _pool_size(output_size), True, False)


register(OpDef(
    name="_contrib_AdaptiveAvgPooling2D", kernel=_k_adaptive,
    grad=lambda c, g: (call("_resample2d", g, method="area", in_size=tuple(c.inputs[0].shape[2:]),
                            out_size=tuple(g.shape[2:]), adjoint=True),),
    attrs={"output_size": Attr(parse_shape, ())}, infer=_adaptive_infer,
    test=OpTest(ref=_ref_adaptive, cases=(
        (((1, 2, 5, 7),), {"output_size": (3, 2)}), (((2, 1, 4, 4),), {"output_size": 3}),
        (((1, 1, 3, 2),), {}), (((1, 1, 2, 3),), {"output_size": (4, 5)}),
    )),
    doc="Average pooling of NCHW data to output_size (an int or (height, width); default 1): output pixel i "
        "averages input rows floor(i*H/h) .. ceil((i+1)*H/h) - 1, and likewise for columns."))


# ---------------------------------------------------------------------------------------------------------
# im2col / col2im: sliding blocks of (N, C, *spatial) as columns (N, C * prod(kernel), blocks), and back (summed)
def _sliding(kernel, stride, dilate, pad):
    """(stride, dilate, pad) with MXNet's defaults (1, 1, 0 per axis) for a 1-, 2- or 3-D kernel."""
    nd = len(kernel)
    if nd not in (1, 2, 3):
        raise ValueError(f"kernel must have 1, 2 or 3 dimensions, got {tuple(kernel)}")
    out = []
    for name, value, default in (("stride", stride, 1), ("dilate", dilate, 1), ("pad", pad, 0)):
        value = tuple(value) or (default,) * nd
        if len(value) != nd:
            raise ValueError(f"{name} {value} must have as many dimensions as kernel {tuple(kernel)}")
        out.append(value)
    if min(kernel) < 1 or min(out[0]) < 1 or min(out[1]) < 1 or min(out[2]) < 0:
        raise ValueError(f"kernel, stride, dilate must be positive and pad non-negative, got kernel={kernel}, "
                         f"stride={out[0]}, dilate={out[1]}, pad={out[2]}")
    return out


def _blocks(spatial, kernel, stride, dilate, pad):
    """The number of block positions along each spatial axis."""
    counts = []
    for size, k, s, d, p in zip(spatial, kernel, stride, dilate, pad):
        span = d * (k - 1) + 1
        if span > size + 2 * p:
            raise ValueError(f"the dilated kernel ({span}) exceeds the padded size ({size + 2 * p})")
        counts.append((size + 2 * p - span) // s + 1)
    return tuple(counts)


def _block_slices(offset, counts, stride, dilate):
    """The strided slices of a padded image that kernel position `offset` reads, one per block."""
    return tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, n, s, d in zip(offset, counts, stride, dilate))


def _im2col_infer(shapes, dtypes, kernel, stride, dilate, pad):
    stride, dilate, pad = _sliding(kernel, stride, dilate, pad)
    shape = shapes[0]
    if len(shape) != len(kernel) + 2:
        raise ValueError(f"data must be {len(kernel) + 2}-D for a {len(kernel)}-D kernel, got {tuple(shape)}")
    counts = _blocks(shape[2:], kernel, stride, dilate, pad)
    return [(shape[0], shape[1] * math.prod(kernel), math.prod(counts))], [dtypes[0]]


def _k_im2col(xp, data, kernel, stride, dilate, pad):
    _im2col_infer([data.shape], [data.dtype], kernel, stride, dilate, pad)
    stride, dilate, pad = _sliding(kernel, stride, dilate, pad)
    counts = _blocks(data.shape[2:], kernel, stride, dilate, pad)
    padded = xp.pad(data, ((0, 0), (0, 0)) + tuple((p, p) for p in pad))
    cols = [padded[(slice(None), slice(None)) + _block_slices(off, counts, stride, dilate)]
            for off in itertools.product(*(range(k) for k in kernel))]
    n, c = data.shape[:2]
    return xp.stack(cols, axis=2).reshape(n, c * math.prod(kernel), math.prod(counts))


def _col2im_infer(shapes, dtypes, output_size, kernel, stride, dilate, pad):
    stride, dilate, pad = _sliding(kernel, stride, dilate, pad)
    if len(output_size) != len(kernel):
        raise ValueError(f"output_size {tuple(output_size)} must have as many dimensions as kernel {tuple(kernel)}")
    shape, k = shapes[0], math.prod(kernel)
    blocks = math.prod(_blocks(output_size, kernel, stride, dilate, pad))
    if len(shape) != 3 or shape[1] % k or shape[2] != blocks:
        raise ValueError(f"data must have shape (batch, channels * {k}, {blocks}) for this kernel and "
                         f"output_size, got {tuple(shape)}")
    return [(shape[0], shape[1] // k) + tuple(output_size)], [dtypes[0]]


def _k_col2im(xp, data, output_size, kernel, stride, dilate, pad):
    (out_shape,), _ = _col2im_infer([data.shape], [data.dtype], output_size, kernel, stride, dilate, pad)
    stride, dilate, pad = _sliding(kernel, stride, dilate, pad)
    counts = _blocks(output_size, kernel, stride, dilate, pad)
    n, c = out_shape[:2]
    cols = data.reshape((n, c, math.prod(kernel)) + counts)
    padded = xp.zeros((n, c) + tuple(s + 2 * p for s, p in zip(output_size, pad)), dtype=data.dtype)
    for i, off in enumerate(itertools.product(*(range(k) for k in kernel))):
        padded[(slice(None), slice(None)) + _block_slices(off, counts, stride, dilate)] += cols[:, :, i]
    return padded[(slice(None), slice(None)) + tuple(slice(p, p + s) for s, p in zip(output_size, pad))].copy()


def _ref_im2col(x, kernel, stride, dilate, pad):
    """Block by block: column b of the output is the flattened (channel, kernel) patch of block b."""
    stride, dilate, pad = _sliding(kernel, stride, dilate, pad)
    counts = _blocks(x.shape[2:], kernel, stride, dilate, pad)
    padded = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in pad))
    cols = []
    for block in itertools.product(*(range(n) for n in counts)):
        index = tuple(np.ix_(*(b * s + d * np.arange(k) for b, s, d, k in zip(block, stride, dilate, kernel))))
        cols.append(padded[(slice(None), slice(None)) + index].reshape(x.shape[0], -1))
    return np.stack(cols, axis=2)


_SLIDING_ATTRS = {"kernel": Attr(parse_shape, REQUIRED), "stride": Attr(parse_shape, ()),
                  "dilate": Attr(parse_shape, ()), "pad": Attr(parse_shape, ())}

register(OpDef(
    name="im2col", kernel=_k_im2col, attrs=_SLIDING_ATTRS, infer=_im2col_infer,
    grad=lambda c, g: (call("col2im", g, output_size=tuple(c.inputs[0].shape[2:]), **c.attrs),),
    test=OpTest(ref=_ref_im2col, cases=(
        (((2, 2, 4, 5),), {"kernel": (2, 3)}),
        (((1, 2, 5, 5),), {"kernel": (2, 2), "stride": (2, 1), "dilate": (2, 1), "pad": (1, 0)}),
        (((1, 1, 6),), {"kernel": (3,), "stride": (2,)}),
        (((1, 1, 3, 3, 3),), {"kernel": (2, 2, 2)}),
    )),
    doc="Sliding blocks of data (N, C, *spatial) as columns (N, C * prod(kernel), number of blocks), with "
        "Convolution's kernel/stride/dilate/pad (1-, 2- or 3-D)."))
register(OpDef(
    name="col2im", kernel=_k_col2im, attrs={"output_size": Attr(parse_shape, REQUIRED), **_SLIDING_ATTRS},
    infer=_col2im_infer,
    grad=lambda c, g: (call("im2col", g, **{k: v for k, v in c.attrs.items() if k != "output_size"}),),
    test=OpTest(ref=lambda x, output_size, **a: _ref_col2im(x, output_size, **a), cases=(
        (((2, 12, 4),), {"output_size": (3, 4), "kernel": (2, 3)}),
        (((1, 8, 12),), {"output_size": (5, 5), "kernel": (2, 2), "stride": (2, 1), "dilate": (2, 1),
                         "pad": (1, 0)}),
    )),
    doc="The adjoint of im2col: columns (N, C * prod(kernel), blocks) summed back into an image (N, C, "
        "*output_size); overlapping blocks add up."))


def _ref_col2im(cols, output_size, kernel, stride, dilate, pad):
    """col2im as the transpose of im2col's matrix, built one unit image at a time."""
    c = cols.shape[1] // math.prod(kernel)
    size = c * math.prod(output_size)
    basis = np.eye(size).reshape((size, c) + tuple(output_size))
    matrix = _ref_im2col(basis, kernel, stride, dilate, pad).reshape(size, -1)        # (pixels, col entries)
    return (cols.reshape(cols.shape[0], -1) @ matrix.T).reshape((cols.shape[0], c) + tuple(output_size))
