"""mx.io: NDArrayIter, DataBatch, DataDesc (expected values from MXNet 1.9.1)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import io
from mixnet.base import MXNetError

X = np.arange(20).reshape(10, 2)
Y = np.arange(10)


def _epoch(it):
    out = [(b.data[0].asnumpy()[:, 0].tolist(), b.label[0].asnumpy().tolist(), b.pad) for b in it]
    it.reset()
    return out


def test_pad_like_mxnet():
    it = io.NDArrayIter(X, Y, batch_size=4)
    assert [(d.name, d.shape, d.dtype) for d in it.provide_data] == [("data", (4, 2), np.float32)]
    assert [(d.name, d.shape) for d in it.provide_label] == [("softmax_label", (4,))]
    expected = [([0, 2, 4, 6], [0, 1, 2, 3], 0), ([8, 10, 12, 14], [4, 5, 6, 7], 0),
                ([16, 18, 0, 2], [8, 9, 0, 1], 2)]
    assert _epoch(it) == expected and _epoch(it) == expected
    batch = io.NDArrayIter(X, Y, batch_size=4).next()
    assert batch.data[0].dtype == np.float32 and batch.label[0].dtype == np.float32   # numpy -> float32
    assert batch.index is None


def test_discard_and_roll_over_like_mxnet():
    it = io.NDArrayIter(X, Y, batch_size=4, last_batch_handle="discard")
    assert _epoch(it) == [([0, 2, 4, 6], [0, 1, 2, 3], 0), ([8, 10, 12, 14], [4, 5, 6, 7], 0)]
    assert it.num_data == 10
    it = io.NDArrayIter(X, Y, batch_size=4, last_batch_handle="roll_over")
    assert _epoch(it) == [([0, 2, 4, 6], [0, 1, 2, 3], 0), ([8, 10, 12, 14], [4, 5, 6, 7], 0)]
    # MXNet 1.9.1: the 2 leftover rows open the next epoch (pad reports 2), then the epoch after is whole again
    assert _epoch(it) == [([16, 18, 0, 2], [8, 9, 0, 1], 2), ([4, 6, 8, 10], [2, 3, 4, 5], 0),
                          ([12, 14, 16, 18], [6, 7, 8, 9], 0)]
    assert _epoch(it) == [([0, 2, 4, 6], [0, 1, 2, 3], 0), ([8, 10, 12, 14], [4, 5, 6, 7], 0)]
    assert list(io.NDArrayIter(X, Y, batch_size=20, last_batch_handle="discard")) == []


def test_shuffle_seeded_like_mxnet():
    np.random.seed(3)
    it = io.NDArrayIter(np.arange(10), np.arange(10), batch_size=4, shuffle=True, last_batch_handle="roll_over")
    # MXNet 1.9.1 first epoch after np.random.seed(3)
    assert [b.data[0].asnumpy().tolist() for b in it] == [[5, 4, 1, 2], [9, 6, 7, 0]]
    it.reset()
    second = [b.data[0].asnumpy().tolist() for b in it]
    assert second[0][:2] == [3, 8]                         # the leftover rows
    assert sorted(sum(second, [])[2:]) == list(range(10))   # then a full (reshuffled) epoch


def test_names_dicts_dtypes_and_iteration_protocol():
    it = io.NDArrayIter({"b": X * 2, "a": X}, None, batch_size=3)
    assert [d.name for d in it.provide_data] == ["a", "b"] and it.provide_label == []
    batch = it.next()
    assert len(batch.data) == 2 and batch.label == []
    it = io.NDArrayIter([X, X], [Y], batch_size=4)
    assert [d.name for d in it.provide_data] == ["_0_data", "_1_data"]
    it = io.NDArrayIter(X, Y, batch_size=3, data_name="x", label_name="lab")
    assert it.provide_data[0].name == "x" and it.provide_label[0].name == "lab"
    it = io.NDArrayIter(mx.nd.array(X, dtype="int32"), batch_size=4)
    assert it.provide_data[0].dtype == np.int32 and it.next().data[0].dtype == np.int32
    it = io.NDArrayIter(X, Y, batch_size=4)
    assert it.iter_next() and it.getdata()[0].shape == (4, 2) and it.getpad() == 0 and it.getindex() is None
    assert it.getlabel()[0].asnumpy().tolist() == [0, 1, 2, 3]
    big = io.NDArrayIter(X, Y, batch_size=25).next()           # mixnet wraps around fully (MXNet: 20 rows)
    assert big.data[0].shape == (25, 2) and big.pad == 15
    with pytest.raises(MXNetError, match="fewer than"):
        io.NDArrayIter(X, Y[:5], batch_size=2)
    with pytest.raises(ValueError):
        io.NDArrayIter(X, Y, last_batch_handle="keep")


def test_data_desc_and_batch():
    d = io.DataDesc("data", (2, 3))
    assert d == ("data", (2, 3)) and d.dtype == np.float32 and d.layout == "NCHW"
    assert repr(d) == "DataDesc[data,(2, 3),<class 'numpy.float32'>,NCHW]"     # MXNet 1.9.1's repr
    assert io.DataDesc.get_batch_axis("NTC") == 0 and io.DataDesc.get_batch_axis("TNC") == 1
    assert io.DataDesc.get_batch_axis(None) == 0
    descs = io.DataDesc.get_list([("a", (1,)), ("b", (2,))], [("a", np.int32), ("b", np.float16)])
    assert [x.dtype for x in descs] == [np.int32, np.float16]
    b = io.DataBatch([mx.nd.zeros((2, 3))], [mx.nd.zeros((2,))], pad=1)
    assert str(b) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]"
    with pytest.raises(MXNetError):
        io.DataBatch(mx.nd.zeros((2, 3)))


def test_ndarrayiter_longer_labels_give_their_first_rows():
    # MXNet: the first data array sets the length; MXNet code pairs data[10:] with the whole label array
    data, label = mx.nd.arange(10).reshape((5, 2)), mx.nd.arange(8)
    batches = list(mx.io.NDArrayIter(data, label, batch_size=5))
    assert len(batches) == 1
    np.testing.assert_array_equal(batches[0].label[0].asnumpy(), [0, 1, 2, 3, 4])
    with pytest.raises(mx.MXNetError, match="fewer than"):
        mx.io.NDArrayIter(data, mx.nd.arange(4), batch_size=5)
