"""DataLoader: batching, last_batch modes, shuffling, workers, errors (expected values from MXNet 1.9.1)."""
import time

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.gluon.data import (ArrayDataset, BatchSampler, DataLoader, SequentialSampler, SimpleDataset,
                               default_batchify_fn)

X = np.arange(20).reshape(10, 2).astype("float32")
Y = np.arange(10)


def _labels(loader):
    return [b[1].asnumpy().tolist() for b in loader]


def test_last_batch_modes_like_mxnet():
    ds = ArrayDataset(X, Y)
    keep = DataLoader(ds, batch_size=4)
    batches = list(keep)
    assert len(keep) == 3
    # MXNet 1.9.1: data float32 (4, 2), labels int64 (from numpy int64), last batch of 2
    assert [b[0].shape for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert batches[0][0].dtype == np.float32 and batches[0][1].dtype == np.int64
    assert isinstance(batches[0], list)
    assert _labels(keep) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    discard = DataLoader(ds, batch_size=4, last_batch="discard")
    assert len(discard) == 2 and _labels(discard) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    roll = DataLoader(ds, batch_size=4, last_batch="rollover")
    assert len(roll) == 2 and _labels(roll) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # MXNet 1.9.1, second epoch: [[8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]
    assert _labels(roll) == [[8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]


def test_shuffle_is_seeded_by_numpy_like_mxnet():
    ds = SimpleDataset(list(range(10)))
    np.random.seed(0)
    got = [b.asnumpy().tolist() for b in DataLoader(ds, batch_size=4, shuffle=True, last_batch="rollover")]
    # MXNet 1.9.1 after np.random.seed(0)
    assert got == [[2, 8, 4, 9], [1, 6, 7, 3]]
    np.random.seed(1)
    a = [b.asnumpy().tolist() for b in DataLoader(ds, batch_size=10, shuffle=True)]
    np.random.seed(1)
    b = [b.asnumpy().tolist() for b in DataLoader(ds, batch_size=10, shuffle=True)]
    assert a == b and sorted(a[0]) == list(range(10))


def test_default_batchify_like_mxnet():
    # Python ints -> int64, Python floats -> float64, numpy keeps its dtype (MXNet 1.9.1)
    assert default_batchify_fn([1, 2, 3]).dtype == np.int64
    assert default_batchify_fn([1.5, 2.5]).dtype == np.float64
    assert default_batchify_fn([np.array([1, 2], dtype="int32")] * 2).dtype == np.int32
    nds = default_batchify_fn([mx.nd.array([1, 2]), mx.nd.array([3, 4])])
    assert nds.shape == (2, 2) and nds.dtype == np.float32
    # nested tuples are batched field by field, into lists
    nested = default_batchify_fn([((1, 2), 3), ((4, 5), 6)])
    assert isinstance(nested, list) and isinstance(nested[0], list)
    assert nested[0][0].asnumpy().tolist() == [1, 4] and nested[0][1].asnumpy().tolist() == [2, 5]
    assert nested[1].asnumpy().tolist() == [3, 6]
    with pytest.raises(MXNetError, match="batchify_fn"):
        default_batchify_fn(["a", "b"])
    with pytest.raises(MXNetError, match="Pad"):
        default_batchify_fn([np.zeros(2), np.zeros(3)])


def test_argument_errors_like_mxnet():
    ds = SimpleDataset(list(range(10)))
    with pytest.raises(ValueError, match="batch_size must be specified"):
        DataLoader(ds)
    with pytest.raises(ValueError, match="shuffle must not be specified"):
        DataLoader(ds, batch_size=3, shuffle=True, sampler=SequentialSampler(10))
    with pytest.raises(ValueError, match="must not be specified if batch_sampler"):
        DataLoader(ds, batch_size=3, batch_sampler=BatchSampler(SequentialSampler(10), 3))
    loader = DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(10), 3))
    assert [b.asnumpy().tolist() for b in loader][-1] == [9]


def _square(x):
    return x * x


def test_worker_processes_and_threads_match_single_process():
    ds = ArrayDataset(X, Y).transform_first(_square)
    expected = [(d.asnumpy(), l.asnumpy()) for d, l in DataLoader(ds, batch_size=3)]
    for kwargs in ({"num_workers": 2}, {"num_workers": 2, "thread_pool": True}, {"num_workers": 2, "prefetch": 0}):
        loader = DataLoader(ds, batch_size=3, **kwargs)
        for _ in range(2):                                   # the pool is reused across epochs
            got = [(d.asnumpy(), l.asnumpy()) for d, l in loader]
            assert len(got) == len(expected)
            for (gd, gl), (ed, el) in zip(got, expected):
                np.testing.assert_array_equal(gd, ed)
                np.testing.assert_array_equal(gl, el)
                assert gl.dtype == el.dtype
        loader.close()


def _fail_on_5(x):
    if x == 5:
        raise ValueError("boom at five")
    return x


@pytest.mark.parametrize("thread_pool", [False, True])
def test_worker_exception_names_index_and_error(thread_pool):
    loader = DataLoader(SimpleDataset(list(range(10))).transform(_fail_on_5), batch_size=3, num_workers=2,
                        thread_pool=thread_pool)
    with pytest.raises(MXNetError) as info:
        list(loader)
    msg = str(info.value)
    assert "sample index 5" in msg and "ValueError" in msg and "boom at five" in msg
    assert "_fail_on_5" in msg                               # the worker's traceback is included
    assert isinstance(info.value, ValueError)                # `except ValueError` (MXNet behaviour) still works
    loader.close()


def _slow(x):
    time.sleep(1.5)
    return x


def test_worker_timeout_raises():
    loader = DataLoader(SimpleDataset([0, 1]).transform(_slow), batch_size=1, num_workers=1, timeout=0.2)
    start = time.time()
    with pytest.raises(MXNetError, match="timeout"):
        list(loader)
    assert time.time() - start < 1.4
    loader.close()


def test_custom_batchify_and_pin_memory():
    loader = DataLoader(SimpleDataset([[1, 2], [3]]), batch_size=2, batchify_fn=lambda samples: samples)
    assert list(loader) == [[[1, 2], [3]]]
    pinned = list(DataLoader(ArrayDataset(X, Y), batch_size=5, pin_memory=True))
    assert pinned[0][0].context == mx.cpu_pinned(0)


@pytest.mark.parametrize("thread_pool", [False, True])
def test_record_file_dataset_in_workers(tmp_path, thread_pool):
    # records read through worker processes / threads come back intact and in order (readers reopen the
    # file in a forked child and lock seek + read across threads)
    from mixnet import recordio
    from mixnet.gluon.data import RecordFileDataset
    rec = str(tmp_path / "d.rec")
    writer = recordio.MXIndexedRecordIO(str(tmp_path / "d.idx"), rec, "w")
    for i in range(40):
        writer.write_idx(i, b"%d" % i * (i % 7 + 1))
    writer.close()
    ds = RecordFileDataset(rec)
    assert ds[5] == b"555555"                                # the parent has read before forking
    loader = DataLoader(ds, batch_size=4, num_workers=3, thread_pool=thread_pool,
                        batchify_fn=list)
    got = [r for batch in loader for r in batch]
    assert got == [b"%d" % i * (i % 7 + 1) for i in range(40)]
    loader.close()
