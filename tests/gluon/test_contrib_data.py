"""gluon.contrib.data: IntervalSampler and WikiText2/103 from local files, against MXNet 1.9.1
(tests/data/make_wikitext_reference.py)."""
import json
import os
import shutil
import zipfile

import numpy as np
import pytest

import mixnet as mx
from mixnet.gluon import contrib

HERE = os.path.join(os.path.dirname(__file__), "..", "data", "wikitext")
with open(os.path.join(HERE, "wikitext_mxnet.json")) as _f:
    REF = json.load(_f)


def test_interval_sampler_matches_mxnet():
    for key, expected in REF["interval"].items():
        n, k, rollover = key.split(",")
        sampler = contrib.data.IntervalSampler(int(n), int(k), rollover=rollover == "True")
        assert list(sampler) == expected and len(sampler) == int(n)
    with pytest.raises(mx.MXNetError, match="interval"):
        contrib.data.IntervalSampler(3, 4)


def test_wikitext2_matches_mxnet():
    train = contrib.data.text.WikiText2(root=HERE, segment="train", seq_len=7)
    valid = contrib.data.text.WikiText2(root=HERE, segment="validation", vocab=train.vocabulary, seq_len=3)
    assert len(train) == REF["train_len"]
    assert train.vocabulary.idx_to_token == REF["vocab"]
    assert [[a.asnumpy().tolist() for a in train[i]] for i in range(len(train))] == REF["train"]
    assert str(train[0][0].dtype) == REF["dtype"]
    assert [[a.asnumpy().tolist() for a in valid[i]] for i in range(len(valid))] == REF["valid"]
    assert sorted(map(list, train.frequencies.items())) == REF["frequencies"]


def test_wikitext_batches_through_a_dataloader():
    train = contrib.data.text.WikiText2(root=HERE, segment="train", seq_len=7)
    data, label = next(iter(mx.gluon.data.DataLoader(train, batch_size=4)))
    assert data.shape == (4, 7) and label.shape == (4, 7)
    np.testing.assert_array_equal(data.asnumpy()[:, 1:], label.asnumpy()[:, :-1])


def test_wikitext_unpacks_mxnet_archive(tmp_path):
    with zipfile.ZipFile(tmp_path / "wikitext-103-v1.zip", "w") as zf:
        zf.write(os.path.join(HERE, "wiki.train.tokens"), "wikitext-103/wiki.train.tokens")
    data = contrib.data.text.WikiText103(root=str(tmp_path), seq_len=7)
    assert len(data) == REF["train_len"] and (tmp_path / "wiki.train.tokens").is_file()


def test_wikitext_missing_file_is_a_clear_offline_error(tmp_path):
    shutil.copy(os.path.join(HERE, "wiki.train.tokens"), tmp_path)
    with pytest.raises(mx.MXNetError, match=r"wiki\.test\.tokens.*wikitext-2-v1\.zip.*does not download"):
        contrib.data.text.WikiText2(root=str(tmp_path), segment="test")
    with pytest.raises(mx.MXNetError, match="segment"):
        contrib.data.text.WikiText2(root=str(tmp_path), segment="dev")


def test_vocabulary_and_token_counting():
    counter = mx.contrib.text.utils.count_tokens_from_str(" Life is great ! \n life is good . \n", " ", "\n", True)
    assert counter == {"life": 2, "is": 2, "great": 1, "!": 1, "good": 1, ".": 1}
    vocab = mx.contrib.text.vocab.Vocabulary(counter, most_freq_count=3, reserved_tokens=["<pad>"])
    assert vocab.idx_to_token == ["<unk>", "<pad>", "is", "life", "!"]
    assert vocab.to_indices(["life", "zebra"]) == [3, 0] and vocab.to_tokens(2) == "is"
    with pytest.raises(mx.MXNetError, match="unknown token"):
        mx.contrib.text.vocab.Vocabulary(counter, reserved_tokens=["<unk>"])
