"""ROIPooling and contrib.ROIAlign: MXNet 1.9.1's documented example, its checks on boxes and attributes, and
the zero gradient of the boxes (values and data gradients: test_mxnet_reference_detection.py and the generated
tests)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


def test_roipooling_documented_example():
    x = mx.nd.arange(48).reshape((1, 1, 8, 6))
    y = mx.nd.array([[0, 0, 0, 4, 4]])
    assert mx.nd.ROIPooling(x, y, pooled_size=(2, 2), spatial_scale=1.0).asnumpy().tolist() == \
        [[[[14, 16], [26, 28]]]]
    assert mx.nd.ROIPooling(x, y, pooled_size=(2, 2), spatial_scale=0.7).asnumpy().tolist() == \
        [[[[7, 9], [19, 21]]]]


def test_roipooling_box_outside_the_batch_pools_to_zero():
    x = mx.nd.ones((1, 2, 4, 4))
    out = mx.nd.ROIPooling(x, mx.nd.array([[3, 0, 0, 2, 2], [-1, 0, 0, 2, 2]]), pooled_size=(2, 2),
                           spatial_scale=1.0)
    assert out.shape == (2, 2, 2, 2) and not out.asnumpy().any()


@pytest.mark.parametrize("op", ["ROIPooling", "contrib.ROIAlign"])
def test_boxes_get_a_zero_gradient(op):
    fn = mx.nd.ROIPooling if op == "ROIPooling" else mx.nd.contrib.ROIAlign
    x = mx.nd.array(np.random.RandomState(0).rand(1, 2, 6, 6))
    rois = mx.nd.array([[0, 1, 1, 4, 5]])
    x.attach_grad()
    rois.attach_grad()
    with mx.autograd.record():
        out = fn(x, rois, pooled_size=(2, 2), spatial_scale=1.0)
    out.backward()
    assert not rois.grad.asnumpy().any()
    assert x.grad.asnumpy().sum() == pytest.approx(out.size if op == "ROIPooling" else 8.0, rel=1e-5)


@pytest.mark.parametrize("rois, attrs, message", [
    ([[0, 1, 1, 3]], {}, "rois must have shape"),
    ([[0, 1, 1, 3, 3]], {"spatial_scale": 2.0}, "spatial_scale must be in"),
    ([[0, 1, 1, 3, 3]], {"pooled_size": (2, 0)}, "pooled_size"),
    ([[0, 1, 1, 3, 3]], {"position_sensitive": True}, "divisible"),
    ([[2, 1, 1, 3, 3]], {}, "batch index 2"),
    ([[0, 1, 1, 1, 3]], {"aligned": True}, "non-positive width"),
])
def test_roialign_errors(rois, attrs, message):
    kwargs = dict({"pooled_size": (2, 2), "spatial_scale": 1.0}, **attrs)
    with pytest.raises(MXNetError, match=f"ROIAlign.*{message}"):
        mx.nd.contrib.ROIAlign(mx.nd.ones((2, 3, 5, 5)), mx.nd.array(rois), **kwargs)


def test_roi_ops_in_a_symbol_take_the_data_dtype_for_the_boxes():
    data, rois = mx.sym.Variable("data"), mx.sym.Variable("rois")
    for out in (mx.sym.ROIPooling(data, rois, pooled_size=(2, 2), spatial_scale=0.5),
                mx.sym.contrib.ROIAlign(data, rois, pooled_size=(2, 2), spatial_scale=0.5)):
        arg_types, out_types, _ = out.infer_type(data="float64")
        assert arg_types == [np.float64, np.float64] and out_types == [np.float64]
        _, out_shapes, _ = out.infer_shape(data=(2, 3, 8, 8), rois=(5, 5))
        assert out_shapes == [(5, 3, 2, 2)]
