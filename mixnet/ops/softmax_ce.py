"""softmax_cross_entropy(data, label): the summed cross entropy of softmax(data) rows against class indices,
shape (1,), as MXNet's. Gradient to data: head * (softmax(data) - onehot(label)); labels get none."""
import numpy as np

from .common import call
from .registry import OpDef, OpTest, register


def _check(data_shape, label_shape):
    if len(data_shape) != 2:
        raise ValueError(f"softmax_cross_entropy only accepts 2-D data (batch, classes), got shape "
                         f"{tuple(data_shape)}")
    if tuple(label_shape) != (data_shape[0],):
        raise ValueError(f"softmax_cross_entropy needs a 1-D label of shape ({data_shape[0]},), got "
                         f"{tuple(label_shape)}")


def _infer(shapes, dtypes):
    _check(shapes[0], shapes[1])
    return [(1,)], [dtypes[0]]


def _grad_infer(shapes, dtypes):
    _check(shapes[0], shapes[1])
    return [tuple(shapes[0])], [dtypes[0]]


def _labels(xp, data, label):
    _check(data.shape, label.shape)
    idx = label.astype(np.int64)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= data.shape[1]):
        raise ValueError(f"labels must be class indices in [0, {data.shape[1]}), got values from "
                         f"{int(idx.min())} to {int(idx.max())}")
    return idx


def _log_softmax(xp, data):
    wide = data.astype(np.float64)
    shifted = wide - wide.max(axis=1, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))


def _k_softmax_ce(xp, data, label):
    idx = _labels(xp, data, label)
    picked = _log_softmax(xp, data)[xp.arange(data.shape[0]), idx]
    return xp.asarray([-picked.sum()], dtype=data.dtype)


def _k_softmax_ce_grad(xp, data, label):
    """softmax(data) - onehot(label): the gradient for a head gradient of 1."""
    idx = _labels(xp, data, label)
    grad = xp.exp(_log_softmax(xp, data))
    grad[xp.arange(data.shape[0]), idx] -= 1.0
    return grad.astype(data.dtype)


def _grad(c, g):
    data, label = c.inputs
    return call("_softmax_cross_entropy_grad", data, label) * g, None


def _ref(data, label):
    x = data.astype(np.float64)
    logp = x - x.max(axis=1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(axis=1, keepdims=True))
    return np.array([-logp[np.arange(len(label)), label.astype(np.int64)].sum()])


register(OpDef(
    name="softmax_cross_entropy", kernel=_k_softmax_ce, inputs=("data", "label"), grad=_grad, nondiff_inputs=(1,),
    infer=_infer,
    test=OpTest(ref=_ref, int_inputs={1: (0, 4)}, grad2=False, cases=((((3, 4), (3,)), {}), (((1, 5), (1,)), {}))),
    doc="Sum over the batch of -log softmax(data)[i, label[i]]; data (batch, classes), label (batch,) of class "
        "indices; output shape (1,)."))
register(OpDef(
    name="_softmax_cross_entropy_grad", kernel=_k_softmax_ce_grad, inputs=("data", "label"), hidden=True,
    differentiable=False, infer=_grad_infer,
    test=OpTest(ref=lambda data, label: np.exp(data - data.max(1, keepdims=True)) /
                np.exp(data - data.max(1, keepdims=True)).sum(1, keepdims=True) - np.eye(data.shape[1])[
                    label.astype(np.int64)],
                int_inputs={1: (0, 4)}, grad=False, grad2=False, cases=((((3, 4), (3,)), {}),)),
    doc="softmax(data) - onehot(label), softmax_cross_entropy's gradient for a head gradient of 1."))
