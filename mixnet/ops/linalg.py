"""Linear algebra: dot, batch_dot, khatri_rao and the `_linalg_*` family (`mx.nd.linalg.*`).

Semantics follow MXNet 1.9.1 (checked against it):
* `dot` on N-D arrays contracts the last axis of a with the first axis of b. transpose_a on an N-D `a` makes the
  *first* axis of a the contracted one (a is seen as the matrix (a.shape[0], rest) and transposed); transpose_b
  on an N-D `b` contracts its *last* axis. 1-D operands are vectors (a transpose flag on them is ignored, except
  that transposing when both are 1-D is an error); 1-D . 1-D gives shape (1,) (no 0-d arrays in MXNet 1.x).
* `_linalg_*` ops act on the last two axes (gemm/gemm2: on axes (axis, -1)) and batch over the leading ones; the
  batch shapes must agree exactly (no broadcasting). Only float32/float64 (dot also float16, as on MXNet's GPU).
* Triangular inputs (potri, trmm, trsm, potrf's lower half) read only their triangle; potrf's gradient is the
  symmetric one MXNet returns, potri's is lower triangular.
* syevd returns (U, lam) with A = U^T diag(lam) U, lam ascending, and each row of U signed so that its entry of
  largest magnitude is positive (MXNet's normalization). gelqf returns (Q, L) with A = L Q (LAPACK's signs).
* det/slogdet/sumlogdiag of a single matrix return shape (1,); batched, the batch shape.
* extracttrian/maketrian: offset < 0 (or 0 with lower=True) packs the lower triangle row by row; offset > 0 (or
  0 with lower=False) packs the upper triangle column by column (= the lower triangle of the transpose).

Every gradient is written with registry ops (these, Reshape, _sum_to, elementwise), so it differentiates again.
"""
import math
from typing import NamedTuple

import numpy as np

from .attrs import Attr, optional, choice, parse_bool, parse_float, parse_int
from .common import call, check_shape, sum_to
from .registry import OpDef, OpTest, register

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_DOT_FLOATS = _FLOATS + (np.dtype(np.float16),)


def _mT(xp, x):
    return xp.swapaxes(x, -1, -2)


class _Input(NamedTuple):
    """An input seen only by its shape and dtype: what the checks below read, so each op's infer runs the very
    checks its kernel runs."""
    shape: tuple
    dtype: np.dtype

    @property
    def ndim(self):
        return len(self.shape)


def _inputs(shapes, dtypes):
    return [_Input(tuple(s), np.dtype(d)) for s, d in zip(shapes, dtypes)]


def _swap_last(shape):
    return tuple(shape[:-2]) + (shape[-1], shape[-2])


def _check_float(name, *arrays, allowed=_FLOATS):
    for a in arrays:
        if a.dtype not in allowed:
            raise ValueError(f"{name} supports only {'/'.join(d.name for d in allowed)} inputs, got {a.dtype}")
    for a in arrays[1:]:
        if a.dtype != arrays[0].dtype:
            raise ValueError(f"input dtypes must match, got {', '.join(str(x.dtype) for x in arrays)}")


def _check_square(name, x, what="A"):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name}: input {what} must be a (batch of) square matrices, got shape {x.shape}")
    return x


def _check_matrix(name, x, what="A"):
    if x.ndim < 2:
        raise ValueError(f"{name}: input {what} must have at least 2 dimensions, got shape {x.shape}")
    return x


def _check_batch(name, *arrays):
    lead = arrays[0].shape[:-2]
    for a in arrays[1:]:
        if a.shape[:-2] != lead:
            raise ValueError(f"{name}: batch dimensions must agree, got {', '.join(str(x.shape) for x in arrays)}")


def _tri(xp, x, lower):
    return xp.tril(x) if lower else xp.triu(x)


# ---------------------------------------------------------------------------------------------------------
# graph-level helpers used by gradient rules (registry ops only)
def _T(x):
    return call("_swap_last2", x)


def _tri_nd(x, lower=True):
    """The lower (upper) triangle of square matrices, differentiably."""
    return call("_linalg_maketrian", call("_linalg_extracttrian", x, lower=lower), lower=lower)


def _diag_part(x):
    return call("_linalg_makediag", call("_linalg_extractdiag", x))


def _mm(x, y, ta=False, tb=False, alpha=1.0):
    return call("_linalg_gemm2", x, y, transpose_a=ta, transpose_b=tb, alpha=alpha)


def _matmul_grads(mm, a, b, g, ta, tb):
    """Gradients of out = op(a) op(b) given mm(x, y, ta, tb) = op(x) op(y)."""
    if not ta:
        ga = mm(g, b, False, not tb)
    else:
        ga = mm(b, g, tb, True)
    if not tb:
        gb = mm(a, g, not ta, False)
    else:
        gb = mm(g, a, True, ta)
    return ga, gb


def _reshape(x, shape):
    shape = tuple(shape)
    return x if tuple(x.shape) == shape else call("Reshape", x, shape=shape)


def _batch_col(x, ref_ndim):
    """Reshapes a batch-shaped result (det: (1,) for one matrix) to (..., 1, 1) for broadcasting."""
    lead = x.shape if ref_ndim > 2 else ()
    return _reshape(x, tuple(lead) + (1, 1))


# ---------------------------------------------------------------------------------------------------------
# dot
def _dot_plan(ashape, bshape, ta, tb):
    """2-D views of a and b, the effective flags and the output shape of MXNet's dot."""
    if len(ashape) == 0 or len(bshape) == 0:
        raise ValueError("dot does not take 0-d inputs")
    if len(ashape) == 1 and len(bshape) == 1 and (ta or tb):
        raise ValueError("cannot transpose vectors")
    if len(ashape) == 1:
        a2, arest, ta = (1, ashape[0]), (), False
    elif ta:
        a2, arest = (ashape[0], _prod(ashape[1:])), tuple(ashape[1:])
    else:
        a2, arest = (_prod(ashape[:-1]), ashape[-1]), tuple(ashape[:-1])
    if len(bshape) == 1:
        b2, brest, tb = (bshape[0], 1), (), False
    elif tb:
        b2, brest = (_prod(bshape[:-1]), bshape[-1]), tuple(bshape[:-1])
    else:
        b2, brest = (bshape[0], _prod(bshape[1:])), tuple(bshape[1:])
    ka = a2[0] if ta else a2[1]
    kb = b2[1] if tb else b2[0]
    if ka != kb:
        raise ValueError(f"dot shape error: {tuple(ashape)} X {tuple(bshape)} (transpose_a={ta}, "
                         f"transpose_b={tb}): contracted sizes {ka} and {kb} differ")
    out = arest + brest
    out2 = (a2[1] if ta else a2[0], b2[0] if tb else b2[1])
    return a2, b2, ta, tb, (out or (1,)), out2


def _prod(shape):
    return int(math.prod(shape))


def _check_stype(forward_stype):
    if forward_stype not in (None, "default"):
        raise ValueError(f"forward_stype={forward_stype!r}: mixnet stores every array dense (only 'default')")


def _dot_infer(shapes, dtypes, transpose_a, transpose_b, forward_stype):
    a, b = _inputs(shapes, dtypes)
    _check_float("dot", a, b, allowed=_DOT_FLOATS)
    _check_stype(forward_stype)
    return [_dot_plan(a.shape, b.shape, transpose_a, transpose_b)[4]], [a.dtype]


def _dot(xp, a, b, transpose_a, transpose_b, forward_stype):
    _check_float("dot", a, b, allowed=_DOT_FLOATS)
    _check_stype(forward_stype)
    a2, b2, ta, tb, out, _ = _dot_plan(a.shape, b.shape, transpose_a, transpose_b)
    x = a.reshape(a2)
    y = b.reshape(b2)
    r = xp.matmul(x.T if ta else x, y.T if tb else y)
    return r.reshape(out).astype(a.dtype, copy=False)


def _dot_grad(c, g):
    a, b = c.inputs
    a2, b2, ta, tb, _, out2 = _dot_plan(a.shape, b.shape, c.attrs["transpose_a"], c.attrs["transpose_b"])
    g2 = _reshape(g, out2)
    ga, gb = _matmul_grads(lambda x, y, p, q: call("dot", x, y, transpose_a=p, transpose_b=q),
                           _reshape(a, a2), _reshape(b, b2), g2, ta, tb)
    return _reshape(ga, a.shape), _reshape(gb, b.shape)


def _dot_ref(a, b, transpose_a, transpose_b, forward_stype):
    # contraction axes per MXNet's docs: transposing an N-D operand swaps which end of it is contracted
    ax_a = 0 if (transpose_a and a.ndim > 1) else a.ndim - 1
    ax_b = b.ndim - 1 if (transpose_b and b.ndim > 1) else 0
    r = np.tensordot(a.astype(np.float64), b.astype(np.float64), axes=([ax_a], [ax_b]))
    return r.reshape(r.shape or (1,))


_TRANSPOSE_AB = {"transpose_a": Attr(parse_bool, False), "transpose_b": Attr(parse_bool, False)}
_STYPE = Attr(optional(choice("default", "row_sparse", "csr")), None)

register(OpDef(
    name="dot", kernel=_dot, inputs=("lhs", "rhs"), grad=_dot_grad, infer=_dot_infer,
    attrs=dict(_TRANSPOSE_AB, forward_stype=_STYPE),
    doc="Dot product: N-D arrays contract the last axis of lhs with the first axis of rhs.",
    test=OpTest(ref=_dot_ref, cases=(
        (((3, 4), (4, 5)), {}), (((4, 3), (4, 5)), {"transpose_a": True}),
        (((3, 4), (5, 4)), {"transpose_b": True}), (((4, 3), (5, 4)), {"transpose_a": True, "transpose_b": True}),
        (((2, 3, 4), (4, 5)), {}), (((2, 3), (3, 4, 2)), {}), (((4, 3, 2), (4, 5)), {"transpose_a": True}),
        (((2, 3), (4, 5, 3)), {"transpose_b": True}), (((4,), (4,)), {}), (((3, 4), (4,)), {}),
        (((4,), (4, 2)), {}), (((3, 1), (3,)), {"transpose_a": True}),
    ))))


def _batch_dot_shape(a, b, transpose_a, transpose_b, forward_stype):
    _check_float("batch_dot", a, b, allowed=_DOT_FLOATS)
    _check_stype(forward_stype)
    if a.ndim < 3 or a.ndim != b.ndim:
        raise ValueError(f"batch_dot needs two arrays with the same number (>= 3) of dimensions, got {a.shape} "
                         f"and {b.shape}")
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"batch_dot shape error (the leading batch dimensions must be equal): {a.shape} X "
                         f"{b.shape}")
    x = _swap_last(a.shape) if transpose_a else tuple(a.shape)
    y = _swap_last(b.shape) if transpose_b else tuple(b.shape)
    if x[-1] != y[-2]:
        raise ValueError(f"batch_dot shape error: {a.shape} X {b.shape} (transpose_a={transpose_a}, "
                         f"transpose_b={transpose_b})")
    return x[:-1] + y[-1:]


def _batch_dot(xp, a, b, transpose_a, transpose_b, forward_stype):
    _batch_dot_shape(a, b, transpose_a, transpose_b, forward_stype)
    x = _mT(xp, a) if transpose_a else a
    y = _mT(xp, b) if transpose_b else b
    return xp.matmul(x, y).astype(a.dtype, copy=False)


def _batch_dot_grad(c, g):
    a, b = c.inputs
    return _matmul_grads(lambda x, y, p, q: call("batch_dot", x, y, transpose_a=p, transpose_b=q),
                         a, b, g, c.attrs["transpose_a"], c.attrs["transpose_b"])


def _batch_dot_ref(a, b, transpose_a, transpose_b, forward_stype):
    sa = "...kj" if transpose_a else "...jk"
    sb = "...lk" if transpose_b else "...kl"
    return np.einsum(f"{sa},{sb}->...jl", a.astype(np.float64), b.astype(np.float64))


register(OpDef(
    name="batch_dot", kernel=_batch_dot, inputs=("lhs", "rhs"), grad=_batch_dot_grad,
    infer=lambda shapes, dtypes, **a: ([_batch_dot_shape(*_inputs(shapes, dtypes), **a)], [np.dtype(dtypes[0])]),
    attrs=dict(_TRANSPOSE_AB, forward_stype=_STYPE), doc="Batched matrix product over the leading axes.",
    test=OpTest(ref=_batch_dot_ref, cases=(
        (((2, 3, 4), (2, 4, 5)), {}), (((2, 4, 3), (2, 4, 5)), {"transpose_a": True}),
        (((2, 3, 4), (2, 5, 4)), {"transpose_b": True}),
        (((2, 4, 3), (2, 5, 4)), {"transpose_a": True, "transpose_b": True}),
        (((2, 3, 2, 4), (2, 3, 4, 3)), {}),
    ))))


# ---------------------------------------------------------------------------------------------------------
# khatri_rao: column-wise Kronecker product
def _khatri_rao_shape(arrays):
    if not arrays:
        raise ValueError("khatri_rao needs at least one input")
    _check_float("khatri_rao", *arrays, allowed=_DOT_FLOATS)
    for a in arrays:
        if a.ndim != 2 or a.shape[1] != arrays[0].shape[1]:
            raise ValueError("khatri_rao needs 2-D inputs with the same number of columns, got "
                             + ", ".join(str(x.shape) for x in arrays))
    return check_shape((_prod([a.shape[0] for a in arrays]), arrays[0].shape[1]))


def _khatri_rao(xp, *arrays):
    _khatri_rao_shape(arrays)
    out = arrays[0]
    for a in arrays[1:]:
        out = (out[:, None, :] * a[None, :, :]).reshape(-1, a.shape[1])
    return out.copy() if out is arrays[0] else out


def _khatri_rao_grad(c, g):
    arrays = c.inputs
    rows = [a.shape[0] for a in arrays]
    ncol = arrays[0].shape[1]
    full = _reshape(g, tuple(rows) + (ncol,))
    k = len(arrays)
    expanded = []
    for i, a in enumerate(arrays):
        shape = [1] * k + [ncol]
        shape[i] = rows[i]
        expanded.append(_reshape(a, shape))
    grads = []
    for i, a in enumerate(arrays):
        prod = full
        for j in range(k):
            if j != i:
                prod = prod * expanded[j]
        shape = [1] * k + [ncol]
        shape[i] = rows[i]
        grads.append(_reshape(sum_to(prod, tuple(shape)), a.shape))
    return tuple(grads)


def _khatri_rao_ref(*arrays):
    ncol = arrays[0].shape[1]
    rows = [a.shape[0] for a in arrays]
    out = np.zeros((_prod(rows), ncol))
    for col in range(ncol):
        v = np.ones(1)
        for a in arrays:
            v = np.kron(v, a[:, col].astype(np.float64))
        out[:, col] = v
    return out


register(OpDef(
    name="khatri_rao", kernel=_khatri_rao, inputs=("args",), variadic=True, grad=_khatri_rao_grad,
    infer=lambda shapes, dtypes: ([_khatri_rao_shape(_inputs(shapes, dtypes))], [np.dtype(dtypes[0])]),
    doc="Column-wise Khatri-Rao product of 2-D arrays with equal column counts (MXNet has no gradient for it; "
        "mixnet does).",
    test=OpTest(ref=_khatri_rao_ref, cases=(
        (((2, 3), (4, 3)), {}), (((2, 2), (3, 2), (2, 2)), {}), (((3, 4),), {}),
    ))))


# ---------------------------------------------------------------------------------------------------------
# _swap_last2: the transpose of the last two axes (an internal helper of the gradient rules)
def _swap_last2(xp, x):
    _check_matrix("_swap_last2", x)
    return _mT(xp, x).copy()


register(OpDef(
    name="_swap_last2", kernel=_swap_last2, hidden=True, grad=lambda c, g: (_T(g),),
    infer=lambda shapes, dtypes: ([_swap_last(_check_matrix("_swap_last2", *_inputs(shapes, dtypes)).shape)],
                                  [dtypes[0]]),
    test=OpTest(ref=lambda x: np.swapaxes(x, -1, -2), cases=((((3, 4),), {}), (((2, 3, 4),), {}))),
    doc="Transposes the last two axes (used by the linalg gradient rules)."))


# ---------------------------------------------------------------------------------------------------------
# gemm / gemm2
def _rows_axis(shape, axis, name):
    """The axis holding a gemm operand's rows (any but the last)."""
    ndim = len(shape)
    if ndim < 2:
        raise ValueError(f"{name}: inputs must have at least 2 dimensions, got shape {tuple(shape)}")
    ax = axis + ndim if axis < 0 else axis
    if not 0 <= ax < ndim - 1:
        raise ValueError(f"{name}: axis {axis} is out of range for {ndim}-D inputs (it may not be the last axis)")
    return ax


def _rows_last(shape, ax):
    """The shape after moving axis ax to position -2."""
    shape = tuple(shape)
    rest = shape[:ax] + shape[ax + 1:]
    return rest[:-1] + (shape[ax],) + rest[-1:]


def _gemm_shape(name, a, b, transpose_a, transpose_b, axis):
    """(rows axis, op(A) op(B)'s shape with its rows back on that axis) of gemm/gemm2."""
    if a.ndim != b.ndim:
        raise ValueError(f"{name}: inputs must have the same number of dimensions, got {a.shape} and {b.shape}")
    ax = _rows_axis(a.shape, axis, name)
    _rows_axis(b.shape, axis, name)
    x, y = _rows_last(a.shape, ax), _rows_last(b.shape, ax)
    if x[:-2] != y[:-2]:
        raise ValueError(f"{name}: batch dimensions must agree, got {tuple(a.shape)}, {tuple(b.shape)}")
    x = _swap_last(x) if transpose_a else x
    y = _swap_last(y) if transpose_b else y
    if x[-1] != y[-2]:
        raise ValueError(f"{name}: incompatible matrix dimensions for multiplication: {a.shape} and {b.shape} "
                         f"(transpose_a={transpose_a}, transpose_b={transpose_b}, axis={axis})")
    r = x[:-1] + y[-1:]                                  # rows at -2: move them back to `ax`
    rest = r[:-2] + r[-1:]
    return ax, rest[:ax] + (r[-2],) + rest[ax:]


def _gemm_core(xp, name, a, b, transpose_a, transpose_b, alpha, axis):
    ax, _ = _gemm_shape(name, a, b, transpose_a, transpose_b, axis)
    x, y = xp.moveaxis(a, ax, -2), xp.moveaxis(b, ax, -2)
    x = _mT(xp, x) if transpose_a else x
    y = _mT(xp, y) if transpose_b else y
    return xp.matmul(x, y) * a.dtype.type(alpha), ax


def _gemm2_infer(shapes, dtypes, transpose_a, transpose_b, alpha, axis):
    a, b = _inputs(shapes, dtypes)
    _check_float("linalg.gemm2", a, b)
    return [_gemm_shape("linalg.gemm2", a, b, transpose_a, transpose_b, axis)[1]], [a.dtype]


def _gemm_check_c(c_shape, product):
    if tuple(c_shape) != tuple(product):
        raise ValueError(f"linalg.gemm: C has shape {tuple(c_shape)}, the product has shape {tuple(product)}")


def _gemm_infer(shapes, dtypes, transpose_a, transpose_b, alpha, beta, axis):
    a, b, c = _inputs(shapes, dtypes)
    _check_float("linalg.gemm", a, b, c)
    _gemm_check_c(c.shape, _gemm_shape("linalg.gemm", a, b, transpose_a, transpose_b, axis)[1])
    return [c.shape], [a.dtype]


def _gemm2(xp, a, b, transpose_a, transpose_b, alpha, axis):
    _check_float("linalg.gemm2", a, b)
    r, ax = _gemm_core(xp, "linalg.gemm2", a, b, transpose_a, transpose_b, alpha, axis)
    return xp.moveaxis(r, -2, ax).astype(a.dtype, copy=False)


def _gemm(xp, a, b, c, transpose_a, transpose_b, alpha, beta, axis):
    _check_float("linalg.gemm", a, b, c)
    r, ax = _gemm_core(xp, "linalg.gemm", a, b, transpose_a, transpose_b, alpha, axis)
    r = xp.moveaxis(r, -2, ax)
    _gemm_check_c(c.shape, r.shape)
    return (r + c * c.dtype.type(beta)).astype(a.dtype, copy=False)


def _gemm2_mm(attrs, alpha):
    axis = attrs["axis"]
    return lambda x, y, p, q: call("_linalg_gemm2", x, y, transpose_a=p, transpose_b=q, alpha=alpha, axis=axis)


def _gemm_grad(c, g):
    a, b, _ = c.inputs
    at = c.attrs
    ga, gb = _matmul_grads(_gemm2_mm(at, at["alpha"]), a, b, g, at["transpose_a"], at["transpose_b"])
    return ga, gb, g * at["beta"]


def _gemm2_grad(c, g):
    a, b = c.inputs
    at = c.attrs
    return _matmul_grads(_gemm2_mm(at, at["alpha"]), a, b, g, at["transpose_a"], at["transpose_b"])


def _gemm_ref_core(a, b, transpose_a, transpose_b, alpha, axis):
    a = np.moveaxis(a.astype(np.float64), axis, -2)
    b = np.moveaxis(b.astype(np.float64), axis, -2)
    sa = "...kj" if transpose_a else "...jk"
    sb = "...lk" if transpose_b else "...kl"
    return np.moveaxis(alpha * np.einsum(f"{sa},{sb}->...jl", a, b), -2, axis)


_GEMM_ATTRS = {"transpose_a": Attr(parse_bool, False), "transpose_b": Attr(parse_bool, False),
               "alpha": Attr(parse_float, 1.0)}

register(OpDef(
    name="_linalg_gemm", kernel=_gemm, inputs=("A", "B", "C"), grad=_gemm_grad,
    attrs=dict(_GEMM_ATTRS, beta=Attr(parse_float, 1.0), axis=Attr(parse_int, -2)),
    infer=_gemm_infer,
    doc="alpha * op(A) op(B) + beta * C over the last two axes (rows on `axis`), batched.",
    test=OpTest(ref=lambda a, b, c, transpose_a, transpose_b, alpha, beta, axis:
                _gemm_ref_core(a, b, transpose_a, transpose_b, alpha, axis) + beta * c, cases=(
        (((3, 4), (4, 5), (3, 5)), {}),
        (((4, 3), (5, 4), (3, 5)), {"transpose_a": True, "transpose_b": True, "alpha": 2.0, "beta": -0.5}),
        (((2, 3, 4), (2, 4, 2), (2, 3, 2)), {"alpha": 0.5, "beta": 2.0}),
        (((3, 2, 4), (4, 2, 5), (3, 2, 5)), {"axis": 0}),
    ))))
register(OpDef(
    name="_linalg_gemm2", kernel=_gemm2, inputs=("A", "B"), grad=_gemm2_grad, infer=_gemm2_infer,
    attrs=dict(_GEMM_ATTRS, axis=Attr(parse_int, -2)),
    doc="alpha * op(A) op(B) over the last two axes (rows on `axis`), batched.",
    test=OpTest(ref=_gemm_ref_core, cases=(
        (((3, 4), (4, 5)), {}), (((4, 3), (4, 5)), {"transpose_a": True, "alpha": 1.5}),
        (((3, 4), (5, 4)), {"transpose_b": True}),
        (((2, 4, 3), (2, 5, 4)), {"transpose_a": True, "transpose_b": True, "alpha": -2.0}),
        (((3, 2, 4), (4, 2, 5)), {"axis": 0}), (((2, 3, 4), (2, 3, 5)), {"transpose_a": True, "axis": -3}),
    ))))


# ---------------------------------------------------------------------------------------------------------
# triangular ops: potrf, potri, trmm, trsm, syrk
def _cholesky(xp, a):
    if xp is np:
        return np.linalg.cholesky(a)
    import cupyx
    with cupyx.errstate(linalg="raise"):    # cupy ignores cuSOLVER's failure code unless asked (one sync)
        return xp.linalg.cholesky(a)


def _potrf(xp, a, lower=True):
    _check_float("linalg.potrf", a)
    _check_square("linalg.potrf", a)
    try:       # lower=False: U (A = U^T U) from the upper triangle, the transposed problem's L transposed
        if lower:
            return _cholesky(xp, a).astype(a.dtype, copy=False)
        return _mT(xp, _cholesky(xp, _mT(xp, a))).astype(a.dtype, copy=False)
    except np.linalg.LinAlgError:
        raise ValueError("the Cholesky factorization failed: the input is not symmetric positive definite") \
            from None


def _phi(x):
    """Lower triangle with the diagonal halved."""
    return _tri_nd(x) - 0.5 * _diag_part(x)


def _potrf_grad(c, g):
    L = c.outputs[0]
    if not c.attrs["lower"]:        # in terms of L = U^T (the gradient is symmetric, so it stays as it is)
        L, g = _T(L), _T(g)
    p = _phi(_mm(L, _tri_nd(g), ta=True))
    s = call("_linalg_trsm", L, p, transpose=True)             # L^-T P
    s = call("_linalg_trsm", L, s, rightside=True)             # L^-T P L^-1
    return (0.5 * (s + _T(s)),)


def _potri(xp, a, lower=True):
    _check_float("linalg.potri", a)
    _check_square("linalg.potri", a)
    linv = xp.linalg.inv(xp.tril(a if lower else _mT(xp, a)))      # lower=False: U = L^T
    return xp.matmul(_mT(xp, linv), linv).astype(a.dtype, copy=False)


def _potri_grad(c, g):
    lower = c.attrs["lower"]
    a, out = c.inputs[0], c.outputs[0]
    L = _tri_nd(a if lower else _T(a))                 # the kernel reads only that triangle
    ga = -_mm(_mm(out, g + _T(g)), out)
    gl = _tri_nd(_mm(ga, L))
    return (gl if lower else _T(gl),)


def _check_triangular(name, a, b, rightside):
    """trmm/trsm: A square, B matrices of the same batch whose rows (columns with rightside) A multiplies."""
    _check_float(name, a, b)
    _check_square(name, a)
    _check_matrix(name, b, "B")
    _check_batch(name, a, b)
    n = b.shape[-1] if rightside else b.shape[-2]
    if n != a.shape[-1]:
        raise ValueError(f"{name}: A {a.shape} and B {b.shape} do not fit (rightside={rightside})")


def _triangular_infer(name):
    def infer(shapes, dtypes, transpose, rightside, lower, alpha):
        a, b = _inputs(shapes, dtypes)
        _check_triangular(name, a, b, rightside)
        return [b.shape], [a.dtype]
    return infer


def _trmm(xp, a, b, transpose, rightside, lower, alpha):
    _check_triangular("linalg.trmm", a, b, rightside)
    t = _tri(xp, a, lower)
    t = _mT(xp, t) if transpose else t
    r = xp.matmul(b, t) if rightside else xp.matmul(t, b)
    return (r * a.dtype.type(alpha)).astype(a.dtype, copy=False)


def _trmm_grad(c, g):
    a, b = c.inputs
    at = c.attrs
    t, right, low, alpha = at["transpose"], at["rightside"], at["lower"], at["alpha"]
    gb = call("_linalg_trmm", a, g, transpose=not t, rightside=right, lower=low, alpha=alpha)
    if not right:
        ga = _mm(b, g, ta=False, tb=True, alpha=alpha) if t else _mm(g, b, tb=True, alpha=alpha)
    else:
        ga = _mm(g, b, ta=True, alpha=alpha) if t else _mm(b, g, ta=True, alpha=alpha)
    return _tri_nd(ga, low), gb


def _trsm(xp, a, b, transpose, rightside, lower, alpha):
    _check_triangular("linalg.trsm", a, b, rightside)
    t = _tri(xp, a, lower)
    t = _mT(xp, t) if transpose else t
    rhs = b * a.dtype.type(alpha)
    try:
        if rightside:         # X op(A) = alpha B  <=>  op(A)^T X^T = alpha B^T
            r = _mT(xp, xp.linalg.solve(_mT(xp, t), _mT(xp, rhs)))
        else:
            r = xp.linalg.solve(t, rhs)
    except np.linalg.LinAlgError:
        raise ValueError("the triangular matrix A is singular") from None
    return r.astype(a.dtype, copy=False)


def _trsm_grad(c, g):
    a, b = c.inputs
    x = c.outputs[0]
    at = c.attrs
    t, right, low, alpha = at["transpose"], at["rightside"], at["lower"], at["alpha"]
    y = call("_linalg_trsm", a, g, transpose=not t, rightside=right, lower=low, alpha=1.0)
    gb = y * alpha
    if not right:             # d op(A) = -Y X^T
        ga = _mm(x, y, tb=True) if t else _mm(y, x, tb=True)
    else:                     # d op(A) = -X^T Y
        ga = _mm(y, x, ta=True) if t else _mm(x, y, ta=True)
    return -_tri_nd(ga, low), gb


def _syrk_infer(shapes, dtypes, transpose, alpha):
    a, = _inputs(shapes, dtypes)
    _check_float("linalg.syrk", a)
    _check_matrix("linalg.syrk", a)
    n = a.shape[-1] if transpose else a.shape[-2]
    return [a.shape[:-2] + (n, n)], [a.dtype]


def _syrk(xp, a, transpose, alpha):
    _check_float("linalg.syrk", a)
    _check_matrix("linalg.syrk", a)
    r = xp.matmul(_mT(xp, a), a) if transpose else xp.matmul(a, _mT(xp, a))
    return (r * a.dtype.type(alpha)).astype(a.dtype, copy=False)


def _syrk_grad(c, g):
    a = c.inputs[0]
    t, alpha = c.attrs["transpose"], c.attrs["alpha"]
    s = g + _T(g)
    return (_mm(a, s, alpha=alpha) if t else _mm(s, a, alpha=alpha),)


def _square_infer(name):
    def infer(shapes, dtypes, **_):
        a, = _inputs(shapes, dtypes)
        _check_float(name, a)
        _check_square(name, a)
        return [a.shape], [a.dtype]
    return infer


def _tri_ref(a, lower):
    return np.tril(a) if lower else np.triu(a)


def _loop(fn, *arrays):
    """Applies fn matrix by matrix over the leading axes (the references' batching, independent of kernels)."""
    lead = arrays[0].shape[:-2]
    outs = [fn(*(x[idx] for x in arrays)) for idx in np.ndindex(*lead)] if lead else [fn(*arrays)]
    return np.stack(outs).reshape(lead + outs[0].shape) if lead else outs[0]


def _trmm_ref(a, b, transpose, rightside, lower, alpha):
    def one(a, b):
        t = _tri_ref(a.astype(np.float64), lower)
        t = t.T if transpose else t
        return alpha * (b @ t if rightside else t @ b)
    return _loop(one, a, b)


def _trsm_ref(a, b, transpose, rightside, lower, alpha):
    def one(a, b):
        t = _tri_ref(a.astype(np.float64), lower)
        t = t.T if transpose else t
        inv = np.linalg.inv(t)
        return alpha * (b @ inv if rightside else inv @ b)
    return _loop(one, a, b)


_TRI_ATTRS = {"transpose": Attr(parse_bool, False), "rightside": Attr(parse_bool, False),
              "lower": Attr(parse_bool, True), "alpha": Attr(parse_float, 1.0)}
_TRI_CASES = (
    (((3, 3), (3, 2)), {}), (((3, 3), (3, 2)), {"transpose": True, "alpha": 2.0}),
    (((3, 3), (2, 3)), {"rightside": True}), (((3, 3), (2, 3)), {"rightside": True, "transpose": True,
                                                                 "lower": False}),
    (((2, 3, 3), (2, 3, 4)), {"lower": False, "alpha": -0.5}),
)

register(OpDef(
    name="_linalg_potrf", kernel=_potrf, inputs=("A",), grad=_potrf_grad, infer=_square_infer("linalg.potrf"),
    attrs={"lower": Attr(parse_bool, True)},
    doc="Cholesky factor L (lower triangular, A = L L^T) of symmetric positive definite matrices; reads only "
        "the lower triangle of A (lower=False: U with A = U^T U, from the upper triangle). The gradient is the "
        "symmetric one.",
    # OpTest cannot ask for SPD data, and finite differences over every entry see only the lower triangle
    # while the gradient is the symmetric one: only 1x1 matrices (positive numbers) fit both. n x n forward,
    # gradient (along symmetric directions) and second order are in tests/ops/test_linalg_semantics.py.
    test=OpTest(ref=lambda a, lower: _loop(lambda m: np.linalg.cholesky(m.astype(np.float64)), a),
                cases=((((1, 1),), {}), (((3, 1, 1),), {"lower": False})), domain=(0.5, 2.0))))
register(OpDef(
    name="_linalg_potri", kernel=_potri, inputs=("A",), grad=_potri_grad, infer=_square_infer("linalg.potri"),
    attrs={"lower": Attr(parse_bool, True)},
    doc="(L L^T)^-1 from the Cholesky factor L (only its lower triangle is read); lower=False: (U^T U)^-1 "
        "from the upper factor U.",
    test=OpTest(ref=lambda a, lower: _loop(lambda m: np.linalg.inv(np.tril(m) @ np.tril(m).T if lower else
                                                                   np.triu(m).T @ np.triu(m)), a.astype(np.float64)),
                cases=((((3, 3),), {}), (((2, 2, 2),), {}), (((3, 3),), {"lower": False})), domain=(1.0, 2.0),
                dtype="float64")))
register(OpDef(
    name="_linalg_trmm", kernel=_trmm, inputs=("A", "B"), grad=_trmm_grad, attrs=_TRI_ATTRS,
    infer=_triangular_infer("linalg.trmm"),
    doc="alpha * op(tri(A)) B, or B op(tri(A)) with rightside=True.",
    test=OpTest(ref=_trmm_ref, cases=_TRI_CASES)))
register(OpDef(
    name="_linalg_trsm", kernel=_trsm, inputs=("A", "B"), grad=_trsm_grad, attrs=_TRI_ATTRS,
    infer=_triangular_infer("linalg.trsm"),
    doc="Solves op(tri(A)) X = alpha B (X op(tri(A)) = alpha B with rightside=True).",
    test=OpTest(ref=_trsm_ref, cases=_TRI_CASES, domain=(1.0, 2.0), dtype="float64")))
register(OpDef(
    name="_linalg_syrk", kernel=_syrk, inputs=("A",), grad=_syrk_grad,
    attrs={"transpose": Attr(parse_bool, False), "alpha": Attr(parse_float, 1.0)},
    infer=_syrk_infer,
    doc="alpha * A A^T (alpha * A^T A with transpose=True).",
    test=OpTest(ref=lambda a, transpose, alpha: _loop(
        lambda m: alpha * (m.T @ m if transpose else m @ m.T), a.astype(np.float64)), cases=(
        (((2, 3),), {}), (((2, 3),), {"transpose": True, "alpha": 2.0}), (((2, 3, 4),), {"alpha": -0.5}),
    ))))


# ---------------------------------------------------------------------------------------------------------
# factorizations: gelqf, syevd
def _check_gelqf(a):
    _check_float("linalg.gelqf", a)
    _check_matrix("linalg.gelqf", a)
    if a.shape[-2] > a.shape[-1]:
        raise ValueError(f"linalg.gelqf: input shape {a.shape}: the last dimension must be >= the second to last")
    return a


def _gelqf_infer(shapes, dtypes):
    a = _check_gelqf(*_inputs(shapes, dtypes))
    return [a.shape, a.shape[:-1] + (a.shape[-2],)], [a.dtype] * 2


def _gelqf(xp, a):
    _check_gelqf(a)
    q, r = xp.linalg.qr(_mT(xp, a))
    return _mT(xp, q).astype(a.dtype).copy(), _mT(xp, r).astype(a.dtype).copy()


def _copyltu(m):
    low = _tri_nd(m)
    return low + _T(low) - _diag_part(m)


def _gelqf_grad(c, gq, gl):
    q, L = c.outputs
    m = _mm(L, gl, ta=True) - _mm(gq, q, tb=True)
    rhs = gq + _mm(_copyltu(m), q)
    return (call("_linalg_trsm", L, rhs, transpose=True),)


def _gelqf_ref(a):
    def one(m):
        # Householder-free reference: Gram-Schmidt on the rows, then LAPACK's signs (diag(L) of numpy's QR).
        m = m.astype(np.float64)
        rows, n = m.shape
        q = np.zeros((rows, n))
        low = np.zeros((rows, rows))
        for i in range(rows):
            v = m[i].copy()
            for j in range(i):
                low[i, j] = q[j] @ m[i]
                v -= low[i, j] * q[j]
            low[i, i] = np.linalg.norm(v)
            q[i] = v / low[i, i]
        signs = np.sign(np.diag(np.linalg.qr(m.T)[1]))
        return q * signs[:, None], low * signs[None, :]
    lead = a.shape[:-2]
    if not lead:
        return one(a)
    outs = [one(a[idx]) for idx in np.ndindex(*lead)]
    return (np.stack([o[0] for o in outs]).reshape(lead + outs[0][0].shape),
            np.stack([o[1] for o in outs]).reshape(lead + outs[0][1].shape))


def _syevd_infer(shapes, dtypes):
    a, = _inputs(shapes, dtypes)
    _check_float("linalg.syevd", a)
    _check_square("linalg.syevd", a)
    return [a.shape, a.shape[:-1]], [a.dtype] * 2


def _syevd(xp, a):
    _check_float("linalg.syevd", a)
    _check_square("linalg.syevd", a)
    w, v = xp.linalg.eigh(a)           # reads the lower triangle, as MXNet does
    u = _mT(xp, v)
    n = u.shape[-1]
    if n:
        idx = xp.argmax(xp.abs(u), axis=-1)[..., None]
        sign = xp.sign(xp.take_along_axis(u, idx, axis=-1))
        sign = xp.where(sign == 0, 1, sign)
        u = u * sign
    return u.astype(a.dtype).copy(), w.astype(a.dtype).copy()


def _syevd_grad(c, gu, gl):
    u, lam = c.outputs
    n = u.shape[-1]
    lead = tuple(lam.shape[:-1])
    li = _reshape(lam, lead + (n, 1))
    lj = _reshape(lam, lead + (1, n))
    eye = _eye_like(u, n)
    f = (1 - eye) / (lj - li + eye)                         # 1 / (lam_j - lam_i) off the diagonal
    inner = f * _mm(u, gu, tb=True) + call("_linalg_makediag", gl)
    ga = _mm(_mm(u, inner, ta=True), u)
    return (0.5 * (ga + _T(ga)),)


def _eye_like(x, n):
    from ..ndarray.ndarray import array  # lazy: ndarray sits above ops
    return array(np.eye(n), ctx=x.context, dtype=x.dtype)


def _syevd_ref(a):
    def one(m):
        m = np.tril(m.astype(np.float64))
        m = m + np.tril(m, -1).T
        w, v = np.linalg.eigh(m)
        u = v.T
        for row in u:
            if row[np.argmax(np.abs(row))] < 0:
                row *= -1
        return u, w
    lead = a.shape[:-2]
    if not lead:
        return one(a)
    outs = [one(a[idx]) for idx in np.ndindex(*lead)]
    return (np.stack([o[0] for o in outs]).reshape(a.shape),
            np.stack([o[1] for o in outs]).reshape(lead + (a.shape[-1],)))


register(OpDef(
    name="_linalg_gelqf", kernel=_gelqf, inputs=("A",), grad=_gelqf_grad, num_outputs=2,
    infer=_gelqf_infer,
    doc="LQ factorization A = L Q of (m, n) matrices with m <= n: returns (Q, L), Q with orthonormal rows.",
    # Case data is deterministic (seeded by case index); these draws are well conditioned (checked: singular
    # values >= 0.47). More gradient checks on fixed inputs: tests/ops/test_linalg_semantics.py.
    test=OpTest(ref=_gelqf_ref, cases=((((2, 3),), {}), (((2, 2, 4),), {}), (((3, 3),), {})), dtype="float64")))
register(OpDef(
    name="_linalg_syevd", kernel=_syevd, inputs=("A",), grad=_syevd_grad, num_outputs=2,
    infer=_syevd_infer,
    doc="Eigendecomposition of symmetric matrices (lower triangle read): (U, lam) with A = U^T diag(lam) U.",
    # Random symmetric matrices can have nearly equal eigenvalues (the gradient then blows up): the gradient
    # is tested on fixed inputs in tests/ops/test_linalg_semantics.py.
    test=OpTest(ref=_syevd_ref, cases=((((3, 3),), {}), (((2, 2, 2),), {})), dtype="float64",
                grad=False, grad2=False)))


# ---------------------------------------------------------------------------------------------------------
# inverse, det, slogdet, sumlogdiag
def _inverse(xp, a):
    _check_float("linalg.inverse", a)
    _check_square("linalg.inverse", a)
    try:
        return xp.linalg.inv(a).astype(a.dtype, copy=False)
    except np.linalg.LinAlgError:
        raise ValueError("the input matrix is singular (not invertible)") from None


def _inverse_grad(c, g):
    yt = _T(c.outputs[0])
    return (-_mm(_mm(yt, g), yt),)


def _batch_shape(a):
    return a.shape[:-2] if a.ndim > 2 else (1,)


def _det(xp, a):
    _check_float("linalg.det", a)
    _check_square("linalg.det", a)
    return xp.linalg.det(a).reshape(_batch_shape(a)).astype(a.dtype, copy=False)


def _det_grad(c, g):
    a = c.inputs[0]
    inv_t = _T(call("_linalg_inverse", a))
    return (_batch_col(g * c.outputs[0], a.ndim) * inv_t,)


def _slogdet(xp, a):
    _check_float("linalg.slogdet", a)
    _check_square("linalg.slogdet", a)
    sign, logabs = xp.linalg.slogdet(a)
    shape = _batch_shape(a)
    return sign.reshape(shape).astype(a.dtype), logabs.reshape(shape).astype(a.dtype)


def _slogdet_grad(c, gsign, glog):
    a = c.inputs[0]
    inv_t = _T(call("_linalg_inverse", a))
    return (_batch_col(glog, a.ndim) * inv_t,)


def _sumlogdiag(xp, a):
    _check_float("linalg.sumlogdiag", a)
    _check_square("linalg.sumlogdiag", a)
    d = xp.diagonal(a, axis1=-2, axis2=-1)
    return xp.log(d).sum(axis=-1).reshape(_batch_shape(a)).astype(a.dtype, copy=False)


def _sumlogdiag_grad(c, g):
    a = c.inputs[0]
    d = call("_linalg_extractdiag", a)
    lead = tuple(a.shape[:-2])
    return (call("_linalg_makediag", _reshape(g, lead + (1,)) / d),)


def _batch_infer(name, n_outputs=1):
    def infer(shapes, dtypes):
        a, = _inputs(shapes, dtypes)
        _check_float(name, a)
        _check_square(name, a)
        return [_batch_shape(a)] * n_outputs, [a.dtype] * n_outputs
    return infer


def _det_ref(a):
    lead = a.shape[:-2]
    a = a.astype(np.float64)

    def det(m):              # Laplace expansion along the first row (independent of LU)
        if m.shape[0] == 1:
            return m[0, 0]
        return sum((-1) ** j * m[0, j] * det(np.delete(m[1:], j, axis=1)) for j in range(m.shape[0]))
    out = np.array([det(a[idx]) for idx in np.ndindex(*lead)]) if lead else np.array([det(a)])
    return out.reshape(lead or (1,))


register(OpDef(
    name="_linalg_inverse", kernel=_inverse, inputs=("A",), grad=_inverse_grad,
    infer=_square_infer("linalg.inverse"),
    doc="Matrix inverse, batched.",
    # Case data is deterministic (seeded by case index); these draws are well conditioned (condition numbers
    # <= 5.2, checked), so finite differences are reliable. float64 keeps the forward comparison tight. More
    # gradient checks on fixed inputs: tests/ops/test_linalg_semantics.py.
    test=OpTest(ref=lambda a: _loop(lambda m: np.linalg.inv(m.astype(np.float64)), a),
                cases=((((3, 3),), {}), (((2, 2, 2),), {})), dtype="float64", rtol=1e-6, atol=1e-6)))
register(OpDef(
    name="_linalg_det", kernel=_det, inputs=("A",), grad=_det_grad, infer=_batch_infer("linalg.det"),
    doc="Determinant; shape (1,) for one matrix, the batch shape otherwise.",
    test=OpTest(ref=_det_ref, cases=((((3, 3),), {}), (((2, 2, 2),), {})), dtype="float64")))  # data as inverse
register(OpDef(
    name="_linalg_slogdet", kernel=_slogdet, inputs=("A",), grad=_slogdet_grad, num_outputs=2,
    infer=_batch_infer("linalg.slogdet", 2),
    doc="(sign, log|det|), each of shape (1,) for one matrix, the batch shape otherwise.",
    test=OpTest(ref=lambda a: (np.sign(_det_ref(a)), np.log(np.abs(_det_ref(a)))),
                cases=((((3, 3),), {}), (((2, 2, 2),), {})), dtype="float64")))  # data as inverse
register(OpDef(
    name="_linalg_sumlogdiag", kernel=_sumlogdiag, inputs=("A",), grad=_sumlogdiag_grad,
    infer=_batch_infer("linalg.sumlogdiag"),
    doc="Sum of the logarithms of the diagonal entries.",
    test=OpTest(ref=lambda a: _loop(lambda m: np.array([sum(math.log(m[i, i]) for i in range(m.shape[0]))]),
                                    a.astype(np.float64)).reshape(a.shape[:-2] or (1,)),
                cases=((((3, 3),), {}), (((2, 2, 2),), {})), domain=(0.5, 2.0))))


# ---------------------------------------------------------------------------------------------------------
# diagonal and triangle packing
def _extractdiag_shape(a, offset):
    _check_square("linalg.extractdiag", a)
    n = a.shape[-1]
    if abs(offset) >= max(n, 1) and n:
        raise ValueError(f"offset {offset} is out of range for {n}x{n} matrices")
    return tuple(a.shape[:-2]) + (max(n - abs(offset), 0),)


def _makediag_shape(v, offset):
    if v.ndim < 1:
        raise ValueError("linalg.makediag needs an input with at least 1 dimension")
    n = v.shape[-1] + abs(offset)
    return check_shape(tuple(v.shape[:-1]) + (n, n))


def _extractdiag(xp, a, offset):
    _extractdiag_shape(a, offset)
    return xp.diagonal(a, offset=offset, axis1=-2, axis2=-1).copy()


def _makediag(xp, v, offset):
    out = xp.zeros(_makediag_shape(v, offset), dtype=v.dtype)
    m = v.shape[-1]
    i = np.arange(m)
    rows, cols = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., rows, cols] = v
    return out


def _trian_layout(offset, lower):
    """(transpose first?, lower-triangle offset k <= 0) for MXNet's packing order."""
    transposed = offset > 0 or (offset == 0 and not lower)
    return transposed, -abs(offset)


def _extracttrian_shape(a, offset):
    _check_square("linalg.extracttrian", a)
    n = a.shape[-1]
    if abs(offset) >= max(n, 1):
        raise ValueError(f"offset {offset} is out of range for {n}x{n} matrices")
    m = n - abs(offset)
    return tuple(a.shape[:-2]) + (m * (m + 1) // 2,)


def _maketrian_shape(v, offset):
    """(the triangle's side m, the output shape): the last axis holds m(m+1)/2 values."""
    if v.ndim < 1:
        raise ValueError("linalg.maketrian needs an input with at least 1 dimension")
    length = v.shape[-1]
    m = int((math.isqrt(8 * length + 1) - 1) // 2)
    if m * (m + 1) // 2 != length:
        raise ValueError(f"linalg.maketrian: the last dimension {length} is not a triangular number m(m+1)/2")
    n = m + abs(offset)
    return m, check_shape(tuple(v.shape[:-1]) + (n, n))


def _extracttrian(xp, a, offset, lower):
    _extracttrian_shape(a, offset)
    n = a.shape[-1]
    transposed, k = _trian_layout(offset, lower)
    src = _mT(xp, a) if transposed else a
    rows, cols = np.tril_indices(n, k)
    return src[..., rows, cols].copy()


def _maketrian(xp, v, offset, lower):
    _, shape = _maketrian_shape(v, offset)
    n = shape[-1]
    transposed, k = _trian_layout(offset, lower)
    out = xp.zeros(shape, dtype=v.dtype)
    rows, cols = np.tril_indices(n, k)
    out[..., rows, cols] = v
    return _mT(xp, out).copy() if transposed else out


def _extracttrian_ref(a, offset, lower):
    n = a.shape[-1]
    if offset > 0 or (offset == 0 and not lower):
        # upper triangle, column by column
        idx = [(i, j) for j in range(n) for i in range(n) if j - i >= offset]
    else:
        idx = [(i, j) for i in range(n) for j in range(n) if i - j >= -offset]
    return np.stack([a[..., i, j] for i, j in idx], axis=-1)


def _maketrian_ref(v, offset, lower):
    length = v.shape[-1]
    m = 0
    while m * (m + 1) // 2 < length:
        m += 1
    n = m + abs(offset)
    out = np.zeros(v.shape[:-1] + (n, n), dtype=v.dtype)
    if offset > 0 or (offset == 0 and not lower):
        idx = [(i, j) for j in range(n) for i in range(n) if j - i >= offset]
    else:
        idx = [(i, j) for i in range(n) for j in range(n) if i - j >= -offset]
    for p, (i, j) in enumerate(idx):
        out[..., i, j] = v[..., p]
    return out


def _diag_ref(a, offset):
    return np.diagonal(a, offset=offset, axis1=-2, axis2=-1)


def _makediag_ref(v, offset):
    out = np.zeros(v.shape[:-1] + (v.shape[-1] + abs(offset),) * 2, dtype=v.dtype)
    for i in range(v.shape[-1]):
        if offset >= 0:
            out[..., i, i + offset] = v[..., i]
        else:
            out[..., i - offset, i] = v[..., i]
    return out


_OFFSET = {"offset": Attr(parse_int, 0)}
_TRIAN = {"offset": Attr(parse_int, 0), "lower": Attr(parse_bool, True)}

register(OpDef(
    name="_linalg_extractdiag", kernel=_extractdiag, inputs=("A",), attrs=_OFFSET,
    grad=lambda c, g: (call("_linalg_makediag", g, offset=c.attrs["offset"]),),
    infer=lambda shapes, dtypes, offset: ([_extractdiag_shape(*_inputs(shapes, dtypes), offset)], [dtypes[0]]),
    doc="The diagonal (offset > 0: above, < 0: below) of square matrices.",
    test=OpTest(ref=_diag_ref, cases=((((3, 3),), {}), (((2, 4, 4),), {"offset": 1}),
                                      (((4, 4),), {"offset": -2})))))
register(OpDef(
    name="_linalg_makediag", kernel=_makediag, inputs=("A",), attrs=_OFFSET,
    grad=lambda c, g: (call("_linalg_extractdiag", g, offset=c.attrs["offset"]),),
    infer=lambda shapes, dtypes, offset: ([_makediag_shape(*_inputs(shapes, dtypes), offset)], [dtypes[0]]),
    doc="Square matrices with the input on a diagonal (offset > 0: above, < 0: below).",
    test=OpTest(ref=_makediag_ref, cases=((((3,),), {}), (((2, 3),), {"offset": 1}), (((2,),), {"offset": -1})))))
register(OpDef(
    name="_linalg_extracttrian", kernel=_extracttrian, inputs=("A",), attrs=_TRIAN,
    grad=lambda c, g: (call("_linalg_maketrian", g, offset=c.attrs["offset"], lower=c.attrs["lower"]),),
    infer=lambda shapes, dtypes, offset, lower: ([_extracttrian_shape(*_inputs(shapes, dtypes), offset)],
                                                 [dtypes[0]]),
    doc="Packs a triangle of square matrices into a vector (see the module docstring for the order).",
    test=OpTest(ref=_extracttrian_ref, cases=(
        (((3, 3),), {}), (((3, 3),), {"lower": False}), (((2, 4, 4),), {"offset": 1}),
        (((4, 4),), {"offset": -1}), (((4, 4),), {"offset": -2, "lower": False})))))
register(OpDef(
    name="_linalg_maketrian", kernel=_maketrian, inputs=("A",), attrs=_TRIAN,
    infer=lambda shapes, dtypes, offset, lower: ([_maketrian_shape(*_inputs(shapes, dtypes), offset)[1]],
                                                 [dtypes[0]]),
    grad=lambda c, g: (call("_linalg_extracttrian", g, offset=c.attrs["offset"], lower=c.attrs["lower"]),),
    doc="Unpacks vectors into triangular matrices (the inverse of extracttrian).",
    test=OpTest(ref=_maketrian_ref, cases=(
        (((6,),), {}), (((6,),), {"lower": False}), (((2, 6),), {"offset": 1}), (((3,),), {"offset": -1}),
        (((1,),), {"offset": -2, "lower": False})))))
