"""vision.transforms against reference outputs of MXNet 1.9.1 (transforms_ref.npz, made by
make_transforms_ref.py with MXNet; the test does not need MXNet)."""
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.gluon.data.vision import transforms as T

REF = np.load(os.path.join(os.path.dirname(__file__), "transforms_ref.npz"), allow_pickle=False)
CASES = [((17, 23, 3), (9, 5)), ((17, 23, 3), (40, 31)), ((32, 32, 3), (24, 24)), ((8, 50, 1), (13, 7)),
         ((30, 30, 3), (7, 30)), ((12, 10, 3), (37, 29))]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("interp", [0, 1])
def test_resize_matches_mxnet(case, interp):
    img = REF[f"img{case}"]
    w, h = CASES[case][1]
    u8 = T.Resize((w, h), interpolation=interp)(mx.nd.array(img, dtype="uint8"))
    assert u8.dtype == np.uint8 and u8.shape == (h, w, img.shape[2])
    # uint8 follows OpenCV's fixed-point arithmetic bit for bit
    np.testing.assert_array_equal(u8.asnumpy(), REF[f"resize_u8_{case}_{interp}"])
    f32 = T.Resize((w, h), interpolation=interp)(img.astype("float32"))    # numpy in, numpy out
    assert isinstance(f32, np.ndarray) and f32.dtype == np.float32
    np.testing.assert_allclose(f32, REF[f"resize_f32_{case}_{interp}"], rtol=0, atol=1e-3)


def test_to_tensor_normalize_center_crop_resize_keep_match_mxnet():
    img = mx.nd.array(REF["img0"], dtype="uint8")          # 17 x 23 x 3
    t = T.ToTensor()(img)
    assert t.shape == (3, 17, 23) and t.dtype == np.float32
    np.testing.assert_allclose(t.asnumpy()[:, 2, 5], REF["img0"][2, 5] / 255.0, rtol=1e-6)
    norm = T.Compose([T.ToTensor(), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])(img)
    np.testing.assert_allclose(norm.asnumpy(), REF["totensor_norm"], rtol=1e-5, atol=1e-6)
    crop = T.CenterCrop((30, 25))(img)                     # larger than the image: crop + resize
    np.testing.assert_array_equal(crop.asnumpy(), REF["center_crop_big"])
    keep = T.Resize(11, keep_ratio=True)(img)
    np.testing.assert_array_equal(keep.asnumpy(), REF["resize_keep"])


def test_shapes_like_mxnet():
    img = mx.nd.array(np.arange(4 * 6 * 3).reshape(4, 6, 3), dtype="uint8")
    # MXNet 1.9.1: size is (width, height); an int is a square unless keep_ratio
    assert T.Resize((3, 2))(img).shape == (2, 3, 3)
    assert T.Resize(3)(img).shape == (3, 3, 3)
    assert T.Resize(3, keep_ratio=True)(img).shape == (3, 4, 3)
    assert T.Resize(8, keep_ratio=True)(img).shape == (8, 12, 3)
    c = T.CenterCrop(2)(img)
    assert c.asnumpy()[:, :, 0].tolist() == [[24, 27], [42, 45]]
    assert T.CenterCrop((3, 2))(img).asnumpy()[:, :, 0].tolist() == [[21, 24, 27], [39, 42, 45]]
    assert T.ToTensor()(mx.nd.zeros((2, 4, 6, 3), dtype="uint8")).shape == (2, 3, 4, 6)
    assert T.Resize(3)(mx.nd.zeros((2, 4, 6, 3), dtype="uint8")).shape == (2, 3, 3, 3)
    assert T.Cast()(img).dtype == np.float32 and T.Cast("float16")(img).dtype == np.float16
    # scalar mean/std apply to every channel (MXNet 1.9.1 values for this input)
    n1 = T.Normalize(0.5, 0.2)(mx.nd.ones((3, 1, 1)))
    np.testing.assert_allclose(n1.asnumpy().ravel(), [2.5, 2.5, 2.5])
    with pytest.raises(MXNetError, match="channels"):
        T.Normalize((0.1, 0.2), 1.0)(mx.nd.ones((3, 2, 2)))
    with pytest.raises(MXNetError, match="HWC"):
        T.ToTensor()(mx.nd.ones((4, 4)))


def test_random_transforms_are_seeded():
    img = mx.nd.array(np.random.RandomState(0).randint(0, 256, (20, 30, 3)), dtype="uint8")
    rrc = T.RandomResizedCrop((8, 6))
    mx.random.seed(3)
    a = [rrc(img).asnumpy() for _ in range(3)]
    mx.random.seed(3)
    b = [rrc(img).asnumpy() for _ in range(3)]
    assert all(x.shape == (6, 8, 3) for x in a)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    flips = {T.RandomFlipLeftRight()(img).asnumpy()[0, 0, 0] for _ in range(30)}
    assert flips == {img.asnumpy()[0, 0, 0], img.asnumpy()[0, -1, 0]}
    tb = [T.RandomFlipTopBottom()(img).asnumpy() for _ in range(30)]
    assert any(np.array_equal(x, img.asnumpy()[::-1]) for x in tb)
    assert any(np.array_equal(x, img.asnumpy()) for x in tb)
