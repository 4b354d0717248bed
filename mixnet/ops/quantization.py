"""MXNet's contrib.quantize / quantize_v2 / dequantize (src/operator/quantization): float32 data to int8 / uint8
codes for a given float range, and back.

The numbers are those of MXNet 1.9.1's released CPU build, which runs these ops through MKL-DNN
(mkldnn_quantize-inl.h, mkldnn_dequantize-inl.h): with r = max(|min_range|, |max_range|), quantize scales by
255 / r (uint8) or 127 / r (int8), rounds to nearest (ties to even) and saturates; dequantize multiplies by
r / 255.5 (uint8) or r / 127.5 (int8). quantize returns the range the codes stand for as (1,) float32 arrays:
the given one for uint8, (-r, r) for int8. quantize_v2 takes the range from min_calib_range / max_calib_range
or else the data's own min and max, and scales by 255.5 / r or 127.5 / r; its out_type 'auto' is uint8 for a
calibrated range starting at >= 0, else int8; int8 / uint8 data passes through. (MXNet builds without MKL-DNN
use an affine uint8 mapping of [min_range, max_range] and r / 255, r / 127 instead.) All have zero gradients,
as in MXNet.
"""
import numpy as np

from .attrs import Attr, choice, optional, parse_float
from .registry import OpDef, OpTest, register

_F32 = np.dtype(np.float32)
_CODES = {"uint8": np.dtype(np.uint8), "int8": np.dtype(np.int8)}


def _check_ranges(shapes, dtypes, what):
    for name, shape, dtype in zip(("min_range", "max_range"), shapes[1:], dtypes[1:]):
        if tuple(shape) != (1,):
            raise ValueError(f"{name} must have shape (1,), got {tuple(shape)}")
        if dtype is not None and np.dtype(dtype) != _F32:
            raise ValueError(f"{name} must be float32, got {np.dtype(dtype)}")


def _quantize_infer(shapes, dtypes, out_type):
    if dtypes[0] is not None and np.dtype(dtypes[0]) != _F32:
        raise ValueError(f"data must be float32, got {np.dtype(dtypes[0])}")
    _check_ranges(shapes, dtypes, "quantize")
    return [tuple(shapes[0]), (1,), (1,)], [_CODES[out_type], _F32, _F32]


def _quantize(xp, data, min_range, max_range, out_type):
    _quantize_infer([data.shape, min_range.shape, max_range.shape], [data.dtype, min_range.dtype,
                                                                     max_range.dtype], out_type)
    real = xp.maximum(xp.abs(min_range), xp.abs(max_range))
    info = np.iinfo(_CODES[out_type])
    levels = np.float32(255.0 if out_type == "uint8" else 127.0)
    codes = xp.clip(xp.rint(data * (levels / real)), info.min, info.max).astype(_CODES[out_type])
    if out_type == "uint8":
        return codes, min_range.copy(), max_range.copy()
    return codes, -real, real


def _dequantize_infer(shapes, dtypes, out_type):
    if dtypes[0] is not None and np.dtype(dtypes[0]) not in _CODES.values():
        raise ValueError(f"data must be uint8 or int8, got {np.dtype(dtypes[0])}")
    _check_ranges(shapes, dtypes, "dequantize")
    return [tuple(shapes[0])], [_F32]


def _dequantize(xp, data, min_range, max_range, out_type):
    _dequantize_infer([data.shape, min_range.shape, max_range.shape], [data.dtype, min_range.dtype,
                                                                       max_range.dtype], out_type)
    real = xp.maximum(xp.abs(min_range), xp.abs(max_range))
    levels = np.float32(255.5 if data.dtype == np.uint8 else 127.5)
    return (data.astype(_F32) * (real / levels)).astype(_F32)


def _v2_type(out_type, min_calib_range, max_calib_range):
    if out_type == "auto":
        calibrated = min_calib_range is not None and max_calib_range is not None
        return "uint8" if calibrated and min_calib_range >= 0 else "int8"
    return out_type


def _quantize_v2_infer(shapes, dtypes, out_type, min_calib_range, max_calib_range):
    dtype = np.dtype(dtypes[0]) if dtypes[0] is not None else _F32
    if dtype in _CODES.values():            # already quantized: passed through
        return [tuple(shapes[0]), (1,), (1,)], [dtype, _F32, _F32]
    if dtype != _F32:
        raise ValueError(f"data must be float32 (or int8 / uint8 to pass through), got {dtype}")
    return [tuple(shapes[0]), (1,), (1,)], [_CODES[_v2_type(out_type, min_calib_range, max_calib_range)], _F32,
                                            _F32]


def _quantize_v2(xp, data, out_type, min_calib_range, max_calib_range):
    _quantize_v2_infer([data.shape], [data.dtype], out_type, min_calib_range, max_calib_range)
    calibrated = min_calib_range is not None and max_calib_range is not None
    if data.dtype != _F32:
        if calibrated:
            lo, hi = min_calib_range, max_calib_range
        else:
            lo, hi = (0.0, 255.5) if data.dtype == np.uint8 else (-127.5, 127.5)
        return data.copy(), xp.asarray([lo], _F32), xp.asarray([hi], _F32)
    if calibrated:
        lo, hi = np.float32(min_calib_range), np.float32(max_calib_range)
    else:                                   # the data's own range (MXNet starts from +-FLT_MAX)
        # host floats (float32 values, exact in float64); on a GPU this reads two scalars back
        lo = float(data.min()) if data.size else float(np.finfo(_F32).max)
        hi = float(data.max()) if data.size else float(-np.finfo(_F32).max)
    kind = _v2_type(out_type, min_calib_range, max_calib_range)
    real = np.float32(max(abs(lo), abs(hi)))
    info = np.iinfo(_CODES[kind])
    levels = np.float32(255.5 if kind == "uint8" else 127.5)
    codes = xp.clip(xp.rint(data * (levels / real)), info.min, info.max).astype(_CODES[kind])
    out_lo, out_hi = (lo, hi) if kind == "uint8" else (-real, real)
    return codes, xp.asarray([out_lo], _F32), xp.asarray([out_hi], _F32)


def _ref_quantize_v2(data, out_type, min_calib_range, max_calib_range):
    calibrated = min_calib_range is not None and max_calib_range is not None
    lo, hi = (min_calib_range, max_calib_range) if calibrated else (float(data.min()), float(data.max()))
    kind = _v2_type(out_type, min_calib_range, max_calib_range)
    real = max(abs(lo), abs(hi))
    top, low, levels = (255, 0, 255.5) if kind == "uint8" else (127, -128, 127.5)
    scale = np.float32(levels) / np.float32(real)           # float32 products, as MKL-DNN's reorder computes them
    codes = [min(max(round(float(x * scale)), low), top) for x in data.flat]
    ranges = (lo, hi) if kind == "uint8" else (-real, real)
    return (np.array(codes, _CODES[kind]).reshape(data.shape), np.float32([ranges[0]]), np.float32([ranges[1]]))


def _ref_quantize(data, lo, hi, out_type):
    real = max(abs(float(lo[0])), abs(float(hi[0])))
    top, low = (255, 0) if out_type == "uint8" else (127, -128)
    scale = np.float32(top) / np.float32(real)             # float32 products; round(): ties to even
    codes = [min(max(round(float(x * scale)), low), top) for x in data.flat]
    out = np.array(codes, _CODES[out_type]).reshape(data.shape)
    return (out, lo, hi) if out_type == "uint8" else (out, np.float32([-real]), np.float32([real]))


def _ref_dequantize(data, lo, hi, out_type):
    real = max(abs(float(lo[0])), abs(float(hi[0])))
    return data * real / (255.5 if data.dtype == np.uint8 else 127.5)


_RANGE = {1: (-3, -2), 2: (2, 3)}      # a range around the data's domain (-2, 2), drawn as whole numbers

register(OpDef(
    name="_contrib_quantize", kernel=_quantize, inputs=("data", "min_range", "max_range"),
    attrs={"out_type": Attr(choice("int8", "uint8"), "uint8")}, infer=_quantize_infer, num_outputs=3,
    output_names=("output", "min_output", "max_output"), differentiable=False,
    test=OpTest(ref=_ref_quantize, grad=False, grad2=False, int_inputs=_RANGE, cases=(
        (((2, 3), (1,), (1,)), {}), (((4,), (1,), (1,)), {"out_type": "int8"}))),
    doc="float32 data to uint8 (affine on [min_range, max_range]) or int8 (zero-centred) codes, with the range "
        "they stand for."))

register(OpDef(
    name="_contrib_dequantize", kernel=_dequantize, inputs=("data", "min_range", "max_range"),
    attrs={"out_type": Attr(choice("float32"), "float32")}, infer=_dequantize_infer, differentiable=False,
    test=OpTest(ref=_ref_dequantize, grad=False, grad2=False,
                int_inputs={0: (-127, 128, "int8"), 1: (-3, -2, "float32"), 2: (1, 3, "float32")},
                cases=((((2, 3), (1,), (1,)), {}),)),
    doc="uint8 / int8 codes back to float32 over the range [min_range, max_range] quantize gave."))

register(OpDef(
    name="_contrib_quantize_v2", kernel=_quantize_v2, inputs=("data",), infer=_quantize_v2_infer, num_outputs=3,
    attrs={"out_type": Attr(choice("auto", "int8", "uint8"), "int8"),
           "min_calib_range": Attr(optional(parse_float), None), "max_calib_range": Attr(optional(parse_float), None)},
    output_names=("output", "min_output", "max_output"), differentiable=False,
    test=OpTest(ref=_ref_quantize_v2, grad=False, grad2=False, cases=(
        (((2, 3),), {}), (((4,),), {"out_type": "uint8", "min_calib_range": 0.0, "max_calib_range": 1.5}),
        (((3,),), {"out_type": "auto", "min_calib_range": -1.0, "max_calib_range": 1.0}))),
    doc="float32 data to int8 / uint8 codes over a calibrated range (or the data's own), with the range they "
        "stand for; out_type 'auto' picks uint8 for a non-negative calibrated range."))
