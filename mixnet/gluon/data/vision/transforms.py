"""`gluon.data.vision.transforms`: image transforms, as MXNet 1.x's, computed with numpy.

Image transforms take HWC images (or NHWC batches), `ToTensor` turns them into CHW float32 in [0, 1], and
`Normalize` works on CHW / NCHW. Sizes are given as ``(width, height)``, as in MXNet. Each transform accepts an
NDArray or a numpy array and returns the same kind.

Resizing follows OpenCV's conventions (which MXNet used): bilinear samples at half-pixel centres, clamped at the
borders; nearest takes ``floor(dst * src_size / dst_size)``. Float images match MXNet to float rounding; uint8
images are rounded to nearest and may differ from OpenCV's fixed-point arithmetic by 1. Interpolation codes
other than 0 (nearest) and 1 (bilinear) — area, bicubic, Lanczos — fall back to bilinear with a warning.

Random transforms draw from mixnet's CPU random state, so ``mx.random.seed`` makes them repeatable.
"""
import math
import numbers
import warnings

import numpy as np

from ....base import MXNetError, dtype_np

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Resize", "CenterCrop", "CropResize", "RandomResizedCrop",
           "RandomFlipLeftRight", "RandomFlipTopBottom"]


# ------------------------------------------------------------------------------------------ helpers
def _unwrap(x):
    """(numpy array, rewrap function) for an NDArray or numpy input."""
    from ....ndarray import NDArray, array
    if isinstance(x, NDArray):
        ctx = x.context
        return x.asnumpy(), (lambda a: array(a, ctx=ctx, dtype=a.dtype))
    if isinstance(x, np.ndarray):
        return x, (lambda a: a)
    raise MXNetError(f"image transforms take an NDArray or a numpy array, got {type(x).__name__}")


def _rng():
    from .... import random as _random
    from ....context import cpu
    return _random._state(cpu())


def _check_image(a, name):
    if a.ndim not in (3, 4):
        raise MXNetError(f"{name}: expected an HWC image or an NHWC batch (3 or 4 dims), got shape {a.shape}")


def _pair(size, name):
    """An int or a (width, height) pair -> (width, height)."""
    if isinstance(size, numbers.Integral):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise MXNetError(f"{name}: size must be an int or a (width, height) pair, got {size!r}")


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


def _resize(a, width, height, interpolation):
    """Resizes HWC or NHWC numpy images to (height, width), keeping the dtype."""
    if width <= 0 or height <= 0:
        raise MXNetError(f"resize: target size must be positive, got width={width}, height={height}")
    if interpolation not in (0, 1):
        if interpolation not in _WARNED:
            _WARNED.add(interpolation)
            warnings.warn(f"interpolation={interpolation} is not implemented in mixnet; using bilinear (1)",
                          stacklevel=3)
        interpolation = 1
    h_axis = a.ndim - 3
    src_h, src_w = a.shape[h_axis], a.shape[h_axis + 1]
    if (src_h, src_w) == (height, width):
        return a.copy()
    y0, y1, fy = _axis_coords(src_h, height, interpolation, clamp_weights=False)
    x0, x1, fx = _axis_coords(src_w, width, interpolation)
    if interpolation == 0:
        out = np.take(np.take(a, y0, axis=h_axis), x0, axis=h_axis + 1)
        return out
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
    return _cast_back(out, a.dtype)


def _cast_back(out, dtype):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.floor(out + 0.5), info.min, info.max).astype(dtype)  # round half up, as OpenCV
    return out.astype(dtype)


def _crop(a, x0, y0, w, h):
    h_axis = a.ndim - 3
    index = [slice(None)] * a.ndim
    index[h_axis] = slice(y0, y0 + h)
    index[h_axis + 1] = slice(x0, x0 + w)
    return a[tuple(index)]


def _scale_down(src_size, size):
    """Shrinks the crop size (w, h) to fit inside src_size (w, h), keeping its aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


class _Transform:
    """Transforms are callables; `forward`, `hybridize` and `__call__` exist for Block-style code."""

    def __call__(self, x, *args):
        return self.forward(x, *args)

    def hybridize(self, *args, **kwargs):
        pass

    def __repr__(self):
        return f"{type(self).__name__}()"


# ------------------------------------------------------------------------------------------ transforms
class Compose(_Transform):
    """Applies transforms in order."""

    def __init__(self, transforms):
        self._transforms = list(transforms)

    def forward(self, x, *args):
        for t in self._transforms:
            x = t(x, *args) if args else t(x)
        return x

    def __repr__(self):
        inner = "\n".join(f"  ({i}): {t!r}" for i, t in enumerate(self._transforms))
        return f"Compose(\n{inner}\n)"


class Cast(_Transform):
    """Casts to dtype (float32 by default)."""

    def __init__(self, dtype="float32"):
        self._dtype = dtype_np(dtype)

    def forward(self, x, *args):
        a, wrap = _unwrap(x)
        return wrap(a.astype(self._dtype))


class ToTensor(_Transform):
    """HWC (or NHWC) image with values in [0, 255] -> CHW (NCHW) float32 in [0, 1]."""

    def forward(self, x, *args):
        a, wrap = _unwrap(x)
        _check_image(a, "ToTensor")
        out = a.astype(np.float32) / np.float32(255.0)
        out = np.ascontiguousarray(np.moveaxis(out, -1, -3))
        return wrap(out)


class Normalize(_Transform):
    """(x - mean) / std per channel of a CHW (or NCHW) tensor; mean and std are numbers or per-channel
    sequences."""

    def __init__(self, mean=0.0, std=1.0):
        self._mean = mean
        self._std = std

    def forward(self, x, *args):
        a, wrap = _unwrap(x)
        if a.ndim not in (3, 4):
            raise MXNetError(f"Normalize: expected a CHW tensor or an NCHW batch, got shape {a.shape}")
        channels = a.shape[-3]
        dtype = a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)
        stats = []
        for name, value in (("mean", self._mean), ("std", self._std)):
            v = np.asarray(value, dtype=dtype).reshape(-1)
            if v.size not in (1, channels):
                raise MXNetError(f"Normalize: {name} has {v.size} values but the input has {channels} channels")
            stats.append(np.broadcast_to(v, (channels,)).reshape(channels, 1, 1))
        mean, std = stats
        return wrap(((a.astype(dtype) - mean) / std).astype(dtype))


class Resize(_Transform):
    """Resizes an HWC image (or NHWC batch) to size: an int (a square, or with keep_ratio the short side) or
    (width, height). interpolation: 0 nearest, 1 bilinear."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        self._size = size
        self._keep = keep_ratio
        self._interpolation = interpolation

    def forward(self, x, *args):
        a, wrap = _unwrap(x)
        _check_image(a, "Resize")
        h, w = a.shape[-3], a.shape[-2]
        if isinstance(self._size, numbers.Integral):
            if self._keep:
                if h > w:
                    width, height = self._size, int(h * self._size / w)
                else:
                    width, height = int(w * self._size / h), self._size
            else:
                width = height = int(self._size)
        else:
            width, height = _pair(self._size, "Resize")
        return wrap(_resize(a, width, height, self._interpolation))


class CenterCrop(_Transform):
    """Crops the centre (width, height) of an HWC image; a crop larger than the image takes the largest
    centred region of that aspect ratio and resizes it."""

    def __init__(self, size, interpolation=1):
        self._size = _pair(size, "CenterCrop")
        self._interpolation = interpolation

    def forward(self, x, *args):
        a, wrap = _unwrap(x)
        _check_image(a, "CenterCrop")
        h, w = a.shape[-3], a.shape[-2]
        new_w, new_h = _scale_down((w, h), self._size)
        x0, y0 = (w - new_w) // 2, (h - new_h) // 2
        out = _crop(a, x0, y0, new_w, new_h)
        if (new_w, new_h) != self._size:
            out = _resize(out, self._size[0], self._size[1], self._interpolation)
        return wrap(np.ascontiguousarray(out))


class CropResize(_Transform):
    """Crops the (width, height) region at (x, y), then resizes it to size when size is given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        self._box = (int(x), int(y), int(width), int(height))
        self._size = None if size is None else _pair(size, "CropResize")
        self._interpolation = 1 if interpolation is None else interpolation

    def forward(self, img, *args):
        a, wrap = _unwrap(img)
        _check_image(a, "CropResize")
        x, y, w, h = self._box
        if x < 0 or y < 0 or x + w > a.shape[-2] or y + h > a.shape[-3]:
            raise MXNetError(f"CropResize: box (x={x}, y={y}, width={w}, height={h}) is outside the image of "
                             f"shape {a.shape}")
        out = _crop(a, x, y, w, h)
        if self._size is not None and self._size != (w, h):
            out = _resize(out, self._size[0], self._size[1], self._interpolation)
        return wrap(np.ascontiguousarray(out))


class RandomResizedCrop(_Transform):
    """Crops a random region (area fraction in `scale`, aspect ratio in `ratio`, log-uniform) of an HWC image
    and resizes it to size; after 10 failed tries it falls back to a centre crop."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        self._size = _pair(size, "RandomResizedCrop")
        if isinstance(scale, numbers.Number):
            scale = (scale, 1.0)
        self._scale = scale
        self._ratio = ratio
        self._interpolation = interpolation

    def forward(self, x, *args):
        a, wrap = _unwrap(x)
        _check_image(a, "RandomResizedCrop")
        h, w = a.shape[-3], a.shape[-2]
        rng = _rng()
        area = h * w
        log_ratio = (math.log(self._ratio[0]), math.log(self._ratio[1]))
        for _ in range(10):
            target_area = rng.uniform(self._scale[0], self._scale[1]) * area
            aspect = math.exp(rng.uniform(*log_ratio))
            new_w = int(round(math.sqrt(target_area * aspect)))
            new_h = int(round(math.sqrt(target_area / aspect)))
            if 0 < new_w <= w and 0 < new_h <= h:
                x0 = int(rng.integers(0, w - new_w + 1))
                y0 = int(rng.integers(0, h - new_h + 1))
                out = _crop(a, x0, y0, new_w, new_h)
                if (new_w, new_h) != self._size:
                    out = _resize(out, self._size[0], self._size[1], self._interpolation)
                return wrap(np.ascontiguousarray(out))
        return CenterCrop(self._size, self._interpolation)(x)


class _RandomFlip(_Transform):
    _axis_from_end = None

    def __init__(self, p=0.5):
        self._p = p

    def forward(self, x, *args):
        a, wrap = _unwrap(x)
        _check_image(a, type(self).__name__)
        if _rng().random() < self._p:
            a = np.ascontiguousarray(np.flip(a, axis=a.ndim - self._axis_from_end))
        else:
            a = a.copy()
        return wrap(a)


class RandomFlipLeftRight(_RandomFlip):
    """Flips an HWC image (or a whole NHWC batch) left-right with probability p (0.5)."""
    _axis_from_end = 2


class RandomFlipTopBottom(_RandomFlip):
    """Flips an HWC image (or a whole NHWC batch) top-bottom with probability p (0.5)."""
    _axis_from_end = 3
