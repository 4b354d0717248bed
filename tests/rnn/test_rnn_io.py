"""mx.rnn.BucketSentenceIter and the rnn checkpoints (fused weights stored unpacked)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


def test_bucket_sentence_iter_batches_labels_and_layouts():
    sentences = [[1, 2, 3], [4, 5], [6, 7, 8], [9], [1, 2, 3, 4, 5, 6, 7]]
    with pytest.warns(UserWarning, match=r"discarded 1 sentences longer than the largest bucket \(3\)"):
        it = mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[2, 3], invalid_label=0)
    assert it.buckets == [2, 3] and it.default_bucket_key == 3
    assert it.provide_data[0].shape == (2, 3) and it.provide_label[0].name == "softmax_label"
    batches = list(it)
    assert sorted(b.bucket_key for b in batches) == [2, 3]     # the 7-token sentence is discarded
    for b in batches:
        data, label = b.data[0].asnumpy(), b.label[0].asnumpy()
        assert data.shape == (2, b.bucket_key) and b.provide_data[0].shape == data.shape
        np.testing.assert_array_equal(label[:, :-1], data[:, 1:])
        assert (label[:, -1] == 0).all()
    it.reset()
    assert len(list(it)) == 2
    with pytest.warns(UserWarning, match="discarded 1 sentences"):
        tn = mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[3], layout="TN")
    assert tn.provide_data[0].shape == (3, 2) and next(tn).data[0].shape == (3, 2)
    auto = mx.rnn.BucketSentenceIter([[1, 2]] * 3 + [[1]], batch_size=2)
    assert auto.buckets == [2]
    with pytest.raises(MXNetError, match="layout"):
        mx.rnn.BucketSentenceIter(sentences, batch_size=2, buckets=[3], layout="NCT")


def test_rnn_checkpoint_stores_fused_weights_unpacked(tmp_path):
    cell = mx.rnn.FusedRNNCell(3, num_layers=1, mode="gru", prefix="g_")
    out, _ = cell.unroll(2, mx.sym.var("data"), layout="TNC", merge_outputs=True)
    size = out.infer_shape(data=(2, 1, 4))[0][1][0]
    arg = {"g_parameters": mx.nd.arange(size)}
    prefix = str(tmp_path / "m")
    mx.rnn.do_rnn_checkpoint(cell, prefix, period=2)(1, out, arg, {})
    stored = mx.nd.load(prefix + "-0002.params")
    assert "arg:g_l0_i2h_r_weight" in stored and "arg:g_parameters" not in stored
    sym, loaded, aux = mx.rnn.load_rnn_checkpoint([cell], prefix, 2)
    np.testing.assert_array_equal(loaded["g_parameters"].asnumpy(), arg["g_parameters"].asnumpy())
    assert sym.list_arguments() == out.list_arguments() and aux == {}
