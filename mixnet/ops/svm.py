"""SVMOutput: the support-vector-machine loss head of MXNet 1.x.

Like the other loss heads (nn_act.py), its forward pass is the identity and its backward pass ignores the head
gradient and returns the hinge loss's own gradient, so it is not differentiable in the mathematical sense.
"""
import math

import numpy as np

from .attrs import Attr, parse_bool, parse_float
from .common import call
from .registry import OpDef, OpTest, ParamShapes, register


def _svm_infer(shapes, dtypes, **attrs):
    data, label = shapes
    if not data:
        raise ValueError("data needs at least one axis (the classes are its last axis)")
    if math.prod(label) != math.prod(data[:-1]):
        raise ValueError(f"label shape {tuple(label)} does not match data shape {tuple(data)}: one label per row "
                         f"of the last axis, {tuple(data[:-1])}")
    return [tuple(data)], [dtypes[0]]


def _k_svm_grad(xp, data, label, margin, regularization_coefficient, use_linear):
    """MXNet's hinge gradient per row x of the last axis with class k: the true class is pushed above margin
    (x_k < margin), every other class below -margin (x_j > -margin); L1 gives a constant step, L2 twice the
    violation."""
    _svm_infer([data.shape, label.shape], [data.dtype, label.dtype])
    x = data.reshape(-1, data.shape[-1]) if data.ndim else data.reshape(1, 1)
    classes = xp.arange(x.shape[1])
    is_label = classes[None, :] == label.reshape(-1, 1).astype(np.int64)
    sign = xp.where(is_label, 1.0, -1.0)                # +1 for the true class, -1 for the others
    violation = margin - sign * x                       # > 0 where the margin is not met
    if use_linear:
        grad = -sign * (violation > 0)
    else:
        grad = -2 * sign * xp.maximum(violation, 0)
    return (grad * regularization_coefficient).astype(data.dtype).reshape(data.shape)


_SVM_ATTRS = {"margin": Attr(parse_float, 1.0), "regularization_coefficient": Attr(parse_float, 1.0),
              "use_linear": Attr(parse_bool, False)}


def _k_svm_output(xp, data, label, margin, regularization_coefficient, use_linear):
    _svm_infer([data.shape, label.shape], [data.dtype, label.dtype])
    return data.copy()


def _ref_svm_grad(x, label, margin=1.0, regularization_coefficient=1.0, use_linear=False):
    """Entry by entry, MXNet's L1_SVM / L2_SVM loops."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.float64)
    out = np.zeros_like(rows)
    for r, k in enumerate(label.ravel().astype(int)):
        for j, v in enumerate(rows[r]):
            if j == k:
                out[r, j] = -float(margin > v) if use_linear else (-2 * (margin - v) if margin > v else 0.0)
            else:
                out[r, j] = float(margin > -v) if use_linear else (2 * (margin + v) if margin > -v else 0.0)
    return (out * regularization_coefficient).reshape(x.shape)


register(OpDef(
    name="SVMOutput", kernel=_k_svm_output,
    inputs=("data", "label"), attrs=_SVM_ATTRS, nondiff_inputs=(1,), infer=_svm_infer,
    param_shapes=ParamShapes(lambda a, s: {1: tuple(s[0][:-1])} if s[0] is not None and len(s[0]) > 1 else {}),
    grad=lambda c, g: (call("_svm_output_grad", c.inputs[0], c.inputs[1], **c.attrs), None),
    test=OpTest(ref=lambda x, label, **a: x, int_inputs={1: (0, 4)}, grad=False, grad2=False, cases=(
        (((3, 4), (3,)), {}), (((2, 3, 4), (2, 3)), {"use_linear": True, "margin": 0.5}),
    )),
    doc="Identity forward; backward is the L2-SVM (or, with use_linear, L1-SVM) hinge gradient for the labels, "
        "times regularization_coefficient, ignoring the head gradient (MXNet)."))
register(OpDef(
    name="_svm_output_grad", kernel=_k_svm_grad, inputs=("data", "label"), attrs=_SVM_ATTRS, hidden=True,
    differentiable=False, infer=_svm_infer,
    test=OpTest(ref=_ref_svm_grad,
                int_inputs={1: (0, 4)}, grad=False, grad2=False, cases=(
                    (((3, 4), (3,)), {}), (((3, 4), (3,)), {"use_linear": True, "regularization_coefficient": 2.0}),
                ))))
