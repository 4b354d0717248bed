"""Sentence data for `mx.rnn` language models: `encode_sentences` (tokens -> integer codes, building a vocabulary)
and `BucketSentenceIter` (batches of same-length buckets, the label being the next token)."""
import bisect
import random
import warnings

import numpy as np

from .. import ndarray
from ..base import MXNetError
from ..io import DataBatch, DataDesc, DataIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key="\n", start_label=0,
                     unknown_token=None):
    """(codes, vocab): each sentence (a list of tokens) as a list of integer codes. Without `vocab` a new one is
    built ({invalid_key: invalid_label} plus each new token, numbered from start_label, skipping invalid_label).
    With `vocab`, a token not in it is an error unless `unknown_token` is given: then every such token is coded as
    `unknown_token`, which is added to the vocabulary the first time it is needed."""
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    idx = start_label
    result = []
    for sentence in sentences:
        coded = []
        for word in sentence:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise MXNetError(f"encode_sentences: unknown token {word!r} (not in the given vocab; "
                                     "pass unknown_token= to code such tokens)")
                if unknown_token:
                    word = unknown_token
                if word not in vocab:
                    if idx == invalid_label:
                        idx += 1
                    vocab[word] = idx
                    idx += 1
            coded.append(vocab[word])
        result.append(coded)
    return result, vocab


class BucketSentenceIter(DataIter):
    """Batches of encoded sentences for bucketing. Each sentence goes to the smallest bucket (length) that holds
    it, padded with invalid_label; longer ones are discarded (with a UserWarning; MXNet prints a line). Without
    `buckets`, every length that at least batch_size sentences have is a bucket. Labels are the data shifted by
    one step (the next token), invalid_label at the end. layout 'NT' gives (batch, length) batches, 'TN'
    (length, batch); each batch's bucket_key is its length."""

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1, data_name="data",
                 label_name="softmax_label", dtype="float32", layout="NT"):
        super().__init__(batch_size)
        if layout not in ("NT", "TN"):
            raise MXNetError(f"BucketSentenceIter: invalid layout {layout!r}: must be NT (batch major) or "
                             "TN (time major)")
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [length for length, n in enumerate(counts) if n >= batch_size]
        buckets = sorted(buckets)
        if not buckets:
            raise MXNetError("BucketSentenceIter: no bucket (no sentence length occurs batch_size times; "
                             "pass buckets=)")

        filled = [[] for _ in buckets]
        ndiscard = 0
        for sentence in sentences:
            b = bisect.bisect_left(buckets, len(sentence))
            if b == len(buckets):
                ndiscard += 1
                continue
            row = np.full((buckets[b],), invalid_label, dtype=dtype)
            row[:len(sentence)] = sentence
            filled[b].append(row)
        if ndiscard:
            warnings.warn(f"discarded {ndiscard} sentences longer than the largest bucket ({buckets[-1]})",
                          stacklevel=2)

        kept = [b for b, rows in enumerate(filled) if rows]
        self.buckets = [buckets[b] for b in kept]
        self.data = [np.asarray(filled[b], dtype=dtype) for b in kept]
        self.batch_size = batch_size
        self.data_name, self.label_name = data_name, label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.layout = layout
        self.major_axis = layout.find("N")
        self.default_bucket_key = max(self.buckets)
        shape = (batch_size, self.default_bucket_key)
        if self.major_axis == 1:
            shape = shape[::-1]
        self.provide_data = [DataDesc(name=data_name, shape=shape, layout=layout)]
        self.provide_label = [DataDesc(name=label_name, shape=shape, layout=layout)]
        # (bucket, first row) of every full batch
        self.idx = [(b, j) for b, rows in enumerate(self.data) for j in range(0, len(rows) - batch_size + 1,
                                                                              batch_size)]
        self.curr_idx = 0
        self.nddata, self.ndlabel = [], []
        self.reset()

    def reset(self):
        """Shuffles the batch order and each bucket's sentences, and starts over."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for rows in self.data:
            np.random.shuffle(rows)
        self.nddata, self.ndlabel = [], []
        for rows in self.data:
            label = np.empty_like(rows)
            label[:, :-1] = rows[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(rows, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self):
        """The next batch (a DataBatch with bucket_key and its own provide_data/provide_label)."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        b, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[b][j:j + self.batch_size]
        label = self.ndlabel[b][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[b],
                         provide_data=[DataDesc(name=self.data_name, shape=data.shape, layout=self.layout)],
                         provide_label=[DataDesc(name=self.label_name, shape=label.shape, layout=self.layout)])
