"""`gluon.data.vision.transforms`: image transforms as MXNet 1.x's Blocks, built on the `image` operators.

Image transforms take HWC images (or NHWC batches), `ToTensor` turns them into CHW float32 in [0, 1], and
`Normalize` works on CHW / NCHW. Sizes are given as ``(width, height)``, as in MXNet. HybridBlocks (`ToTensor`,
`Normalize`, `Resize`, `CropResize`, the flips and colour jitters) call `F.image.*`, so they hybridize; `Compose`
hybridizes runs of them, as MXNet's does. Besides NDArrays, every transform also takes a numpy array and then
returns one (a mixnet convenience).

Random transforms draw from mixnet's CPU random state (`mx.random.seed` makes them repeatable); see
mixnet/ops/image.py for resizing conventions and colour arithmetic.
"""
import numbers

import numpy as np

from ....base import MXNetError, dtype_np
from ... import nn
from ...block import Block, HybridBlock
from .... import image
from ....image.image import random_size_box
from .... import random as _random
from ....context import cpu
from ....ndarray import array
from .... import ndarray as nd

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Rotate", "RandomRotation", "RandomResizedCrop",
           "CropResize", "CenterCrop", "Resize", "RandomFlipLeftRight", "RandomFlipTopBottom", "RandomBrightness",
           "RandomContrast", "RandomSaturation", "RandomHue", "RandomColorJitter", "RandomLighting",
           "RandomApply"]


def _rng():
    return _random._state(cpu())


def _pair(size, name):
    """An int or a (width, height) pair -> (width, height)."""
    if isinstance(size, numbers.Integral):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise MXNetError(f"{name}: size must be an int or a (width, height) pair, got {size!r}")


class _NumpyIO:
    """Lets a transform take a numpy array (returning one) besides an NDArray."""

    def __call__(self, x, *args):
        if isinstance(x, np.ndarray):
            out = super().__call__(array(x, dtype=x.dtype), *args)
            return out.asnumpy() if hasattr(out, "asnumpy") else out
        return super().__call__(x, *args)


def _check_image(x, name):
    if x.ndim not in (3, 4):
        raise MXNetError(f"{name}: expected an HWC image or an NHWC batch (3 or 4 dims), got shape {x.shape}")


# ------------------------------------------------------------------------------------------ composition
class Compose(_NumpyIO, nn.Sequential):
    """Applies transforms in order; runs of consecutive HybridBlocks are grouped and hybridized, as MXNet does."""

    def __init__(self, transforms):
        super().__init__()
        hybrid = []
        for t in list(transforms) + [None]:
            if isinstance(t, HybridBlock):
                hybrid.append(t)
                continue
            if len(hybrid) == 1:
                self.add(hybrid[0])
            elif len(hybrid) > 1:
                block = nn.HybridSequential()
                for h in hybrid:
                    block.add(h)
                block.hybridize()
                self.add(block)
            hybrid = []
            if t is not None:
                self.add(t)


class RandomApply(nn.Sequential):
    """Applies transforms with probability p."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x):
        if self.p < _rng().random():
            return x
        return self.transforms(x)


# ------------------------------------------------------------------------------------------ hybrid transforms
class Cast(_NumpyIO, HybridBlock):
    """Casts to dtype (float32 by default)."""

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype_np(dtype)

    def hybrid_forward(self, F, x):
        return F.cast(x, self._dtype)


class ToTensor(_NumpyIO, HybridBlock):
    """HWC (or NHWC) image with values in [0, 255] -> CHW (NCHW) float32 in [0, 1]."""

    def hybrid_forward(self, F, x):
        return F.image.to_tensor(x)


class Normalize(_NumpyIO, HybridBlock):
    """(x - mean) / std per channel of a CHW (or NCHW) tensor; mean and std are numbers or per-channel
    sequences."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean = mean
        self._std = std

    def hybrid_forward(self, F, x):
        return F.image.normalize(x, self._mean, self._std)


class Resize(_NumpyIO, HybridBlock):
    """Resizes an HWC image (or NHWC batch) to size: an int (a square, or with keep_ratio the short side) or
    (width, height). interpolation: 0 nearest, 1 bilinear."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._size = size
        self._keep = keep_ratio
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        return F.image.resize(x, self._size, self._keep, self._interpolation)


class CropResize(_NumpyIO, HybridBlock):
    """Crops the (width, height) region at (x, y), then resizes it to size when size is given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._x, self._y, self._width, self._height = x, y, width, height
        self._size = size
        self._interpolation = 1 if interpolation is None else interpolation

    def hybrid_forward(self, F, x):
        out = F.image.crop(x, self._x, self._y, self._width, self._height)
        if self._size:
            out = F.image.resize(out, self._size, False, self._interpolation)
        return out


class RandomFlipLeftRight(_NumpyIO, HybridBlock):
    """Flips an HWC image (or a whole NHWC batch) left-right with probability 0.5."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_left_right(x)


class RandomFlipTopBottom(_NumpyIO, HybridBlock):
    """Flips an HWC image (or a whole NHWC batch) top-bottom with probability 0.5."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_top_bottom(x)


class _RandomEnhance(_NumpyIO, HybridBlock):
    """A colour factor drawn from [max(0, 1 - amount), 1 + amount]."""
    _op = None

    def __init__(self, amount):
        super().__init__()
        self._args = (max(0, 1 - amount), 1 + amount)

    def hybrid_forward(self, F, x):
        return getattr(F.image, self._op)(x, *self._args)


class RandomBrightness(_RandomEnhance):
    """Multiplies an HWC image by a factor drawn from [max(0, 1 - brightness), 1 + brightness]."""
    _op = "random_brightness"


class RandomContrast(_RandomEnhance):
    """Scales an HWC image's contrast by a factor drawn from [max(0, 1 - contrast), 1 + contrast]."""
    _op = "random_contrast"


class RandomSaturation(_RandomEnhance):
    """Scales an HWC image's saturation by a factor drawn from [max(0, 1 - saturation), 1 + saturation]."""
    _op = "random_saturation"


class RandomHue(_RandomEnhance):
    """Rotates an HWC image's hue by alpha * 360 degrees, alpha drawn from [max(0, 1 - hue), 1 + hue] (MXNet's
    range)."""
    _op = "random_hue"


class RandomColorJitter(_NumpyIO, HybridBlock):
    """Jitters brightness, contrast, saturation and hue of an HWC image, in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F, x):
        return F.image.random_color_jitter(x, *self._args)


class RandomLighting(_NumpyIO, HybridBlock):
    """AlexNet-style PCA lighting noise with strength alpha."""

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.image.random_lighting(x, self._alpha)


# ------------------------------------------------------------------------------------------ eager transforms
def _crop_resize(x, box, size, interpolation):
    """Crops box (x0, y0, w, h) of an HWC image or NHWC batch and resizes it to size (w, h) when they differ."""
    x0, y0, w, h = box
    out = nd.image.crop(x, x0, y0, w, h)
    if (w, h) != tuple(size):
        out = nd.image.resize(out, size, False, interpolation)
    return out


class CenterCrop(_NumpyIO, Block):
    """Crops the centre (width, height) of an HWC image; a crop larger than the image takes the largest
    centred region of that aspect ratio and resizes it."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        self._size = _pair(size, "CenterCrop")
        self._interpolation = interpolation

    def forward(self, x):
        _check_image(x, "CenterCrop")
        h, w = x.shape[-3], x.shape[-2]
        new_w, new_h = image.scale_down((w, h), self._size)
        box = ((w - new_w) // 2, (h - new_h) // 2, new_w, new_h)
        return _crop_resize(x, box, self._size, self._interpolation)


class RandomResizedCrop(_NumpyIO, Block):
    """Crops a random region (area fraction in `scale`, aspect ratio in `ratio`, log-uniform) of an HWC image
    and resizes it to size; after 10 failed tries it falls back to a centre crop."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        self._size = _pair(size, "RandomResizedCrop")
        self._scale = scale
        self._ratio = ratio
        self._interpolation = interpolation

    def forward(self, x):
        _check_image(x, "RandomResizedCrop")
        rng = _rng()
        box = random_size_box(x.shape[-3], x.shape[-2], self._scale, self._ratio,
                              lambda a, b: rng.uniform(a, b), lambda a, b: int(rng.integers(a, b + 1)))
        if box is None:
            return CenterCrop(self._size, self._interpolation)(x)
        return _crop_resize(x, box, self._size, self._interpolation)


class Rotate(Block):
    """Rotates a CHW image (or NCHW batch) of float32 by rotation_degrees, keeping its shape (zoom_in: no
    padding; zoom_out: the whole image stays visible)."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        if x.dtype != np.float32:
            raise TypeError("This transformation only supports float32. Consider calling it after ToTensor")
        return image.imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotates a CHW image (or each image of an NCHW batch) of float32 by an angle drawn from angle_limits, with
    probability rotate_with_proba."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError("`angle_limits` must be an ordered tuple")
        if rotate_with_proba < 0 or rotate_with_proba > 1:
            raise ValueError("Probability of rotating the image should be between 0 and 1")
        self._args = (angle_limits, zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x):
        if np.random.random() > self._rotate_with_proba:      # numpy's generator, as MXNet
            return x
        if x.dtype != np.float32:
            raise TypeError("This transformation only supports float32. Consider calling it after ToTensor")
        return image.random_rotate(x, *self._args)
