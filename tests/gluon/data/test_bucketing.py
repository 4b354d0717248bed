"""FixedBucketSampler properties (last_batch keep / discard / rollover, bounds, shuffling) and Pad(bucket_keys=...):
every padded batch has its bucket's length, so a loader yields one shape per bucket."""
import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixnet.base import MXNetError
from mixnet.gluon.data import DataLoader, FixedBucketSampler, SimpleDataset
from mixnet.gluon.data.batchify import Pad, Stack, Tuple
from mixnet.gluon.data.sampler import BatchSampler, RandomSampler, padding_fraction

lengths_st = st.lists(st.integers(1, 120), min_size=1, max_size=150)
config_st = st.fixed_dictionaries({
    "batch_size": st.integers(1, 9), "num_buckets": st.integers(1, 8), "shuffle": st.booleans(),
    "ratio": st.sampled_from([0, 0.5, 1.0]), "bucket_scheme": st.sampled_from(["exp", "linear", "const"])})


def bucket_of(sampler, lengths, batch):
    """The index of the one bucket that holds every sample of `batch` (the smallest key >= each length)."""
    keys = sampler.bucket_keys
    found = {min(k for k, key in enumerate(keys) if lengths[i] <= key) for i in batch}
    assert len(found) == 1, f"batch {batch} mixes buckets {found}"
    return found.pop()


@settings(max_examples=60, deadline=None)
@given(lengths_st, config_st, st.integers(0, 2**31 - 1))
def test_keep_yields_each_example_once_per_epoch_within_bounds(lengths, config, seed):
    np.random.seed(seed)
    s = FixedBucketSampler(lengths, **config)
    sizes = s.bucket_batch_sizes
    for _ in range(2):
        batches = list(s)
        assert len(batches) == len(s)
        assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
        per_bucket = collections.Counter()
        for batch in batches:
            b = bucket_of(s, lengths, batch)
            assert 1 <= len(batch) <= sizes[b]
            per_bucket[b] += len(batch) < sizes[b]
        assert all(v <= 1 for v in per_bucket.values())    # at most one short batch per bucket
    assert s.bucket_keys == sorted(s.bucket_keys) and s.bucket_keys[-1] == max(lengths)


@settings(max_examples=60, deadline=None)
@given(lengths_st, config_st, st.integers(0, 2**31 - 1))
def test_discard_drops_only_each_buckets_remainder(lengths, config, seed):
    np.random.seed(seed)
    s = FixedBucketSampler(lengths, last_batch="discard", **config)
    keep = FixedBucketSampler(lengths, **config)
    batches = list(s)
    assert len(batches) == len(s)
    seen = [i for b in batches for i in b]
    assert len(seen) == len(set(seen))
    dropped = collections.Counter()
    for i in set(range(len(lengths))) - set(seen):
        dropped[min(k for k, key in enumerate(keep.bucket_keys) if lengths[i] <= key)] += 1
    for batch in batches:
        assert len(batch) == s.bucket_batch_sizes[bucket_of(s, lengths, batch)]
    for b, ids in enumerate(keep._bucket_sample_ids):
        assert dropped[b] == len(ids) % s.bucket_batch_sizes[b]


@settings(max_examples=60, deadline=None)
@given(lengths_st, config_st, st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_rollover_loses_no_example_across_epochs(lengths, config, epochs, seed):
    np.random.seed(seed)
    s = FixedBucketSampler(lengths, last_batch="rollover", **config)
    yielded = collections.Counter()
    for _ in range(epochs):
        expected = len(s)
        batches = list(s)
        assert len(batches) == expected
        for batch in batches:
            assert len(batch) == s.bucket_batch_sizes[bucket_of(s, lengths, batch)]   # only full batches
            yielded.update(batch)
    carried = collections.Counter(i for rest in s._carry for i in rest)
    total = yielded + carried
    assert all(total[i] == epochs for i in range(len(lengths))) and len(total) == len(lengths)
    for rest, size in zip(s._carry, s.bucket_batch_sizes):
        assert len(rest) < size


@settings(max_examples=40, deadline=None)
@given(lengths_st, st.integers(1, 8), st.integers(1, 6), st.booleans())
def test_padded_batches_have_their_buckets_length(lengths, batch_size, num_buckets, shuffle):
    s = FixedBucketSampler(lengths, batch_size, num_buckets=num_buckets, shuffle=shuffle)
    data = SimpleDataset([(np.full(n, 7, dtype=np.int32), i) for i, n in enumerate(lengths)])
    loader = DataLoader(data, batch_sampler=s,
                        batchify_fn=Tuple(Pad(pad_val=0, ret_length=True, bucket_keys=s.bucket_keys), Stack()))
    shapes = set()
    for (tokens, valid), ids in loader:
        batch = ids.asnumpy().tolist()
        key = s.bucket_keys[bucket_of(s, lengths, batch)]
        assert tokens.shape == (len(batch), key)
        n = np.asarray(lengths)[batch]
        assert valid.dtype == np.int32
        np.testing.assert_array_equal(valid.asnumpy(), n)
        t = tokens.asnumpy()
        np.testing.assert_array_equal(t != 0, np.arange(key)[None, :] < valid.asnumpy()[:, None])
        shapes.add(tokens.shape[1])
    assert shapes <= set(s.bucket_keys)


def test_given_bucket_keys_and_shuffling_across_buckets():
    lengths = [2, 3, 9, 4, 8, 1, 10, 7] * 4
    s = FixedBucketSampler(lengths, batch_size=4, bucket_keys=[5, 10], shuffle=True)
    assert s.bucket_keys == [5, 10]
    np.random.seed(3)
    orders = {tuple(bucket_of(s, lengths, b) for b in s) for _ in range(10)}
    assert len(orders) > 1                                   # the order of batches across buckets changes
    contents = {tuple(tuple(b) for b in s) for _ in range(10)}
    assert len(contents) > 1
    with pytest.raises(ValueError, match="last_batch"):
        FixedBucketSampler(lengths, 4, last_batch="drop")


def test_padding_fraction():
    lengths = [1, 2, 3, 4, 10]
    s = FixedBucketSampler(lengths, batch_size=2, bucket_keys=[4, 10])
    assert s.padding_fraction() == pytest.approx((3 + 2 + 1 + 0 + 0) / (4 * 4 + 10))
    assert s.padding_fraction("longest") == pytest.approx(1 - 20 / 50)
    assert "padding=" in s.stats()
    assert padding_fraction(lengths, [[0, 4], [1, 2, 3]]) == pytest.approx(1 - 20 / (20 + 12))
    assert padding_fraction(lengths, list(s), s.bucket_keys) == pytest.approx(s.padding_fraction())
    random_batches = list(BatchSampler(RandomSampler(len(lengths)), 2))
    assert 0 <= padding_fraction(lengths, random_batches) < 1
    with pytest.raises(ValueError, match="pad_to"):
        s.padding_fraction("batch")


def test_pad_bucket_keys_errors():
    assert Pad(bucket_keys=[4, 8])([[1], [1, 2, 3, 4, 5]]).shape == (2, 8)
    assert Pad(bucket_keys=[8, 4])([[1, 2]]).shape == (1, 4)
    with pytest.raises(MXNetError, match="largest bucket key 8"):
        Pad(bucket_keys=[4, 8])([[1] * 9])
    with pytest.raises(ValueError, match="not both"):
        Pad(round_to=4, bucket_keys=[4])
    with pytest.raises(ValueError, match="this field's keys"):
        Pad(bucket_keys=[(4, 5)])
