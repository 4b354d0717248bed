"""Batchify functions for `DataLoader(batchify_fn=...)` (GluonNLP's ``gluonnlp.data.batchify``).

    loader = DataLoader(dataset, batch_size=32, batchify_fn=Tuple(Pad(pad_val=0, ret_length=True), Stack()))
    for (tokens, valid_length), label in loader: ...

`Pad` pads variable-length samples to the longest one in the batch (or, given ``bucket_keys``, to the smallest
bucket key that holds it: one shape per bucket, so a hybridized model compiles once per bucket); with
``ret_length=True`` it also returns the valid lengths (int32), which sequence ops and RNN layers take as
``valid_length``.
"""
import numbers

import numpy as np

from ...base import MXNetError
from ...base import dtype_np
from ...ndarray import NDArray, array

__all__ = ["Stack", "Pad", "Tuple", "List"]


def _to_numpy(x):
    if isinstance(x, NDArray):
        return x.asnumpy()
    return np.asarray(x)


def _np_dtype(dtype):
    return None if dtype is None else dtype_np(dtype)


def _to_nd(arr, dtype=None):
    arr = np.asarray(arr)
    return array(arr, dtype=dtype if dtype is not None else arr.dtype)


class Stack:
    """Stacks samples of the same shape along a new first axis; dtype: the result's dtype (default: the
    samples')."""

    def __init__(self, dtype=None):
        self._dtype = _np_dtype(dtype)

    def __call__(self, data):
        arrs = [_to_numpy(d) for d in data]
        shapes = {a.shape for a in arrs}
        if len(shapes) > 1:
            raise MXNetError(f"Stack: samples have different shapes {sorted(shapes)}; use Pad() for "
                             f"variable-length samples")
        return _to_nd(np.stack(arrs), self._dtype)


class Pad:
    """Pads samples along `axis` to the longest one in the batch, then stacks them.

    pad_val: the fill value (0). ret_length: also return the original lengths along axis (int32 NDArray).
    dtype: the result's dtype (default: the samples'). round_to: round the padded length up to a multiple of
    this (fewer distinct shapes, so fewer compiled plans when hybridized). bucket_keys: pad to the smallest of
    these lengths that is >= the longest sample instead (``FixedBucketSampler.bucket_keys``: each batch gets
    its bucket's length, so there are as many shapes as buckets); a longer batch is an error.
    """

    def __init__(self, axis=0, pad_val=0, ret_length=False, dtype=None, round_to=None, bucket_keys=None):
        if not isinstance(axis, numbers.Integral):
            raise ValueError(f"Pad: axis must be an int, got {axis!r}")
        if bucket_keys is not None:
            if round_to:
                raise ValueError("Pad: give round_to or bucket_keys, not both")
            keys = list(bucket_keys)
            if not keys or not all(isinstance(k, numbers.Integral) and k >= 0 for k in keys):
                raise ValueError("Pad: bucket_keys must be non-negative ints (for a sampler over tuple lengths, "
                                 f"pass this field's keys: [k[i] for k in sampler.bucket_keys]); got {bucket_keys!r}")
            bucket_keys = np.unique(np.asarray(keys, dtype=np.int64))
        self._bucket_keys = bucket_keys
        self._axis = int(axis)
        self._pad_val = 0 if pad_val is None else pad_val
        self._ret_length = ret_length
        self._dtype = _np_dtype(dtype)
        self._round_to = round_to

    def __call__(self, data):
        arrs = [_to_numpy(d) for d in data]
        if not arrs:
            raise MXNetError("Pad: empty batch")
        ndim = arrs[0].ndim
        if any(a.ndim != ndim for a in arrs):
            raise MXNetError(f"Pad: samples must have the same number of dimensions, got "
                             f"{sorted({a.ndim for a in arrs})}")
        axis = self._axis + ndim if self._axis < 0 else self._axis
        if not 0 <= axis < max(ndim, 1) or ndim == 0:
            raise MXNetError(f"Pad: axis {self._axis} is out of range for samples of shape {arrs[0].shape}")
        lengths = [a.shape[axis] for a in arrs]
        max_len = max(lengths)
        if self._round_to:
            max_len = -(-max_len // self._round_to) * self._round_to
        elif self._bucket_keys is not None:
            k = int(np.searchsorted(self._bucket_keys, max_len))
            if k == len(self._bucket_keys):
                raise MXNetError(f"Pad: a sample of length {max_len} along axis {axis} is longer than the largest "
                                 f"bucket key {int(self._bucket_keys[-1])}")
            max_len = int(self._bucket_keys[k])
        shape = list(arrs[0].shape)
        for a in arrs:
            for d in range(ndim):
                if d != axis and a.shape[d] != shape[d]:
                    raise MXNetError(f"Pad: samples differ in shape outside axis {axis}: {arrs[0].shape} vs "
                                     f"{a.shape}")
        shape[axis] = max_len
        dtype = self._dtype if self._dtype is not None else np.result_type(*arrs)
        out = np.full([len(arrs)] + shape, self._pad_val, dtype=dtype)
        for i, a in enumerate(arrs):
            index = [i] + [slice(None)] * ndim
            index[axis + 1] = slice(0, a.shape[axis])
            out[tuple(index)] = a
        padded = _to_nd(out, dtype)
        if self._ret_length:
            return padded, _to_nd(np.asarray(lengths, dtype=np.int32))
        return padded


class Tuple:
    """Applies one batchify function per field of tuple samples: ``Tuple(Pad(), Stack())`` or
    ``Tuple([Pad(), Stack()])``."""

    def __init__(self, fn, *args):
        if isinstance(fn, (list, tuple)):
            if args:
                raise ValueError("Tuple: pass the functions either as one list or as separate arguments")
            self._fn = tuple(fn)
        else:
            self._fn = (fn,) + args
        for i, f in enumerate(self._fn):
            if not callable(f):
                raise ValueError(f"Tuple: function {i} is not callable: {f!r}")

    def __call__(self, data):
        for sample in data:
            if len(sample) != len(self._fn):
                raise MXNetError(f"Tuple: samples have {len(sample)} fields but {len(self._fn)} batchify "
                                 f"functions were given")
        return tuple(fn([sample[i] for sample in data]) for i, fn in enumerate(self._fn))


class List:
    """Returns the samples as a plain list (no stacking)."""

    def __call__(self, data):
        return list(data)
