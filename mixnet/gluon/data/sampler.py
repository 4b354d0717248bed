"""Samplers: iterables of dataset indices (or of lists of indices, for batch samplers).

Random samplers draw from numpy's global RNG (``np.random.seed`` makes them repeatable), as MXNet's do.
"""
import math
import numbers

import numpy as np

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "BatchSampler", "FilterSampler",
           "FixedBucketSampler", "BucketSampler", "padding_fraction"]


class Sampler:
    """Base class: ``__iter__`` yields indices, ``__len__`` says how many."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__()")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __len__()")


class SequentialSampler(Sampler):
    """start, start + 1, ..., start + length - 1."""

    def __init__(self, length, start=0):
        self._length = length
        self._start = start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """A random permutation of range(length), new at every pass."""

    def __init__(self, length):
        self._length = length

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of `dataset` for which fn(sample) is true."""

    def __init__(self, fn, dataset):
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size`.

    last_batch: 'keep' (a smaller last batch), 'discard' (drop it), 'rollover' (carry the leftover
    indices into the first batch of the next pass).
    """

    def __init__(self, sampler, batch_size, last_batch="keep"):
        if last_batch not in ("keep", "discard", "rollover"):
            raise ValueError("last_batch must be one of 'keep', 'discard', or 'rollover', but got "
                             f"{last_batch}")
        if not isinstance(batch_size, numbers.Integral) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        if self._last_batch == "keep":
            return (len(self._sampler) + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return len(self._sampler) // self._batch_size
        return (len(self._prev) + len(self._sampler)) // self._batch_size


# ------------------------------------------------------------------------------------------ length bucketing
def _bucket_keys(lengths, num_buckets, scheme):
    """Bucket upper bounds from the range of lengths (a 2-D array: samples x length dims)."""
    max_len = lengths.max(axis=0)
    min_len = lengths.min(axis=0)
    if callable(scheme):
        keys = scheme(max_len.tolist(), min_len.tolist(), num_buckets)
        return [tuple(k) if isinstance(k, (list, tuple)) else k for k in keys]
    columns = []
    for lo, hi in zip(min_len.tolist(), max_len.tolist()):
        if scheme in ("exp", "log"):
            lo = max(lo, 1)
            col = np.geomspace(lo, max(hi, lo), num_buckets + 1)[1:] if hi > lo else np.full(num_buckets, hi)
        elif scheme == "linear":
            col = np.linspace(lo, hi, num_buckets + 1)[1:]
        elif scheme == "const":
            width = max(int(math.ceil((hi - lo) / num_buckets)), 1)
            col = np.array([min(lo + width * (i + 1), hi) for i in range(num_buckets)], dtype=np.float64)
            col = np.maximum(col, lo)
        else:
            raise ValueError(f"bucket_scheme must be 'exp' (logarithmic widths), 'linear', 'const' or a callable, "
                             f"got {scheme!r}")
        col = np.ceil(col).astype(np.int64)
        col[-1] = hi
        columns.append(col.tolist())
    keys = list(zip(*columns))
    # Drop repeated keys (small length ranges), keeping the order.
    unique = []
    for k in keys:
        if not unique or k != unique[-1]:
            unique.append(k)
    return unique


class FixedBucketSampler(Sampler):
    """Batches of samples of similar length, so a batch needs little padding (GluonNLP's sampler).

    lengths: one length per sample (int), or one tuple of lengths per sample (e.g. source and target).
    batch_size: samples per batch in the bucket of the longest sequences; shorter buckets may get larger
    batches with `ratio`. num_buckets: how many buckets to make when bucket_keys is None. Bucket widths grow
    geometrically by default (`bucket_scheme='exp'`): short sequences get narrow buckets, long ones wide
    buckets, which keeps the padding fraction about even. bucket_keys: explicit bucket upper bounds instead.
    ratio: bucket k gets ``max(batch_size, int(max_key / key_k * ratio * batch_size))`` samples (0: all
    buckets use batch_size). shuffle: shuffle the samples within each bucket and the order of the batches
    across buckets at every pass (numpy's global RNG). use_average_length: batch_size is a budget of tokens: a
    bucket's batch size is ``max(1, batch_size // average length in the bucket)`` (ratio is then ignored).

    last_batch, per bucket: 'keep' (default, as MXNet/GluonNLP: a bucket's last batch may be smaller, and
    every sample appears exactly once per pass), 'discard' (drop each bucket's incomplete last batch; with
    shuffle, which samples are dropped changes every pass), 'rollover' (carry each bucket's incomplete
    remainder into the same bucket's first batch of the next pass, as BatchSampler's rollover does: no sample
    is lost, every batch is full).

    Pad each batch to its bucket's key, not to its longest sample, and a hybridized model sees one input shape
    per bucket, so it compiles once per bucket: ``batchify.Pad(ret_length=True, bucket_keys=s.bucket_keys)``.
    """

    def __init__(self, lengths, batch_size, num_buckets=10, bucket_keys=None, ratio=0, shuffle=False,
                 use_average_length=False, bucket_scheme="exp", last_batch="keep"):
        lengths = list(lengths)
        if not lengths:
            raise ValueError("FixedBucketSampler: lengths is empty")
        if last_batch not in ("keep", "discard", "rollover"):
            raise ValueError("FixedBucketSampler: last_batch must be one of 'keep', 'discard', or 'rollover', "
                             f"but got {last_batch!r}")
        self._single_element = isinstance(lengths[0], numbers.Integral)
        arr = np.asarray(lengths, dtype=np.int64)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2:
            raise ValueError("FixedBucketSampler: lengths must be ints or equal-size tuples of ints")
        if (arr < 0).any():
            raise ValueError("FixedBucketSampler: lengths must be non-negative")
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if ratio < 0:
            raise ValueError(f"ratio must be >= 0, got {ratio}")
        self._lengths = lengths
        self._arr = arr
        self._batch_size = batch_size
        self._ratio = ratio
        self._shuffle = shuffle
        self._use_average_length = use_average_length
        self._last_batch = last_batch

        if bucket_keys is None:
            if num_buckets is None:
                num_buckets = 10
            if num_buckets <= 0:
                raise ValueError(f"num_buckets must be a positive integer, got {num_buckets!r}")
            keys = _bucket_keys(arr, int(num_buckets), bucket_scheme)
        else:
            keys = [tuple(k) if isinstance(k, (list, tuple)) else (k,) for k in bucket_keys]
            keys = sorted(set(keys))
        key_arr = np.asarray([k if isinstance(k, tuple) else (k,) for k in keys], dtype=np.int64)
        if key_arr.shape[1] != arr.shape[1]:
            raise ValueError(f"bucket_keys have {key_arr.shape[1]} length dims, lengths have {arr.shape[1]}")
        # Each sample goes to the first bucket that holds it in every dimension.
        fits = (arr[:, None, :] <= key_arr[None, :, :]).all(axis=2)       # samples x buckets
        if not fits.any(axis=1).all():
            bad = int(np.flatnonzero(~fits.any(axis=1))[0])
            raise ValueError(f"FixedBucketSampler: sample {bad} (length {lengths[bad]}) is longer than the "
                             f"largest bucket key {keys[-1]}")
        assignment = fits.argmax(axis=1)
        sample_ids = [np.flatnonzero(assignment == b).tolist() for b in range(len(key_arr))]
        # Empty buckets are dropped.
        self._bucket_keys = [(int(k[0]) if self._single_element else tuple(int(v) for v in k))
                             for k, ids in zip(key_arr, sample_ids) if ids]
        self._bucket_sample_ids = [ids for ids in sample_ids if ids]
        key_arr = key_arr[[i for i, ids in enumerate(sample_ids) if ids]]
        self._key_arr = key_arr

        if use_average_length:
            self._bucket_batch_sizes = []
            for ids in self._bucket_sample_ids:
                avg = float(arr[ids].max(axis=1).mean())
                self._bucket_batch_sizes.append(max(int(batch_size / avg), 1) if avg > 0 else batch_size)
        else:
            scale = key_arr.sum(axis=1).astype(np.float64)
            top = scale.max()
            self._bucket_batch_sizes = [max(int(top / max(s, 1) * ratio * batch_size), batch_size) for s in scale]
        self._carry = [[] for _ in self._bucket_sample_ids]     # 'rollover': each bucket's leftover samples

    @property
    def bucket_keys(self):
        """The upper bound of each non-empty bucket, ascending (ints, or tuples for tuple lengths)."""
        return list(self._bucket_keys)

    @property
    def bucket_batch_sizes(self):
        return list(self._bucket_batch_sizes)

    @property
    def last_batch(self):
        return self._last_batch

    def _pass_plan(self):
        """This pass's batches (lists of sample ids) in yield order, and each bucket's leftover for the next."""
        batches, leftover = [], []
        for b, (ids, size) in enumerate(zip(self._bucket_sample_ids, self._bucket_batch_sizes)):
            ids = list(ids)
            if self._shuffle:
                np.random.shuffle(ids)
            ids = self._carry[b] + ids
            full = len(ids) - len(ids) % size
            batches.extend(ids[start:start + size] for start in range(0, full, size))
            rest = ids[full:]
            if rest and self._last_batch == "keep":
                batches.append(rest)
            leftover.append(rest if self._last_batch == "rollover" else [])
        if self._shuffle:
            order = np.random.permutation(len(batches))
            batches = [batches[i] for i in order]
        return batches, leftover

    def __iter__(self):
        batches, leftover = self._pass_plan()
        self._carry = [[] for _ in self._bucket_sample_ids]
        yield from batches
        self._carry = leftover

    def __len__(self):
        """Batches in the next pass (with 'rollover' it counts the samples carried over from the last one)."""
        total = 0
        for carry, ids, size in zip(self._carry, self._bucket_sample_ids, self._bucket_batch_sizes):
            n = len(carry) + len(ids)
            total += -(-n // size) if self._last_batch == "keep" else n // size
        return total

    def padding_fraction(self, pad_to="bucket"):
        """The fraction of the time steps of the padded batches that are padding, over every sample.

        pad_to='bucket': each batch padded to its bucket's key (``Pad(bucket_keys=...)``); 'longest': every
        batch padded to the longest sample (what one static input shape costs without bucketing). For tuple
        lengths the steps of all dimensions are counted."""
        if pad_to == "bucket":
            keys = np.concatenate([np.repeat(k[None, :], len(ids), axis=0)
                                   for k, ids in zip(self._key_arr, self._bucket_sample_ids)])
            used = np.concatenate([self._arr[ids] for ids in self._bucket_sample_ids])
        elif pad_to == "longest":
            used = self._arr
            keys = np.repeat(self._arr.max(axis=0)[None, :], len(self._arr), axis=0)
        else:
            raise ValueError(f"padding_fraction: pad_to must be 'bucket' or 'longest', got {pad_to!r}")
        total = int(keys.sum())
        return float(total - int(used.sum())) / total if total else 0.0

    def stats(self):
        """A text summary: bucket keys, how many samples each holds, their batch sizes, and the padding."""
        counts = [len(ids) for ids in self._bucket_sample_ids]
        return (f"FixedBucketSampler:\n"
                f"  sample_num={len(self._lengths)}, batch_num={len(self)}, last_batch={self._last_batch!r}\n"
                f"  key={self._bucket_keys}\n"
                f"  cnt={counts}\n"
                f"  batch_size={self._bucket_batch_sizes}\n"
                f"  padding={self.padding_fraction():.1%} of time steps padded to bucket keys "
                f"(without bucketing, padded to the longest: {self.padding_fraction('longest'):.1%})")

    def __repr__(self):
        return self.stats()


def padding_fraction(lengths, batches, bucket_keys=None):
    """The fraction of padded time steps when `batches` (lists of sample ids) of samples of `lengths` are each
    padded to their longest sample, or, given bucket_keys, to the smallest key that holds it (as
    ``batchify.Pad(bucket_keys=...)`` does). Compare samplers with it:
    ``padding_fraction(lengths, list(BatchSampler(RandomSampler(n), 32)))``."""
    lengths = np.asarray(lengths, dtype=np.int64)
    keys = None if bucket_keys is None else np.sort(np.asarray(bucket_keys, dtype=np.int64))
    padded = used = 0
    for batch in batches:
        longest = int(lengths[list(batch)].max())
        if keys is not None:
            k = int(np.searchsorted(keys, longest))
            if k == len(keys):
                raise ValueError(f"padding_fraction: a batch's longest sample ({longest}) is longer than the "
                                 f"largest bucket key {int(keys[-1])}")
            longest = int(keys[k])
        padded += longest * len(batch)
        used += int(lengths[list(batch)].sum())
    return float(padded - used) / padded if padded else 0.0


BucketSampler = FixedBucketSampler
