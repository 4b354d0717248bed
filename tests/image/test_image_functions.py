"""mx.image's functions: resizing and cropping helpers, imrotate against MXNet 1.9.1 (image_ops_ref.npz), and
decoding (Pillow when installed, a clear error when not)."""
import os
import random

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError

REF = np.load(os.path.join(os.path.dirname(__file__), "image_ops_ref.npz"), allow_pickle=False)


def test_imresize_is_the_resize_operator():
    x = mx.nd.array(REF["img"], dtype="uint8")
    out = mx.image.imresize(x, 5, 9)
    assert out.shape == (9, 5, 3) and out.dtype == np.uint8
    np.testing.assert_array_equal(out.asnumpy(), mx.nd.image.resize(x, (5, 9)).asnumpy())
    assert mx.image.resize_short(x, 3).shape == (3, 3, 3)


def test_crops():
    x = mx.nd.array(np.arange(6 * 8 * 3).reshape(6, 8, 3), dtype="uint8")
    assert mx.image.scale_down((640, 480), (720, 120)) == (640, 106)
    out = mx.image.fixed_crop(x, 1, 2, 4, 3)
    np.testing.assert_array_equal(out.asnumpy(), x.asnumpy()[2:5, 1:5])
    centre, box = mx.image.center_crop(x, (4, 2))
    assert box == (2, 2, 4, 2)
    np.testing.assert_array_equal(centre.asnumpy(), x.asnumpy()[2:4, 2:6])
    random.seed(1)
    first = mx.image.random_crop(x, (3, 3))
    random.seed(1)
    assert first[1] == mx.image.random_crop(x, (3, 3))[1]
    sized, box = mx.image.random_size_crop(x, (5, 5), (0.3, 1.0), (0.75, 1.33))
    assert sized.shape == (5, 5, 3)
    norm = mx.image.color_normalize(mx.nd.ones((2, 2, 3)), mx.nd.array([1, 0, 0]), mx.nd.array([1, 2, 4]))
    np.testing.assert_allclose(norm.asnumpy()[0, 0], [0, 0.5, 0.25])


def test_imrotate_matches_mxnet():
    chw = mx.nd.array(REF["chw"])
    np.testing.assert_allclose(mx.image.imrotate(chw, 30).asnumpy(), REF["rot30"], atol=1e-5)
    np.testing.assert_allclose(mx.image.imrotate(chw, 30, zoom_in=True).asnumpy(), REF["rot30_zoom_in"], atol=1e-5)
    np.testing.assert_allclose(mx.image.imrotate(chw, 30, zoom_out=True).asnumpy(), REF["rot30_zoom_out"],
                               atol=1e-5)
    batch = mx.nd.array(np.stack([REF["chw"], REF["chw"][::-1]]))
    np.testing.assert_allclose(mx.image.imrotate(batch, mx.nd.array([-45, 100])).asnumpy(), REF["rot_batch"],
                               atol=1e-5)
    with pytest.raises(TypeError, match="float32"):
        mx.image.imrotate(mx.nd.ones((1, 3, 3), dtype="uint8"), 10)


def test_imdecode_without_or_with_pillow(tmp_path):
    try:
        from PIL import Image
    except ImportError:
        with pytest.raises(MXNetError, match="Pillow"):
            mx.image.imdecode(b"\x89PNG....")
        return
    pixels = np.random.RandomState(0).randint(0, 256, (4, 5, 3)).astype(np.uint8)
    path = str(tmp_path / "a.png")
    Image.fromarray(pixels).save(path)
    np.testing.assert_array_equal(mx.image.imread(path).asnumpy(), pixels)
    np.testing.assert_array_equal(mx.image.imread(path, to_rgb=0).asnumpy(), pixels[:, :, ::-1])
    assert mx.image.imread(path, flag=0).shape == (4, 5, 1)
    with pytest.raises(MXNetError, match="decode"):
        mx.image.imdecode(b"not an image")
