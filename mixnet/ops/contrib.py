"""Small ops MXNet's tests and scripts use: all_finite / multi_all_finite (the mixed-precision overflow checks)
and the contrib helpers div_sqrt_dim, quadratic and allclose."""
import math

import numpy as np

from .attrs import Attr, parse_bool, parse_float, parse_int
from .common import infer_same
from .registry import OpDef, OpTest, register


# ---------------------------------------------------------------------------------------------------------
# all_finite / multi_all_finite: a (1,) float32 flag, 1 when every element of every input is finite
def _all_finite(xp, *arrays, num_arrays=1, init_output=True):
    ok = all(bool(xp.isfinite(a).all()) for a in arrays)
    return xp.asarray([1.0 if ok else 0.0], dtype=np.float32)


def _flag_infer(shapes, dtypes, **attrs):
    return [(1,)], [np.dtype(np.float32)]


def _ref_all_finite(*arrays, **attrs):
    return np.array([float(all(np.all(np.isfinite(a)) for a in arrays))], dtype=np.float32)


register(OpDef(
    name="all_finite", kernel=_all_finite, differentiable=False, infer=_flag_infer,
    attrs={"init_output": Attr(parse_bool, True)},
    test=OpTest(ref=_ref_all_finite, grad=False, grad2=False, cases=((((2, 3),), {}), (((0,),), {}))),
    doc="[1.] when every element of data is finite, else [0.] (float32)."))


def _multi_infer(shapes, dtypes, num_arrays, init_output):
    if len(shapes) != num_arrays:
        raise ValueError(f"num_arrays is {num_arrays} but {len(shapes)} arrays were given")
    return _flag_infer(shapes, dtypes)


def _multi_all_finite(xp, *arrays, num_arrays, init_output):
    _multi_infer([a.shape for a in arrays], None, num_arrays, init_output)
    return _all_finite(xp, *arrays)


register(OpDef(
    name="multi_all_finite", kernel=_multi_all_finite, inputs=("data",), variadic=True, differentiable=False,
    attrs={"num_arrays": Attr(parse_int, 1), "init_output": Attr(parse_bool, True)}, infer=_multi_infer,
    test=OpTest(ref=_ref_all_finite, grad=False, grad2=False, cases=((((2, 3), (4,)), {"num_arrays": 2}),)),
    doc="[1.] when every element of all num_arrays inputs is finite, else [0.] (float32)."))


# ---------------------------------------------------------------------------------------------------------
# contrib helpers
def _last_dim(shape):
    if not shape:
        raise ValueError("div_sqrt_dim needs an input with at least one axis")
    return shape[-1]


def _div_sqrt_dim_infer(shapes, dtypes):
    _last_dim(shapes[0])
    return infer_same(shapes, dtypes)


def _div_sqrt_dim(xp, x):
    return (x / x.dtype.type(math.sqrt(_last_dim(x.shape)))).astype(x.dtype, copy=False)


register(OpDef(
    name="_contrib_div_sqrt_dim", kernel=_div_sqrt_dim, kind="unary",
    infer=_div_sqrt_dim_infer,
    grad=lambda c, g: (g * (1.0 / math.sqrt(c.inputs[0].shape[-1])),),
    test=OpTest(ref=lambda x: x / np.sqrt(x.shape[-1]), cases=((((2, 4),), {}), (((3, 2, 9),), {}))),
    doc="data / sqrt(data.shape[-1]) (scaled dot-product attention)."))


_QUAD_ATTRS = {"a": Attr(parse_float, 0.0), "b": Attr(parse_float, 0.0), "c": Attr(parse_float, 0.0)}


register(OpDef(
    name="_contrib_quadratic", kernel=lambda xp, x, a, b, c: (x * (a * x + b) + c).astype(x.dtype, copy=False),
    attrs=_QUAD_ATTRS, kind="unary", infer=infer_same,
    grad=lambda ctx, g: (g * (ctx.inputs[0] * (2 * ctx.attrs["a"]) + ctx.attrs["b"]),),
    test=OpTest(ref=lambda x, a, b, c: a * x ** 2 + b * x + c, recipe="unary",
                recipe_attrs=({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": -0.5})),
    doc="a * x**2 + b * x + c, elementwise."))


def _allclose_infer(shapes, dtypes, rtol, atol, equal_nan):
    if tuple(shapes[0]) != tuple(shapes[1]):
        raise ValueError(f"allclose needs equal shapes, got {tuple(shapes[0])} and {tuple(shapes[1])}")
    return [()], [np.dtype(np.uint8)]


def _allclose(xp, a, b, rtol, atol, equal_nan):
    _allclose_infer([a.shape, b.shape], None, rtol, atol, equal_nan)
    close = xp.abs(a - b) <= atol + rtol * xp.abs(b)
    if equal_nan:
        close = close | (xp.isnan(a) & xp.isnan(b))
    return xp.asarray(bool(close.all()), dtype=np.uint8)


register(OpDef(
    name="_contrib_allclose", kernel=_allclose, inputs=("a", "b"), differentiable=False, infer=_allclose_infer,
    attrs={"rtol": Attr(parse_float, 1e-5), "atol": Attr(parse_float, 1e-8), "equal_nan": Attr(parse_bool, True)},
    test=OpTest(ref=lambda a, b, rtol, atol, equal_nan: np.uint8(np.allclose(a, b, rtol, atol, equal_nan)),
                grad=False, grad2=False, cases=((((2, 3), (2, 3)), {}), (((4,), (4,)), {"atol": 10.0}))),
    doc="A 0-d uint8: 1 when |a - b| <= atol + rtol * |b| everywhere (NaNs equal when equal_nan)."))
