"""SequenceSum and SequenceMean: the sum and the mean over the time axis of the valid steps only (mixnet
additions; MXNet 1.9.1 has no such ops).

They take the Sequence family's inputs and attributes (SequenceMask, SequenceLast): `data` is (T, B, ...) for
axis=0 or (B, T, ...) for axis=1, `sequence_length` (B,) when use_sequence_length=True (clipped to [0, T]). The
output is (B, ...), the time axis removed, as SequenceLast's. Steps at or past a sequence's length are selected
away (never multiplied by 0), so NaN or inf padding cannot reach the result, and their gradient is exactly 0.
SequenceMean divides by the clipped length, at least 1: an empty sequence's mean is 0.
"""
import numpy as np

from .common import call
from .nn_act import _SEQ_ATTRS, _seq_infer_dims, _seq_inputs, _seq_keep, _seq_lengths
from .registry import OpDef, OpTest, register


def _infer(shapes, dtypes, use_sequence_length, axis):
    _, b = _seq_infer_dims(shapes, use_sequence_length, axis)
    rest = tuple(shapes[0][2:])
    return [(b,) + rest], [dtypes[0]]


def _per_batch(x, ndim):
    """(B,) -> (B, 1, ..., 1) to broadcast over a (B, ...) array of `ndim` dims."""
    return x.reshape(x.shape + (1,) * (ndim - 1))


def _kernel(mean):
    def run(xp, data, sequence_length=None, *, use_sequence_length, axis):
        seq = sequence_length if use_sequence_length else None
        total = xp.where(_seq_keep(xp, data, seq, axis), data, 0).sum(axis=axis)
        if mean:
            _, _, lens = _seq_lengths(xp, data, seq, axis)
            total = total / _per_batch(xp.maximum(lens, 1), total.ndim)
        return xp.asarray(total, dtype=data.dtype)
    return run


def _grad(mean):
    def rule(c, g):
        data = c.inputs[0]
        a = c.attrs
        if mean:
            t = data.shape[a["axis"]]
            if a["use_sequence_length"]:
                count = call("clip", call("Cast", c.inputs[1], dtype=g.dtype), a_min=1.0, a_max=float(max(t, 1)))
                g = call("broadcast_div", g, call("reshape", count, shape=(-1,) + (1,) * (g.ndim - 1)))
            else:
                g = g * (1.0 / max(t, 1))
        spread = call("broadcast_to", call("expand_dims", g, axis=a["axis"]), shape=tuple(data.shape))
        if not a["use_sequence_length"]:
            return (spread,)
        return call("SequenceMask", spread, c.inputs[1], value=0.0, **a), None
    return rule


def _ref(mean):
    def ref(x, lens=None, use_sequence_length=False, axis=0):
        xs = np.moveaxis(x.astype(np.float64), axis, 0)             # T, B, ...
        t, b = xs.shape[:2]
        n = np.full(b, t) if lens is None else np.clip(lens.astype(np.int64), 0, t)
        out = np.stack([xs[:n[i], i].sum(axis=0) for i in range(b)]) if b else np.zeros((0,) + xs.shape[2:])
        if mean:
            out = out / np.maximum(n, 1).reshape((b,) + (1,) * (out.ndim - 1))
        return out
    return ref


_CASES = (
    (((4, 3, 2), (3,)), {"use_sequence_length": True}),
    (((3, 4, 2), (3,)), {"use_sequence_length": True, "axis": 1}),
    (((2, 5), (2,)), {"use_sequence_length": True, "axis": 1}),
    (((4, 3),), {}),
    (((3, 4, 2),), {"axis": 1}),
)

for _name, _mean, _what in (("SequenceSum", False, "sum"), ("SequenceMean", True, "mean")):
    register(OpDef(
        name=_name, kernel=_kernel(_mean), inputs=_seq_inputs, grad=_grad(_mean), nondiff_inputs=(1,),
        infer=_infer, attrs=_SEQ_ATTRS,
        test=OpTest(ref=_ref(_mean), int_inputs={1: (0, 5)}, cases=_CASES),
        doc=f"The {_what} over the time axis (`axis`, 0 or 1) of the steps before each sequence's length "
            "(sequence_length, (B,), with use_sequence_length=True; else every step); output (B, ...). A mixnet "
            "addition: padding, even NaN, never reaches the result or the gradient."))
