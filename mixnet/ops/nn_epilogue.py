"""GEMM epilogues and the fused loss: the hidden ops that symbol/epilogue.py puts into compiled graphs.

* `_fc_epilogue(data, weight[, bias], act_type=...)` = Activation(FullyConnected(...)): BLAS writes the GEMM
  into the output (or the planned out= buffer), then ONE pass adds the bias and applies the activation in place
  (a Numba loop for float32/float64 ReLU on numpy; in-place ufuncs otherwise: no SVML here for exp/tanh in Numba,
  and cupy runs the generic code). The pre-activation value is never materialised apart from the output.
  feature_major=True: weight @ data.T, kept as the transpose of a C-contiguous (N, rows) array (the pass marks
  values only Dense layers read; OpenBLAS runs that GEMM shape faster).
* `_act_bwd_bias(grad, data, act_type=..., shape=...)` -> (dz, dbias): an activation's backward dz and its sum
  over every axis but the last (a Dense layer's bias gradient, `_sum_to` to `shape` = (1, ..., N)) in one pass.
  `data` is what the activation's backward rule reads: its output for relu, sigmoid and tanh, its input for
  softrelu (READS_INPUT). symbol/epilogue.py finds the backward by what the rule itself traces to.

* `_log_softmax_pick(data, index)` -> (pick(logp, index, axis=-1), logp) with logp = log_softmax(data) on (rows,
  classes) data, and `_log_softmax_pick_bwd(logp, index, grad)`, the gradient of the picked value: a classifier's
  loss and its backward, one Numba loop each (`_numba_kernels.log_softmax_pick*`, the same float operations as the
  two ops' loops), and the two ops' own kernels otherwise.

All are ordinary registry ops (tests are generated from their declarations) with gradient rules written with
mixnet ops, though graph-mode autodiff runs before the pass and never meets them.
"""
from types import SimpleNamespace

import numpy as np

from . import _fastpath
from .attrs import Attr, REQUIRED, choice, parse_bool, parse_int, parse_shape
from .common import call, into, run_ops
from .nn_act import _g_activation, _k_activation, _ref_activation
from .nn_conv import _g_fc, _infer_fc, _k_fc, _ref_fc, weight_shape_error
from . import registry
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
def _k_fc_epilogue(xp, data, weight, bias=None, *, num_hidden, no_bias, flatten, act_type, feature_major=False,
                   out=None):
    if bias is not None and tuple(bias.shape) != (num_hidden,):
        raise ValueError(f"bias shape {bias.shape} does not match ({num_hidden},) (num_hidden,)")
    if feature_major and out is None and xp is np and data.dtype == weight.dtype and (flatten or data.ndim == 2) \
            and data.shape[0] > 1:                   # one row: a matrix-vector product, ~5% slower transposed
        return _fc_epilogue_feature_major(data, weight, bias, num_hidden, act_type)
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


def _fc_epilogue_feature_major(data, weight, bias, num_hidden, act_type):
    """The (rows, N) result as the transpose of a C-contiguous (N, rows) array: weight @ data.T, the shape in which
    OpenBLAS runs a layer wide against its batch faster (symbol/epilogue.py), then the bias and activation."""
    x2 = data.reshape(data.shape[0], -1) if data.ndim != 2 else data      # flatten, or 2-d already
    if tuple(weight.shape) != (num_hidden, x2.shape[1]):
        raise weight_shape_error(weight, num_hidden, x2.shape[1])
    y_t = np.matmul(weight, x2.T)
    loops = _loops(np, y_t, bias) if bias is not None and act_type == "relu" else None
    if loops is not None:
        loops.bias_relu_feature_major(y_t.reshape(-1), np.ascontiguousarray(bias), y_t.dtype.type(0))
        return y_t.T
    if bias is not None:
        np.add(y_t, bias[:, None], out=y_t, casting="unsafe")
    return _k_activation(np, y_t, act_type, out=y_t).T


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
    name="_fc_epilogue", fast="_epilogue_kernels.bias_relu (bias_relu_feature_major when feature_major), for relu with a bias",
    kernel=_k_fc_epilogue, inputs=_fc_epilogue_inputs, grad=_g_fc_epilogue, hidden=True,
    infer=lambda shapes, dtypes, act_type, feature_major=False, **fc: _infer_fc(shapes, dtypes, **fc),
    writes_out=True,
    attrs={"num_hidden": Attr(parse_int, REQUIRED), "no_bias": Attr(parse_bool, False),
           "flatten": Attr(parse_bool, True), "act_type": Attr(choice(*ACTS), REQUIRED),
           "feature_major": Attr(parse_bool, False)},
    test=OpTest(
        ref=lambda x, w, b=None, act_type=None, feature_major=False, **fc: _ref_activation(_ref_fc(x, w, b, **fc),
                                                                                           act_type),
        domain=(0.1, 1.0),        # positive pre-activations: relu's kink stays away from the finite differences
        cases=tuple(case for act in ACTS for case in (
            (((3, 4), (5, 4), (5,)), {"num_hidden": 5, "act_type": act}),
            (((3, 4), (5, 4), (5,)), {"num_hidden": 5, "act_type": act, "feature_major": True}),
            (((2, 3, 2), (4, 6)), {"num_hidden": 4, "no_bias": True, "act_type": act, "feature_major": True}),
            (((2, 3, 2), (4, 6)), {"num_hidden": 4, "no_bias": True, "act_type": act}),
            (((2, 3, 2), (4, 2), (4,)), {"num_hidden": 4, "flatten": False, "act_type": act})))),
    doc="Activation(FullyConnected(data, weight, bias)) in one node: the GEMM, then bias and activation in one "
        "pass (placed by the epilogue graph pass). feature_major: the result is the transpose of a C-contiguous "
        "(num_hidden, rows) array (the pass sets it where only Dense layers read the value)."))


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
    if loops is not None and dz_out is None and grad.ndim == 2 and grad.strides[0] < grad.strides[1] \
            and grad.T.flags.c_contiguous and data.T.flags.c_contiguous \
            and (db_out is None or db_out.dtype == grad.dtype and db_out.flags.c_contiguous):
        # feature-major values (a feature-major _fc_epilogue's output, its gradient): dz keeps their layout
        dz_t = np.empty(grad.shape[::-1], grad.dtype)
        db = np.empty(shape, grad.dtype) if db_out is None else db_out
        loops.act_backward_bias_feature_major(loops.BACKWARD_KINDS.index(act_type), grad.T.reshape(-1),
                                              data.T.reshape(-1), grad.dtype.type(1), dz_t.reshape(-1),
                                              db.reshape(-1))
        return dz_t.T, db
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
    name="_act_bwd_bias", fast="_epilogue_kernels.act_backward_bias (act_backward_bias_feature_major for feature-major arrays, tests/symbol/test_feature_major.py), for relu, sigmoid and tanh",
    kernel=_k_act_bwd_bias, inputs=("grad", "data"), num_outputs=2, hidden=True,
    attrs={"act_type": Attr(choice(*ACTS), REQUIRED), "shape": Attr(parse_shape, REQUIRED)},
    infer=_infer_act_bwd_bias, grad=_g_act_bwd_bias, writes_out=True,
    test=OpTest(ref=_ref_act_bwd_bias, cases=tuple(case for act in ACTS for case in (
        (((4, 3), (4, 3)), {"act_type": act, "shape": (1, 3)}),
        (((2, 3, 5), (2, 3, 5)), {"act_type": act, "shape": (5,)})))),
    doc="An activation's backward and its sum over the leading axes (a bias gradient) in one pass (placed by "
        "the epilogue graph pass)."))


# ---------------------------------------------------------------------------------------------------------
# a classifier's loss: pick(log_softmax(data)) over the classes of (rows, classes) data, and its backward
def _check_rows(op, data_shape, index_shape):
    if len(data_shape) != 2 or tuple(index_shape) not in ((data_shape[0],), (data_shape[0], 1)):
        raise ValueError(f"{op} needs (rows, classes) data and a (rows,) or (rows, 1) index, got shapes "
                         f"{tuple(data_shape)} and {tuple(index_shape)}")


def _flat(a):
    return (a if a.flags.c_contiguous else np.ascontiguousarray(a)).reshape(-1)


def _k_log_softmax_pick(xp, data, index, *, keepdims, mode):
    _check_rows("_log_softmax_pick", data.shape, index.shape)
    nk = _fastpath.numba_kernels(xp, data, index) if data.size else None
    if nk is not None and data.flags.c_contiguous:
        logp, picked = np.empty(data.shape, data.dtype), np.empty(data.shape[0], data.dtype)
        nk.log_softmax_pick(data, _flat(index), data.dtype.type(1), mode == "clip", logp, picked)
        return (picked.reshape(-1, 1) if keepdims else picked), logp
    # the two ops' own kernels, one after the other
    logp = registry.get("log_softmax").kernel(xp, data, axis=-1, temperature=None, dtype=None, use_length=False)
    return registry.get("pick").kernel(xp, logp, index, axis=-1, keepdims=keepdims, mode=mode), logp


def _infer_log_softmax_pick(shapes, dtypes, keepdims, mode):
    _check_rows("_log_softmax_pick", shapes[0], shapes[1])
    rows = shapes[0][0]
    return [(rows, 1) if keepdims else (rows,), tuple(shapes[0])], [np.dtype(dtypes[0])] * 2


def _scattered(h_picked, index, shape, mode):
    """pick's gradient: h_picked at each row's picked class of a (rows, classes) zero array."""
    rows = shape[0]
    return call("_put_along_axis_add", call("Reshape", h_picked, shape=(rows, 1)),
                call("Reshape", index, shape=(rows, 1)), shape=tuple(shape), axis=1, mode=mode)


def _g_log_softmax_pick(c, h_picked, h_logp):
    data, index = c.inputs
    total = call("elemwise_add", _scattered(h_picked, index, data.shape, c.attrs["mode"]), h_logp)
    return call("_log_softmax_bwd", c.outputs[1], total, axis=1, temperature=None), None


def _ref_log_softmax_pick(data, index, keepdims, mode):
    wide = data.astype(np.float64)
    shifted = wide - wide.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    n = data.shape[1]
    k = index.reshape(-1).astype(np.int64)
    k = np.clip(k, 0, n - 1) if mode == "clip" else np.mod(k, n)
    picked = logp[np.arange(data.shape[0]), k]
    return (picked.reshape(-1, 1) if keepdims else picked), logp


_PICK_MODE = choice("clip", "wrap")

register(OpDef(
    name="_log_softmax_pick", fast="_numba_kernels.log_softmax_pick",
    kernel=_k_log_softmax_pick, inputs=("data", "index"), nondiff_inputs=(1,), num_outputs=2, hidden=True,
    attrs={"keepdims": Attr(parse_bool, False), "mode": Attr(_PICK_MODE, "clip")},
    infer=_infer_log_softmax_pick, grad=_g_log_softmax_pick,
    test=OpTest(ref=_ref_log_softmax_pick, int_inputs={1: (-1, 5)}, cases=(
        (((3, 4), (3,)), {}), (((5, 4), (5, 1)), {"keepdims": True, "mode": "wrap"}),
        (((2, 70), (2,)), {"keepdims": True}))),
    doc="(pick(logp, index, axis=-1), logp) with logp = log_softmax(data, axis=-1) on (rows, classes) data: a "
        "classifier's loss in one node (placed by the epilogue graph pass)."))


def _k_log_softmax_pick_bwd(xp, logp, index, grad, *, mode):
    _check_rows("_log_softmax_pick_bwd", logp.shape, index.shape)
    rows = logp.shape[0]
    if grad.size != rows:
        raise ValueError(f"_log_softmax_pick_bwd: gradient shape {tuple(grad.shape)} has not one value per row of "
                         f"{tuple(logp.shape)}")
    nk = _fastpath.numba_kernels(xp, logp, index, grad) if logp.size else None
    if nk is not None and logp.flags.c_contiguous:
        dx = np.empty(logp.shape, logp.dtype)
        nk.log_softmax_pick_backward(logp, _flat(index), _flat(grad), mode == "clip", dx)
        return dx
    # the two ops' own kernels: pick's gradient scattered, then log_softmax's backward
    scattered = registry.get("_put_along_axis_add").kernel(xp, grad.reshape(rows, 1), index.reshape(rows, 1),
                                                           shape=tuple(logp.shape), axis=1, mode=mode)
    return registry.get("_log_softmax_bwd").kernel(xp, logp, scattered, axis=1, temperature=None)


def _g_log_softmax_pick_bwd(c, h):
    logp, index, grad = c.inputs
    rows = logp.shape[0]
    e = call("exp", logp)
    column = call("Reshape", grad, shape=(rows, 1))
    d_logp = call("negative", call("broadcast_mul", h * e, column))
    d_grad = call("pick", h, index, axis=1, mode=c.attrs["mode"]) - call("sum", h * e, axis=1)
    return d_logp, None, call("Reshape", d_grad, shape=tuple(grad.shape))


def _ref_log_softmax_pick_bwd(logp, index, grad, mode):
    rows, n = logp.shape
    k = index.reshape(-1).astype(np.int64)
    k = np.clip(k, 0, n - 1) if mode == "clip" else np.mod(k, n)
    scattered = np.zeros(logp.shape)
    scattered[np.arange(rows), k] = grad.reshape(-1)
    return scattered - np.exp(logp.astype(np.float64)) * scattered.sum(axis=1, keepdims=True)


register(OpDef(
    name="_log_softmax_pick_bwd", fast="_numba_kernels.log_softmax_pick_backward",
    kernel=_k_log_softmax_pick_bwd, inputs=("logp", "index", "grad"), nondiff_inputs=(1,), hidden=True,
    attrs={"mode": Attr(_PICK_MODE, "clip")},
    infer=lambda shapes, dtypes, mode: ([tuple(shapes[0])], [np.dtype(dtypes[0])]), grad=_g_log_softmax_pick_bwd,
    test=OpTest(ref=_ref_log_softmax_pick_bwd, domain=(-3.0, -0.1), int_inputs={1: (-1, 5)}, grad2=False, cases=(
        (((3, 4), (3,), (3,)), {}), (((5, 4), (5, 1), (5, 1)), {"mode": "wrap"}), (((2, 70), (2,), (2, 1)), {}))),
    doc="_log_softmax_pick's backward for its picked output: log_softmax's backward of pick's gradient, given "
        "logp and the incoming gradient (placed by the epilogue graph pass)."))
