"""`mx.image`'s functions, as MXNet 1.x's: decoding, resizing, cropping, rotating and normalizing HWC images.

Decoding uses Pillow when it is installed (`pip install pillow`); without it `imdecode` / `imread` raise an
MXNetError saying so. Resizing runs the `_cvimresize` operator (OpenCV's conventions, see mixnet/ops/image.py).
Random crops draw from Python's `random` module and random_rotate from numpy's global generator, as MXNet's
do, so `random.seed` / `np.random.seed` make them repeatable.
"""
import math
import random as _pyrandom
from numbers import Number

import numpy as np

from ..base import MXNetError
from .. import ndarray as nd

__all__ = ["imread", "imdecode", "imresize", "scale_down", "resize_short", "fixed_crop", "random_crop",
           "center_crop", "color_normalize", "random_size_crop", "imrotate", "random_rotate", "copyMakeBorder"]


# ---------------------------------------------------------------------------------------------------------
# decoding
def _pillow():
    try:
        from PIL import Image
    except ImportError:
        raise MXNetError("mx.image.imdecode needs an image decoder: install Pillow (`pip install pillow`); "
                         "MXNet used OpenCV, which mixnet does not require") from None
    return Image


def imdecode(buf, flag=1, to_rgb=1, out=None):
    """Decodes an encoded image (JPEG, PNG, ...; bytes, a uint8 numpy array or NDArray) to an HWC uint8 NDArray:
    3 channels (RGB, or BGR when to_rgb=0) for flag=1, 1 gray channel for flag=0."""
    if isinstance(buf, nd.NDArray):
        buf = buf.asnumpy().astype(np.uint8).tobytes()
    elif isinstance(buf, np.ndarray):
        buf = buf.astype(np.uint8, copy=False).tobytes()
    elif not isinstance(buf, (bytes, bytearray)):
        raise ValueError("buf must be of type bytes, bytearray or numpy.ndarray, if you would like to input type "
                         "str, please convert to bytes")
    image = _pillow()
    import io
    try:
        pic = image.open(io.BytesIO(bytes(buf)))
        pic = pic.convert("L" if flag == 0 else "RGB")
    except (OSError, ValueError) as err:
        raise MXNetError(f"imdecode: cannot decode the image ({len(buf)} bytes): {err}") from None
    arr = np.asarray(pic, dtype=np.uint8)
    arr = arr[:, :, None] if flag == 0 else (arr if to_rgb else arr[:, :, ::-1])
    result = nd.array(np.ascontiguousarray(arr), dtype=np.uint8)
    if out is not None:
        out[:] = result
        return out
    return result


def imread(filename, flag=1, to_rgb=1, out=None):
    """Reads and decodes an image file (see imdecode)."""
    with open(filename, "rb") as f:
        return imdecode(f.read(), flag=flag, to_rgb=to_rgb, out=out)


# ---------------------------------------------------------------------------------------------------------
# resizing and cropping
def imresize(src, w, h, interp=1, out=None):
    """Resizes an HWC image to (h, w): interp 0 nearest, 1 bilinear (others fall back to bilinear)."""
    result = nd._cvimresize(src, w=w, h=h, interp=interp)
    if out is not None:
        out[:] = result
        return out
    return result


def scale_down(src_size, size):
    """Shrinks the crop size (w, h) to fit inside src_size (w, h), keeping its aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def _get_interp_method(interp, sizes=()):
    """MXNet's interpolation codes: 9 picks by the resize direction, 10 picks at random."""
    if interp == 9:
        if sizes:
            oh, ow, nh, nw = sizes
            if nh > oh and nw > ow:
                return 2
            if nh < oh and nw < ow:
                return 3
            return 1
        return 2
    if interp == 10:
        return _pyrandom.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(f"Unknown interp method {interp}")
    return interp


def resize_short(src, size, interp=2):
    """Resizes so that the shorter edge is size."""
    h, w = src.shape[0], src.shape[1]
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """Crops the (w, h) box at (x0, y0), then resizes it to size (w, h) when given."""
    out = src[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        out = imresize(out, *size, interp=_get_interp_method(interp, (h, w, size[1], size[0])))
    return out


def random_crop(src, size, interp=2):
    """A random crop of size (w, h) (upsampled when the image is smaller); returns (image, (x, y, w, h))."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0 = _pyrandom.randint(0, w - new_w)
    y0 = _pyrandom.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """The centred crop of size (w, h) (upsampled when the image is smaller); returns (image, (x, y, w, h))."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_size_box(h, w, area, ratio, uniform, randint):
    """The (x0, y0, w, h) box of a random-sized crop (area fraction in `area`, log-uniform aspect ratio in
    `ratio`), or None after 10 failed tries. uniform(a, b) and randint(a, b) (inclusive) are the random source."""
    if isinstance(area, Number):
        area = (area, 1.0)
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target_area = uniform(area[0], area[1]) * h * w
        new_ratio = math.exp(uniform(*log_ratio))
        new_w = int(round(math.sqrt(target_area * new_ratio)))
        new_h = int(round(math.sqrt(target_area / new_ratio)))
        if 0 < new_w <= w and 0 < new_h <= h:
            return randint(0, w - new_w), randint(0, h - new_h), new_w, new_h
    return None


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """A random crop with area fraction in `area` and aspect ratio in `ratio`, resized to size (w, h); falls back
    to center_crop. Returns (image, (x, y, w, h))."""
    if "min_area" in kwargs:
        area = kwargs.pop("min_area")
    if kwargs:
        raise TypeError(f"random_size_crop got unexpected arguments {sorted(kwargs)}")
    box = random_size_box(src.shape[0], src.shape[1], area, ratio, _pyrandom.uniform, _pyrandom.randint)
    if box is None:
        return center_crop(src, size, interp)
    return fixed_crop(src, *box, size, interp), box


def color_normalize(src, mean, std=None):
    """(src - mean) / std (in place, as MXNet)."""
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def copyMakeBorder(src, top, bot, left, right, type=0, value=0.0, values=None):  # noqa: A002 (MXNet's name)
    """Pads an HWC image: type 0 constant (value, or per-channel values), 1 replicate, 2 reflect,
    4 reflect_101 (OpenCV's border codes)."""
    modes = {0: "constant", 1: "edge", 2: "symmetric", 4: "reflect"}
    if type not in modes:
        raise MXNetError(f"copyMakeBorder: border type {type} is not supported (0, 1, 2 or 4)")
    a = src.asnumpy()
    pad = ((top, bot), (left, right)) + ((0, 0),) * (a.ndim - 2)
    if type == 0:
        fill = np.asarray(values if values is not None else value, dtype=np.float64).reshape(-1)
        out = np.stack([np.pad(a[..., c], pad[:2], mode="constant", constant_values=fill[c % fill.size])
                        for c in range(a.shape[2])], axis=2) if a.ndim == 3 else \
            np.pad(a, pad, mode="constant", constant_values=fill[0])
    else:
        out = np.pad(a, pad, mode=modes[type])
    return nd.array(out, ctx=src.context, dtype=a.dtype)


# ---------------------------------------------------------------------------------------------------------
# rotation (MXNet rotates by bilinear sampling a rotated grid: zeros outside the image)
def _bilinear_sample(a, gx, gy):
    """Samples NCHW a at pixel coordinates (gx, gy) of shape (N, H, W); outside pixels read 0."""
    n, c, h, w = a.shape
    x0 = np.floor(gx).astype(np.int64)
    y0 = np.floor(gy).astype(np.int64)
    out = np.zeros((n, c) + gx.shape[1:], dtype=np.float64)
    batch = np.arange(n).reshape(n, 1, 1)
    for dy in (0, 1):
        for dx in (0, 1):
            xi, yi = x0 + dx, y0 + dy
            weight = (1 - np.abs(gx - xi)) * (1 - np.abs(gy - yi))
            inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
            vals = a[batch, :, np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]       # (N, H, W, C)
            out += np.moveaxis(vals, -1, 1) * (weight * inside)[:, None]
    return out


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotates a CHW image (or NCHW batch) of float32 counter-clockwise by rotation_degrees (a number, or one
    per image of a batch), keeping its shape; zoom_in leaves no padding, zoom_out keeps the whole image."""
    if src.dtype != np.float32:
        raise TypeError("Only `float32` images are supported by this function")
    if zoom_in and zoom_out:
        raise ValueError("`zoom_in` and `zoom_out` cannot be both True")
    a = src.asnumpy()
    expanded = a.ndim == 3
    if expanded:
        if not isinstance(rotation_degrees, Number):
            raise TypeError("When a single image is passed the rotation angle is required to be a scalar.")
        a = a[None]
    elif a.ndim != 4:
        raise ValueError("Only 3D and 4D are supported by this function")
    if isinstance(rotation_degrees, Number):
        degrees = np.full(len(a), float(rotation_degrees))
    else:
        degrees = rotation_degrees.asnumpy() if isinstance(rotation_degrees, nd.NDArray) else rotation_degrees
        degrees = np.asarray(degrees, dtype=np.float64).reshape(-1)
    if len(degrees) != len(a):
        raise ValueError("The number of images must be equal to the number of rotation angles")
    _, _, h, w = a.shape
    rad = (np.pi * degrees / 180).reshape(-1, 1, 1)
    hscale, wscale = (h - 1) / 2, (w - 1) / 2
    hm = np.arange(h, dtype=np.float64).reshape(1, h, 1) - hscale
    wm = np.arange(w, dtype=np.float64).reshape(1, 1, w) - wscale
    # the grid, normalized after the rotation to keep the aspect ratio
    gx = (wm * np.cos(rad) - hm * np.sin(rad)) / wscale
    gy = (wm * np.sin(rad) + hm * np.cos(rad)) / hscale
    if zoom_in or zoom_out:
        rho = math.sqrt(h * h + w * w)
        ang = math.atan(h / w)
        arad = np.abs(rad)
        max_x = np.maximum(np.abs(rho * np.cos(ang + arad)), np.abs(rho * np.cos(ang - arad)))
        max_y = np.maximum(np.abs(rho * np.sin(ang + arad)), np.abs(rho * np.sin(ang - arad)))
        scale = np.maximum(max_x / w, max_y / h) if zoom_out else np.minimum(w / max_x, h / max_y)
        gx, gy = gx * scale, gy * scale
    out = _bilinear_sample(a, (gx + 1) * (w - 1) / 2, (gy + 1) * (h - 1) / 2).astype(np.float32)
    return nd.array(out[0] if expanded else out, ctx=src.context, dtype=np.float32)


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """Rotates a CHW image (or each image of an NCHW batch) by an angle drawn uniformly from angle_limits."""
    # numpy's global generator, as MXNet's random_rotate
    degrees = np.random.uniform(*angle_limits) if src.ndim == 3 else \
        np.random.uniform(*angle_limits, size=src.shape[0])
    return imrotate(src, degrees, zoom_in=zoom_in, zoom_out=zoom_out)
