"""contrib.DeformableConvolution: with zero offsets it is Convolution; an integer offset moves the taps; MXNet's
shape checks (values and gradients against MXNet 1.9.1: test_mxnet_reference_detection.py)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


@pytest.mark.parametrize("attrs", [{"pad": (1, 1)}, {"stride": (2, 2), "dilate": (2, 1), "num_group": 2}])
def test_zero_offsets_give_a_convolution(attrs):
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.rand(2, 4, 7, 6))
    groups = attrs.get("num_group", 1)
    w, b = mx.nd.array(rng.rand(6, 4 // groups, 3, 3)), mx.nd.array(rng.rand(6))
    conv = mx.nd.Convolution(x, w, b, kernel=(3, 3), num_filter=6, **attrs)
    offset = mx.nd.zeros((2, 18) + conv.shape[2:])
    deform = mx.nd.contrib.DeformableConvolution(x, offset, w, b, kernel=(3, 3), num_filter=6, **attrs)
    np.testing.assert_allclose(deform.asnumpy(), conv.asnumpy(), rtol=1e-5, atol=1e-6)


def test_a_whole_pixel_offset_shifts_the_taps():
    x = mx.nd.arange(25).reshape((1, 1, 5, 5))
    w = mx.nd.ones((1, 1, 1, 1))
    offset = mx.nd.concat(mx.nd.ones((1, 1, 5, 5)), mx.nd.zeros((1, 1, 5, 5)), dim=1)     # one row down
    out = mx.nd.contrib.DeformableConvolution(x, offset, w, kernel=(1, 1), num_filter=1, no_bias=True)
    expected = np.arange(25.0).reshape(5, 5) + 5
    expected[-1] = 0                                    # row 5 is outside the map: MXNet reads 0
    np.testing.assert_array_equal(out.asnumpy()[0, 0], expected)


def test_offset_shape_is_checked():
    x, w = mx.nd.ones((1, 2, 5, 5)), mx.nd.ones((2, 2, 3, 3))
    with pytest.raises(MXNetError, match="DeformableConvolution.*offset must have shape"):
        mx.nd.contrib.DeformableConvolution(x, mx.nd.zeros((1, 9, 3, 3)), w, kernel=(3, 3), num_filter=2,
                                            no_bias=True)
    with pytest.raises(MXNetError, match="num_deformable_group"):
        mx.nd.contrib.DeformableConvolution(x, mx.nd.zeros((1, 54, 3, 3)), w, kernel=(3, 3), num_filter=2,
                                            no_bias=True, num_deformable_group=3)


def test_symbol_creates_its_weight_and_bias():
    data, offset = mx.sym.Variable("data"), mx.sym.Variable("offset")
    out = mx.sym.contrib.DeformableConvolution(data=data, offset=offset, kernel=(3, 3), num_filter=4, pad=(1, 1),
                                               name="dc")
    assert out.list_arguments() == ["data", "offset", "dc_weight", "dc_bias"]
