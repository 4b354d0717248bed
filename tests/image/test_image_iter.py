"""mx.image augmenters, CreateAugmenter and ImageIter's batching (pad / discard / roll_over). The images here are
raw .npy bytes decoded by an ImageIter subclass, so the tests need no image codec."""
import io
import random

import numpy as np
import pytest

import mixnet as mx
from mixnet.image import augment


class NpyIter(mx.image.ImageIter):
    """Reads 'files' from a dict and decodes .npy bytes (ImageIter's read_image / imdecode hooks)."""

    def __init__(self, files, **kwargs):
        self.files = files
        super().__init__(**kwargs)

    def read_image(self, fname):
        return self.files[fname]

    def imdecode(self, s):
        return mx.nd.array(np.load(io.BytesIO(s)), dtype="uint8")


def _npy(value):
    buf = io.BytesIO()
    np.save(buf, np.full((6, 8, 3), value, dtype=np.uint8))
    return buf.getvalue()


FILES = {f"{i}.npy": _npy(i * 10) for i in range(5)}
IMGLIST = [(float(i), f"{i}.npy") for i in range(5)]


def _epoch(it):
    return [(b.label[0].asnumpy().tolist(), b.pad) for b in it]


def test_pad_discard_roll_over():
    it = NpyIter(FILES, batch_size=2, data_shape=(3, 4, 4), imglist=IMGLIST)
    batches = list(it)
    assert [(b.label[0].asnumpy().tolist(), b.pad) for b in batches] == [([0, 1], 0), ([2, 3], 0), ([4, 0], 1)]
    assert batches[0].data[0].shape == (2, 3, 4, 4) and batches[0].data[0].dtype == np.float32
    assert batches[2].data[0].asnumpy()[:, 0, 0, 0].tolist() == [40, 0]
    it.reset()
    assert _epoch(it) == [([0, 1], 0), ([2, 3], 0), ([4, 0], 1)]
    it = NpyIter(FILES, batch_size=2, data_shape=(3, 4, 4), imglist=IMGLIST, last_batch_handle="discard")
    assert _epoch(it) == [([0, 1], 0), ([2, 3], 0)]
    it = NpyIter(FILES, batch_size=2, data_shape=(3, 4, 4), imglist=IMGLIST, last_batch_handle="roll_over")
    assert _epoch(it) == [([0, 1], 0), ([2, 3], 0)]
    it.reset()
    # the rolled-over example opens the next epoch (MXNet reports the pad counted before the fill)
    assert _epoch(it) == [([4, 0], 1), ([1, 2], 0), ([3, 4], 0)]


def test_iterator_checks():
    with pytest.raises(ValueError, match="3 channels"):
        NpyIter(FILES, batch_size=2, data_shape=(1, 4, 4), imglist=IMGLIST)
    with pytest.raises(mx.MXNetError):
        mx.image.ImageIter(2, (3, 4, 4))


def test_create_augmenter_and_augmenters():
    augs = mx.image.CreateAugmenter((3, 4, 4), resize=6, rand_crop=True, rand_mirror=True, brightness=0.1,
                                    hue=0.1, pca_noise=0.1, rand_gray=0.2, mean=True, std=True)
    assert [type(a).__name__ for a in augs] == ["ResizeAug", "RandomCropAug", "HorizontalFlipAug", "CastAug",
                                                "ColorJitterAug", "HueJitterAug", "LightingAug", "RandomGrayAug",
                                                "ColorNormalizeAug"]
    img = mx.nd.array(np.random.RandomState(0).randint(0, 256, (9, 12, 3)), dtype="uint8")
    random.seed(0)
    np.random.seed(0)
    out = img
    for a in augs:
        out = a(out)
    assert out.shape == (4, 4, 3) and out.dtype == np.float32
    f = img.astype("float32")
    gray = augment.RandomGrayAug(1.0)(f).asnumpy()
    np.testing.assert_allclose(gray[..., 0], gray[..., 2], rtol=1e-6)
    np.testing.assert_array_equal(augment.HorizontalFlipAug(1.0)(img).asnumpy(), img.asnumpy()[:, ::-1])
    sat = augment.SaturationJitterAug(0.0)(f).asnumpy()                # alpha == 1: unchanged
    np.testing.assert_allclose(sat, f.asnumpy(), rtol=1e-6)
    assert augment.ForceResizeAug((5, 7))(img).shape == (7, 5, 3)
    assert augment.CenterCropAug((4, 4)).dumps() == '["centercropaug", {"size": [4, 4], "interp": 2}]'
    with pytest.raises(ValueError):
        mx.image.CreateAugmenter((3, 4, 4), rand_resize=True)
