"""`_sample_unique_zipfian` (MXNet 1.x's candidate sampler for sampled softmax): for each batch row, draws
log-uniform classes `round(exp(u * log(range_max))) - 1`, u ~ U[0, 1), until `shape[1]` distinct ones are
found; returns them in draw order (int64) and the number of draws each row took (int64).
"""
import numpy as np

from .attrs import Attr, REQUIRED, parse_ctx, parse_int, parse_shape
from .common import check_shape
from .registry import OpDef, OpTest, register

_I64 = np.dtype(np.int64)


def _check(range_max, shape):
    shape = tuple(shape)
    if len(shape) != 2:
        raise ValueError(f"shape must be 2-D (batch_size, num_sampled), got {shape}")
    if range_max < 1:
        raise ValueError(f"range_max must be positive, got {range_max}")
    if shape[1] > range_max:
        raise ValueError(f"Number of samples ({shape[1]}) cannot exceed the number of possible classes "
                         f"({range_max})")
    return check_shape(shape)


def _infer(shapes, dtypes, range_max, shape, **_):
    shape = _check(range_max, shape)
    return [shape, (shape[0],)], [_I64, _I64]


def _unique_row(rng, log_range, range_max, num_sampled):
    """The first num_sampled distinct values of an endless stream of draws, and how many draws that took.
    Draws come in growing chunks, so a row costs a few numpy calls rather than one Python step per draw."""
    draws = np.empty(0, dtype=np.int64)
    chunk = max(2 * num_sampled, 64)
    while True:
        fresh = np.rint(np.exp(rng.random(chunk) * log_range)).astype(np.int64) - 1
        draws = np.concatenate([draws, np.minimum(fresh, range_max - 1)])
        values, first = np.unique(draws, return_index=True)
        if len(values) >= num_sampled:
            order = np.sort(first)[:num_sampled]
            return draws[order], int(order[-1]) + 1 if num_sampled else 0
        chunk *= 2


def _sample_unique_zipfian(xp, range_max, shape, ctx, rng):
    batch, num_sampled = _check(range_max, shape)
    samples = np.empty((batch, num_sampled), dtype=np.int64)
    tries = np.empty((batch,), dtype=np.int64)
    log_range = np.log(range_max)
    for i in range(batch):
        samples[i], tries[i] = _unique_row(rng, log_range, range_max, num_sampled)
    return (samples, tries) if xp is np else (xp.asarray(samples), xp.asarray(tries))


register(OpDef(
    name="_sample_unique_zipfian", kernel=_sample_unique_zipfian, inputs=(), creates=True, random=True,
    differentiable=False, num_outputs=2, infer=_infer,
    attrs={"range_max": Attr(parse_int, REQUIRED), "shape": Attr(parse_shape, REQUIRED),
           "ctx": Attr(parse_ctx, None)},
    test=OpTest(random=True, grad=False, grad2=False, cases=(((), {"range_max": 50, "shape": (3, 10)}),)),
    doc="Distinct log-uniform (Zipfian) class samples per batch row, and the draws each row needed."))
