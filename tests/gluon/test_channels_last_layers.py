"""Channels-last layouts of the Gluon conv/pool layers (NWC, NHWC, NDHWC), as MXNet 1.9.1 accepts them: the
result is the channels-first layer's on transposed data; Conv keeps MXNet's weight layout (O, *kernel, I/g)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.gluon import nn

RNG = np.random.RandomState(0)


def _last(a):
    return np.moveaxis(a, 1, -1)


@pytest.mark.parametrize("make, shape", [
    (lambda layout: nn.MaxPool1D(3, 2, layout=layout), (2, 3, 9)),
    (lambda layout: nn.AvgPool1D(count_include_pad=False, padding=1, layout=layout), (2, 3, 9)),
    (lambda layout: nn.GlobalAvgPool1D(layout=layout), (2, 3, 9)),
    (lambda layout: nn.MaxPool2D(3, ceil_mode=True, layout=layout), (2, 3, 10, 10)),
    (lambda layout: nn.AvgPool2D((2, 3), (2, 2), (1, 1), layout=layout), (2, 3, 7, 8)),
    (lambda layout: nn.GlobalMaxPool2D(layout=layout), (2, 3, 7, 8)),
    (lambda layout: nn.MaxPool3D(2, layout=layout), (1, 2, 4, 4, 6)),
    (lambda layout: nn.GlobalAvgPool3D(layout=layout), (1, 2, 4, 4, 6)),
])
def test_pooling_channels_last_is_transposed_channels_first(make, shape):
    dims = len(shape) - 2
    first, last = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}[dims]
    x = RNG.uniform(-1, 1, shape).astype(np.float32)
    expected = make(first)(mx.nd.array(x)).asnumpy()
    layer = make(last)
    xl = mx.nd.array(_last(x))
    xl.attach_grad()
    with mx.autograd.record():
        out = layer(xl)
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), _last(expected), rtol=1e-6)
    grad = xl.grad.asnumpy()
    layer.hybridize()
    xl.grad[:] = 0
    with mx.autograd.record():
        out_h = layer(xl)
    out_h.backward()
    np.testing.assert_allclose(out_h.asnumpy(), out.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(xl.grad.asnumpy(), grad, rtol=1e-6)


@pytest.mark.parametrize("hybridize", [False, True])
def test_conv2d_nhwc_weight_layout_and_values(hybridize):
    conv = nn.Conv2D(4, (3, 2), strides=(2, 1), padding=1, layout="NHWC", groups=2, activation="relu")
    conv.initialize()
    x = RNG.uniform(-1, 1, (2, 5, 6, 4)).astype(np.float32)
    if hybridize:
        conv.hybridize()
    out = conv(mx.nd.array(x)).asnumpy()
    assert conv.weight.shape == (4, 3, 2, 2)            # MXNet 1.9.1: (channels, kh, kw, in_channels / groups)
    ref = nn.Conv2D(4, (3, 2), strides=(2, 1), padding=1, groups=2, activation="relu", in_channels=4)
    ref.initialize()
    ref.weight.set_data(mx.nd.array(_last_to_first(conv.weight.data().asnumpy())))
    ref.bias.set_data(conv.bias.data())
    np.testing.assert_allclose(out, _last(ref(mx.nd.array(np.moveaxis(x, -1, 1))).asnumpy()), rtol=1e-5,
                               atol=1e-6)


def _last_to_first(w):
    return np.moveaxis(w, -1, 1)


def test_conv3d_ndhwc_declared_weight_shape():
    assert nn.Conv3D(16, (3, 3, 3), layout="NDHWC", in_channels=4).weight.shape == (16, 3, 3, 3, 4)


def test_layouts_mxnet_refuses_are_refused():
    with pytest.raises(MXNetError, match="'NCW'"):
        nn.Conv1D(4, 3, layout="NWC")
    with pytest.raises(MXNetError, match="'NCHW' or 'NHWC'"):
        nn.MaxPool2D(layout="NCWH")
