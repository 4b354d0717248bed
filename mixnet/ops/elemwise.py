"""Elementwise operators: unary math, NDArray-NDArray binary (broadcasting and same-shape), scalar forms.

Each declaration carries the numpy kernel, the gradient rule (in mixnet ops, so it differentiates again), and
the scalar template the fusion code generator renders ({0}, {1} are inputs; {scalar} the attribute).
MXNet semantics: binary ops need equal dtypes; scalar ops and comparisons keep the array's dtype.
"""
import math
import operator

import numpy as np

from . import special
from .attrs import Attr, REQUIRED, parse_float
from .common import call, infer_broadcast, infer_same, same_dtype, sum_to
from .registry import OpDef, OpTest, register

_SCALAR_ATTRS = {"scalar": Attr(parse_float, REQUIRED, "the Python scalar operand")}
_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _keep_dtype(x, result):
    """Results keep the input dtype (MXNet): float32 stays float32, int32 * 2.5 is int32."""
    return result if result.dtype == x.dtype else result.astype(x.dtype)


# ---------------------------------------------------------------------------------------------------------
# unary
def unary(name, kernel, grad, scalar, domain=(-2.0, 2.0), aliases=(), differentiable=True, grad2=True,
          doc="", ufunc=None, into=None, **test_kw):
    """ufunc: (name, extra operand or None) of the xp ufunc computing the op, e.g. ("maximum", 0) for relu; the
    op then writes into a given buffer (out=, writes_out). The cast to the input dtype is the ufunc's unsafe
    cast, as _keep_dtype's astype. into(xp, x, out): the same for an op computed by several ufuncs in place."""
    if ufunc is not None:
        fname, operand = ufunc

        def into(xp, x, out):
            args = (x,) if operand is None else (x, operand)
            return getattr(xp, fname)(*args, out=out, casting="unsafe")
    if into is None:
        def run(xp, x):
            return _keep_dtype(x, kernel(xp, x))
    else:
        def run(xp, x, out=None):
            if out is None:
                return _keep_dtype(x, kernel(xp, x))
            return into(xp, x, out)
    test = OpTest(ref=lambda x: kernel(np, x), recipe="unary", domain=domain,
                  grad=differentiable, grad2=differentiable and grad2, **test_kw)
    return register(OpDef(name=name, kernel=run, grad=grad, infer=infer_same, kind="unary", scalar=scalar,
                           aliases=aliases, differentiable=differentiable, test=test, doc=doc,
                           writes_out=into is not None))


def _x(ctx):
    return ctx.inputs[0]


def _y(ctx):
    return ctx.outputs[0]


def _nograd(ctx, g):
    return (None,)


unary("abs", lambda xp, x: xp.abs(x), lambda c, g: (g * call("sign", _x(c)),), "abs({0})",
      domain=(0.1, 2.0), doc="Absolute value.", ufunc=("abs", None))
unary("sign", lambda xp, x: xp.sign(x), _nograd, "sign({0})", differentiable=False)
unary("round", lambda xp, x: xp.where(x >= 0, xp.floor(x + 0.5), xp.ceil(x - 0.5)), _nograd, "round({0})",
      differentiable=False, doc="Round half away from zero (MXNet), unlike numpy's half-to-even.")
unary("rint", lambda xp, x: xp.rint(x), _nograd, "rint({0})", differentiable=False)
unary("fix", lambda xp, x: xp.fix(x), _nograd, "trunc({0})", differentiable=False)
unary("floor", lambda xp, x: xp.floor(x), _nograd, "floor({0})", differentiable=False)
unary("ceil", lambda xp, x: xp.ceil(x), _nograd, "ceil({0})", differentiable=False)
unary("trunc", lambda xp, x: xp.trunc(x), _nograd, "trunc({0})", differentiable=False)
unary("sqrt", lambda xp, x: xp.sqrt(x), lambda c, g: (g / (2 * _y(c)),), "sqrt({0})", domain=(0.5, 3.0),
      ufunc=("sqrt", None))
unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), lambda c, g: (g * -0.5 * _y(c) ** 3,), "1 / sqrt({0})",
      domain=(0.5, 3.0))
unary("cbrt", lambda xp, x: xp.cbrt(x), lambda c, g: (g / (3 * _y(c) * _y(c)),), "cbrt({0})", domain=(0.5, 3.0))
unary("rcbrt", lambda xp, x: 1 / xp.cbrt(x), lambda c, g: (g * -_y(c) / (3 * _x(c)),), "1 / cbrt({0})",
      domain=(0.5, 3.0))
unary("square", lambda xp, x: x * x, lambda c, g: (g * 2 * _x(c),), "{0} * {0}", ufunc=("square", None))
unary("exp", lambda xp, x: xp.exp(x), lambda c, g: (g * _y(c),), "exp({0})", ufunc=("exp", None))
unary("expm1", lambda xp, x: xp.expm1(x), lambda c, g: (g * (_y(c) + 1),), "expm1({0})")
unary("log", lambda xp, x: xp.log(x), lambda c, g: (g / _x(c),), "log({0})", domain=(0.5, 3.0),
      ufunc=("log", None))
unary("log2", lambda xp, x: xp.log2(x), lambda c, g: (g / (_x(c) * _LN2),), "log2({0})", domain=(0.5, 3.0))
unary("log10", lambda xp, x: xp.log10(x), lambda c, g: (g / (_x(c) * _LN10),), "log10({0})", domain=(0.5, 3.0))
unary("log1p", lambda xp, x: xp.log1p(x), lambda c, g: (g / (_x(c) + 1),), "log1p({0})", domain=(-0.5, 2.0))
unary("sin", lambda xp, x: xp.sin(x), lambda c, g: (g * call("cos", _x(c)),), "sin({0})")
unary("cos", lambda xp, x: xp.cos(x), lambda c, g: (-g * call("sin", _x(c)),), "cos({0})")
unary("tan", lambda xp, x: xp.tan(x), lambda c, g: (g * (_y(c) * _y(c) + 1),), "tan({0})", domain=(-1.2, 1.2))
unary("arcsin", lambda xp, x: xp.arcsin(x), lambda c, g: (g * call("rsqrt", 1 - _x(c) * _x(c)),), "asin({0})",
      domain=(-0.8, 0.8))
unary("arccos", lambda xp, x: xp.arccos(x), lambda c, g: (-g * call("rsqrt", 1 - _x(c) * _x(c)),), "acos({0})",
      domain=(-0.8, 0.8))
unary("arctan", lambda xp, x: xp.arctan(x), lambda c, g: (g / (_x(c) * _x(c) + 1),), "atan({0})")
unary("sinh", lambda xp, x: xp.sinh(x), lambda c, g: (g * call("cosh", _x(c)),), "sinh({0})")
unary("cosh", lambda xp, x: xp.cosh(x), lambda c, g: (g * call("sinh", _x(c)),), "cosh({0})")
unary("tanh", lambda xp, x: xp.tanh(x), lambda c, g: (g * (1 - _y(c) * _y(c)),), "tanh({0})",
      ufunc=("tanh", None))
unary("arcsinh", lambda xp, x: xp.arcsinh(x), lambda c, g: (g * call("rsqrt", _x(c) * _x(c) + 1),),
      "asinh({0})")
unary("arccosh", lambda xp, x: xp.arccosh(x), lambda c, g: (g * call("rsqrt", _x(c) * _x(c) - 1),),
      "acosh({0})", domain=(1.5, 3.0))
unary("arctanh", lambda xp, x: xp.arctanh(x), lambda c, g: (g / (1 - _x(c) * _x(c)),), "atanh({0})",
      domain=(-0.8, 0.8))
unary("degrees", lambda xp, x: x * (180.0 / math.pi), lambda c, g: (g * (180.0 / math.pi),),
      "{0} * 57.29577951308232")
unary("radians", lambda xp, x: x * (math.pi / 180.0), lambda c, g: (g * (math.pi / 180.0),),
      "{0} * 0.017453292519943295")
unary("relu", lambda xp, x: xp.maximum(x, 0), lambda c, g: (call("_relu_bwd", g, _y(c)),), "max({0}, 0)",
      domain=(0.1, 2.0), ufunc=("maximum", 0))
def _sigmoid_into(xp, x, out):
    """1 / (1 + exp(-x)) written into out one ufunc at a time (out may be x: the GEMM epilogue and the RNN cells
    work in place), the operations of the expression in its order, so the same bits."""
    xp.negative(x, out=out, casting="unsafe")
    xp.exp(out, out=out)
    xp.add(out, 1, out=out)
    return xp.divide(1, out, out=out)


def _sigmoid(xp, x):
    # numpy's exp of an integer array is floating (float16 for 8-bit, float64 for 32-bit ints): result_type says which
    return _sigmoid_into(xp, x, xp.empty(x.shape, np.result_type(x.dtype, np.float16)))


unary("sigmoid", _sigmoid, lambda c, g: (g * _y(c) * (1 - _y(c)),), "sigmoid({0})", into=_sigmoid_into,
      doc="1 / (1 + exp(-x)); the code generators evaluate exp(-|x|) only (no overflow for x << 0).")
unary("softsign", lambda xp, x: x / (1 + xp.abs(x)),
      lambda c, g: (g / ((1 + call("abs", _x(c))) ** 2),), "{0} / (1 + abs({0}))", domain=(0.1, 2.0))
unary("erf", lambda xp, x: special.erf(x), lambda c, g: (g * (2 / math.sqrt(math.pi)) * call("exp", -_x(c) ** 2),),
      "erf({0})")
unary("erfinv", lambda xp, x: special.erfinv(x),
      lambda c, g: (g * (math.sqrt(math.pi) / 2) * call("exp", _y(c) ** 2),), "erfinv({0})", domain=(-0.8, 0.8))
unary("gamma", lambda xp, x: special.gamma(x), lambda c, g: (g * _y(c) * call("_polygamma", _x(c), n=0),),
      "tgamma({0})", domain=(0.5, 3.0))
unary("gammaln", lambda xp, x: special.gammaln(x), lambda c, g: (g * call("_polygamma", _x(c), n=0),),
      "lgamma({0})", domain=(0.5, 3.0))
unary("reciprocal", lambda xp, x: 1 / x, lambda c, g: (-g * _y(c) * _y(c),), "1 / {0}", domain=(0.5, 3.0))
unary("negative", lambda xp, x: -x, lambda c, g: (-g,), "-{0}", ufunc=("negative", None))
unary("logical_not", lambda xp, x: (x == 0), _nograd, "({0} == 0)", differentiable=False)
unary("_copy", lambda xp, x: x.copy(), lambda c, g: (g,), "{0}", aliases=("identity",))
unary("BlockGrad", lambda xp, x: x.copy(), _nograd, "{0}", aliases=("stop_gradient",), differentiable=False,
      doc="Identity forward; no gradient flows back (the output is a constant to autograd).")
unary("isnan", lambda xp, x: xp.isnan(x), _nograd, "isnan({0})", differentiable=False)
unary("isinf", lambda xp, x: xp.isinf(x), _nograd, "isinf({0})", differentiable=False)
unary("isfinite", lambda xp, x: xp.isfinite(x), _nograd, "isfinite({0})", differentiable=False)


def _polygamma_kernel(xp, x, n):
    return special.polygamma(n, x)


register(OpDef(
    name="_polygamma", kernel=_polygamma_kernel, attrs={"n": Attr(int, REQUIRED)}, infer=infer_same, kind="unary",
    grad=lambda c, g: (g * call("_polygamma", _x(c), n=c.attrs["n"] + 1),), hidden=True,
    test=OpTest(ref=lambda x, n: special.polygamma(n, x.astype(np.float64)), recipe="unary", domain=(0.5, 3.0),
                recipe_attrs=({"n": 0}, {"n": 1}), dtype="float64"),
    doc="psi^(n)(x): digamma for n = 0; the derivative chain of gamma and gammaln."))


def _hard_sigmoid(xp, x, alpha, beta):
    return _keep_dtype(x, xp.clip(x * alpha + beta, 0, 1))


register(OpDef(
    name="hard_sigmoid", kernel=_hard_sigmoid, infer=infer_same, kind="unary",
    attrs={"alpha": Attr(parse_float, 0.2), "beta": Attr(parse_float, 0.5)},
    grad=lambda c, g: (g * c.attrs["alpha"] * ((_y(c) > 0) * (_y(c) < 1)),),
    scalar="min(max({0} * {alpha} + {beta}, 0), 1)",
    test=OpTest(ref=lambda x, alpha, beta: np.clip(x * alpha + beta, 0, 1), recipe="unary", domain=(-1.5, 1.5),
                recipe_attrs=({}, {"alpha": 0.3, "beta": 0.4}))))


# ---------------------------------------------------------------------------------------------------------
# binary, NDArray with NDArray
def _a(c):
    return c.inputs[0]


def _b(c):
    return c.inputs[1]


def _binary_kernel(name, fn, ufunc=None):
    """ufunc: the name of the xp ufunc computing the op; with one, the kernel writes into a given buffer (out=,
    writes_out), its unsafe cast to the buffer's dtype being the astype to a's dtype of the eager result."""
    if _is_operator(fn):      # the hot arithmetic ops call the operator directly (no extra Python frame)
        def run(xp, a, b, out=None):
            if a.dtype != b.dtype:
                same_dtype(name, a, b)
            if out is not None:
                return getattr(xp, ufunc)(a, b, out=out, casting="unsafe")
            result = fn(a, b)
            return result if result.dtype == a.dtype else result.astype(a.dtype)
        return run

    if ufunc is None:         # comparisons: no out= (writes_out is not declared for them)
        def run(xp, a, b):
            if a.dtype != b.dtype:
                same_dtype(name, a, b)
            result = fn(xp, a, b)
            return result if result.dtype == a.dtype else result.astype(a.dtype)
        return run

    def run_out(xp, a, b, out=None):
        if a.dtype != b.dtype:
            same_dtype(name, a, b)
        if out is not None:
            return getattr(xp, ufunc)(a, b, out=out, casting="unsafe")
        result = fn(xp, a, b)
        return result if result.dtype == a.dtype else result.astype(a.dtype)
    return run_out


def _is_operator(fn):
    return fn in (operator.add, operator.sub, operator.mul, operator.truediv)


def _as_xp_fn(fn):
    """fn(xp, a, b) for the reference/test side, whichever form the table holds."""
    return (lambda xp, a, b: fn(a, b)) if _is_operator(fn) else fn


def _same_shape_kernel(name, fn, ufunc):
    fn = _as_xp_fn(fn)

    def run(xp, a, b, out=None):
        if a.shape != b.shape:
            raise ValueError(f"elemwise ops need equal shapes, got {a.shape} and {b.shape}; use broadcast_* or "
                             "the + - * / operators to broadcast")
        same_dtype(name, a, b)
        if out is not None:
            return getattr(xp, ufunc)(a, b, out=out, casting="unsafe")
        return _keep_dtype(a, fn(xp, a, b))
    return run


def _sum_both(grad):
    """Reduces each input gradient of a broadcasting op back to that input's shape."""
    def rule(c, g):
        ga, gb = grad(c, g)
        return (None if ga is None else sum_to(ga, _a(c).shape), None if gb is None else sum_to(gb, _b(c).shape))
    return rule


def _pow_grads(c, g):
    a, b, y = _a(c), _b(c), _y(c)
    return g * b * a ** (b - 1), g * y * call("log", a)


def _mod_grads(c, g):
    if not _is_float(_a(c)):
        return g * 0, g * 0
    return g, -g * call("floor", _a(c) / _b(c))


def _is_float(x):
    """MXNet defines mod's gradients for floating dtypes only: on integers they are zero."""
    return np.dtype(x.dtype).kind == "f"


# the xp ufunc of each _BINARY op, which writes into planned buffers (out=)
_BINARY_UFUNC = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide", "mod": "mod",
                 "power": "power", "maximum": "maximum", "minimum": "minimum", "hypot": "hypot"}
_BINARY = [
    # name, array function (a python operator, or fn(xp, a, b)), gradient (before reduction to input shapes),
    # template, aliases, test domain
    ("add", operator.add, lambda c, g: (g, g), "{0} + {1}", ("plus",), (-2.0, 2.0)),
    ("sub", operator.sub, lambda c, g: (g, -g), "{0} - {1}", ("minus",), (-2.0, 2.0)),
    ("mul", operator.mul, lambda c, g: (g * _b(c), g * _a(c)), "{0} * {1}", (), (-2.0, 2.0)),
    ("div", operator.truediv, lambda c, g: (g / _b(c), -g * _a(c) / (_b(c) * _b(c))), "{0} / {1}", (),
     (0.5, 2.0)),
    ("mod", lambda xp, a, b: xp.mod(a, b), _mod_grads, "fmod_floor({0}, {1})", (), (0.5, 2.0)),
    ("power", lambda xp, a, b: xp.power(a, b), _pow_grads, "pow({0}, {1})", (), (0.5, 2.0)),
    ("maximum", lambda xp, a, b: xp.maximum(a, b), lambda c, g: (g * (_a(c) >= _b(c)), g * (_a(c) < _b(c))),
     "max({0}, {1})", (), (-2.0, 2.0)),
    ("minimum", lambda xp, a, b: xp.minimum(a, b), lambda c, g: (g * (_a(c) <= _b(c)), g * (_a(c) > _b(c))),
     "min({0}, {1})", (), (-2.0, 2.0)),
    ("hypot", lambda xp, a, b: xp.hypot(a, b), lambda c, g: (g * _a(c) / _y(c), g * _b(c) / _y(c)),
     "hypot({0}, {1})", (), (0.5, 2.0)),
]
_COMPARE = [
    ("equal", lambda xp, a, b: a == b, "({0} == {1})"),
    ("not_equal", lambda xp, a, b: a != b, "({0} != {1})"),
    ("greater", lambda xp, a, b: a > b, "({0} > {1})"),
    ("greater_equal", lambda xp, a, b: a >= b, "({0} >= {1})"),
    ("lesser", lambda xp, a, b: a < b, "({0} < {1})"),
    ("lesser_equal", lambda xp, a, b: a <= b, "({0} <= {1})"),
    ("logical_and", lambda xp, a, b: (a != 0) & (b != 0), "(({0} != 0) & ({1} != 0))"),
    ("logical_or", lambda xp, a, b: (a != 0) | (b != 0), "(({0} != 0) | ({1} != 0))"),
    ("logical_xor", lambda xp, a, b: (a != 0) ^ (b != 0), "(({0} != 0) ^ ({1} != 0))"),
]


def _ref2(fn):
    return lambda a, b: fn(np, a, b)


for _name, _fn, _grad, _tmpl, _aliases, _domain in _BINARY:
    register(OpDef(
        name=f"broadcast_{_name}", kernel=_binary_kernel(f"broadcast_{_name}", _fn, _BINARY_UFUNC[_name]),
        inputs=("lhs", "rhs"), grad=_sum_both(_grad), infer=infer_broadcast, kind="broadcast", scalar=_tmpl,
        writes_out=True,
        aliases=tuple(f"broadcast_{a}" for a in _aliases),
        test=OpTest(ref=_ref2(_as_xp_fn(_fn)), recipe="broadcast2", domain=_domain)))
for _name, _fn, _grad, _tmpl, _aliases, _domain in _BINARY[:4]:
    register(OpDef(
        name=f"elemwise_{_name}", kernel=_same_shape_kernel(f"elemwise_{_name}", _fn, _BINARY_UFUNC[_name]),
        inputs=("lhs", "rhs"), writes_out=True,
        grad=_grad, infer=infer_same, kind="binary", scalar=_tmpl, aliases=(f"_{_name}",) + tuple(
            f"_{a}" for a in _aliases),
        test=OpTest(ref=_ref2(_as_xp_fn(_fn)), recipe="same2", domain=_domain)))
for _name, _fn, _tmpl in _COMPARE:
    register(OpDef(
        name=f"broadcast_{_name}", kernel=_binary_kernel(f"broadcast_{_name}", _fn), inputs=("lhs", "rhs"),
        infer=infer_broadcast, kind="broadcast", scalar=_tmpl, differentiable=False,
        test=OpTest(ref=_ref2(lambda xp, a, b, f=_fn: f(xp, a, b).astype(a.dtype)), recipe="broadcast2",
                    grad=False, grad2=False)))


# ---------------------------------------------------------------------------------------------------------
# scalar forms: x <op> scalar and scalar <op> x. As in MXNet, the scalar is first cast to the array's dtype (an
# integer array truncates it toward zero: int32 7 * 2.5 is 7 * 2 == 14, int32 < 1e-3 compares with 0), then the
# result keeps the array's dtype.
def _operand(x, scalar):
    return int(scalar) if x.dtype.kind in "iu" and math.isfinite(scalar) else scalar


def _pow(xp, base, exponent, x):
    """base ** exponent; for an integer array x computed in float64 as MXNet's pow does, so a negative exponent
    truncates (2 ** -1 is 0) instead of raising numpy's 'Integers to negative integer powers' error."""
    if x.dtype.kind in "iu":
        return xp.power(xp.asarray(base, dtype=xp.float64), xp.asarray(exponent, dtype=xp.float64))
    return base ** exponent


def _scalar_kernel(fn):
    def run(xp, x, scalar):
        return _keep_dtype(x, fn(xp, x, _operand(x, scalar)))
    return run


def _scalar_out_kernel(ufunc, reflected):
    """A scalar op that writes into a given buffer (out=, writes_out) through the xp ufunc `ufunc`; reflected:
    the scalar is the left operand. The ufunc is the op's fn in _SCALAR (x * s is multiply(x, s)), so the Python
    scalar promotes exactly as there. Without a buffer the ufunc runs too, with _operand and _keep_dtype in line:
    a loss's scaling runs this every step, and three Python calls were most of its cost on small arrays."""
    def run(xp, x, scalar, out=None):
        if x.dtype.kind in "iu" and math.isfinite(scalar):      # _operand
            scalar = int(scalar)
        args = (scalar, x) if reflected else (x, scalar)
        if out is None:
            result = getattr(xp, ufunc)(*args)
            return result if result.dtype == x.dtype else result.astype(x.dtype)     # _keep_dtype
        return getattr(xp, ufunc)(*args, out=out, casting="unsafe")
    return run


# (xp ufunc, scalar on the left) of the scalar ops that write into planned buffers (out=)
_SCALAR_UFUNC = {"_plus_scalar": ("add", False), "_minus_scalar": ("subtract", False),
                 "_rminus_scalar": ("subtract", True), "_mul_scalar": ("multiply", False),
                 "_div_scalar": ("true_divide", False), "_rdiv_scalar": ("true_divide", True),
                 "_maximum_scalar": ("maximum", False), "_minimum_scalar": ("minimum", False)}


_SCALAR = [
    ("_plus_scalar", lambda xp, x, s: x + s, lambda c, g: (g,), "{0} + {scalar}", (-2.0, 2.0)),
    ("_minus_scalar", lambda xp, x, s: x - s, lambda c, g: (g,), "{0} - {scalar}", (-2.0, 2.0)),
    ("_rminus_scalar", lambda xp, x, s: s - x, lambda c, g: (-g,), "{scalar} - {0}", (-2.0, 2.0)),
    ("_mul_scalar", lambda xp, x, s: x * s, lambda c, g: (g * c.attrs["scalar"],), "{0} * {scalar}", (-2.0, 2.0)),
    ("_div_scalar", lambda xp, x, s: x / s, lambda c, g: (g / c.attrs["scalar"],), "{0} / {scalar}", (-2.0, 2.0)),
    ("_rdiv_scalar", lambda xp, x, s: s / x, lambda c, g: (-g * _y(c) / _x(c),), "{scalar} / {0}", (0.5, 2.0)),
    ("_mod_scalar", lambda xp, x, s: xp.mod(x, s), lambda c, g: (g if _is_float(_x(c)) else g * 0,),
     "fmod_floor({0}, {scalar})", (0.1, 0.9)),
    ("_rmod_scalar", lambda xp, x, s: xp.mod(s, x),
     lambda c, g: (-g * call("floor", c.attrs["scalar"] / _x(c)) if _is_float(_x(c)) else g * 0,),
     "fmod_floor({scalar}, {0})", (0.7, 0.9)),
    ("_power_scalar", lambda xp, x, s: _pow(xp, x, s, x),
     lambda c, g: (g * c.attrs["scalar"] * _x(c) ** (c.attrs["scalar"] - 1),), "pow({0}, {scalar})", (0.5, 2.0)),
    ("_rpower_scalar", lambda xp, x, s: _pow(xp, s, x, x), lambda c, g: (g * _y(c) * math.log(c.attrs["scalar"]),),
     "pow({scalar}, {0})", (-2.0, 2.0)),
    ("_maximum_scalar", lambda xp, x, s: xp.maximum(x, s), lambda c, g: (g * (_x(c) >= c.attrs["scalar"]),),
     "max({0}, {scalar})", (-2.0, 2.0)),
    ("_minimum_scalar", lambda xp, x, s: xp.minimum(x, s), lambda c, g: (g * (_x(c) <= c.attrs["scalar"]),),
     "min({0}, {scalar})", (-2.0, 2.0)),
    ("_hypot_scalar", lambda xp, x, s: xp.hypot(x, s), lambda c, g: (g * _x(c) / _y(c),), "hypot({0}, {scalar})",
     (0.5, 2.0)),
]
_SCALAR_COMPARE = [
    ("_equal_scalar", lambda xp, x, s: x == s, "({0} == {scalar})"),
    ("_not_equal_scalar", lambda xp, x, s: x != s, "({0} != {scalar})"),
    ("_greater_scalar", lambda xp, x, s: x > s, "({0} > {scalar})"),
    ("_greater_equal_scalar", lambda xp, x, s: x >= s, "({0} >= {scalar})"),
    ("_lesser_scalar", lambda xp, x, s: x < s, "({0} < {scalar})"),
    ("_lesser_equal_scalar", lambda xp, x, s: x <= s, "({0} <= {scalar})"),
    ("_logical_and_scalar", lambda xp, x, s: (x != 0) & (s != 0), "(({0} != 0) & ({scalar} != 0))"),
    ("_logical_or_scalar", lambda xp, x, s: (x != 0) | (s != 0), "(({0} != 0) | ({scalar} != 0))"),
    ("_logical_xor_scalar", lambda xp, x, s: (x != 0) ^ (s != 0), "(({0} != 0) ^ ({scalar} != 0))"),
]
_SCALAR_TEST_ATTRS = ({"scalar": 0.7}, {"scalar": -1.5}, {"scalar": 2.0})


def _scalar_ref(fn):
    """The reference truncates the scalar for integer arrays by a different route (numpy's own cast)."""
    return lambda x, scalar: fn(np, x, np.float64(scalar).astype(x.dtype) if x.dtype.kind in "iu"
                                else np.float64(scalar)).astype(x.dtype)


for _name, _fn, _grad, _tmpl, _domain in _SCALAR:
    _attrs = ({"scalar": 0.7}, {"scalar": 2.0}) if _name in ("_rmod_scalar", "_rdiv_scalar", "_power_scalar",
                                                             "_rpower_scalar", "_mod_scalar") else _SCALAR_TEST_ATTRS
    _ufunc = _SCALAR_UFUNC.get(_name)
    register(OpDef(name=_name, kernel=_scalar_out_kernel(*_ufunc) if _ufunc else _scalar_kernel(_fn),
                   attrs=_SCALAR_ATTRS, grad=_grad, infer=infer_same, kind="scalar", scalar=_tmpl, hidden=True,
                   writes_out=_ufunc is not None,
                   test=OpTest(ref=_scalar_ref(_fn), recipe="unary", domain=_domain, recipe_attrs=_attrs)))
for _name, _fn, _tmpl in _SCALAR_COMPARE:
    register(OpDef(name=_name, kernel=_scalar_kernel(_fn), attrs=_SCALAR_ATTRS, infer=infer_same, kind="scalar",
                   scalar=_tmpl, differentiable=False, hidden=True,
                   test=OpTest(ref=_scalar_ref(_fn), recipe="unary", recipe_attrs=_SCALAR_TEST_ATTRS, grad=False,
                               grad2=False)))


# ---------------------------------------------------------------------------------------------------------
# n-ary sum
def _add_n(xp, *arrays):
    if not arrays:
        raise ValueError("add_n needs at least one input")
    for a in arrays[1:]:
        if a.shape != arrays[0].shape:
            raise ValueError(f"add_n needs equal shapes, got {', '.join(str(x.shape) for x in arrays)}")
    same_dtype("add_n", *arrays)
    out = arrays[0].copy()
    for a in arrays[1:]:
        out += a
    return out


register(OpDef(
    name="add_n", kernel=_add_n, inputs=("args",), variadic=True, aliases=("ElementWiseSum",), kind="binary",
    grad=lambda c, g: tuple(g for _ in c.inputs), infer=lambda shapes, dtypes, **a: ([shapes[0]], [dtypes[0]]),
    test=OpTest(ref=lambda *xs: sum(xs[1:], xs[0]), recipe="same3")))
