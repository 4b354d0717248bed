"""Pad / Stack / Tuple / List batchify helpers (GluonNLP semantics)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.gluon.data import DataLoader, FixedBucketSampler, SimpleDataset
from mixnet.gluon.data.batchify import List, Pad, Stack, Tuple


def test_stack():
    out = Stack()([np.array([1, 2], dtype="int32"), mx.nd.array([3, 4], dtype="int32")])
    assert out.dtype == np.int32 and out.asnumpy().tolist() == [[1, 2], [3, 4]]
    assert Stack(dtype="float32")([[1, 2], [3, 4]]).dtype == np.float32
    with pytest.raises(MXNetError, match="Pad"):
        Stack()([[1, 2], [3]])


def test_pad_axis0_with_lengths():
    padded, length = Pad(pad_val=-1, ret_length=True)([[1, 2, 3], [4], [5, 6]])
    assert padded.asnumpy().tolist() == [[1, 2, 3], [4, -1, -1], [5, 6, -1]]
    assert padded.dtype == np.int64                          # the samples' dtype (Python ints)
    assert length.dtype == np.int32 and length.asnumpy().tolist() == [3, 1, 2]


def test_pad_other_axis_dtype_round_to():
    a = np.ones((2, 3), dtype="float32")
    b = np.ones((2, 1), dtype="float32")
    out = Pad(axis=1, dtype="float16", round_to=4)([a, mx.nd.array(b)])
    assert out.shape == (2, 2, 4) and out.dtype == np.float16
    assert out.asnumpy()[1].tolist() == [[1, 0, 0, 0], [1, 0, 0, 0]]
    with pytest.raises(MXNetError, match="outside axis"):
        Pad(axis=1)([np.ones((2, 3)), np.ones((3, 3))])


def test_tuple_and_list_in_a_loader_with_buckets():
    rng = np.random.RandomState(0)
    seqs = [rng.randint(1, 9, size=n).tolist() for n in rng.randint(1, 30, size=40)]
    ds = SimpleDataset([(s, float(len(s))) for s in seqs])
    sampler = FixedBucketSampler([len(s) for s in seqs], batch_size=8, num_buckets=4)
    loader = DataLoader(ds, batch_sampler=sampler, batchify_fn=Tuple(Pad(ret_length=True), Stack("float32")))
    seen = 0
    for (tokens, valid), label in loader:
        assert tokens.shape[0] == valid.shape[0] == label.shape[0]
        assert tokens.shape[1] == valid.asnumpy().max()
        np.testing.assert_array_equal(valid.asnumpy(), label.asnumpy())
        seen += tokens.shape[0]
    assert seen == 40
    assert Tuple([List(), Stack()])([([1], 2), ([3, 4], 5)])[0] == [[1], [3, 4]]
    with pytest.raises(MXNetError, match="fields"):
        Tuple(Stack(), Stack())([(1, 2, 3)])
