"""Datasets and samplers (expected values checked against MXNet 1.9.1 where MXNet has the feature)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.gluon.data import (ArrayDataset, BatchSampler, FilterSampler, FixedBucketSampler, RandomSampler,
                               SequentialSampler, SimpleDataset, RecordFileDataset)


def test_array_dataset_items_like_mxnet():
    X = np.arange(20).reshape(10, 2).astype("float32")
    y = np.arange(10)
    ds = ArrayDataset(X, y)
    assert len(ds) == 10
    data, label = ds[3]
    # MXNet 1.9.1: (numpy row, numpy int64 scalar)
    assert isinstance(data, np.ndarray) and data.tolist() == [6.0, 7.0]
    assert isinstance(label, np.int64) and label == 3
    # a single array gives the element itself, not a 1-tuple
    assert ArrayDataset(X)[0].tolist() == [0.0, 1.0]
    # a 2-D NDArray yields NDArray rows; a 1-D NDArray becomes numpy (MXNet converts it)
    nd_ds = ArrayDataset(mx.nd.array(X), mx.nd.array(y))
    assert isinstance(nd_ds[1][0], mx.nd.NDArray) and nd_ds[1][0].asnumpy().tolist() == [2.0, 3.0]
    assert isinstance(nd_ds[1][1], np.float32)
    assert ArrayDataset([1, 2, 3], ["a", "b", "c"])[2] == (3, "c")


def test_array_dataset_length_mismatch_is_clear():
    with pytest.raises(MXNetError, match="array 0 has length 10 while array 1 has 5"):
        ArrayDataset(np.zeros((10, 2)), np.zeros(5))
    with pytest.raises(MXNetError, match="at least one"):
        ArrayDataset()


def test_dataset_helpers_like_mxnet():
    d = SimpleDataset(list(range(10)))
    # MXNet 1.9.1: shard(3, i) -> [0..3], [4..6], [7..9]
    assert [list(d.shard(3, i)) for i in range(3)] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    with pytest.raises(ValueError):
        d.shard(3, 3)
    assert list(d.take(3)) == [0, 1, 2]
    assert list(d.take(None)) == list(range(10))
    assert list(d.take(20)) == list(range(10))
    assert list(d.filter(lambda x: x % 2)) == [1, 3, 5, 7, 9]
    assert list(d.sample(SequentialSampler(3))) == [0, 1, 2]
    assert list(d.sample([9, 0])) == [9, 0]

    calls = []

    def double(x):
        calls.append(x)
        return 2 * x
    lazy = d.transform(double)
    assert calls == [] and lazy[4] == 8 and calls == [4]
    eager = d.transform(double, lazy=False)
    assert isinstance(eager, SimpleDataset) and list(eager) == [2 * i for i in range(10)]

    pairs = ArrayDataset(np.arange(20).reshape(10, 2).astype("float32"), np.arange(10))
    first = pairs.transform_first(lambda x: x * 2)
    assert first[1][0].tolist() == [4.0, 6.0] and first[1][1] == 1
    # a tuple sample is passed as separate arguments
    assert pairs.transform(lambda x, y: (x, y, 1))[1][2] == 1
    assert SimpleDataset([1, 2]).transform_first(lambda x: -x)[1] == -2


def test_samplers_like_mxnet():
    assert list(SequentialSampler(5, 2)) == [2, 3, 4, 5, 6]
    assert sorted(RandomSampler(7)) == list(range(7)) and len(RandomSampler(7)) == 7
    np.random.seed(0)
    # MXNet 1.9.1 after np.random.seed(0): list(RandomSampler(8)) == [6, 2, 1, 7, 3, 0, 5, 4]
    assert list(RandomSampler(8)) == [6, 2, 1, 7, 3, 0, 5, 4]
    assert list(FilterSampler(lambda x: x > 2, SimpleDataset([1, 5, 2, 7]))) == [1, 3]

    seq = SequentialSampler(10)
    assert list(BatchSampler(seq, 3, "keep")) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(seq, 3, "discard")) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(seq, 3, "keep")) == 4 and len(BatchSampler(seq, 3, "discard")) == 3
    roll = BatchSampler(seq, 3, "rollover")
    # MXNet 1.9.1: lengths 3, 3, 4 and the leftover index carried into the next pass
    assert len(roll) == 3 and list(roll) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(roll) == 3 and list(roll) == [[9, 0, 1], [2, 3, 4], [5, 6, 7]]
    assert len(roll) == 4 and list(roll) == [[8, 9, 0], [1, 2, 3], [4, 5, 6], [7, 8, 9]]
    with pytest.raises(ValueError, match="last_batch must be one of"):
        BatchSampler(seq, 3, "foo")


def _padding_fraction(batches, lengths):
    padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    return 1 - sum(lengths) / padded


def test_fixed_bucket_sampler_covers_every_index_and_pads_less():
    rng = np.random.RandomState(0)
    lengths = np.clip(rng.lognormal(3.0, 0.9, size=600).astype(int), 1, 400).tolist()   # skewed lengths
    sampler = FixedBucketSampler(lengths, batch_size=16, num_buckets=8, shuffle=True)
    for _ in range(2):
        batches = list(sampler)
        assert len(batches) == len(sampler)
        flat = sorted(i for b in batches for i in b)
        assert flat == list(range(len(lengths)))            # every index exactly once per epoch
        assert max(len(b) for b in batches) <= 16
    keys = sampler.bucket_keys
    assert keys == sorted(keys) and keys[-1] == max(lengths)
    widths = np.diff([min(lengths)] + keys)
    assert widths[-1] > widths[0]                           # logarithmic: wider buckets for longer sequences
    random_batches = list(BatchSampler(RandomSampler(len(lengths)), 16))
    bucketed, shuffled = _padding_fraction(batches, lengths), _padding_fraction(random_batches, lengths)
    assert bucketed < shuffled / 2, (bucketed, shuffled)
    assert "batch_num" in sampler.stats()


def test_fixed_bucket_sampler_options():
    lengths = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 3
    s = FixedBucketSampler(lengths, batch_size=4, bucket_keys=[5, 10])
    assert s.bucket_keys == [5, 10]
    batches = list(s)
    assert batches[0] == [0, 1, 2, 3]                       # no shuffle: bucket order, sample order
    for b in batches:
        assert len({lengths[i] <= 5 for i in b}) == 1       # never mixes buckets
    ratio = FixedBucketSampler(lengths, batch_size=2, bucket_keys=[5, 10], ratio=1.0)
    assert ratio.bucket_batch_sizes == [4, 2]               # short bucket: max_key / key * ratio * batch
    avg = FixedBucketSampler(lengths, batch_size=24, bucket_keys=[5, 10], use_average_length=True)
    assert avg.bucket_batch_sizes == [8, 3]                 # token budget / average length (3 and 8)
    pairs = [(n, n + 1) for n in lengths]
    tup = FixedBucketSampler(pairs, batch_size=4, num_buckets=3)
    assert sorted(i for b in tup for i in b) == list(range(len(pairs)))
    assert all(isinstance(k, tuple) for k in tup.bucket_keys)
    with pytest.raises(ValueError, match="longer than the largest bucket"):
        FixedBucketSampler([3, 20], batch_size=2, bucket_keys=[5, 10])


def test_record_file_dataset(tmp_path):
    from mixnet import recordio
    rec = str(tmp_path / "d.rec")
    writer = recordio.MXIndexedRecordIO(str(tmp_path / "d.idx"), rec, "w")
    for i in range(5):
        writer.write_idx(i, b"record %d" % i)
    writer.close()
    ds = RecordFileDataset(rec)
    assert len(ds) == 5 and ds[3] == b"record 3" and ds[0] == b"record 0"
