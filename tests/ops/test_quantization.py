"""contrib.quantize / contrib.dequantize: output dtypes and ranges, saturation, zero gradients and dtype checks
(MXNet 1.9.1's numbers: test_mxnet_reference_detection.py)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


def test_quantize_outputs_and_round_trip():
    x = mx.nd.array([[0.1392, 0.5928], [0.6027, 0.8579]])
    lo, hi = mx.nd.array([0.0]), mx.nd.array([1.0])
    q, qmin, qmax = mx.nd.contrib.quantize(x, lo, hi, out_type="int8")
    assert q.dtype == np.int8 and q.asnumpy().tolist() == [[18, 75], [77, 109]]
    assert qmin.shape == (1,) and qmin.dtype == np.float32 and (qmin.asscalar(), qmax.asscalar()) == (-1.0, 1.0)
    back = mx.nd.contrib.dequantize(q, qmin, qmax)
    assert back.dtype == np.float32
    np.testing.assert_allclose(back.asnumpy(), q.asnumpy() / 127.5, rtol=1e-6)
    u, umin, umax = mx.nd.contrib.quantize(x, lo, hi)           # uint8 is the default
    assert u.dtype == np.uint8 and (umin.asscalar(), umax.asscalar()) == (0.0, 1.0)


def test_quantize_saturates_and_has_zero_gradient():
    x = mx.nd.array([-3.0, -1.0, 0.5, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        q, _, _ = mx.nd.contrib.quantize(x, mx.nd.array([-1.0]), mx.nd.array([1.0]), out_type="int8")
        loss = q.astype("float32").sum()
    loss.backward()
    assert q.asnumpy().tolist() == [-128, -127, 64, 127] and not x.grad.asnumpy().any()
    assert mx.nd.contrib.quantize(x, mx.nd.array([-1.0]), mx.nd.array([1.0]))[0].asnumpy().tolist() == \
        [0, 0, 128, 255]


@pytest.mark.parametrize("call, message", [
    (lambda: mx.nd.contrib.quantize(mx.nd.ones((2,), dtype="float64"), mx.nd.array([0.0]), mx.nd.array([1.0])),
     "data must be float32"),
    (lambda: mx.nd.contrib.quantize(mx.nd.ones((2,)), mx.nd.array([0.0, 1.0]), mx.nd.array([1.0])),
     "min_range must have shape"),
    (lambda: mx.nd.contrib.dequantize(mx.nd.ones((2,)), mx.nd.array([0.0]), mx.nd.array([1.0])),
     "uint8 or int8"),
    (lambda: mx.nd.contrib.quantize(mx.nd.ones((2,)), mx.nd.array([0.0]), mx.nd.array([1.0]), out_type="int4"),
     "out_type"),
])
def test_quantization_errors(call, message):
    with pytest.raises(MXNetError, match=message):
        call()


def test_quantize_v2_ranges_and_out_types():
    x = mx.nd.array([[-0.5, 0.25], [1.0, 0.0]])
    q, lo, hi = mx.nd.contrib.quantize_v2(x)                  # int8 over the data's own range
    assert q.dtype == np.int8 and (lo.asscalar(), hi.asscalar()) == (-1.0, 1.0)
    assert q.asnumpy().tolist() == [[-64, 32], [127, 0]]      # 127.5 / 1.0 scale, saturated at 127
    u = mx.nd.contrib.quantize_v2(x, out_type="auto", min_calib_range=0.0, max_calib_range=2.0)[0]
    assert u.dtype == np.uint8 and u.asnumpy().tolist() == [[0, 32], [128, 0]]
    codes = mx.nd.array([1, 2], dtype="int8")
    passed, plo, phi = mx.nd.contrib.quantize_v2(codes)        # already quantized: passed through
    assert passed.dtype == np.int8 and passed.asnumpy().tolist() == [1, 2] and phi.asscalar() == 127.5
