"""Creation operators: _zeros, _ones, _full, _arange, _linspace, _eye (no array inputs: `creates=True`, made
with `xp` on the requested ctx), and zeros_like / ones_like. Everything defaults to float32 (MXNet 1.x).

mx.nd.zeros/ones/full/arange/linspace/eye are these ops under their public names (see mixnet/ndarray).
"""
import math

import numpy as np

from .attrs import Attr, REQUIRED, optional, parse_bool, parse_ctx, parse_dtype, parse_float, parse_int, \
    parse_shape
from .common import check_shape, infer_same
from .registry import OpDef, OpTest, register

_F32 = np.dtype(np.float32)


def _parse_dtype_f32(value):
    """dtype attribute of creation ops: None / "None" mean float32."""
    if value is None or (isinstance(value, str) and value.strip() in ("None", "")):
        return _F32
    return parse_dtype(value)


_CTX = Attr(parse_ctx, None)
_DTYPE = Attr(_parse_dtype_f32, _F32)


def _zeros(xp, shape, ctx, dtype):
    return xp.zeros(check_shape(shape), dtype=dtype)


def _ones(xp, shape, ctx, dtype):
    return xp.ones(check_shape(shape), dtype=dtype)


def _full(xp, shape, ctx, dtype, value):
    return xp.full(check_shape(shape), value, dtype=np.float64).astype(dtype)


def _const_infer(shapes, dtypes, shape, dtype, **_):
    return [check_shape(shape)], [dtype]


_CREATE_CASES = ((((), {"shape": (2, 3)}), ((), {"shape": (4,), "dtype": "int32"}),
                  ((), {"shape": (0, 2), "dtype": "float64"})))

register(OpDef(
    name="_zeros", kernel=_zeros, inputs=(), creates=True, differentiable=False, infer=_const_infer,
    attrs={"shape": Attr(parse_shape, ()), "ctx": _CTX, "dtype": _DTYPE},
    test=OpTest(ref=lambda shape, ctx, dtype: np.zeros(shape, dtype), grad=False, grad2=False,
                cases=_CREATE_CASES),
    doc="An array of zeros (float32 unless dtype is given)."))
register(OpDef(
    name="_ones", kernel=_ones, inputs=(), creates=True, differentiable=False, infer=_const_infer,
    attrs={"shape": Attr(parse_shape, ()), "ctx": _CTX, "dtype": _DTYPE},
    test=OpTest(ref=lambda shape, ctx, dtype: np.ones(shape, dtype), grad=False, grad2=False,
                cases=_CREATE_CASES),
    doc="An array of ones (float32 unless dtype is given)."))
register(OpDef(
    name="_full", kernel=_full, inputs=(), creates=True, differentiable=False, infer=_const_infer,
    attrs={"shape": Attr(parse_shape, ()), "ctx": _CTX, "dtype": _DTYPE, "value": Attr(parse_float, REQUIRED)},
    test=OpTest(ref=lambda shape, ctx, dtype, value: (np.ones(shape) * value).astype(dtype),
                grad=False, grad2=False, cases=(
                    ((), {"shape": (2, 3), "value": 7}), ((), {"shape": (3,), "value": 2.7, "dtype": "int32"}),
                    ((), {"shape": (2, 1), "value": -1.5, "dtype": "float64"}))),
    doc="An array filled with `value` (cast to dtype: 2.7 becomes 2 in int32)."))


def _arange_count(start, stop, step, repeat):
    """(start, stop, the number of distinct values) of arange; it has that many times `repeat` elements."""
    if stop is None:
        start, stop = 0.0, start
    if step == 0:
        raise ValueError(f"Range does not support step=0, received {step:g}")
    if repeat < 1:
        raise ValueError(f"repeat must be positive, got {repeat}")
    if (step > 0 and start >= stop) or (step < 0 and start <= stop):
        raise ValueError(f"Invalid range (start, stop, step) = ({start:g},{stop:g},{step:g})")
    count = math.ceil((stop - start) / step)
    check_shape((count * repeat,))
    return start, stop, count


def _arange_values(xp, start, stop, step, repeat, dtype):
    start, stop, n = _arange_count(start, stop, step, repeat)
    if np.dtype(dtype).kind in "iu":   # MXNet casts start and step to an integer dtype first (the count is not)
        start, step = int(start), int(step)
    values = start + step * xp.arange(n, dtype=np.float64)
    if repeat > 1:
        values = xp.repeat(values, repeat)
    return values.astype(dtype)


def _arange(xp, start, stop, step, repeat, infer_range, ctx, dtype):
    return _arange_values(xp, start, stop, step, repeat, dtype)


def _ref_arange(start, stop, step, repeat, infer_range, ctx, dtype):
    if stop is None:
        start, stop = 0.0, start
    out = []
    i = 0
    first, stride = (int(start), int(step)) if np.dtype(dtype).kind in "iu" else (start, step)
    while (step > 0 and start + i * step < stop) or (step < 0 and start + i * step > stop):
        out.extend([first + i * stride] * repeat)
        i += 1
    return np.array(out, dtype=np.float64).astype(dtype)


register(OpDef(
    name="_arange", kernel=_arange, inputs=(), creates=True, differentiable=False,
    infer=lambda shapes, dtypes, start, stop, step, repeat, infer_range, ctx, dtype: (
        [(_arange_count(start, stop, step, repeat)[2] * repeat,)], [dtype]),
    attrs={"start": Attr(parse_float, REQUIRED), "stop": Attr(optional(parse_float), None),
           "step": Attr(parse_float, 1.0), "repeat": Attr(parse_int, 1), "infer_range": Attr(parse_bool, False),
           "ctx": _CTX, "dtype": _DTYPE},
    test=OpTest(ref=_ref_arange, grad=False, grad2=False, cases=(
        ((), {"start": 0, "stop": 10, "step": 2}), ((), {"start": 3}), ((), {"start": 0, "stop": 3, "repeat": 2}),
        ((), {"start": 1, "stop": 2, "step": 0.3}), ((), {"start": 5, "stop": 0, "step": -1.5}),
        ((), {"start": 0, "stop": 5, "dtype": "int32"}), ((), {"start": 1.5, "stop": 4, "step": 0.5, "dtype": "int32"}),
        ((), {"start": 0, "stop": 10000 ** 2, "step": 10001, "dtype": "int32"}))),
    doc="Evenly spaced values in [start, stop) (stop None: [0, start)), each repeated `repeat` times."))


def _linspace_shape(num):
    if num < 0:
        raise ValueError(f"num must be non-negative, got {num}")
    return check_shape((num,))


def _linspace(xp, start, stop, num, endpoint, ctx, dtype):
    _linspace_shape(num)
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    return (start + step * xp.arange(num, dtype=np.float64)).astype(dtype)


register(OpDef(
    name="_linspace", kernel=_linspace, inputs=(), creates=True, differentiable=False,
    infer=lambda shapes, dtypes, start, stop, num, endpoint, ctx, dtype: ([_linspace_shape(num)], [dtype]),
    attrs={"start": Attr(parse_float, REQUIRED), "stop": Attr(parse_float, REQUIRED),
           "num": Attr(parse_int, REQUIRED), "endpoint": Attr(parse_bool, True), "ctx": _CTX, "dtype": _DTYPE},
    test=OpTest(ref=lambda start, stop, num, endpoint, ctx, dtype: np.linspace(start, stop, num,
                                                                               endpoint=endpoint).astype(dtype),
                grad=False, grad2=False, cases=(
                    ((), {"start": 0, "stop": 1, "num": 5}), ((), {"start": 0, "stop": 1, "num": 4, "endpoint": False}),
                    ((), {"start": 0, "stop": 10, "num": 5, "dtype": "int32"}), ((), {"start": 2, "stop": 3, "num": 1}))),
    doc="`num` evenly spaced values from start to stop (inclusive unless endpoint=False)."))


def _eye_shape(N, M):
    if N < 0 or M < 0:
        raise ValueError(f"N and M must be non-negative, got N={N}, M={M}")
    return check_shape((N, M if M > 0 else N))


def _eye(xp, N, M, k, ctx, dtype):
    return xp.eye(*_eye_shape(N, M), k, dtype=dtype)


register(OpDef(
    name="_eye", kernel=_eye, inputs=(), creates=True, differentiable=False,
    infer=lambda shapes, dtypes, N, M, k, ctx, dtype: ([_eye_shape(N, M)], [dtype]),
    attrs={"N": Attr(parse_int, REQUIRED), "M": Attr(parse_int, 0), "k": Attr(parse_int, 0), "ctx": _CTX,
           "dtype": _DTYPE},
    test=OpTest(ref=lambda N, M, k, ctx, dtype: np.array([[1.0 if j - i == k else 0.0 for j in range(M or N)]
                                                          for i in range(N)]).reshape(N, M or N).astype(dtype),
                grad=False, grad2=False, cases=(
                    ((), {"N": 3}), ((), {"N": 2, "M": 3, "k": 1}), ((), {"N": 3, "k": -1, "dtype": "int32"}),
                    ((), {"N": 0}))),
    doc="A 2-d array with ones on the k-th diagonal (M=0 means M=N)."))


# ---------------------------------------------------------------------------------------------------------
def _zeros_like(xp, data):
    return xp.zeros(data.shape, dtype=data.dtype)


def _ones_like(xp, data):
    return xp.ones(data.shape, dtype=data.dtype)


register(OpDef(
    name="zeros_like", kernel=_zeros_like, differentiable=False, infer=infer_same, kind="unary",
    test=OpTest(ref=lambda x: np.zeros_like(x), recipe="unary", grad=False, grad2=False),
    doc="Zeros with data's shape and dtype (a constant to autograd)."))
register(OpDef(
    name="ones_like", kernel=_ones_like, differentiable=False, infer=infer_same, kind="unary",
    test=OpTest(ref=lambda x: np.ones_like(x), recipe="unary", grad=False, grad2=False),
    doc="Ones with data's shape and dtype (a constant to autograd)."))
