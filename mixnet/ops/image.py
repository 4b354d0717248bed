"""Image operators: MXNet 1.x's `_image_*` family (reached as `nd.image.*` / `sym.image.*`) and `_cvimresize`
(what `mx.image.imresize` calls).

Images are HWC (or NHWC batches); `to_tensor` turns them into CHW float32 in [0, 1] and `normalize` works on CHW /
NCHW tensors. Kernels compute on the host in float32, as MXNet's CPU kernels do, and write back with MXNet's
`saturate_cast`: uint8 results are clamped to [0, 255] and truncated, other dtypes are cast.

Resizing follows OpenCV's conventions (which MXNet used): bilinear samples at half-pixel centres, clamped at the
borders; nearest takes ``floor(dst * src_size / dst_size)``. Float images match MXNet to float rounding; uint8
images follow OpenCV's fixed-point arithmetic. Interpolation codes other than 0 (nearest) and 1 (bilinear) — area,
bicubic, Lanczos — fall back to bilinear with a warning.

Gradients: `crop`, `normalize`, `to_tensor` and the deterministic flips have their true gradients. The colour and
lighting augmentations pass the output gradient through unchanged, as MXNet's `_copy` rule does. `resize` and the
random flips have none (MXNet's `_copy` rule gives a gradient of the wrong shape for resize, and one that ignores
the flip for the random flips).
"""

import numpy as np

from .._source import warn
from .attrs import Attr, REQUIRED, parse_bool, parse_float, parse_float_tuple, parse_int, parse_shape
from .common import call, infer_same
from .registry import OpDef, OpTest, register

_F32 = np.dtype(np.float32)


def _host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _back(xp, a):
    return a if xp is np else xp.asarray(a)


def _saturate(values, dtype):
    """MXNet's saturate_cast from float: uint8 clamps to [0, 255] then truncates; other dtypes are cast."""
    dtype = np.dtype(dtype)
    if dtype == np.uint8:
        values = np.clip(values, 0.0, 255.0)
    return values.astype(dtype)


def _check_ndim(shape, ndims, what):
    if len(shape) not in ndims:
        want = " or ".join(str(n) for n in ndims)
        raise ValueError(f"{what}: expected {want} dimensions, got shape {tuple(shape)}")


def _check_channels(shape, what):
    if shape[-1] not in (1, 3):
        raise ValueError(f"{what}: the last axis of an HWC image holds 1 or 3 channels, got shape {tuple(shape)}")


# ---------------------------------------------------------------------------------------------------------
# to_tensor: HWC [0, 255] -> CHW float32 [0, 1]
def _to_tensor_infer(shapes, dtypes):
    s = tuple(shapes[0])
    _check_ndim(s, (3, 4), "to_tensor: input must be HWC or NHWC")
    out = (s[2], s[0], s[1]) if len(s) == 3 else (s[0], s[3], s[1], s[2])
    return [out], [_F32]


def _ref_to_tensor(x):
    return np.moveaxis(x.astype(np.float32) / np.float32(255.0), -1, -3)


def _to_tensor(xp, x):
    _to_tensor_infer([x.shape], [x.dtype])
    return xp.ascontiguousarray(xp.moveaxis(x.astype(np.float32) / np.float32(255.0), -1, -3))


def _to_tensor_grad(ctx, g):
    x = ctx.inputs[0]
    axes = (1, 2, 0) if x.ndim == 3 else (0, 2, 3, 1)
    return ((g.transpose(axes=axes) / 255.0).astype(x.dtype),)


register(OpDef(
    name="_image_to_tensor", kernel=_to_tensor, infer=_to_tensor_infer, grad=_to_tensor_grad,
    test=OpTest(ref=_ref_to_tensor, cases=((((4, 5, 3),), {}), (((2, 3, 4, 1),), {}))),
    doc="An HWC image (or NHWC batch) with values in [0, 255] as a CHW (NCHW) float32 tensor in [0, 1]."))


# ---------------------------------------------------------------------------------------------------------
# normalize: (x - mean) / std per channel of CHW / NCHW
_NORM_ATTRS = {"mean": Attr(parse_float_tuple, (0.0,)), "std": Attr(parse_float_tuple, (1.0,))}


def _norm_infer(shapes, dtypes, mean, std):
    s = tuple(shapes[0])
    _check_ndim(s, (3, 4), "normalize: input must be CHW or NCHW")
    channels = s[-3]
    if channels not in (1, 3):
        raise ValueError(f"normalize: the channel axis holds 1 or 3 channels, got shape {s}")
    for name, values in (("mean", mean), ("std", std)):
        if len(values) not in (1, channels):
            raise ValueError(f"normalize: {name} has {len(values)} values but the input has {channels} channels")
    return [s], [dtypes[0]]


def _per_channel(values, channels, dtype):
    return np.broadcast_to(np.asarray(values, dtype=dtype), (channels,)).reshape(channels, 1, 1)


def _work_dtype(dtype):
    return np.dtype(np.float64) if dtype == np.float64 else _F32


def _ref_normalize(x, mean, std):
    c = x.shape[-3]
    return (x - _per_channel(mean, c, np.float64)) / _per_channel(std, c, np.float64)


def _normalize(xp, x, mean, std):
    _norm_infer([x.shape], [x.dtype], mean, std)
    work = _work_dtype(x.dtype)
    a = _host(x).astype(work)
    out = (a - _per_channel(mean, x.shape[-3], work)) / _per_channel(std, x.shape[-3], work)
    return _back(xp, out.astype(x.dtype))


def _normalize_backward(xp, g, mean, std):
    work = _work_dtype(g.dtype)
    out = _host(g).astype(work) / _per_channel(std, g.shape[-3], work)
    return _back(xp, out.astype(g.dtype))


def _normalize_grad(ctx, g):
    return (call("_backward_image_normalize", g, **ctx.attrs),)


register(OpDef(
    name="_image_normalize", kernel=_normalize, attrs=_NORM_ATTRS, infer=_norm_infer, grad=_normalize_grad,
    test=OpTest(ref=_ref_normalize, cases=((((3, 4, 5),), {"mean": (0.1, 0.2, 0.3), "std": (1.0, 2.0, 0.5)}),
                                           (((2, 1, 3, 2),), {"mean": 0.5, "std": 2.0}))),
    doc="(data - mean) / std per channel of a CHW tensor or NCHW batch; mean/std hold 1 or C values."))

register(OpDef(
    name="_backward_image_normalize", kernel=_normalize_backward, inputs=("out_grad",), attrs=_NORM_ATTRS,
    infer=_norm_infer, grad=_normalize_grad, hidden=True,
    test=OpTest(ref=lambda g, mean, std: g / _per_channel(std, g.shape[-3], np.float64),
                cases=((((3, 4, 5),), {"mean": (0.1, 0.2, 0.3), "std": (1.0, 2.0, 0.5)}),)),
    doc="The gradient of _image_normalize: out_grad / std per channel (linear, so it is its own gradient)."))


# ---------------------------------------------------------------------------------------------------------
# flips (HWC image or NHWC batch: a batch flips as a whole)
def _flip_infer(shapes, dtypes):
    _check_ndim(shapes[0], (3, 4), "flip: input must be HWC or NHWC")
    _check_channels(shapes[0], "flip")
    return infer_same(shapes, dtypes)


def _flipper(axis_from_end):
    def flip(xp, x):
        _flip_infer([x.shape], [x.dtype])
        return xp.ascontiguousarray(xp.flip(x, axis=x.ndim - axis_from_end))
    return flip


def _random_flipper(axis_from_end):
    def random_flip(xp, x, rng):
        _flip_infer([x.shape], [x.dtype])
        if rng.random() < 0.5:
            return xp.ascontiguousarray(xp.flip(x, axis=x.ndim - axis_from_end))
        return x.copy()
    return random_flip


for _name, _axis in (("left_right", 2), ("top_bottom", 3)):
    register(OpDef(
        name=f"_image_flip_{_name}", kernel=_flipper(_axis), infer=_flip_infer,
        grad=(lambda n: lambda ctx, g: (call(n, g),))(f"_image_flip_{_name}"),
        test=OpTest(ref=(lambda a: lambda x: np.flip(x, axis=x.ndim - a))(_axis),
                    cases=((((3, 4, 3),), {}), (((2, 3, 5, 1),), {}))),
        doc=f"Flips an HWC image (or a whole NHWC batch) {_name.replace('_', '-')}."))
    register(OpDef(
        name=f"_image_random_flip_{_name}", kernel=_random_flipper(_axis), infer=_flip_infer, random=True,
        differentiable=False, test=OpTest(random=True, grad=False, grad2=False, cases=((((3, 4, 3),), {}),)),
        doc=f"Flips an HWC image (or a whole NHWC batch) {_name.replace('_', '-')} with probability 0.5."))


# ---------------------------------------------------------------------------------------------------------
# resize (OpenCV's conventions, see the module docstring)
_WARNED = set()


def _axis_coords(src, dst, interpolation, clamp_weights=True):
    """Source indices (i0, i1) and weight of i1 for each of dst output positions along one axis.

    Out-of-range positions read the border pixel. OpenCV zeroes the weight there along x but keeps it
    along y (both rows are then the border row); with fixed-point weights that changes the rounding."""
    scale = src / dst
    d = np.arange(dst, dtype=np.float64)
    if interpolation == 0:
        i0 = np.minimum(np.floor(d * scale).astype(np.int64), src - 1)
        return i0, i0, np.zeros(dst)
    pos = (d + 0.5) * scale - 0.5
    i0 = np.floor(pos).astype(np.int64)
    frac = pos - i0
    if not clamp_weights:
        return np.clip(i0, 0, src - 1), np.clip(i0 + 1, 0, src - 1), frac
    low = i0 < 0
    i0[low], frac[low] = 0, 0.0
    high = i0 >= src - 1
    i0[high], frac[high] = src - 1, 0.0
    i1 = np.minimum(i0 + 1, src - 1)
    return i0, i1, frac


def resize_hwc(a, width, height, interpolation):
    """Resizes an HWC or NHWC numpy image to (height, width), keeping the dtype."""
    if width <= 0 or height <= 0:
        raise ValueError(f"resize: target size must be positive, got width={width}, height={height}")
    if interpolation not in (0, 1):
        if interpolation not in _WARNED:
            _WARNED.add(interpolation)
            warn(f"interpolation={interpolation} is not implemented in mixnet; using bilinear (1)")
        interpolation = 1
    h_axis = a.ndim - 3
    src_h, src_w = a.shape[h_axis], a.shape[h_axis + 1]
    if (src_h, src_w) == (height, width):
        return a.copy()
    y0, y1, fy = _axis_coords(src_h, height, interpolation, clamp_weights=False)
    x0, x1, fx = _axis_coords(src_w, width, interpolation)
    if interpolation == 0:
        return np.take(np.take(a, y0, axis=h_axis), x0, axis=h_axis + 1)
    shape_y = [1] * a.ndim
    shape_y[h_axis] = height
    shape_x = [1] * a.ndim
    shape_x[h_axis + 1] = width
    if a.dtype == np.uint8:
        # OpenCV's fixed-point path: 11-bit weights per axis, one rounding shift at the end.
        wy1 = np.rint(fy * 2048).astype(np.int64).reshape(shape_y)
        wy0 = np.rint((1 - fy) * 2048).astype(np.int64).reshape(shape_y)
        wx1 = np.rint(fx * 2048).astype(np.int64).reshape(shape_x)
        wx0 = np.rint((1 - fx) * 2048).astype(np.int64).reshape(shape_x)
        work = a.astype(np.int64)
        rows = np.take(work, x0, axis=h_axis + 1) * wx0 + np.take(work, x1, axis=h_axis + 1) * wx1
        r0 = np.take(rows, y0, axis=h_axis) >> 4
        r1 = np.take(rows, y1, axis=h_axis) >> 4
        out = (((r0 * wy0) >> 16) + ((r1 * wy1) >> 16) + 2) >> 2
        return np.clip(out, 0, 255).astype(np.uint8)
    work = a.astype(np.float64) if a.dtype != np.float64 else a
    fy = fy.reshape(shape_y)
    fx = fx.reshape(shape_x)
    rows = np.take(work, y0, axis=h_axis) * (1 - fy) + np.take(work, y1, axis=h_axis) * fy
    out = np.take(rows, x0, axis=h_axis + 1) * (1 - fx) + np.take(rows, x1, axis=h_axis + 1) * fx
    if np.issubdtype(a.dtype, np.integer):
        info = np.iinfo(a.dtype)
        return np.clip(np.floor(out + 0.5), info.min, info.max).astype(a.dtype)   # round half up, as OpenCV
    return out.astype(a.dtype)


def _resize_hw(h, w, size, keep_ratio):
    """MXNet's GetHeightAndWidth: the (height, width) an image of (h, w) is resized to."""
    if len(size) not in (1, 2):
        raise ValueError(f"resize: size must hold 1 or 2 values, got {tuple(size)}")
    if any(s <= 0 for s in size):
        raise ValueError(f"resize: size must be greater than 0, got {tuple(size)}")
    if len(size) == 2:
        return size[1], size[0]
    if not keep_ratio:
        return size[0], size[0]
    if h > w:
        return h * size[0] // w, size[0]
    return size[0], w * size[0] // h


def _resize_infer(shapes, dtypes, size, keep_ratio, interp):
    s = tuple(shapes[0])
    _check_ndim(s, (3, 4), "resize: input must be HWC or NHWC")
    h, w = _resize_hw(s[-3], s[-2], size, keep_ratio)
    return [s[:-3] + (h, w, s[-1])], [dtypes[0]]


def _resize(xp, x, size, keep_ratio, interp):
    (out_shape,), _ = _resize_infer([x.shape], [x.dtype], size, keep_ratio, interp)
    h, w = out_shape[-3], out_shape[-2]
    return _back(xp, resize_hwc(_host(x), w, h, interp))


register(OpDef(
    name="_image_resize", kernel=_resize, infer=_resize_infer, differentiable=False,
    attrs={"size": Attr(parse_shape, ()), "keep_ratio": Attr(parse_bool, False), "interp": Attr(parse_int, 1)},
    test=OpTest(grad=False, grad2=False, ref=lambda x, size, keep_ratio, interp: x[..., ::2, ::2, :],
                cases=((((4, 6, 3),), {"size": (3, 2), "interp": 0}),
                       (((2, 4, 4, 1),), {"size": 2, "interp": 0}))),
    doc="Resizes an HWC image (or NHWC batch) to size: (width, height), or an int (a square, or with "
        "keep_ratio the short side). interp: 0 nearest, 1 bilinear (OpenCV's conventions)."))


def _cvimresize_infer(shapes, dtypes, w, h, interp):
    s = tuple(shapes[0])
    _check_ndim(s, (3,), "imresize: input must be an HWC image")
    if w <= 0 or h <= 0:
        raise ValueError(f"imresize: target size must be positive, got w={w}, h={h}")
    return [(h, w, s[2])], [dtypes[0]]


def _cvimresize(xp, x, w, h, interp):
    _cvimresize_infer([x.shape], [x.dtype], w, h, interp)
    return _back(xp, resize_hwc(_host(x), w, h, interp))


register(OpDef(
    name="_cvimresize", kernel=_cvimresize, infer=_cvimresize_infer, differentiable=False,
    attrs={"w": Attr(parse_int, REQUIRED), "h": Attr(parse_int, REQUIRED), "interp": Attr(parse_int, 1)},
    test=OpTest(grad=False, grad2=False, ref=lambda x, w, h, interp: x[::2, ::2],
                cases=((((4, 6, 3),), {"w": 3, "h": 2, "interp": 0}),)),
    doc="Resizes an HWC image to (h, w) (mx.image.imresize); interp 0 nearest, 1 bilinear."))


# ---------------------------------------------------------------------------------------------------------
# crop
_CROP_ATTRS = {"x": Attr(parse_int, REQUIRED), "y": Attr(parse_int, REQUIRED),
               "width": Attr(parse_int, REQUIRED), "height": Attr(parse_int, REQUIRED)}


def _crop_infer(shapes, dtypes, x, y, width, height):
    s = tuple(shapes[0])
    _check_ndim(s, (3, 4), "crop: input must be HWC or NHWC")
    _check_channels(s, "crop")
    if width <= 0 or height <= 0:
        raise ValueError(f"crop: width and height must be greater than 0, got width={width}, height={height}")
    if x < 0 or y < 0 or x + width > s[-2] or y + height > s[-3]:
        raise ValueError(f"crop: the box x={x}, y={y}, width={width}, height={height} is not inside the image "
                         f"of shape {s}")
    return [s[:-3] + (height, width, s[-1])], [dtypes[0]]


def _crop_index(ndim, x, y, width, height):
    index = [slice(None)] * ndim
    index[ndim - 3] = slice(y, y + height)
    index[ndim - 2] = slice(x, x + width)
    return tuple(index)


def _crop(xp, data, x, y, width, height):
    _crop_infer([data.shape], [data.dtype], x, y, width, height)
    return xp.ascontiguousarray(data[_crop_index(data.ndim, x, y, width, height)])


def _crop_backward(xp, g, data, x, y, width, height):
    out = xp.zeros(data.shape, dtype=g.dtype)
    out[_crop_index(data.ndim, x, y, width, height)] = g
    return out


def _ref_crop_backward(g, data, x, y, width, height):
    out = np.zeros(data.shape, dtype=np.float64)
    out[_crop_index(data.ndim, x, y, width, height)] = g
    return out


def _crop_backward_infer(shapes, dtypes, **attrs):
    return [tuple(shapes[1])], [dtypes[0]]


register(OpDef(
    name="_image_crop", kernel=_crop, attrs=_CROP_ATTRS, infer=_crop_infer,
    grad=lambda ctx, g: (call("_backward_image_crop", g, ctx.inputs[0], **ctx.attrs),),
    test=OpTest(ref=lambda d, x, y, width, height: d[..., y:y + height, x:x + width, :],
                cases=((((5, 4, 3),), {"x": 1, "y": 2, "width": 2, "height": 3}),
                       (((2, 4, 4, 1),), {"x": 0, "y": 1, "width": 4, "height": 2}))),
    doc="Crops the (width, height) box at (x, y) of an HWC image or NHWC batch."))

register(OpDef(
    name="_backward_image_crop", kernel=_crop_backward, inputs=("out_grad", "data"), attrs=_CROP_ATTRS,
    infer=_crop_backward_infer, nondiff_inputs=(1,), hidden=True,
    grad=lambda ctx, g: (call("_image_crop", g, **ctx.attrs), None),
    test=OpTest(ref=_ref_crop_backward, cases=((((3, 2, 3), (5, 4, 3)), {"x": 1, "y": 2, "width": 2, "height": 3}),)),
    doc="The gradient of _image_crop: out_grad placed in a zero array of data's shape."))


# ---------------------------------------------------------------------------------------------------------
# colour and lighting augmentations (HWC images with 1 or 3 channels), in float32 as MXNet
_GRAY = np.array([0.299, 0.587, 0.114], dtype=np.float32)
# AlexNet's PCA lighting: eigenvectors scaled by eigenvalues (rows R, G, B)
_EIG = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                 [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                 [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]], dtype=np.float32)


def _color_infer(shapes, dtypes, **attrs):
    _check_ndim(shapes[0], (3,), "image augmentation: input must be an HWC image")
    _check_channels(shapes[0], "image augmentation")
    return infer_same(shapes, dtypes)


def _brightness(a, alpha):
    return _saturate(a.astype(np.float32) * np.float32(alpha), a.dtype)


def _contrast(a, alpha):
    f = a.astype(np.float32)
    gray = (f * _GRAY).sum(axis=-1) if a.shape[-1] == 3 else f[..., 0]
    beta = np.float32(1.0 - alpha) * np.float32(gray.sum(dtype=np.float32) / np.float32(gray.size))
    return _saturate(f * np.float32(alpha) + beta, a.dtype)


def _saturation(a, alpha):
    # NOTE: MXNet 1.9.1's kernel assigns instead of summing the weighted channels (its gray is 0.114 * blue);
    # mixnet uses the full luma, which is what the operator documents.
    if a.shape[-1] == 1:
        return a.copy()
    f = a.astype(np.float32)
    gray = (f * _GRAY).sum(axis=-1, keepdims=True) * np.float32(1.0 - alpha)
    return _saturate(gray + f * np.float32(alpha), a.dtype)


def _rgb_to_hls(r, g, b):
    vmax = np.maximum(np.maximum(r, g), b)
    vmin = np.minimum(np.minimum(r, g), b)
    diff = vmax - vmin
    light = (vmax + vmin) * np.float32(0.5)
    colored = diff > np.finfo(np.float32).eps
    safe = np.where(colored, diff, np.float32(1.0))
    sat = np.where(light < 0.5, diff / np.where(colored, vmax + vmin, 1),
                   diff / np.where(colored, 2 - vmax - vmin, 1))
    scale = np.float32(60.0) / safe
    hue = np.where(vmax == r, (g - b) * scale,
                   np.where(vmax == g, (b - r) * scale + 120, (r - g) * scale + 240))
    hue = np.where(hue < 0, hue + 360, hue)
    return np.where(colored, hue, 0).astype(np.float32), light, np.where(colored, sat, 0).astype(np.float32)


_HLS_SECTORS = np.array([[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]])


def _hls_to_rgb(hue, light, sat):
    p2 = np.where(light <= 0.5, light * (1 + sat), light + sat - light * sat)
    p1 = 2 * light - p2
    h = hue * np.float32(1.0 / 60.0)           # MXNet multiplies by the reciprocal; rounding differs from h / 60
    h = np.where(h < 0, h + 6 * np.ceil(-h / 6), h)
    h = np.where(h >= 6, h - 6 * np.floor(h / 6), h)
    sector = np.minimum(h.astype(np.int64), 5)
    frac = h - sector
    tab = np.stack([p2, p1, p1 + (p2 - p1) * (1 - frac), p1 + (p2 - p1) * frac], axis=-1)
    pick = _HLS_SECTORS[sector]                        # (..., 3): indices of b, g, r into tab
    bgr = np.take_along_axis(tab, pick, axis=-1)
    gray = (sat == 0)[..., None]
    rgb = np.where(gray, light[..., None], bgr[..., ::-1])
    return rgb * np.float32(255.0)


def _hue(a, alpha):
    if a.shape[-1] == 1:
        return a.copy()
    f = a.astype(np.float32) / np.float32(255.0)
    hue, light, sat = _rgb_to_hls(f[..., 0], f[..., 1], f[..., 2])
    return _saturate(_hls_to_rgb(hue + np.float32(alpha * 360.0), light, sat), a.dtype)


def _lighting(a, alpha):
    if a.shape[-1] == 1:
        return a.copy()
    work = _work_dtype(a.dtype)
    pca = _EIG.astype(work) @ np.asarray(alpha, dtype=work)
    return _saturate(a.astype(work) + pca, a.dtype)


def _pass_through(ctx, g):
    return (g,)


_ENHANCE_ATTRS = {"min_factor": Attr(parse_float, REQUIRED), "max_factor": Attr(parse_float, REQUIRED)}


def _enhancer(adjust):
    def random_enhance(xp, x, min_factor, max_factor, rng):
        _color_infer([x.shape], [x.dtype])
        alpha = np.float32(rng.uniform(min_factor, max_factor))
        return _back(xp, adjust(_host(x), alpha))
    return random_enhance


for _name, _adjust, _what in (("brightness", _brightness, "data * alpha"),
                              ("contrast", _contrast, "data * alpha + (1 - alpha) * mean gray level"),
                              ("saturation", _saturation, "gray * (1 - alpha) + data * alpha"),
                              ("hue", _hue, "hue rotated by alpha * 360 degrees")):
    register(OpDef(
        name=f"_image_random_{_name}", kernel=_enhancer(_adjust), attrs=_ENHANCE_ATTRS, infer=_color_infer,
        random=True, grad=_pass_through,
        test=OpTest(random=True, grad=False, grad2=False, domain=(0.0, 255.0),
                    cases=((((4, 5, 3),), {"min_factor": 0.5, "max_factor": 1.5}),)),
        doc=f"Random {_name} of an HWC image: {_what}, alpha uniform in [min_factor, max_factor]."))


def _color_jitter(xp, x, brightness, contrast, saturation, hue, rng):
    _color_infer([x.shape], [x.dtype])
    a = _host(x)
    steps = ((brightness, lambda v, s: _brightness(v, 1.0 + s)), (contrast, lambda v, s: _contrast(v, 1.0 + s)),
             (saturation, lambda v, s: _saturation(v, 1.0 + s)), (hue, _hue))
    out = a.copy()
    for i in rng.permutation(4):                   # a random order, as MXNet
        amount, adjust = steps[i]
        if amount > 0:
            out = adjust(out, np.float32(rng.uniform(-amount, amount)))
    return _back(xp, out)


register(OpDef(
    name="_image_random_color_jitter", kernel=_color_jitter, infer=_color_infer, random=True, grad=_pass_through,
    attrs={k: Attr(parse_float, REQUIRED) for k in ("brightness", "contrast", "saturation", "hue")},
    test=OpTest(random=True, grad=False, grad2=False, domain=(0.0, 255.0),
                cases=((((4, 5, 3),), {"brightness": 0.1, "contrast": 0.1, "saturation": 0.1, "hue": 0.1}),)),
    doc="Jitters brightness, contrast, saturation (factors 1 + U(-v, v)) and hue (U(-v, v)) in a random order."))


def _ref_lighting(x, alpha):
    return x + _EIG.astype(np.float64) @ np.asarray(alpha, dtype=np.float64)


def _adjust_lighting_infer(shapes, dtypes, alpha):
    if len(alpha) != 3:
        raise ValueError(f"adjust_lighting: alpha holds 3 values (R, G, B), got {alpha}")
    return _color_infer(shapes, dtypes)


def _adjust_lighting(xp, x, alpha):
    _adjust_lighting_infer([x.shape], [x.dtype], alpha)
    return _back(xp, _lighting(_host(x), alpha))


register(OpDef(
    name="_image_adjust_lighting", kernel=_adjust_lighting, infer=_adjust_lighting_infer, grad=_pass_through,
    attrs={"alpha": Attr(parse_float_tuple, REQUIRED)},
    test=OpTest(ref=_ref_lighting, cases=((((4, 5, 3),), {"alpha": (0.1, -0.2, 0.05)}),), grad2=False),
    doc="AlexNet-style PCA lighting: adds eigvec @ (eigval * alpha) to every RGB pixel of an HWC image."))


def _random_lighting(xp, x, alpha_std, rng):
    _color_infer([x.shape], [x.dtype])
    alpha = rng.normal(0.0, alpha_std, size=3).astype(np.float32)
    return _back(xp, _lighting(_host(x), alpha))


register(OpDef(
    name="_image_random_lighting", kernel=_random_lighting, infer=_color_infer, random=True, grad=_pass_through,
    attrs={"alpha_std": Attr(parse_float, 0.05)},
    test=OpTest(random=True, grad=False, grad2=False, domain=(0.0, 255.0), cases=((((4, 5, 3),), {}),)),
    doc="PCA lighting noise with alpha ~ N(0, alpha_std) per eigenvector (see _image_adjust_lighting)."))
