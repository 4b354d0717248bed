"""MXNet's interleaved multi-head attention products (contrib/transformer.cc): the attention scores and the
weighted values read straight out of a fused projection, sequence-major (seq_length, batch, ...).

The projection's last axis is interleaved per head: `queries_keys_values` is (L, B, heads * 3 * head_dim) read as
(L, B, heads, 3, head_dim) (query, key, value of each head side by side), `keys_values` is (L, B, heads * 2 *
head_dim) read as (L, B, heads, 2, head_dim). Attention maps are (B * heads, L_q, L_k), batch-major then head
(row b * heads + h). The score products are scaled by 1 / sqrt(head_dim), the value products are not.

Kernels are numpy matmuls; each gradient replays the op's composite form (reshape, transpose, batch_dot written
with mixnet ops), so every order of derivative exists.
"""
import math

import numpy as np

from .attrs import REQUIRED, Attr, parse_int
from .common import call
from .nn_norm import _replayed
from .registry import OpDef, OpTest, register

_HEADS = {"heads": Attr(parse_int, REQUIRED)}


# ---------------------------------------------------------------------------------------------------------
# shapes: the same checks for infer and kernels
def _split(shape, heads, parts, what):
    """(L, B, head_dim) of a (L, B, heads * parts * head_dim) input, after checking it can be split so."""
    if len(shape) != 3:
        raise ValueError(f"{what} must be 3-d (seq_length, batch, {parts} * heads * head_dim), got shape "
                         f"{tuple(shape)}")
    if heads < 1:
        raise ValueError(f"heads must be positive, got {heads}")
    if shape[2] % (parts * heads):
        raise ValueError(f"{what}.shape[2] = {shape[2]} is not a multiple of {parts} * heads = {parts * heads}")
    return shape[0], shape[1], shape[2] // (parts * heads)


def _check_att(att, rows, lq, lk):
    if len(att) != 3 or tuple(att) != (rows, lq, lk):
        raise ValueError(f"attention must have shape (batch * heads, seq_q, seq_k) = {(rows, lq, lk)}, got "
                         f"{tuple(att)}")


def _selfatt_qk_infer(shapes, dtypes, heads):
    length, batch, _ = _split(shapes[0], heads, 3, "queries_keys_values")
    return [(batch * heads, length, length)], [dtypes[0]]


def _selfatt_valatt_infer(shapes, dtypes, heads):
    length, batch, hd = _split(shapes[0], heads, 3, "queries_keys_values")
    _check_att(shapes[1], batch * heads, length, length)
    return [(length, batch, heads * hd)], [dtypes[0]]


def _encdec_qk_infer(shapes, dtypes, heads):
    lq, batch, hd = _split(shapes[0], heads, 1, "queries")
    lk, batch_kv, hd_kv = _split(shapes[1], heads, 2, "keys_values")
    if (batch_kv, hd_kv) != (batch, hd):
        raise ValueError(f"keys_values {tuple(shapes[1])} must be (seq_k, {batch}, {2 * heads * hd}) to match "
                         f"queries {tuple(shapes[0])}")
    return [(batch * heads, lq, lk)], [dtypes[0]]


def _encdec_valatt_infer(shapes, dtypes, heads):
    lk, batch, hd = _split(shapes[0], heads, 2, "keys_values")
    att = tuple(shapes[1])
    _check_att(att, batch * heads, att[1] if len(att) == 3 else -1, lk)
    return [(att[1], batch, heads * hd)], [dtypes[0]]


# ---------------------------------------------------------------------------------------------------------
# numpy kernels: heads moved next to the batch, (B, heads, L, head_dim), then one batched matmul
def _part(xp, x, heads, parts, idx):
    length, batch, hd = _split(x.shape, heads, parts, "input")
    return xp.ascontiguousarray(x.reshape(length, batch, heads, parts, hd)[:, :, :, idx, :].transpose(1, 2, 0, 3))


def _scale(hd):
    return 1.0 / math.sqrt(hd)


def _scores(xp, q, k):
    """(B, H, Lq, d) x (B, H, Lk, d) -> (B * H, Lq, Lk), scaled by 1 / sqrt(d)."""
    out = xp.matmul(q, k.swapaxes(-1, -2)) * q.dtype.type(_scale(q.shape[-1]))
    return out.reshape(-1, out.shape[2], out.shape[3])


def _weighted(xp, att, v):
    """att (B * H, Lq, Lk) x v (B, H, Lk, d) -> (Lq, B, H * d)."""
    batch, heads, _, hd = v.shape
    out = xp.matmul(att.reshape(batch, heads, att.shape[1], att.shape[2]), v)
    return xp.ascontiguousarray(out.transpose(2, 0, 1, 3)).reshape(att.shape[1], batch, heads * hd)


def _k_selfatt_qk(xp, qkv, heads):
    _selfatt_qk_infer([qkv.shape], [qkv.dtype], heads)
    return _scores(xp, _part(xp, qkv, heads, 3, 0), _part(xp, qkv, heads, 3, 1))


def _k_selfatt_valatt(xp, qkv, att, heads):
    _selfatt_valatt_infer([qkv.shape, att.shape], [qkv.dtype, att.dtype], heads)
    return _weighted(xp, att, _part(xp, qkv, heads, 3, 2))


def _k_encdec_qk(xp, q, kv, heads):
    _encdec_qk_infer([q.shape, kv.shape], [q.dtype, kv.dtype], heads)
    return _scores(xp, _part(xp, q, heads, 1, 0), _part(xp, kv, heads, 2, 0))


def _k_encdec_valatt(xp, kv, att, heads):
    _encdec_valatt_infer([kv.shape, att.shape], [kv.dtype, att.dtype], heads)
    return _weighted(xp, att, _part(xp, kv, heads, 2, 1))


# ---------------------------------------------------------------------------------------------------------
# the composite forms (mixnet ops), whose replay gives the gradients
def _c_part(x, heads, parts, idx):
    """(B * H, L, d) of one part of an interleaved input."""
    length, batch, hd = _split(x.shape, heads, parts, "input")
    x = call("Reshape", x, shape=(length, batch, heads, parts, hd))
    x = call("slice_axis", x, axis=3, begin=idx, end=idx + 1)
    x = call("transpose", call("Reshape", x, shape=(length, batch, heads, hd)), axes=(1, 2, 0, 3))
    return call("Reshape", x, shape=(batch * heads, length, hd))


def _c_scores(q, k):
    return call("batch_dot", q, k, transpose_b=True) * _scale(q.shape[-1])


def _c_weighted(att, v, heads):
    rows, lq, _ = att.shape
    hd = v.shape[-1]
    out = call("Reshape", call("batch_dot", att, v), shape=(rows // heads, heads, lq, hd))
    return call("Reshape", call("transpose", out, axes=(2, 0, 1, 3)), shape=(lq, rows // heads, heads * hd))


def _c_selfatt_qk(a, qkv):
    h = a["heads"]
    return (_c_scores(_c_part(qkv, h, 3, 0), _c_part(qkv, h, 3, 1)),)


def _c_selfatt_valatt(a, qkv, att):
    return (_c_weighted(att, _c_part(qkv, a["heads"], 3, 2), a["heads"]),)


def _c_encdec_qk(a, q, kv):
    h = a["heads"]
    return (_c_scores(_c_part(q, h, 1, 0), _c_part(kv, h, 2, 0)),)


def _c_encdec_valatt(a, kv, att):
    return (_c_weighted(att, _c_part(kv, a["heads"], 2, 1), a["heads"]),)


# ---------------------------------------------------------------------------------------------------------
# references: explicit loops over batch and head on the (L, B, heads, parts, head_dim) view
def _ref_scores(q, k, heads):
    """q (Lq, B, H, d), k (Lk, B, H, d) -> (B * H, Lq, Lk) / sqrt(d)."""
    batch, hd = q.shape[1], q.shape[3]
    out = np.empty((batch * heads, q.shape[0], k.shape[0]))
    for b in range(batch):
        for h in range(heads):
            out[b * heads + h] = q[:, b, h, :] @ k[:, b, h, :].T / np.sqrt(hd)
    return out


def _ref_weighted(att, v, heads):
    """att (B * H, Lq, Lk), v (Lk, B, H, d) -> (Lq, B, H * d)."""
    batch, hd = v.shape[1], v.shape[3]
    out = np.empty((att.shape[1], batch, heads, hd))
    for b in range(batch):
        for h in range(heads):
            out[:, b, h, :] = att[b * heads + h] @ v[:, b, h, :]
    return out.reshape(att.shape[1], batch, heads * hd)


def _view(x, heads, parts):
    return x.reshape(x.shape[0], x.shape[1], heads, parts, -1)


def _ref_selfatt_qk(qkv, heads):
    x = _view(qkv, heads, 3)
    return _ref_scores(x[..., 0, :], x[..., 1, :], heads)


def _ref_selfatt_valatt(qkv, att, heads):
    return _ref_weighted(att, _view(qkv, heads, 3)[..., 2, :], heads)


def _ref_encdec_qk(q, kv, heads):
    return _ref_scores(_view(q, heads, 1)[..., 0, :], _view(kv, heads, 2)[..., 0, :], heads)


def _ref_encdec_valatt(kv, att, heads):
    return _ref_weighted(att, _view(kv, heads, 2)[..., 1, :], heads)


register(OpDef(
    name="_contrib_interleaved_matmul_selfatt_qk", kernel=_k_selfatt_qk, inputs=("queries_keys_values",),
    attrs=_HEADS, infer=_selfatt_qk_infer, grad=_replayed(_c_selfatt_qk),
    test=OpTest(ref=_ref_selfatt_qk, cases=((((3, 2, 12),), {"heads": 2}), (((2, 1, 3),), {"heads": 1}))),
    doc="Attention scores q.k / sqrt(head_dim) of every head, from one interleaved (L, B, heads * 3 * head_dim) "
        "projection; output (B * heads, L, L)."))

register(OpDef(
    name="_contrib_interleaved_matmul_selfatt_valatt", kernel=_k_selfatt_valatt,
    inputs=("queries_keys_values", "attention"), attrs=_HEADS, infer=_selfatt_valatt_infer,
    grad=_replayed(_c_selfatt_valatt),
    test=OpTest(ref=_ref_selfatt_valatt, cases=((((3, 2, 12), (4, 3, 3)), {"heads": 2}),)),
    doc="The attention-weighted values of every head: attention (B * heads, L, L) times the values of an "
        "interleaved (L, B, heads * 3 * head_dim) projection; output (L, B, heads * head_dim)."))

register(OpDef(
    name="_contrib_interleaved_matmul_encdec_qk", kernel=_k_encdec_qk, inputs=("queries", "keys_values"),
    attrs=_HEADS, infer=_encdec_qk_infer, grad=_replayed(_c_encdec_qk),
    test=OpTest(ref=_ref_encdec_qk, cases=((((3, 2, 4), (2, 2, 8)), {"heads": 2}),)),
    doc="Encoder-decoder attention scores q.k / sqrt(head_dim): queries (Lq, B, heads * head_dim), keys from an "
        "interleaved (Lk, B, heads * 2 * head_dim) projection; output (B * heads, Lq, Lk)."))

register(OpDef(
    name="_contrib_interleaved_matmul_encdec_valatt", kernel=_k_encdec_valatt,
    inputs=("keys_values", "attention"), attrs=_HEADS, infer=_encdec_valatt_infer,
    grad=_replayed(_c_encdec_valatt),
    test=OpTest(ref=_ref_encdec_valatt, cases=((((2, 2, 8), (4, 3, 2)), {"heads": 2}),)),
    doc="Encoder-decoder attention-weighted values: attention (B * heads, Lq, Lk) times the values of an "
        "interleaved (Lk, B, heads * 2 * head_dim) projection; output (Lq, B, heads * head_dim)."))
