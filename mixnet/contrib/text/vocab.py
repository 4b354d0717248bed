"""Token indexing (MXNet 1.x's mx.contrib.text.vocab.Vocabulary)."""
import collections

from ...base import MXNetError

__all__ = ["Vocabulary"]

UNKNOWN_IDX = 0


class Vocabulary:
    """Indices for the unknown token (0), then the reserved tokens, then the keys of `counter` by decreasing
    frequency (equal frequencies in sorted order), keeping at most `most_freq_count` of them and only those
    seen at least `min_freq` times."""

    def __init__(self, counter=None, most_freq_count=None, min_freq=1, unknown_token="<unk>",
                 reserved_tokens=None):
        if min_freq <= 0:
            raise MXNetError(f"Vocabulary: min_freq must be positive, got {min_freq!r}")
        if reserved_tokens is not None:
            if unknown_token in reserved_tokens:
                raise MXNetError(f"Vocabulary: reserved_tokens cannot contain the unknown token {unknown_token!r}")
            if len(set(reserved_tokens)) != len(reserved_tokens):
                raise MXNetError(f"Vocabulary: reserved_tokens has duplicates: {reserved_tokens!r}")
        self._unknown_token = unknown_token
        self._reserved_tokens = None if reserved_tokens is None else list(reserved_tokens)
        self._idx_to_token = [unknown_token] + list(reserved_tokens or [])
        self._token_to_idx = {token: idx for idx, token in enumerate(self._idx_to_token)}
        if counter is not None:
            self._index_counter_keys(counter, most_freq_count, min_freq)

    def _index_counter_keys(self, counter, most_freq_count, min_freq):
        if not isinstance(counter, collections.Counter):
            raise MXNetError(f"Vocabulary: counter must be a collections.Counter, got {type(counter).__name__}")
        special = set(self._idx_to_token)
        token_freqs = sorted(counter.items(), key=lambda x: x[0])
        token_freqs.sort(key=lambda x: x[1], reverse=True)
        cap = len(special) + (len(counter) if most_freq_count is None else most_freq_count)
        for token, freq in token_freqs:
            if freq < min_freq or len(self._idx_to_token) == cap:
                break
            if token not in special:
                self._idx_to_token.append(token)
                self._token_to_idx[token] = len(self._idx_to_token) - 1

    def __len__(self):
        return len(self._idx_to_token)

    @property
    def token_to_idx(self):
        return self._token_to_idx

    @property
    def idx_to_token(self):
        return self._idx_to_token

    @property
    def unknown_token(self):
        return self._unknown_token

    @property
    def reserved_tokens(self):
        return self._reserved_tokens

    def to_indices(self, tokens):
        """The index of a token (0 for unknown ones), or the list of indices of a list of tokens."""
        if not isinstance(tokens, list):
            return self._token_to_idx.get(tokens, UNKNOWN_IDX)
        return [self._token_to_idx.get(token, UNKNOWN_IDX) for token in tokens]

    def to_tokens(self, indices):
        """The token of an index, or the list of tokens of a list of indices."""
        single = not isinstance(indices, list)
        tokens = []
        for idx in [indices] if single else indices:
            if not isinstance(idx, int) or not 0 <= idx < len(self._idx_to_token):
                raise ValueError(f"Token index {idx!r} in the provided `indices` is invalid.")
            tokens.append(self._idx_to_token[idx])
        return tokens[0] if single else tokens
