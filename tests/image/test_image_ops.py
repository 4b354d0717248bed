"""nd.image / sym.image operators against MXNet 1.9.1's outputs (image_ops_ref.npz, made by make_image_ops_ref.py)
and their documented semantics."""
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError

REF = np.load(os.path.join(os.path.dirname(__file__), "image_ops_ref.npz"), allow_pickle=False)


@pytest.mark.parametrize("name", ["u8", "f32"])
def test_deterministic_ops_match_mxnet(name):
    a = REF["img"] if name == "u8" else REF["imgf"]
    x = mx.nd.array(a, dtype=a.dtype)
    np.testing.assert_array_equal(mx.nd.image.to_tensor(x).asnumpy(), REF[f"totensor_{name}"])
    # (MXNet 1.9.1 leaves the middle column of an odd-width image unwritten; the other columns agree)
    flipped = mx.nd.image.flip_left_right(x).asnumpy()
    np.testing.assert_array_equal(flipped, a[:, ::-1])
    np.testing.assert_array_equal(np.delete(flipped, 3, axis=1), np.delete(REF[f"flip_lr_{name}"], 3, axis=1))
    np.testing.assert_array_equal(mx.nd.image.crop(x, 1, 2, 4, 3).asnumpy(), REF[f"crop_{name}"])
    np.testing.assert_array_equal(mx.nd.image.adjust_lighting(x, alpha=(0.1, -0.2, 0.05)).asnumpy(),
                                  REF[f"light_{name}"])


@pytest.mark.parametrize("name", ["u8", "f32"])
def test_colour_ops_with_a_fixed_factor_match_mxnet(name):
    a = REF["img"] if name == "u8" else REF["imgf"]
    x = mx.nd.array(a, dtype=a.dtype)
    got = {"bright": mx.nd.image.random_brightness(x, 1.3, 1.3), "contrast": mx.nd.image.random_contrast(x, 0.7, 0.7),
           "hue": mx.nd.image.random_hue(x, 0.15, 0.15)}
    for key, value in got.items():
        assert value.dtype == a.dtype
        want = REF[f"{key}_{name}"].astype(np.float64)
        # uint8 results are truncated like MXNet's saturate_cast: float rounding may move one value by 1
        np.testing.assert_allclose(value.asnumpy().astype(np.float64), want, rtol=1e-5, atol=1.0 if name == "u8"
                                   else 1e-3, err_msg=key)


def test_saturation_uses_the_full_luma():
    # MXNet 1.9.1's kernel keeps only the blue term of the gray level (a bug); mixnet uses 0.299 R + 0.587 G + 0.114 B
    a = REF["imgf"]
    out = mx.nd.image.random_saturation(mx.nd.array(a), 0.6, 0.6).asnumpy()
    gray = (a * np.array([0.299, 0.587, 0.114], dtype=np.float32)).sum(-1, keepdims=True)
    np.testing.assert_allclose(out, gray * 0.4 + a * 0.6, rtol=1e-5)


def test_uint8_results_saturate():
    x = mx.nd.array(np.full((2, 2, 3), 200), dtype="uint8")
    assert mx.nd.image.random_brightness(x, 2.0, 2.0).asnumpy().max() == 255
    assert mx.nd.image.random_brightness(x, 0.0, 0.0).asnumpy().max() == 0


def test_random_ops_are_seeded_and_keep_shapes():
    x = mx.nd.array(REF["img"], dtype="uint8")
    for fn in (lambda: mx.nd.image.random_color_jitter(x, 0.3, 0.3, 0.3, 0.1),
               lambda: mx.nd.image.random_lighting(x, 0.5), lambda: mx.nd.image.random_flip_top_bottom(x)):
        mx.random.seed(5)
        first = fn().asnumpy()
        mx.random.seed(5)
        second = fn().asnumpy()
        assert first.shape == x.shape and first.dtype == np.uint8
        np.testing.assert_array_equal(first, second)


def test_resize_shapes_and_errors():
    x = mx.nd.zeros((4, 6, 3), dtype="uint8")
    assert mx.nd.image.resize(x, (3, 2)).shape == (2, 3, 3)          # (width, height)
    assert mx.nd.image.resize(x, 3, keep_ratio=True).shape == (3, 4, 3)
    assert mx.nd.image.resize(mx.nd.zeros((2, 4, 6, 1)), 5).shape == (2, 5, 5, 1)
    for size in (-1, (1, 2, 3), (0, 4)):
        with pytest.raises(MXNetError, match="size"):
            mx.nd.image.resize(x, size)


def test_errors_name_the_problem():
    with pytest.raises(MXNetError, match="box"):
        mx.nd.image.crop(mx.nd.zeros((4, 4, 3)), 2, 2, 3, 1)
    with pytest.raises(MXNetError, match="channels"):
        mx.nd.image.normalize(mx.nd.zeros((4, 2, 2)), mean=(0, 0, 0, 0))
    with pytest.raises(MXNetError, match="HWC"):
        mx.nd.image.to_tensor(mx.nd.zeros((4, 4)))
    with pytest.raises(MXNetError, match="HWC"):
        mx.nd.image.random_brightness(mx.nd.zeros((2, 4, 4, 3)), 0.5, 1.5)


def test_symbolic_crop_and_normalize_gradients():
    data = mx.sym.var("data")
    a = np.arange(60, dtype=np.float32).reshape(5, 4, 3)
    g = np.ones((2, 3, 3), dtype=np.float32)
    want = np.zeros_like(a)
    want[1:3, 1:4] = 1
    mx.test_utils.check_symbolic_backward(mx.sym.image.crop(data, 1, 1, 3, 2), [a], [g], [want])
    chw = np.ones((3, 2, 2), dtype=np.float32)
    norm = mx.sym.image.normalize(data, mean=(0, 1, 2), std=(4, 2, 1))
    mx.test_utils.check_symbolic_backward(norm, [chw], [chw], [chw / np.array([4, 2, 1.0]).reshape(3, 1, 1)])
