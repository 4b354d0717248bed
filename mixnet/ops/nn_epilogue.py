"""GEMM epilogues: the hidden ops that symbol/epilogue.py puts into compiled graphs.

* `_fc_epilogue(data, weight[, bias], act_type=...)` = Activation(FullyConnected(...)): BLAS writes the GEMM
  into the output (or the planned out= buffer), then ONE pass adds the bias and applies the activation in place
  (a Numba loop for float32/float64 ReLU on numpy; in-place ufuncs otherwise: no SVML here for exp/tanh in Numba,
  and cupy runs the generic code). The pre-activation value is never materialised apart from the output.
* `_act_bwd_bias(grad, data, act_type=..., shape=...)` -> (dz, dbias): an activation's backward dz and its sum
  over every axis but the last (a Dense layer's bias gradient, `_sum_to` to `shape` = (1, ..., N)) in one pass.
  `data` is what the activation's backward rule reads: its output for relu, sigmoid and tanh, its input for
  softrelu (READS_INPUT). symbol/epilogue.py finds the backward by what the rule itself traces to.

Both are ordinary registry ops (tests are generated from their declarations) with gradient rules written with
mixnet ops, though graph-mode autodiff runs before the pass and never meets them.
"""
from types import SimpleNamespace

import numpy as np

from . import _fastpath
from .attrs import Attr, REQUIRED, choice, parse_bool, parse_int, parse_shape
from .common import call, into, run_ops
from .nn_act import _g_activation, _k_activation, _ref_activation
from .nn_conv import _g_fc, _infer_fc, _k_fc, _ref_fc
from .registry import OpDef, OpTest, register

ACTS = ("relu", "sigmoid", "tanh", "softrelu")
READS_INPUT = ("softrelu",)      # the activations whose backward rule reads the input; the others' read the output


def _loops(xp, *arrays):
    """The epilogue loops when the eager fast paths may run for these arrays (ops/_fastpath.py decides; the
    background child of codegen/precompile.py compiles this module together with its loops), else None."""
    if _fastpath.numba_kernels(xp, *arrays) is None:
        return None
    return _fastpath.loops_of("_epilogue_kernels")


# ---------------------------------------------------------------------------------------------------------
# forward: FullyConnected + activation
def _k_fc_epilogue(xp, data, weight, bias=None, *, num_hidden, no_bias, flatten, act_type, out=None):
    if bias is not None and tuple(bias.shape) != (num_hidden,):
        raise ValueError(f"bias shape {bias.shape} does not match ({num_hidden},) (num_hidden,)")
    y = _k_fc(xp, data, weight, None, num_hidden=num_hidden, no_bias=True, flatten=flatten, out=out)
    if not y.flags.c_contiguous:                     # a strided out= buffer: finish in a fresh array, copy there
        return into(xp, y, _k_fc_epilogue(xp, data, weight, bias, num_hidden=num_hidden, no_bias=no_bias,
                                          flatten=flatten, act_type=act_type))
    loops = _loops(xp, y, bias) if bias is not None and act_type == "relu" else None
    if loops is not None:
        loops.bias_relu(y.reshape(-1), np.ascontiguousarray(bias), y.dtype.type(0))
        return y
    if bias is not None:
        xp.add(y, bias, out=y, casting="unsafe")
    return _k_activation(xp, y, act_type, out=y)          # the Activation op's kernel, in place


def act_backward(act_type, g, data):
    """dz from the incoming gradient g: the Activation op's gradient rule, whose reads (the output for relu,
    sigmoid and tanh, the input for softrelu) are `data`, as for _act_bwd_bias."""
    return _g_activation(SimpleNamespace(inputs=(data,), outputs=(data,), attrs={"act_type": act_type}), g)[0]


def _g_fc_epilogue(c, g):
    y, act_type = c.outputs[0], c.attrs["act_type"]
    # softrelu's backward reads its input; from the output y = log(1 + e^x) it is sigmoid(x) = -expm1(-y)
    dz = -g * call("expm1", -y) if act_type == "softrelu" else act_backward(act_type, g, y)
    return _g_fc(SimpleNamespace(inputs=c.inputs), dz)


def _fc_epilogue_inputs(a):
    return ("data", "weight") if a["no_bias"] else ("data", "weight", "bias")


register(OpDef(
    name="_fc_epilogue", fast="_epilogue_kernels.bias_relu, for relu with a bias",
    kernel=_k_fc_epilogue, inputs=_fc_epilogue_inputs, grad=_g_fc_epilogue, hidden=True,
    infer=lambda shapes, dtypes, act_type, **fc: _infer_fc(shapes, dtypes, **fc), writes_out=True,
    attrs={"num_hidden": Attr(parse_int, REQUIRED), "no_bias": Attr(parse_bool, False),
           "flatten": Attr(parse_bool, True), "act_type": Attr(choice(*ACTS), REQUIRED)},
    test=OpTest(
        ref=lambda x, w, b=None, act_type=None, **fc: _ref_activation(_ref_fc(x, w, b, **fc), act_type),
        domain=(0.1, 1.0),        # positive pre-activations: relu's kink stays away from the finite differences
        cases=tuple(case for act in ACTS for case in (
            (((3, 4), (5, 4), (5,)), {"num_hidden": 5, "act_type": act}),
            (((2, 3, 2), (4, 6)), {"num_hidden": 4, "no_bias": True, "act_type": act}),
            (((2, 3, 2), (4, 2), (4,)), {"num_hidden": 4, "flatten": False, "act_type": act})))),
    doc="Activation(FullyConnected(data, weight, bias)) in one node: the GEMM, then bias and activation in one "
        "pass (placed by the epilogue graph pass)."))


# ---------------------------------------------------------------------------------------------------------
# backward: activation backward + bias gradient
def _act_bwd_generic(xp, act_type, g, d):
    """dz by the Activation op's gradient rule itself (act_backward), its ops run on the raw arrays."""
    r = run_ops(xp, lambda g, d: act_backward(act_type, g, d), (g, d))._data
    return r if r.dtype == g.dtype else r.astype(g.dtype)


def _k_act_bwd_bias(xp, grad, data, *, act_type, shape, out=None):
    if grad.shape != data.shape:
        raise ValueError(f"gradient shape {grad.shape} does not match the data shape {data.shape}")
    n = shape[-1] if shape else 1
    # (no generator expressions: this runs twice per W2 step)
    if not grad.ndim or grad.shape[-1] != n or shape[:-1].count(1) != len(shape[:-1]) or len(shape) > grad.ndim:
        raise ValueError(f"cannot sum shape {grad.shape} over its leading axes down to {shape}")
    dz_out, db_out = out if out is not None else (None, None)
    loops = _loops(xp, grad, data) if act_type != "softrelu" else None
    if loops is not None and (dz_out is None or dz_out.dtype == grad.dtype and dz_out.flags.c_contiguous) \
            and (db_out is None or db_out.dtype == grad.dtype and db_out.flags.c_contiguous):
        dz = np.empty(grad.shape, grad.dtype) if dz_out is None else dz_out
        db = np.empty(shape, grad.dtype) if db_out is None else db_out
        g, d = np.ascontiguousarray(grad).reshape(-1), np.ascontiguousarray(data).reshape(-1)
        loops.act_backward_bias(loops.BACKWARD_KINDS.index(act_type), g, d, grad.dtype.type(1), dz.reshape(-1),
                                db.reshape(-1))
        return dz, db
    dz = into(xp, dz_out, _act_bwd_generic(xp, act_type, grad, data))
    db = dz.reshape(-1, n).sum(axis=0, keepdims=True, dtype=dz.dtype).reshape(shape)
    return dz, into(xp, db_out, db)


def _infer_act_bwd_bias(shapes, dtypes, act_type, shape):
    return [tuple(shapes[0]), tuple(shape)], [np.dtype(dtypes[0])] * 2


def _g_act_bwd_bias(c, h_dz, h_db):
    g, d = c.inputs
    act_type, n = c.attrs["act_type"], c.attrs["shape"][-1]
    h = call("broadcast_add", h_dz, call("Reshape", h_db, shape=(n,)))     # every dz element feeds dbias
    dg = act_backward(act_type, h, d)                                       # dz is linear in g
    if act_type == "relu":
        return dg, None                                                     # the mask is piecewise constant
    if act_type == "sigmoid":
        return dg, h * g * (1 - 2 * d)
    if act_type == "tanh":
        return dg, h * g * (-2 * d)
    s = call("sigmoid", d)
    return dg, h * g * s * (1 - s)


def _ref_act_bwd_bias(g, d, act_type, shape):
    g, d = g.astype(np.float64), d.astype(np.float64)
    dz = {"relu": lambda: g * (d > 0), "sigmoid": lambda: g * d * (1 - d), "tanh": lambda: g * (1 - d ** 2),
          "softrelu": lambda: g / (1 + np.exp(-d))}[act_type]()
    return dz, np.add.reduce(dz.reshape(-1, shape[-1]), axis=0).reshape(shape)


register(OpDef(
    name="_act_bwd_bias", fast="_epilogue_kernels.act_backward_bias, for relu, sigmoid and tanh",
    kernel=_k_act_bwd_bias, inputs=("grad", "data"), num_outputs=2, hidden=True,
    attrs={"act_type": Attr(choice(*ACTS), REQUIRED), "shape": Attr(parse_shape, REQUIRED)},
    infer=_infer_act_bwd_bias, grad=_g_act_bwd_bias, writes_out=True,
    test=OpTest(ref=_ref_act_bwd_bias, cases=tuple(case for act in ACTS for case in (
        (((4, 3), (4, 3)), {"act_type": act, "shape": (1, 3)}),
        (((2, 3, 5), (2, 3, 5)), {"act_type": act, "shape": (5,)})))),
    doc="An activation's backward and its sum over the leading axes (a bias gradient) in one pass (placed by "
        "the epilogue graph pass)."))
