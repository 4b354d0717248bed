"""Attention over variable-length sequences (mixnet additions, in the spirit of GluonNLP's attention cells):
DotProductAttention and MultiHeadAttention take valid lengths instead of masks.

Layout is batch-major (B, L, units). Keys (and values) at or past `key_length` get exactly zero weight: the
scores go through softmax with use_length, which selects them away. Every input is first passed through
SequenceMask (padded steps set to 0 by selection, not multiplication), so padding values, even NaN or 1e30, reach
no product, no output at a valid query position and no gradient; outputs and weights at query positions at or
past `query_length` are 0. A length of None means the whole axis is valid.
"""
from ... import nn
from ...block import HybridBlock

__all__ = ["DotProductAttention", "MultiHeadAttention"]


def _mask(F, x, length):
    """x (B, L, ...) with the steps at or past length (B,) set to 0; x itself when length is None."""
    if length is None:
        return x
    return F.SequenceMask(x, sequence_length=length, use_sequence_length=True, axis=1)


class DotProductAttention(HybridBlock):
    """weights = softmax(query . key^T / sqrt(d)) over the valid keys; context = weights . value.

    forward(query, key, value, key_length=None, query_length=None) -> (context, weights): query (B, Lq, d),
    key (B, Lk, d), value (B, Lk, dv), lengths (B,) integer-valued; context (B, Lq, dv), weights (B, Lq, Lk).
    scaled=False drops the 1 / sqrt(d); dropout applies to the weights in training.
    """

    def __init__(self, scaled=True, dropout=0.0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._scaled = scaled
        self._dropout = dropout

    def hybrid_forward(self, F, query, key, value, key_length=None, query_length=None):
        query = _mask(F, query, query_length)
        key = _mask(F, key, key_length)
        value = _mask(F, value, key_length)
        if self._scaled:
            query = F.contrib.div_sqrt_dim(query)
        scores = F.batch_dot(query, key, transpose_b=True)
        if key_length is None:
            weights = F.softmax(scores, axis=-1)
        else:
            per_row = F.broadcast_like(F.expand_dims(key_length, axis=1), scores, lhs_axes=(1,), rhs_axes=(1,))
            weights = F.softmax(scores, F.Cast(per_row, dtype="int32"), axis=-1, use_length=True)
        weights = _mask(F, weights, query_length)
        if self._dropout:
            weights = F.Dropout(weights, p=self._dropout)
        return F.batch_dot(weights, value), weights


class MultiHeadAttention(HybridBlock):
    """Multi-head attention with valid lengths: query, key and value projected to `units` (num_heads heads of
    units // num_heads), DotProductAttention per head, heads concatenated and projected to `units`.

    forward(query, key=None, value=None, key_length=None, query_length=None) -> (out, weights): query (B, Lq,
    q_units), key (B, Lk, k_units) (default: query, self-attention, and then key_length defaults to
    query_length), value (B, Lk, v_units) (default: key); out (B, Lq, units), weights (B, num_heads, Lq, Lk).
    """

    def __init__(self, units, num_heads, use_bias=True, scaled=True, dropout=0.0, weight_initializer=None,
                 bias_initializer="zeros", prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        if num_heads < 1 or units % num_heads:
            raise ValueError(f"MultiHeadAttention: units ({units}) must be a positive multiple of num_heads "
                             f"({num_heads})")
        self._units = units
        self._num_heads = num_heads
        dense = {"flatten": False, "use_bias": use_bias, "weight_initializer": weight_initializer,
                 "bias_initializer": bias_initializer}
        with self.name_scope():
            self.proj_query = nn.Dense(units, prefix="query_", **dense)
            self.proj_key = nn.Dense(units, prefix="key_", **dense)
            self.proj_value = nn.Dense(units, prefix="value_", **dense)
            self.attention = DotProductAttention(scaled=scaled, dropout=dropout)
            self.proj_out = nn.Dense(units, prefix="out_", **dense)

    def _split_heads(self, F, x):
        """(B, L, units) -> (B * heads, L, units / heads), batch-major (row b * heads + h)."""
        x = F.reshape(x, shape=(0, 0, self._num_heads, -1))
        return F.reshape(F.transpose(x, axes=(0, 2, 1, 3)), shape=(-3, -2))

    def _heads_length(self, F, length):
        return None if length is None else F.repeat(length, repeats=self._num_heads, axis=0)

    def hybrid_forward(self, F, query, key=None, value=None, key_length=None, query_length=None):
        if key is None:
            key = query
            key_length = query_length if key_length is None else key_length
        if value is None:
            value = key
        q = self.proj_query(_mask(F, query, query_length))
        k = self.proj_key(_mask(F, key, key_length))
        v = self.proj_value(_mask(F, value, key_length))
        context, weights = self.attention(self._split_heads(F, q), self._split_heads(F, k), self._split_heads(F, v),
                                          self._heads_length(F, key_length), self._heads_length(F, query_length))
        context = F.reshape(context, shape=(-4, -1, self._num_heads, -2))        # B, heads, Lq, d
        context = F.reshape(F.transpose(context, axes=(0, 2, 1, 3)), shape=(0, 0, -1))
        out = _mask(F, self.proj_out(context), query_length)
        return out, F.reshape(weights, shape=(-4, -1, self._num_heads, -2))

    def __repr__(self):
        return f"{type(self).__name__}(units={self._units}, num_heads={self._num_heads})"
