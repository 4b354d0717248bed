"""Correlation and the interleaved attention products: MXNet 1.9.1's attribute checks, output shapes and the
symbolic use MXNet's tests make of them (values and gradients: test_mxnet_reference_detection.py and the
generated tests)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


@pytest.mark.parametrize("attrs, message", [
    ({"kernel_size": 4}, "odd"),
    ({"kernel_size": 9, "max_displacement": 8}, "do not fit"),
    ({"stride1": 0}, "stride1"),
])
def test_correlation_rejects_bad_geometry(attrs, message):
    x = mx.nd.ones((1, 1, 12, 12))
    with pytest.raises(MXNetError, match=f"Correlation.*{message}"):
        mx.nd.Correlation(x, x, **attrs)


def test_correlation_shapes_and_symbol():
    x = mx.nd.ones((2, 3, 28, 28))
    assert mx.nd.Correlation(x, x, kernel_size=9).shape == (2, 9, 18, 18)
    # top size is ceil((padded - 2 * border) / stride1): 28 + 4 - 2 * 3 = 26 -> 9 at stride 3
    assert mx.nd.Correlation(x, x, kernel_size=3, max_displacement=2, stride1=3, stride2=2, pad_size=2).shape \
        == (2, 9, 9, 9)
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    corr = mx.sym.Correlation(data1=a, data2=b, max_displacement=2)
    assert corr.list_outputs() == [corr.name + "_output"]
    _, out_shapes, _ = corr.infer_shape(a=(1, 2, 8, 8), b=(1, 2, 8, 8))
    assert out_shapes == [(1, 25, 4, 4)]
    _, out_types, _ = corr.infer_type(a="float16")
    assert out_types == [np.float16]


def test_correlation_abs_tie_gives_data1_plus_one():
    """|a - b| where a == b: MXNet's backward gives data1 +1 and data2 -1 (its sign test is a >= b)."""
    x, y = mx.nd.ones((1, 1, 3, 3)), mx.nd.ones((1, 1, 3, 3))
    x.attach_grad()
    y.attach_grad()
    with mx.autograd.record():
        out = mx.nd.Correlation(x, y, max_displacement=0, is_multiply=False)
    out.backward()
    assert (x.grad.asnumpy() == 1).all() and (y.grad.asnumpy() == -1).all()


def test_interleaved_shapes_and_errors():
    qkv = mx.nd.ones((5, 2, 3 * 4 * 2))
    assert mx.nd.contrib.interleaved_matmul_selfatt_qk(qkv, heads=4).shape == (8, 5, 5)
    att = mx.nd.ones((8, 5, 5))
    assert mx.nd.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=4).shape == (5, 2, 8)
    q, kv = mx.nd.ones((3, 2, 8)), mx.nd.ones((5, 2, 16))
    assert mx.nd.contrib.interleaved_matmul_encdec_qk(q, kv, heads=4).shape == (8, 3, 5)
    assert mx.nd.contrib.interleaved_matmul_encdec_valatt(kv, mx.nd.ones((8, 3, 5)), heads=4).shape == (3, 2, 8)
    with pytest.raises(MXNetError, match="interleaved_matmul_selfatt_qk.*multiple of 3 \\* heads"):
        mx.nd.contrib.interleaved_matmul_selfatt_qk(mx.nd.ones((5, 2, 10)), heads=4)
    with pytest.raises(MXNetError, match="selfatt_valatt.*attention must have shape"):
        mx.nd.contrib.interleaved_matmul_selfatt_valatt(qkv, mx.nd.ones((8, 5, 4)), heads=4)
    with pytest.raises(MXNetError, match="encdec_qk.*keys_values"):
        mx.nd.contrib.interleaved_matmul_encdec_qk(q, mx.nd.ones((5, 3, 16)), heads=4)
    with pytest.raises(MXNetError, match="heads"):
        mx.nd.contrib.interleaved_matmul_selfatt_qk(qkv)


def test_simple_bind_fills_an_added_variable_and_ignores_non_shape_keywords():
    """`scores + mask` with the mask's shape unstated binds (MXNet's `+` is elementwise: it takes the other
    operand's shape), and simple_bind ignores keywords that are not shapes (force_rebind=True), as MXNet does."""
    qkv, mask = mx.sym.Variable("qkv"), mx.sym.Variable("mask")
    scores = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=2) + mask
    out = mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, scores, heads=2)
    exe = out.simple_bind(mx.current_context(), qkv=(3, 2, 12), force_rebind=True)  # where the head gradient is
    assert exe.arg_dict["mask"].shape == (4, 3, 3)
    exe.arg_dict["qkv"][:] = np.random.RandomState(0).rand(3, 2, 12)
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((3, 2, 4)))
    assert exe.grad_dict["mask"].shape == (4, 3, 3) and np.abs(exe.grad_dict["qkv"].asnumpy()).sum() > 0
