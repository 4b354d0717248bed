"""Spatial ops (GridGenerator, BilinearSampler, SpatialTransformer, BilinearResize2D, AdaptiveAvgPooling2D,
im2col/col2im, SVMOutput, bilinear UpSampling) against outputs and gradients of MXNet 1.9.1 (spatial_ref.npz, made
by make_spatial_ref.py with MXNet; the test does not need MXNet), plus the shape rules MXNet's tests rely on."""
import os

import numpy as np
import pytest

import mixnet as mx

from .spatial_ref_cases import CASES

REF = np.load(os.path.join(os.path.dirname(__file__), "spatial_ref.npz"), allow_pickle=False)


def _function(name):
    return getattr(mx.nd.contrib, name[len("_contrib_"):]) if name.startswith("_contrib_") else getattr(mx.nd, name)


@pytest.mark.parametrize("name, op, shapes, attrs, labels", CASES, ids=[c[0] for c in CASES])
def test_matches_mxnet(name, op, shapes, attrs, labels):
    inputs = [mx.nd.array(REF[f"{name}/in{i}"]) for i in range(len(shapes))]
    for i, x in enumerate(inputs):
        if i not in labels:
            x.attach_grad()
    with mx.autograd.record():
        y = _function(op)(*inputs, **attrs)
    y.backward(mx.nd.array(REF[f"{name}/head"]))
    np.testing.assert_allclose(y.asnumpy(), REF[f"{name}/out"], rtol=1e-5, atol=1e-5)
    for i, x in enumerate(inputs):
        if i not in labels:
            np.testing.assert_allclose(x.grad.asnumpy(), REF[f"{name}/grad{i}"], rtol=1e-4, atol=1e-5,
                                       err_msg=f"{name}: gradient of input {i}")


def test_symbolic_shapes_inferred_from_data():
    data = mx.sym.var("data")
    up = mx.sym.UpSampling(data, mx.sym.var("weight"), sample_type="bilinear", scale=3, num_filter=2, num_args=2)
    args, outs, _ = up.infer_shape(data=(1, 2, 4, 4))
    assert args == [(1, 2, 4, 4), (2, 1, 5, 5)] and outs == [(1, 2, 12, 12)]
    svm = mx.sym.SVMOutput(data, mx.sym.var("label"))
    args, outs, _ = svm.infer_shape(data=(5, 3))
    assert args == [(5, 3), (5,)] and outs == [(5, 3)]
    stn = mx.sym.SpatialTransformer(data, mx.sym.var("loc"), target_shape=(2, 3), transform_type="affine",
                                    sampler_type="bilinear")
    assert stn.list_outputs() == [stn.name + "_output"]
    assert stn.infer_shape(data=(2, 1, 4, 4), loc=(2, 6))[1] == [(2, 1, 2, 3)]


def test_resize_modes_and_errors():
    x = mx.nd.ones((1, 1, 5, 6))
    sizes = {mode: mx.nd.contrib.BilinearResize2D(x, mode=mode).shape[2:]
             for mode in ("to_even_down", "to_even_up", "to_odd_down", "to_odd_up")}
    assert sizes == {"to_even_down": (4, 6), "to_even_up": (6, 6), "to_odd_down": (5, 5), "to_odd_up": (5, 7)}
    with pytest.raises(mx.MXNetError, match="odd_scale' needs scale_height"):
        mx.nd.contrib.BilinearResize2D(x, mode="odd_scale")
    with pytest.raises(mx.MXNetError, match="im2col.*exceeds"):
        mx.nd.im2col(x, kernel=(6, 6))
    with pytest.raises(mx.MXNetError, match="SpatialTransformer.*loc"):
        mx.nd.SpatialTransformer(x, mx.nd.ones((1, 4)), target_shape=(2, 2), transform_type="affine",
                                 sampler_type="bilinear")
