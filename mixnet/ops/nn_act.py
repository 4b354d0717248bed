"""Activations, the softmax family, Dropout, loss heads, Embedding, Sequence* and smooth_l1.

Loss heads (SoftmaxOutput, *RegressionOutput, MakeLoss, make_loss) reproduce MXNet exactly: their backward
ignores the incoming head gradient and returns the loss gradient itself (e.g. (softmax - onehot) * grad_scale).
That makes them not differentiable in the mathematical sense, so their higher-order gradients are not
meaningful; use the ordinary ops (log_softmax + pick) where that matters.
"""
import math

import numpy as np

from . import _fastpath
from .attrs import Attr, REQUIRED, choice, optional, parse_bool, parse_dtype, parse_float, parse_int, parse_shape
from .common import call, check_shape, infer_same, into, norm_axis, sum_to
from .nn_norm import _final_gradient, _replayed, rows_back, rows_last
from . import registry
from .registry import OpDef, OpTest, ParamShapes, register
from .special import erf as _erf


def _keep(x, y):
    return y if y.dtype == x.dtype else y.astype(x.dtype)


# ---------------------------------------------------------------------------------------------------------
# Activation: relu, sigmoid, tanh and softsign are the registry's ops of those names (kernel and gradient rule);
# softrelu, log(1 + e^x), is Activation's own (MXNet has no op of that name).
def _k_activation(xp, data, act_type, out=None):
    """Into out= when given (x itself in the GEMM epilogue): ufuncs with out=, or a copy for softsign."""
    if act_type == "softrelu":
        if out is None:
            return _keep(data, xp.logaddexp(data, 0))
        return xp.logaddexp(data, 0, out=out, casting="unsafe")
    op = registry.get(act_type)
    if out is None:
        return op.kernel(xp, data)
    return op.kernel(xp, data, out=out) if op.writes_out else into(xp, out, op.kernel(xp, data))


def _g_activation(c, g):
    """The wrapped op's rule (relu's reads the output only: a hybridized Dense then need not keep its
    pre-activation, so the ReLU runs in place or fuses into the GEMM's epilogue)."""
    if c.attrs["act_type"] == "softrelu":
        return (g * call("sigmoid", c.inputs[0]),)
    return registry.get(c.attrs["act_type"]).grad(c, g)


def _ref_activation(x, act_type):
    x = x.astype(np.float64)
    return np.logaddexp(x, 0) if act_type == "softrelu" else registry.get(act_type).test.ref(x)


register(OpDef(
    name="Activation", kernel=_k_activation, grad=_g_activation, infer=infer_same, kind="unary", writes_out=True,
    attrs={"act_type": Attr(choice("relu", "sigmoid", "tanh", "softrelu", "softsign"), REQUIRED)},
    test=OpTest(ref=_ref_activation, recipe="unary",
                domain=(0.1, 2.0),
                recipe_attrs=tuple({"act_type": t} for t in ("relu", "sigmoid", "tanh", "softrelu", "softsign")),
                cases=tuple((((2, 3),), {"act_type": t}) for t in ("sigmoid", "tanh", "softrelu")))))


# NOTE: ReLU's backward is a primitive, g * (x > 0) in one op (a Numba loop on CPU once Numba is loaded) instead
# of a comparison op, a cast of its mask and a product op. Its gradient w.r.t. g is itself; x gets none (the mask is
# piecewise constant), as with the composite form.
def _k_relu_bwd(xp, grad, data, out=None):
    if grad.shape != data.shape:
        raise ValueError(f"gradient shape {grad.shape} does not match the data shape {data.shape}")
    nk = _fastpath.numba_kernels(xp, grad, data, load=False)
    if nk is None or (out is not None and (out.dtype != grad.dtype or not out.flags.c_contiguous)):
        if out is not None:
            return xp.multiply(grad, data > 0, out=out, casting="unsafe")
        return _keep(grad, grad * (data > 0))
    if out is None:
        out = np.empty(grad.shape, dtype=grad.dtype)
    nk.relu_backward(np.ascontiguousarray(grad).reshape(-1), np.ascontiguousarray(data).reshape(-1),
                     out.reshape(-1))
    return out


register(OpDef(
    name="_relu_bwd", fast="_numba_kernels.relu_backward, once something else has loaded the loops",
    kernel=_k_relu_bwd, inputs=("grad", "data"), kind="binary", scalar="{0} * ({1} > 0)",
    infer=infer_same, nondiff_inputs=(1,), hidden=True, writes_out=True,
    grad=lambda c, h: (call("_relu_bwd", h, c.inputs[1]), None),
    test=OpTest(ref=lambda g, x: g * (x > 0), cases=(
        (((2, 3), (2, 3)), {}), (((4, 1, 5), (4, 1, 5)), {})))))


# ---------------------------------------------------------------------------------------------------------
# LeakyReLU
_SELU_ALPHA, _SELU_LAMBDA = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _prelu_shape(x, gamma):
    return _prelu_bshape(x.shape, gamma.shape)


def _prelu_bshape(x_shape, gamma_shape):
    """The shape gamma is broadcast from (MXNet's rule): gamma's dims, from its last, line up with data's axes 1
    and 0 where they equal the data's or are 1; the other axes are 1. So (C,) is one slope per channel, (1,) one
    for all, (N, C) one per sample and channel."""
    x_shape, gamma_shape = tuple(x_shape), tuple(gamma_shape)
    out, s = [1] * len(x_shape), len(gamma_shape) - 1
    for i in range(len(x_shape) - 1, -1, -1):
        if s >= 0 and i <= 1 and gamma_shape[s] in (x_shape[i], 1):
            out[i] = gamma_shape[s]
            s -= 1
    if s != -1:
        raise ValueError(f"cannot broadcast gamma of shape {gamma_shape} to data of shape {x_shape} (gamma's dims "
                         "match data's axes 0 and 1)")
    return tuple(out)


def _leaky_infer(shapes, dtypes, act_type, slope, lower_bound, upper_bound):
    shape = tuple(shapes[0])
    if act_type == "prelu":
        _prelu_bshape(shape, shapes[1])
    n = 2 if act_type == "rrelu" else 1
    return [shape] * n, [dtypes[0]] * n


def _leaky_inputs(a):
    return ("data", "gamma") if a["act_type"] == "prelu" else ("data",)


def _leaky_nout(a):
    return 2 if a["act_type"] == "rrelu" else 1


def _k_leaky(xp, data, gamma=None, *, act_type, slope, lower_bound, upper_bound, is_train, rng):
    x = data
    if act_type == "leaky":
        return _keep(x, xp.where(x > 0, x, x * slope))
    if act_type == "prelu":
        g = gamma.reshape(_prelu_shape(x, gamma))
        return _keep(x, xp.where(x > 0, x, x * g))
    if act_type == "elu":
        return _keep(x, xp.where(x > 0, x, slope * xp.expm1(xp.minimum(x, 0))))
    if act_type == "selu":
        return _keep(x, _SELU_LAMBDA * xp.where(x > 0, x, _SELU_ALPHA * xp.expm1(xp.minimum(x, 0))))
    if act_type == "gelu":
        return _keep(x, 0.5 * x * (1 + _erf(x / math.sqrt(2.0))))
    # rrelu: random slope in [lower, upper) while training, their mean otherwise; the slopes are the mask output
    if is_train:
        mask = rng.uniform(lower_bound, upper_bound, size=x.shape).astype(x.dtype)
        if xp is not np:
            mask = xp.asarray(mask)
    else:
        mask = xp.full(x.shape, (lower_bound + upper_bound) / 2, dtype=x.dtype)
    return _keep(x, xp.where(x > 0, x, x * mask)), mask


def _g_leaky(c, g, *rest):
    x, a = c.inputs[0], c.attrs
    t = a["act_type"]
    pos = x > 0
    neg = 1 - pos
    if t == "leaky":
        return (g * (pos + neg * a["slope"]),)
    if t == "prelu":
        gamma = c.inputs[1]
        gb = call("Reshape", gamma, shape=_prelu_shape(x, gamma))
        dgamma = sum_to(g * x * neg, gb.shape)
        return g * (pos + neg * gb), call("Reshape", dgamma, shape=gamma.shape)
    if t == "elu":
        return (g * (pos + neg * a["slope"] * call("exp", x * neg)),)
    if t == "selu":
        # MXNet's rule, which its tests check: lambda where x > 0, else lambda * (y + alpha) - close to the exact
        # lambda * alpha * exp(x) only near 0 (mixnet follows MXNet; tests/ops/test_nn_semantics.py pins it)
        return (g * _SELU_LAMBDA * (pos + neg * (c.outputs[0] + _SELU_ALPHA)),)
    if t == "gelu":
        cdf = 0.5 * (1 + call("erf", x * (1 / math.sqrt(2.0))))
        pdf = call("exp", x * x * -0.5) * (1 / math.sqrt(2 * math.pi))
        return (g * (cdf + x * pdf),)
    return (g * (pos + neg * c.outputs[1]),)


def _ref_leaky_np(x, gamma=None, act_type="leaky", slope=0.25, lower_bound=0.125, upper_bound=0.334):
    x = x.astype(np.float64)
    out = np.empty_like(x)
    flat, o = x.reshape(-1), out.reshape(-1)
    if act_type == "prelu":
        gb = np.broadcast_to(gamma.reshape(_prelu_shape(x, gamma)), x.shape).reshape(-1)
    for i, v in enumerate(flat):
        if act_type == "leaky":
            o[i] = v if v > 0 else slope * v
        elif act_type == "prelu":
            o[i] = v if v > 0 else gb[i] * v
        elif act_type == "elu":
            o[i] = v if v > 0 else slope * (math.exp(v) - 1)
        elif act_type == "selu":
            o[i] = _SELU_LAMBDA * (v if v > 0 else _SELU_ALPHA * (math.exp(v) - 1))
        elif act_type == "gelu":
            o[i] = 0.5 * v * (1 + math.erf(v / math.sqrt(2)))
        else:
            o[i] = v if v > 0 else v * (lower_bound + upper_bound) / 2
    return (out, np.full(x.shape, (lower_bound + upper_bound) / 2)) if act_type == "rrelu" else out


register(OpDef(
    name="LeakyReLU", kernel=_k_leaky, inputs=_leaky_inputs, grad=_g_leaky, train_aware=True, random=True,
    num_outputs=_leaky_nout, infer=_leaky_infer, input_init={"gamma": '["Constant", {"value": 0.25}]'},
    param_shapes=ParamShapes(lambda a, s: {1: (s[0][1],)} if s[0] is not None and len(s[0]) > 1 else {},
                             partial=True),
    attrs={"act_type": Attr(choice("elu", "gelu", "leaky", "prelu", "rrelu", "selu"), "leaky"),
           "slope": Attr(parse_float, 0.25), "lower_bound": Attr(parse_float, 0.125),
           "upper_bound": Attr(parse_float, 0.334)},
    test=OpTest(ref=_ref_leaky_np, domain=(0.1, 2.0), cases=(
        (((2, 5),), {}), (((2, 5),), {"act_type": "elu", "slope": 0.7}), (((2, 5),), {"act_type": "selu"}),
        (((2, 5),), {"act_type": "gelu"}), (((2, 3, 2), (3,)), {"act_type": "prelu"}),
        (((2, 3), (1,)), {"act_type": "prelu"}), (((3, 4), (3, 4)), {"act_type": "prelu"}),
    )),
    doc="leaky / prelu (gamma per channel on axis 1, one value, or per sample and channel) / elu (slope is alpha) / selu / gelu (erf "
        "form) / rrelu (random slope in [lower_bound, upper_bound) while training, their mean otherwise; "
        "returns (out, slopes) like MXNet)."))


# ---------------------------------------------------------------------------------------------------------
# softmax family
def _check_length(shape, length_shape, length_dtype, axis):
    """softmax's lengths: integers, with the data's shape without `axis`. Returns the normalized axis. Shape
    inference passes no dtype: MXNet checks the lengths' dtype when the op runs, so a float32 `length` variable
    binds (simple_bind's default) and fails at forward."""
    shape = tuple(shape)
    ax = norm_axis(axis, len(shape))
    want = shape[:ax] + shape[ax + 1:]
    if tuple(length_shape) != want:
        raise ValueError(f"length shape {tuple(length_shape)} does not match {want} (data shape without axis {axis})")
    if length_dtype is not None and np.dtype(length_dtype).kind not in "iu":
        raise ValueError(f"length must have an integer dtype, got {np.dtype(length_dtype)} (MXNet)")
    return ax


def _length_mask(xp, shape, length, axis):
    ax = _check_length(shape, length.shape, length.dtype, axis)
    pos = xp.arange(shape[ax]).reshape((-1,) + (1,) * (len(shape) - ax - 1))
    return pos < xp.expand_dims(length, ax)


_LOOP_SCALARS = {}


def _loop_scalars(dtype, t, kind):
    """softmax_forward's temperature and sign as scalars of the data's dtype; memoized for the usual t = 1 (two
    numpy scalar constructions per call otherwise; any t would let the memo grow without bound)."""
    scalars = _LOOP_SCALARS.get((dtype, kind)) if t == 1.0 else None
    if scalars is None:
        typ = np.dtype(dtype).type
        scalars = (typ(t), typ(-1 if kind == "softmin" else 1))
        if t == 1.0:
            _LOOP_SCALARS[(dtype, kind)] = scalars
    return scalars


def _softmax_fast(xp, data, ax, t, kind, out):
    """The Numba row loop for float32/float64 data without lengths (one pass for the maximum, one for exp and
    its sum, one to scale); None where it does not apply. The common case (rows along the last axis of a
    contiguous array, t = 1) runs rows_last, _loop_scalars, rows_back and into in line: a classifier's loss runs
    this every step, where each Python call is a share of the step."""
    nk = _fastpath.numba_kernels(xp, data) if data.size else None
    if nk is None:
        return None
    last = ax == data.ndim - 1
    rows = data.reshape(-1, data.shape[-1]) if last and data.flags.c_contiguous else rows_last(data, ax)
    direct = out is not None and last and out.dtype == data.dtype and out.flags.c_contiguous
    y = out.reshape(rows.shape) if direct else np.empty(rows.shape, data.dtype)
    scalars = _LOOP_SCALARS.get((data.dtype, kind)) if t == 1.0 else None
    tt, sign = scalars if scalars is not None else _loop_scalars(data.dtype, t, kind)
    nk.softmax_forward(rows, tt, sign, kind == "log_softmax", y)
    if direct:
        return out
    if out is None and last:
        return y.reshape(data.shape)
    return into(xp, out, rows_back(y, data.shape, ax))


def _check_softmax_axis(shape, axis):
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis {axis} is out of range for data of shape {tuple(shape)}")


def _softmax_infer(shapes, dtypes, axis, temperature, dtype, use_length):
    _check_softmax_axis(shapes[0], axis)
    if use_length:
        _check_length(shapes[0], shapes[1], None, axis)
    return [tuple(shapes[0])], [dtype if dtype is not None else dtypes[0]]


def _softmax_kernel(kind):
    def run(xp, data, length=None, *, axis, temperature, dtype, use_length, out=None):
        ax = axis
        if not -data.ndim <= axis < data.ndim:       # tested here, raised by the helper that infer shares
            _check_softmax_axis(data.shape, axis)
        t = 1.0 if temperature is None else temperature
        if not use_length and (dtype is None or dtype == data.dtype):
            fast = _softmax_fast(xp, data, ax % data.ndim, t, kind, out)
            if fast is not None:
                return fast
        x = data.astype(np.float64) if data.dtype == np.float16 else data
        z = x / t if t != 1.0 else x
        if kind == "softmin":
            z = -z
        mask = None
        if use_length:
            mask = _length_mask(xp, data.shape, length, ax)
            z = xp.where(mask, z, -np.inf)
        zmax = z.max(axis=ax, keepdims=True)
        zmax = xp.where(xp.isfinite(zmax), zmax, 0)
        e = xp.exp(z - zmax)
        s = e.sum(axis=ax, keepdims=True)
        # the last step writes straight into a given buffer of the computing dtype (out=), else copies there
        direct = out is not None and mask is None and out.dtype == z.dtype
        with np.errstate(invalid="ignore", divide="ignore"):
            if kind == "log_softmax":
                y = xp.subtract(z, zmax, out=out if direct else None)
                y -= xp.log(s)
            else:
                y = xp.divide(e, s, out=out if direct else None)
        if direct:
            return out
        if mask is not None:
            y = xp.where(mask, y, 0)
        return into(xp, out, y.astype(dtype if dtype is not None else data.dtype, copy=False))
    return run


def _softmax_grad(kind):
    def rule(c, g):
        x = c.inputs[0]
        a = c.attrs
        y = c.outputs[0]
        t = 1.0 if a["temperature"] is None else a["temperature"]
        ax = a["axis"] % x.ndim
        kshape = tuple(1 if i == ax else d for i, d in enumerate(x.shape))
        if not a["use_length"] and y.dtype == x.dtype and _final_gradient():
            if kind == "log_softmax":
                return (call("_log_softmax_bwd", y, g, axis=ax, temperature=a["temperature"]),)
            return (call("_softmax_bwd", y, g, axis=ax, temperature=a["temperature"], softmin=kind == "softmin"),)
        if y.dtype != x.dtype:
            y = call("Cast", y, dtype=x.dtype)
            g = call("Cast", g, dtype=x.dtype)
        if kind == "log_softmax":
            p = call("exp", y)
            if a["use_length"]:
                mask = call("_softmax_length_mask", x, c.inputs[1], axis=a["axis"])
                p = p * mask
                g = g * mask
            dx = (g - p * call("_sum_to", g, shape=kshape)) * (1.0 / t)
        else:
            dx = y * (g - call("_sum_to", g * y, shape=kshape)) * (1.0 / t)
            if kind == "softmin":
                dx = -dx
        return (dx, None) if a["use_length"] else (dx,)
    return rule


def _softmax_inputs(a):
    return ("data", "length") if a["use_length"] else ("data",)


_SOFTMAX_ATTRS = {"axis": Attr(parse_int, -1), "temperature": Attr(optional(parse_float), None),
                  "dtype": Attr(optional(parse_dtype), None), "use_length": Attr(optional(parse_bool), False)}


def _ref_softmax(kind):
    def ref(x, length=None, axis=-1, temperature=None, dtype=None, use_length=False):
        x = np.moveaxis(x.astype(np.float64), axis, -1)
        t = temperature or 1.0
        out = np.zeros(x.shape)
        lens = None if not use_length else np.moveaxis(np.expand_dims(length, -1), -1, -1)[..., 0]
        for idx in np.ndindex(*x.shape[:-1]):
            n = x.shape[-1] if lens is None else int(lens[idx])
            v = x[idx][:n] / t * (-1 if kind == "softmin" else 1)
            if n == 0:
                continue
            lse = np.log(np.exp(v - v.max()).sum()) + v.max()
            out[idx][:n] = v - lse if kind == "log_softmax" else np.exp(v - lse)
        return np.moveaxis(out, -1, axis)
    return ref


for _kind in ("softmax", "log_softmax", "softmin"):
    register(OpDef(
        name=_kind, fast="_numba_kernels.softmax_forward, without lengths",
        kernel=_softmax_kernel(_kind), inputs=_softmax_inputs, attrs=_SOFTMAX_ATTRS,
        grad=_softmax_grad(_kind), nondiff_inputs=(1,), writes_out=True, infer=_softmax_infer,
        test=OpTest(ref=_ref_softmax(_kind), int_inputs={1: (0, 5, "int32")}, cases=(
            (((3, 4),), {}), (((2, 3, 4),), {"axis": 1}), (((2, 5),), {"temperature": 2.0}),
            (((3, 4), (3,)), {"use_length": True}), (((2, 3, 4), (2, 4)), {"use_length": True, "axis": 1}),
        )),
        doc=f"{_kind} along `axis`; with use_length=True the second input (integer lengths, shape of data "
            "without `axis`) masks positions at or beyond the length; those outputs are 0."))


# NOTE: the softmax family's backward as primitives (one op instead of a product, a reduction, a subtraction, a
# product and a scale; one Numba row loop on CPU), used by the rules when the gradient is final (see
# nn_norm._final_gradient); they are functions of the output y and the head gradient g, and their own gradient
# replays the composite form.
def _k_softmax_bwd(log):
    def run(xp, out_data, grad, *, axis, temperature, softmin=False, out=None):
        if tuple(grad.shape) != tuple(out_data.shape):
            raise ValueError(f"gradient shape {tuple(grad.shape)} does not match the output shape "
                             f"{tuple(out_data.shape)}")
        ax = axis % out_data.ndim if out_data.ndim else 0
        t = 1.0 if temperature is None else temperature
        scale = (-1.0 if softmin else 1.0) / t
        nk = _fastpath.numba_kernels(xp, out_data, grad) if out_data.size else None
        if nk is not None:
            last = ax == out_data.ndim - 1
            if last and out_data.flags.c_contiguous and grad.flags.c_contiguous:   # rows_last's view, in line
                rows, grows = out_data.reshape(-1, out_data.shape[-1]), grad.reshape(-1, grad.shape[-1])
            else:
                rows, grows = rows_last(out_data, ax), rows_last(grad, ax)
            direct = out is not None and last and out.dtype == out_data.dtype and out.flags.c_contiguous
            dx = out.reshape(rows.shape) if direct else np.empty(rows.shape, out_data.dtype)
            nk.softmax_backward(rows, grows, scale, log, dx)
            if direct:
                return out
            if out is None and last:                 # rows_back and into, in line
                return dx.reshape(out_data.shape)
            return into(xp, out, rows_back(dx, out_data.shape, ax))
        wide = np.float64 if out_data.dtype == np.float16 else out_data.dtype
        y, g = out_data.astype(wide, copy=False), grad.astype(wide, copy=False)
        if log:
            dx = (g - xp.exp(y) * g.sum(axis=ax, keepdims=True)) * scale
        else:
            dx = y * (g - (g * y).sum(axis=ax, keepdims=True)) * scale
        return into(xp, out, dx.astype(out_data.dtype, copy=False))
    return run


def _softmax_bwd_composite(log):
    def composite(a, y, g):
        ax = a["axis"] % y.ndim
        kshape = tuple(1 if i == ax else d for i, d in enumerate(y.shape))
        scale = (-1.0 if a.get("softmin") else 1.0) / (1.0 if a["temperature"] is None else a["temperature"])
        if log:
            return ((g - call("exp", y) * call("_sum_to", g, shape=kshape)) * scale,)
        return (y * (g - call("_sum_to", g * y, shape=kshape)) * scale,)
    return composite


def _ref_softmax_bwd(log):
    def ref(y, g, axis=-1, temperature=None, softmin=False):
        """The Jacobian of softmax, J = diag(p) - p p^T (p = exp(y) for log_softmax, whose Jacobian is
        I - 1 p^T), applied row by row in float64."""
        y = np.moveaxis(y.astype(np.float64), axis, -1)
        g = np.moveaxis(g.astype(np.float64), axis, -1)
        dx = np.empty(y.shape)
        for idx in np.ndindex(*y.shape[:-1]):
            p = np.exp(y[idx]) if log else y[idx]
            jac = np.eye(len(p)) - np.outer(np.ones(len(p)), p) if log else np.diag(p) - np.outer(p, p)
            dx[idx] = jac.T @ g[idx]
        sign = -1.0 if softmin else 1.0
        return np.moveaxis(dx, -1, axis) * sign / (temperature or 1.0)
    return ref


_SOFTMAX_BWD_CASES = ((((3, 4), (3, 4)), {}), (((2, 3, 4), (2, 3, 4)), {"axis": 1}),
                      (((2, 5), (2, 5)), {"temperature": 2.0}))
register(OpDef(
    name="_softmax_bwd", fast="_numba_kernels.softmax_backward",
    kernel=_k_softmax_bwd(False), inputs=("out", "grad"), infer=infer_same, hidden=True,
    attrs={"axis": Attr(parse_int, -1), "temperature": Attr(optional(parse_float), None),
           "softmin": Attr(parse_bool, False)},
    grad=_replayed(_softmax_bwd_composite(False)), writes_out=True,
    test=OpTest(ref=_ref_softmax_bwd(False), domain=(0.05, 1.0), grad2=False,
                cases=_SOFTMAX_BWD_CASES + ((((3, 4), (3, 4)), {"softmin": True}),)),
    doc="softmax's (softmin's) backward given its output and head gradient: out * (grad - sum(grad * out)) / t."))
register(OpDef(
    name="_log_softmax_bwd", fast="_numba_kernels.softmax_backward",
    kernel=_k_softmax_bwd(True), inputs=("out", "grad"), infer=infer_same, hidden=True,
    attrs={"axis": Attr(parse_int, -1), "temperature": Attr(optional(parse_float), None)},
    grad=_replayed(_softmax_bwd_composite(True)), writes_out=True,
    test=OpTest(ref=_ref_softmax_bwd(True), domain=(-3.0, -0.1), grad2=False, cases=_SOFTMAX_BWD_CASES),
    doc="log_softmax's backward given its output and head gradient: (grad - exp(out) * sum(grad)) / t."))


def _length_mask_infer(shapes, dtypes, axis):
    _check_length(shapes[0], shapes[1], dtypes[1], axis)
    return [tuple(shapes[0])], [dtypes[0]]


def _k_length_mask(xp, data, length, axis):
    return _length_mask(xp, data.shape, length, axis).astype(data.dtype) * xp.ones_like(data)


register(OpDef(name="_softmax_length_mask", kernel=_k_length_mask, inputs=("data", "length"),
               attrs={"axis": Attr(parse_int, -1)}, differentiable=False, hidden=True,
               infer=_length_mask_infer,
               test=OpTest(ref=lambda x, n, axis=-1: (np.arange(x.shape[axis]).reshape(
                   (-1,) + (1,) * (x.ndim - axis % x.ndim - 1)) < np.expand_dims(n, axis)) * np.ones(x.shape),
                   int_inputs={1: (0, 5, "int32")}, grad=False, grad2=False, cases=((((3, 4), (3,)), {}),))))


def _softmax_act_check(shape, mode):
    if mode == "channel" and len(shape) < 2:
        raise ValueError(f"channel mode needs at least 2-D data, got shape {tuple(shape)}")
    if not shape:
        raise ValueError("SoftmaxActivation needs at least 1-D data (the batch)")
    return tuple(shape)


def _k_softmax_act(xp, data, mode):
    _softmax_act_check(data.shape, mode)
    if mode == "channel":
        return _softmax_kernel("softmax")(xp, data, axis=1, temperature=None, dtype=None, use_length=False)
    flat = data.reshape(data.shape[0], -1)
    return _softmax_kernel("softmax")(xp, flat, axis=-1, temperature=None, dtype=None,
                                      use_length=False).reshape(data.shape)


def _g_softmax_act(c, g):
    x, y = c.inputs[0], c.outputs[0]
    kshape = (x.shape[0], 1) + x.shape[2:] if c.attrs["mode"] == "channel" else (x.shape[0],) + (1,) * (x.ndim - 1)
    return (y * (g - call("_sum_to", g * y, shape=kshape)),)


def _ref_softmax_act(x, mode="instance"):
    if mode == "channel":
        return _ref_softmax("softmax")(x, axis=1)
    return _ref_softmax("softmax")(x.reshape(x.shape[0], -1)).reshape(x.shape)


register(OpDef(
    name="SoftmaxActivation", kernel=_k_softmax_act, grad=_g_softmax_act, named_inputs=False,
    infer=lambda shapes, dtypes, mode: ([_softmax_act_check(shapes[0], mode)], [dtypes[0]]),
    attrs={"mode": Attr(choice("channel", "instance"), "instance")},
    test=OpTest(ref=_ref_softmax_act, cases=(
        (((2, 3, 2),), {}), (((2, 3, 2),), {"mode": "channel"}), (((3, 4),), {})))))


# ---------------------------------------------------------------------------------------------------------
# SoftmaxOutput
def _so_axes(shape, multi_output, preserve_shape):
    """(axis of the classes, the label shape the gradient reads)."""
    shape = tuple(shape)
    if len(shape) < (2 if multi_output else 1):
        raise ValueError(f"SoftmaxOutput needs data with a batch axis{' and a class axis' if multi_output else ''}, "
                         f"got shape {shape}")
    if multi_output:
        return 1, (shape[0],) + shape[2:]
    if preserve_shape:
        return len(shape) - 1, shape[:-1]
    return None, shape[:-1] if len(shape) > 2 else (shape[0],)


def _check_so_label(data_shape, label_shape, multi_output, preserve_shape):
    """The class axis; raises for a label shape MXNet refuses. A label of the data's shape holds probabilities;
    with multi_output, (N, spatial size) and (N, 1, spatial...) are accepted besides (N, spatial...)."""
    data_shape, label_shape = tuple(data_shape), tuple(label_shape)
    ax, lshape = _so_axes(data_shape, multi_output, preserve_shape)
    accepted = [lshape, data_shape]
    if multi_output:
        accepted += [(data_shape[0], math.prod(data_shape[2:])), data_shape[:1] + (1,) + data_shape[2:]]
    if label_shape not in accepted:
        raise ValueError(f"label shape {label_shape} does not match {lshape} (class indices) or {data_shape} "
                         f"(probabilities) for data of shape {data_shape}")
    return ax


def _so_infer(shapes, dtypes, *, multi_output, preserve_shape, **_):
    _check_so_label(shapes[0], shapes[1], multi_output, preserve_shape)
    return [tuple(shapes[0])], [dtypes[0]]


def _k_softmax_output(xp, data, label, *, grad_scale, ignore_label, multi_output, use_ignore, preserve_shape,
                      normalization, out_grad, smooth_alpha):
    ax = _check_so_label(data.shape, label.shape, multi_output, preserve_shape)
    sm = _softmax_kernel("softmax")
    if ax is None:
        return sm(xp, data.reshape(data.shape[0], -1), axis=-1, temperature=None, dtype=None,
                  use_length=False).reshape(data.shape)
    return sm(xp, data, axis=ax, temperature=None, dtype=None, use_length=False)


def _k_so_target(xp, out, label, *, grad_scale, ignore_label, multi_output, use_ignore, preserve_shape,
                 normalization, out_grad, smooth_alpha):
    """MXNet's SoftmaxOutput gradient given the forward output."""
    if label.shape == out.shape:        # probabilities: no ignore_label, no normalization (MXNet's)
        return ((out - label) * grad_scale).astype(out.dtype, copy=False)
    ax, lshape = _so_axes(out.shape, multi_output, preserve_shape)
    label = label.reshape(lshape)
    if ax is None:
        y = out.reshape(out.shape[0], -1)
        lab = label.reshape(-1)[:out.shape[0]]
        ax2 = 1
    else:
        y, lab, ax2 = out, label, ax
    k = y.shape[ax2]
    li = lab.astype(np.int64)
    classes = xp.arange(k).reshape((-1,) + (1,) * (y.ndim - ax2 - 1))
    onehot = (classes == xp.expand_dims(li, ax2)).astype(y.dtype)
    if smooth_alpha:
        onehot = onehot * (1 - smooth_alpha) + (1 - onehot) * (smooth_alpha / (k - 1)) * \
            xp.expand_dims(((li >= 0) & (li < k)).astype(y.dtype), ax2)
    grad = y - onehot
    valid = (lab != ignore_label)
    if use_ignore:
        grad = grad * xp.expand_dims(valid, ax2).astype(y.dtype)
    if normalization == "valid":
        scale = grad_scale / max(int(valid.sum()), 1)
    else:
        # MXNet: with multi_output, 'null' and 'batch' also divide by the spatial size (positions per sample)
        spatial = y.size // max(y.shape[0] * k, 1) if multi_output else 1
        scale = grad_scale / (spatial * (y.shape[0] if normalization == "batch" else 1) or 1)
    return (grad * scale).astype(out.dtype, copy=False).reshape(out.shape)


_SO_ATTRS = {"grad_scale": Attr(parse_float, 1.0), "ignore_label": Attr(parse_float, -1.0),
             "multi_output": Attr(parse_bool, False), "use_ignore": Attr(parse_bool, False),
             "preserve_shape": Attr(parse_bool, False),
             "normalization": Attr(choice("batch", "null", "valid"), "null"), "out_grad": Attr(parse_bool, False),
             "smooth_alpha": Attr(parse_float, 0.0)}


def _g_softmax_output(c, g):
    # MXNet: the head gradient is ignored (unless out_grad=True, then it multiplies elementwise).
    grad = call("_softmax_output_grad", c.outputs[0], c.inputs[1], **c.attrs)
    if c.attrs["out_grad"]:
        grad = grad * g
    return grad, None


def _ref_softmax_output(x, label, multi_output=False, preserve_shape=False, **_):
    if multi_output:
        return _ref_softmax("softmax")(x, axis=1)
    if preserve_shape:
        return _ref_softmax("softmax")(x, axis=-1)
    return _ref_softmax("softmax")(x.reshape(x.shape[0], -1)).reshape(x.shape)


def _so_label_shape(a, s):
    """MXNet's label shapes: (N, spatial size) with multi_output, else the data's shape without its last axis."""
    if s[0] is None or len(s[0]) < (2 if a.get("multi_output") else 1):
        return {}
    return {1: (s[0][0], math.prod(s[0][2:])) if a.get("multi_output") else tuple(s[0][:-1])}


register(OpDef(
    name="SoftmaxOutput", kernel=_k_softmax_output, inputs=("data", "label"), attrs=_SO_ATTRS,
    param_shapes=ParamShapes(_so_label_shape, partial=True, variables_only=True),
    grad=_g_softmax_output, nondiff_inputs=(1,), aliases=("Softmax",), infer=_so_infer,
    test=OpTest(ref=_ref_softmax_output, int_inputs={1: (0, 3)}, grad=False, grad2=False, cases=(
        (((3, 4), (3,)), {}), (((2, 3, 2), (2, 2)), {"multi_output": True}),
        (((2, 3, 2), (2, 3)), {"preserve_shape": True}), (((2, 3, 2), (2, 3)), {}),
        (((2, 3, 2), (2, 1, 2)), {"multi_output": True}),
    )),
    doc="Softmax forward; backward is MXNet's (softmax - onehot(label)) * grad_scale / norm, ignoring the head "
        "gradient (the loss is implicit). normalization: 'null' (none), 'batch' (/N), 'valid' (/ number of labels "
        "!= ignore_label, counted even without use_ignore); with multi_output 'null' and 'batch' also divide by "
        "the spatial size. use_ignore zeroes rows whose label is ignore_label; "
        "out-of-range labels contribute no onehot. smooth_alpha spreads alpha over the other classes."))
register(OpDef(
    name="_softmax_output_grad", kernel=_k_so_target, inputs=("out", "label"), attrs=_SO_ATTRS,
    differentiable=False, hidden=True, infer=_so_infer,
    test=OpTest(ref=lambda y, lab, **a: _k_so_target(np, y, lab, **{**{k: v.default for k, v in _SO_ATTRS.items()},
                                                                      **a}),
                int_inputs={1: (0, 3)}, grad=False, grad2=False, cases=((((3, 4), (3,)), {}),))))


# ---------------------------------------------------------------------------------------------------------
# regression heads, MakeLoss
def _check_reg_label(data_shape, label_shape):
    if math.prod(label_shape) != math.prod(data_shape):
        raise ValueError(f"label shape {tuple(label_shape)} does not match data shape {tuple(data_shape)}")
    return tuple(data_shape)


def _reg_head(name, fwd, grad_fn, ref):
    def kernel(xp, data, label, grad_scale):
        _check_reg_label(data.shape, label.shape)
        return _keep(data, fwd(xp, data))

    def rule(c, g):
        y, lab = c.outputs[0], c.inputs[1]
        x = c.inputs[0]
        num_output = max(x.size // x.shape[0], 1) if x.ndim else 1
        lab = call("Reshape", lab, shape=y.shape)
        return grad_fn(y, lab) * (c.attrs["grad_scale"] / num_output), None

    register(OpDef(
        name=name, kernel=kernel, inputs=("data", "label"), attrs={"grad_scale": Attr(parse_float, 1.0)},
        grad=rule, nondiff_inputs=(1,),
        infer=lambda shapes, dtypes, grad_scale: ([_check_reg_label(shapes[0], shapes[1])], [dtypes[0]]),
        test=OpTest(ref=lambda x, lab, grad_scale=1.0: ref(x.astype(np.float64)), grad=False, grad2=False,
                    cases=((((3, 2), (3, 2)), {}), (((3, 1), (3,)), {"grad_scale": 2.0}))),
        doc=f"{name}: backward is MXNet's loss gradient * grad_scale / (size / batch), ignoring the head "
            "gradient."))


_reg_head("LinearRegressionOutput", lambda xp, x: x.copy(), lambda y, lab: y - lab, lambda x: x)
_reg_head("LogisticRegressionOutput", lambda xp, x: registry.get("sigmoid").kernel(xp, x), lambda y, lab: y - lab,
          lambda x: 1 / (1 + np.exp(-x)))
_reg_head("MAERegressionOutput", lambda xp, x: x.copy(), lambda y, lab: call("sign", y - lab), lambda x: x)


def _k_makeloss(xp, data, grad_scale, valid_thresh, normalization):
    return data.copy()


def _g_makeloss(c, g):
    x, a = c.inputs[0], c.attrs
    scale = a["grad_scale"]
    if a["normalization"] == "batch":
        scale /= x.shape[0]
    if a["normalization"] == "valid":
        return (call("_makeloss_valid_grad", x, grad_scale=scale, valid_thresh=a["valid_thresh"]),)
    return (x * 0 + scale,)


def _k_makeloss_valid(xp, data, grad_scale, valid_thresh):
    n = int((data > valid_thresh).sum())
    return xp.full(data.shape, grad_scale / max(n, 1), dtype=data.dtype)


register(OpDef(
    name="_makeloss_valid_grad", kernel=_k_makeloss_valid, differentiable=False, hidden=True, infer=infer_same,
    attrs={"grad_scale": Attr(parse_float, 1.0), "valid_thresh": Attr(parse_float, 0.0)},
    test=OpTest(ref=lambda x, grad_scale, valid_thresh: np.full(x.shape, grad_scale / max((x > valid_thresh).sum(),
                                                                                            1)),
                grad=False, grad2=False, cases=((((3, 2),), {"grad_scale": 1.0, "valid_thresh": 0.1}),))))
register(OpDef(
    name="MakeLoss", kernel=_k_makeloss, grad=_g_makeloss, infer=infer_same,
    attrs={"grad_scale": Attr(parse_float, 1.0), "valid_thresh": Attr(parse_float, 0.0),
           "normalization": Attr(choice("batch", "null", "valid"), "null")},
    test=OpTest(ref=lambda x, **a: x, grad=False, grad2=False, cases=((((3, 2),), {}),)),
    doc="Identity forward; backward is grad_scale (/ batch size, or / count of data > valid_thresh), ignoring "
        "the head gradient (MXNet)."))
register(OpDef(
    name="make_loss", kernel=lambda xp, data: data.copy(), grad=lambda c, g: (c.inputs[0] * 0 + 1,),
    infer=infer_same,
    test=OpTest(ref=lambda x: x, grad=False, grad2=False, cases=((((3, 2),), {}),)),
    doc="Identity forward; backward is ones, ignoring the head gradient (MXNet)."))


# ---------------------------------------------------------------------------------------------------------
# Dropout
def _dropout_mask_shape(shape, p, axes):
    """The shape of the random draws: 1 along `axes` (one mask shared along them)."""
    if not 0 <= p <= 1:
        raise ValueError(f"p must be in [0, 1], got {p}")
    shared = tuple(norm_axis(a, len(shape)) for a in axes)
    return tuple(1 if i in shared else d for i, d in enumerate(shape))


def _dropout_infer(shapes, dtypes, p, mode, axes, cudnn_off):
    _dropout_mask_shape(shapes[0], p, axes)
    return [tuple(shapes[0])] * 2, [dtypes[0]] * 2


def _k_dropout(xp, data, *, p, mode, axes, cudnn_off, is_train, rng):
    mshape = _dropout_mask_shape(data.shape, p, axes)
    if (mode == "always" or is_train) and p > 0:
        keep = rng.random(mshape) >= p
        if xp is not np:
            keep = xp.asarray(keep)
        if p >= 1:    # MXNet scales by 1/(1-p) = inf, so every element (0 * inf) and its gradient are NaN
            mask = xp.full(data.shape, np.nan, dtype=data.dtype)
        else:
            mask = xp.broadcast_to((keep * (1.0 / (1 - p))).astype(data.dtype), data.shape).copy()
        return (data * mask).astype(data.dtype, copy=False), mask
    return data.copy(), xp.ones_like(data)


register(OpDef(
    name="Dropout", kernel=_k_dropout, grad=lambda c, g, gm: (g * c.outputs[1],), train_aware=True, random=True,
    num_outputs=2, num_visible=1, infer=_dropout_infer,
    attrs={"p": Attr(parse_float, 0.5), "mode": Attr(choice("always", "training"), "training"),
           "axes": Attr(parse_shape, ()), "cudnn_off": Attr(optional(parse_bool), False)},
    test=OpTest(random=True, cases=((((4, 5),), {}), (((4, 5),), {"p": 0.3, "mode": "always", "axes": (0,)}))),
    doc="Inverted dropout: kept elements are scaled by 1/(1-p) (p=1 gives NaN, as MXNet's 0 * inf); identity "
        "outside training unless mode='always'. "
        "axes share one mask along those axes. Returns (out, mask); the user sees out."))


# ---------------------------------------------------------------------------------------------------------
# Embedding
def _emb_index(xp, data, input_dim):
    return xp.clip(xp.trunc(data).astype(np.int64) if data.dtype.kind == "f" else data.astype(np.int64),
                   0, input_dim - 1)


def _check_embedding_weight(weight_shape, input_dim, output_dim):
    if tuple(weight_shape) != (input_dim, output_dim):
        raise ValueError(f"weight shape {tuple(weight_shape)} does not match ({input_dim}, {output_dim}) "
                         "(input_dim, output_dim)")


def _embedding_grad_shape(data_shape, grad_shape, input_dim, output_dim):
    if math.prod(grad_shape) != math.prod(data_shape) * output_dim:
        raise ValueError(f"gradient shape {tuple(grad_shape)} does not fit indices of shape {tuple(data_shape)} and "
                         f"output_dim={output_dim}")
    return check_shape((input_dim, output_dim))


def _embedding_infer(shapes, dtypes, input_dim, output_dim, dtype, sparse_grad):
    _check_embedding_weight(shapes[1], input_dim, output_dim)
    return [tuple(shapes[0]) + (output_dim,)], [dtypes[1]]


def _k_embedding(xp, data, weight, *, input_dim, output_dim, dtype, sparse_grad):
    _check_embedding_weight(weight.shape, input_dim, output_dim)
    return weight[_emb_index(xp, data, input_dim)]


def _k_embedding_grad(xp, data, grad, *, input_dim, output_dim):
    shape = _embedding_grad_shape(data.shape, grad.shape, input_dim, output_dim)
    idx = _emb_index(xp, data, input_dim).reshape(-1)
    out = xp.zeros(shape, dtype=grad.dtype)
    if xp is np:
        np.add.at(out, idx, grad.reshape(-1, output_dim))
    else:
        xp.add.at(out, idx, grad.reshape(-1, output_dim))
    return out


_EMB_GEO = {"input_dim": Attr(parse_int, REQUIRED), "output_dim": Attr(parse_int, REQUIRED)}

register(OpDef(
    name="Embedding", kernel=_k_embedding, inputs=("data", "weight"), nondiff_inputs=(0,),
    infer=_embedding_infer, dtype_attr=True,
    param_shapes=ParamShapes(lambda a, s: {1: (a["input_dim"], a["output_dim"])}, partial=True),
    attrs=dict(_EMB_GEO, dtype=Attr(parse_dtype, np.dtype("float32")), sparse_grad=Attr(parse_bool, False)),
    grad=lambda c, g: (None, call("_embedding_grad", c.inputs[0], g, input_dim=c.attrs["input_dim"],
                                  output_dim=c.attrs["output_dim"])),
    test=OpTest(ref=lambda idx, w, input_dim, output_dim, **_: w[np.clip(idx.astype(int), 0, input_dim - 1)],
                int_inputs={0: (0, 4)}, cases=(
                    (((2, 3), (4, 5)), {"input_dim": 4, "output_dim": 5}),
                    (((5,), (4, 2)), {"input_dim": 4, "output_dim": 2}))),
    doc="Row lookup; indices are truncated and clipped to [0, input_dim - 1] (MXNet). The weight gradient is a "
        "dense scatter-add (sparse_grad is accepted; the gradient stays dense)."))
register(OpDef(
    name="_embedding_grad", kernel=_k_embedding_grad, inputs=("data", "grad"), attrs=_EMB_GEO, hidden=True,
    infer=lambda shapes, dtypes, input_dim, output_dim: (
        [_embedding_grad_shape(shapes[0], shapes[1], input_dim, output_dim)], [dtypes[1]]),
    nondiff_inputs=(0,),
    grad=lambda c, h: (None, call("Embedding", c.inputs[0], h, **c.attrs)),
    test=OpTest(ref=lambda idx, g, input_dim, output_dim: _k_embedding_grad(np, idx, g.astype(np.float64),
                                                                             input_dim=input_dim,
                                                                             output_dim=output_dim),
                int_inputs={0: (0, 4)}, cases=((((2, 3), (2, 3, 5)), {"input_dim": 4, "output_dim": 5}),))))


# ---------------------------------------------------------------------------------------------------------
# Sequence ops: data is (T, B, ...) for axis=0 or (B, T, ...) for axis=1; sequence_length is (B,)
def _seq_inputs(a):
    return ("data", "sequence_length") if a["use_sequence_length"] else ("data",)


def _seq_dims(shape, seq_shape, axis):
    """(T, B) of data in TNC (axis 0) or NTC (axis 1) layout, checking sequence_length's shape (B,) if given."""
    if axis not in (0, 1):
        raise ValueError(f"axis must be 0 or 1, got {axis}")
    if len(shape) < 2:
        raise ValueError(f"data must be at least 2-D, got shape {tuple(shape)}")
    t, b = (shape[0], shape[1]) if axis == 0 else (shape[1], shape[0])
    if seq_shape is not None and tuple(seq_shape) != (b,):
        raise ValueError(f"sequence_length shape {tuple(seq_shape)} does not match ({b},) (the batch size)")
    return t, b


def _seq_infer_dims(shapes, use_sequence_length, axis):
    return _seq_dims(shapes[0], shapes[1] if use_sequence_length else None, axis)


def _seq_lengths(xp, data, seq, axis):
    t, b = _seq_dims(data.shape, None if seq is None else seq.shape, axis)
    if seq is None:
        return t, b, xp.full((b,), t, dtype=np.int64)
    return t, b, xp.clip(seq.astype(np.int64), 0, t)


def _seq_keep(xp, data, seq, axis):
    t, b, lens = _seq_lengths(xp, data, seq, axis)
    keep = xp.arange(t)[:, None] < lens[None, :]              # T, B
    if axis == 1:
        keep = keep.T
    return keep.reshape(keep.shape + (1,) * (data.ndim - 2))


def _seqmask_infer(shapes, dtypes, use_sequence_length, value, axis):
    _seq_infer_dims(shapes, use_sequence_length, axis)
    return [tuple(shapes[0])], [dtypes[0]]


def _k_seqmask(xp, data, sequence_length=None, *, use_sequence_length, value, axis):
    if not use_sequence_length:
        _seq_lengths(xp, data, None, axis)
        return data.copy()
    return xp.where(_seq_keep(xp, data, sequence_length, axis), data, xp.asarray(value, dtype=data.dtype))


def _g_seqmask(c, g):
    a = dict(c.attrs, value=0.0)
    gx = call("SequenceMask", g, *c.inputs[1:], **a)
    return (gx, None) if len(c.inputs) == 2 else (gx,)


def _ref_seqmask(x, lens=None, use_sequence_length=False, value=0.0, axis=0):
    out = x.astype(np.float64).copy()
    if lens is None:
        return out
    for b, n in enumerate(lens.astype(int)):
        if axis == 0:
            out[n:, b] = value
        else:
            out[b, n:] = value
    return out


_SEQ_ATTRS = {"use_sequence_length": Attr(parse_bool, False), "axis": Attr(parse_int, 0)}

register(OpDef(
    name="SequenceMask", kernel=_k_seqmask, inputs=_seq_inputs, grad=_g_seqmask, nondiff_inputs=(1,),
    infer=_seqmask_infer,
    attrs={"use_sequence_length": Attr(parse_bool, False), "value": Attr(parse_float, 0.0),
           "axis": Attr(parse_int, 0)},
    test=OpTest(ref=_ref_seqmask, int_inputs={1: (1, 5)}, cases=(
        (((4, 3, 2), (3,)), {"use_sequence_length": True}),
        (((3, 4, 2), (3,)), {"use_sequence_length": True, "axis": 1, "value": -1.0}),
        (((4, 3),), {}),
    ))))


def _k_seqlast(xp, data, sequence_length=None, *, use_sequence_length, axis):
    t, b, lens = _seq_lengths(xp, data, sequence_length if use_sequence_length else None, axis)
    idx = xp.maximum(lens - 1, 0)
    bidx = xp.arange(b)
    return data[idx, bidx] if axis == 0 else data[bidx, idx]


def _seqlast_infer(shapes, dtypes, use_sequence_length, axis):
    _, b = _seq_infer_dims(shapes, use_sequence_length, axis)
    return [(b,) + tuple(shapes[0][2:])], [dtypes[0]]


def _seqlast_grad_infer(shapes, dtypes, use_sequence_length, axis, shape):
    given = [shape] + list(shapes[1:])
    if _seqlast_infer(given, dtypes, use_sequence_length, axis)[0][0] != tuple(shapes[0]):
        raise ValueError(f"gradient shape {tuple(shapes[0])} does not fit SequenceLast of shape {tuple(shape)}")
    return [check_shape(shape)], [dtypes[0]]


def _k_seqlast_grad(xp, grad, sequence_length=None, *, use_sequence_length, axis, shape):
    seq = sequence_length if use_sequence_length else None
    _seqlast_grad_infer([grad.shape] + ([] if seq is None else [seq.shape]), [grad.dtype], use_sequence_length,
                        axis, shape)
    t, b = _seq_dims(shape, None if seq is None else seq.shape, axis)
    lens = xp.full((b,), t, dtype=np.int64) if seq is None else xp.clip(seq.astype(np.int64), 0, t)
    out = xp.zeros(tuple(shape), dtype=grad.dtype)
    idx = xp.maximum(lens - 1, 0)
    bidx = xp.arange(b)
    if axis == 0:
        out[idx, bidx] = grad
    else:
        out[bidx, idx] = grad
    return out


def _g_seqlast(c, g):
    gx = call("_sequence_last_grad", g, *c.inputs[1:], shape=c.inputs[0].shape, **c.attrs)
    return (gx, None) if len(c.inputs) == 2 else (gx,)


def _g_seqlast_grad(c, h):
    a = {k: v for k, v in c.attrs.items() if k != "shape"}
    gx = call("SequenceLast", h, *c.inputs[1:], **a)
    return (gx, None) if len(c.inputs) == 2 else (gx,)


def _ref_seqlast(x, lens=None, use_sequence_length=False, axis=0):
    xs = x if axis == 0 else np.swapaxes(x, 0, 1)
    if lens is None:
        return xs[-1]
    return np.stack([xs[int(n) - 1, b] for b, n in enumerate(lens)])


register(OpDef(
    name="SequenceLast", kernel=_k_seqlast, inputs=_seq_inputs, grad=_g_seqlast, nondiff_inputs=(1,),
    infer=_seqlast_infer,
    attrs=_SEQ_ATTRS,
    test=OpTest(ref=_ref_seqlast, int_inputs={1: (1, 5)}, cases=(
        (((4, 3, 2), (3,)), {"use_sequence_length": True}),
        (((3, 4, 2), (3,)), {"use_sequence_length": True, "axis": 1}),
        (((4, 3),), {}),
    ))))
register(OpDef(
    name="_sequence_last_grad", kernel=_k_seqlast_grad, inputs=_seq_inputs, grad=_g_seqlast_grad, hidden=True,
    infer=_seqlast_grad_infer,
    nondiff_inputs=(1,), attrs=dict(_SEQ_ATTRS, shape=Attr(parse_shape, REQUIRED)),
    test=OpTest(ref=lambda g, lens, shape, **a: _k_seqlast_grad(np, g.astype(np.float64), lens, shape=shape, **a),
                int_inputs={1: (1, 5)}, cases=((((3, 2), (3,)), {"use_sequence_length": True, "shape": (4, 3, 2)}),))))


def _seqrev_infer(shapes, dtypes, use_sequence_length, axis):
    if axis != 0:
        raise ValueError(f"only axis=0 is supported (as in MXNet), got {axis}")
    _seq_infer_dims(shapes, use_sequence_length, axis)
    return [tuple(shapes[0])], [dtypes[0]]


def _k_seqrev(xp, data, sequence_length=None, *, use_sequence_length, axis):
    if axis != 0:
        raise ValueError(f"only axis=0 is supported (as in MXNet), got {axis}")
    t, b, lens = _seq_lengths(xp, data, sequence_length if use_sequence_length else None, axis)
    tt = xp.arange(t)[:, None]
    src = xp.where(tt < lens[None, :], lens[None, :] - 1 - tt, tt)          # T, B
    return data[src, xp.arange(b)[None, :]]


def _g_seqrev(c, g):
    gx = call("SequenceReverse", g, *c.inputs[1:], **c.attrs)
    return (gx, None) if len(c.inputs) == 2 else (gx,)


def _ref_seqrev(x, lens=None, use_sequence_length=False, axis=0):
    out = x.astype(np.float64).copy()
    for b in range(x.shape[1]):
        n = x.shape[0] if lens is None else int(lens[b])
        out[:n, b] = x[:n, b][::-1]
    return out


register(OpDef(
    name="SequenceReverse", kernel=_k_seqrev, inputs=_seq_inputs, grad=_g_seqrev, nondiff_inputs=(1,),
    infer=_seqrev_infer,
    attrs=_SEQ_ATTRS,
    test=OpTest(ref=_ref_seqrev, int_inputs={1: (1, 5)}, cases=(
        (((4, 3, 2), (3,)), {"use_sequence_length": True}), (((4, 3),), {})))))


# ---------------------------------------------------------------------------------------------------------
# smooth_l1
def _k_smooth_l1(xp, data, scalar):
    s2 = scalar * scalar
    a = xp.abs(data)
    return _keep(data, xp.where(a < 1.0 / s2, 0.5 * s2 * data * data, a - 0.5 / s2))


def _g_smooth_l1(c, g):
    x = c.inputs[0]
    s2 = c.attrs["scalar"] ** 2
    inner = call("abs", x) < 1.0 / s2
    return (g * (inner * x * s2 + (1 - inner) * call("sign", x)),)


register(OpDef(
    name="smooth_l1", kernel=_k_smooth_l1, grad=_g_smooth_l1, infer=infer_same, kind="unary",
    attrs={"scalar": Attr(parse_float, 1.0)},
    test=OpTest(ref=lambda x, scalar=1.0: _k_smooth_l1(np, x.astype(np.float64), scalar), recipe="unary",
                recipe_attrs=({"scalar": 1.0}, {"scalar": 2.0}), domain=(0.3, 0.45),
                cases=((((2, 3),), {"scalar": 1.0}),)),
    doc="0.5 * (sigma * x)^2 where |x| < 1 / sigma^2, else |x| - 0.5 / sigma^2 (sigma is `scalar`)."))
