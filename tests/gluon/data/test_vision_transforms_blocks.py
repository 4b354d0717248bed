"""The vision transforms as Blocks: Compose hybridizes runs of HybridBlocks, rotations, RandomApply, colour
jitters (shapes, dtypes, seeding) and errors."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.gluon import nn
from mixnet.gluon.data.vision import transforms as T


def test_compose_hybridizes_runs_and_matches_eager():
    img = mx.nd.array(np.random.RandomState(0).randint(0, 256, (20, 30, 3)), dtype="uint8")
    steps = [T.Resize((12, 10)), T.ToTensor(), T.Normalize((0.5, 0.4, 0.3), (0.2, 0.3, 0.4))]
    composed = T.Compose(steps)
    assert len(composed) == 1 and isinstance(composed[0], nn.HybridSequential)
    eager = img
    for step in steps:
        eager = step(eager)
    for _ in range(2):                       # the cached graph is reused on the second call
        np.testing.assert_allclose(composed(img).asnumpy(), eager.asnumpy(), rtol=1e-6)
    mixed = T.Compose([T.Resize(8), T.CenterCrop(6), T.ToTensor()])
    assert [type(c).__name__ for c in mixed] == ["Resize", "CenterCrop", "ToTensor"]
    assert mixed(img).shape == (3, 6, 6)
    assert isinstance(T.Compose([T.ToTensor()])(img.asnumpy()), np.ndarray)     # numpy in, numpy out


def test_rotate_quarter_turns():
    x = mx.nd.array([[[0., 0., 0.], [0., 0., 1.], [0., 0., 0.]]])
    np.testing.assert_allclose(T.Rotate(90.)(x).asnumpy()[0], [[0, 1, 0], [0, 0, 0], [0, 0, 0]], atol=1e-6)
    np.testing.assert_allclose(T.Rotate(180.)(x).asnumpy()[0], [[0, 0, 0], [1, 0, 0], [0, 0, 0]], atol=1e-6)
    assert T.Rotate(10.)(mx.nd.ones((2, 3, 8, 9))).shape == (2, 3, 8, 9)
    with pytest.raises(TypeError, match="float32"):
        T.Rotate(10.)(mx.nd.ones((3, 4, 4), dtype="uint8"))


def test_random_rotation_and_random_apply():
    with pytest.raises(ValueError):
        T.RandomRotation([-10, 10], rotate_with_proba=1.5)
    with pytest.raises(ValueError):
        T.RandomRotation([10, -10])
    data = mx.nd.random.normal(shape=(3, 6, 7))
    np.testing.assert_array_equal(T.RandomRotation([-90, 90], rotate_with_proba=0.0)(data).asnumpy(),
                                  data.asnumpy())
    assert T.RandomRotation([-90, 90])(mx.nd.ones((2, 3, 6, 7))).shape == (2, 3, 6, 7)
    img = mx.nd.ones((10, 10, 3), dtype="uint8")
    grow = T.Compose([T.Resize(16)])
    assert T.RandomApply(grow, p=0.0)(img).shape == (10, 10, 3)
    assert T.RandomApply(grow, p=1.0)(img).shape == (16, 16, 3)


def test_colour_transforms_keep_shape_and_dtype_and_are_seeded():
    img = mx.nd.array(np.random.RandomState(1).randint(0, 256, (9, 11, 3)), dtype="uint8")
    for t in (T.RandomBrightness(0.3), T.RandomContrast(0.3), T.RandomSaturation(0.3), T.RandomHue(0.1),
              T.RandomColorJitter(0.2, 0.2, 0.2, 0.1), T.RandomLighting(0.1)):
        mx.random.seed(7)
        a = t(img).asnumpy()
        mx.random.seed(7)
        b = t(img).asnumpy()
        assert a.shape == (9, 11, 3) and a.dtype == np.uint8
        np.testing.assert_array_equal(a, b)


def test_crop_resize():
    data = mx.nd.arange(60).reshape((5, 4, 3)).astype("uint8")
    out = T.CropResize(0, 0, 3, 2)(data).asnumpy()
    np.testing.assert_array_equal(out, data.asnumpy()[:2, :3])
    assert T.CropResize(1, 1, 2, 2, size=(5, 6))(data).shape == (6, 5, 3)
    with pytest.raises(MXNetError):
        T.CropResize(2, 2, 3, 3)(data)
