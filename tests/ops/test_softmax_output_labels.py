"""SoftmaxOutput's label forms as MXNet 1.9.1 takes them (numbers from MXNet): a label of the data's shape holds
probabilities (gradient (softmax - label) * grad_scale, no normalization); with multi_output, labels (N, L) and
(N, 1, L) give the same gradient; inferred label shapes are MXNet's."""
import numpy as np
import pytest

import mixnet as mx

_SOFT_GRAD = [[0.16131439805030823, 0.041310299187898636, -0.06098230183124542, -0.14164230227470398],
              [-1.638685703277588, 0.4413102865219116, 0.5390176773071289, 0.6583576202392578],
              [-0.13868559896945953, -0.058689698576927185, 0.0390176996588707, 0.15835769474506378]]
_MULTI_GRAD_ROW = [[-0.394008606672287, 0.10599140077829361], [0.15812049806118011, 0.15812049806118011],
                   [0.23588809370994568, -0.2641119062900543]]


def _grad(sym, x, label):
    g = mx.nd.zeros(x.shape)
    exe = sym.bind(mx.cpu(), {"x": mx.nd.array(x), "l": mx.nd.array(label)}, args_grad={"x": g})
    exe.forward(is_train=True)
    exe.backward()
    return g.asnumpy()


def test_probability_labels():
    p = np.array([[0.1, 0.2, 0.3, 0.4], [1, 0, 0, 0], [0.25, 0.25, 0.25, 0.25]])
    sym = mx.sym.SoftmaxOutput(mx.sym.var("x"), mx.sym.var("l"), grad_scale=2.0, normalization="batch")
    np.testing.assert_allclose(_grad(sym, np.arange(12).reshape(3, 4) / 5.0, p), _SOFT_GRAD, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("label", [np.array([[0, 2]] * 2), np.array([[[0, 2]]] * 2)])
def test_multi_output_label_forms(label):
    sym = mx.sym.SoftmaxOutput(mx.sym.var("x"), mx.sym.var("l"), multi_output=True)
    grad = _grad(sym, np.arange(12).reshape(2, 3, 2) / 5.0, label)
    np.testing.assert_allclose(grad, [_MULTI_GRAD_ROW] * 2, rtol=1e-5, atol=1e-7)


def test_inferred_label_shapes():
    assert mx.sym.SoftmaxOutput(mx.sym.var("x"), multi_output=True).infer_shape(x=(2, 3, 4, 5))[0][1] == (2, 20)
    assert mx.sym.SoftmaxOutput(mx.sym.var("x")).infer_shape(x=(2, 3, 4))[0][1] == (2, 3)


def test_other_label_shapes_are_refused():
    with pytest.raises(mx.base.MXNetError, match="label shape"):
        mx.nd.SoftmaxOutput(mx.nd.ones((3, 4)), mx.nd.ones((4,)))
