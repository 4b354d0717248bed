"""Token counting (MXNet 1.x's mx.contrib.text.utils)."""
import collections
import re

__all__ = ["count_tokens_from_str"]


def count_tokens_from_str(source_str, token_delim=" ", seq_delim="\n", to_lower=False, counter_to_update=None):
    """A collections.Counter of the tokens of `source_str`, split at `token_delim` and `seq_delim` (regular
    expressions, as in MXNet); empty tokens are skipped. With `counter_to_update`, that counter is updated and
    returned."""
    tokens = filter(None, re.split(token_delim + "|" + seq_delim, source_str))
    if to_lower:
        tokens = [t.lower() for t in tokens]
    if counter_to_update is None:
        return collections.Counter(tokens)
    counter_to_update.update(tokens)
    return counter_to_update
