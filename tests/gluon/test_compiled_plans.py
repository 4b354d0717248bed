"""HybridBlock.compiled_plans() and precompile(): one compiled signature per bucket shape when training over a
bucketed loader, precompiling makes training compile nothing and leaves parameters and running statistics as
they were."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon, nd
from mixnet.base import MXNetError
from mixnet.gluon import nn, rnn
from mixnet.gluon.data import DataLoader, FixedBucketSampler, SimpleDataset
from mixnet.gluon.data.batchify import Pad, Stack, Tuple


class Classifier(gluon.HybridBlock):
    """Embedding -> GRU/LSTM(use_sequence_length) -> last valid step -> BatchNorm -> Dense."""

    def __init__(self, cell=rnn.GRU, full_shapes=False):
        super().__init__()
        with self.name_scope():
            self.emb = nn.Embedding(12, 6)
            self.rnn = cell(8, layout="NTC", use_sequence_length=True, input_size=6 if full_shapes else 0)
            self.bn = nn.BatchNorm(in_channels=8 if full_shapes else 0)
            self.out = nn.Dense(3, in_units=8 if full_shapes else 0)

    def hybrid_forward(self, F, tokens, length):
        h = self.rnn(self.emb(tokens), sequence_length=length)
        h = F.SequenceLast(h, sequence_length=length, use_sequence_length=True, axis=1)
        return self.out(self.bn(h))


def bucketed_loader(n=48, batch_size=4, num_buckets=3, seed=0):
    rng = np.random.RandomState(seed)
    lengths = rng.randint(1, 25, size=n).tolist()
    data = SimpleDataset([(rng.randint(1, 12, size=k).astype("float32"), float(k % 3)) for k in lengths])
    sampler = FixedBucketSampler(lengths, batch_size, num_buckets=num_buckets, shuffle=True, last_batch="rollover")
    pad = Pad(axis=0, pad_val=0, ret_length=True, bucket_keys=sampler.bucket_keys)
    return DataLoader(data, batch_sampler=sampler, batchify_fn=Tuple(pad, Stack("float32"))), sampler


def train_epoch(net, loader, trainer):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    shapes = []
    for (tokens, length), label in loader:
        shapes.append((tokens.shape, tokens.dtype, length.shape, length.dtype))
        with autograd.record():
            loss = loss_fn(net(tokens, length), label)
        loss.backward()
        trainer.step(tokens.shape[0])
    return shapes


def snapshot(net):
    return {name: p.data().asnumpy().copy() for name, p in net.collect_params().items()}


@pytest.mark.parametrize("cell", [rnn.GRU, rnn.LSTM])
def test_one_compiled_signature_per_bucket_shape(cell):
    np.random.seed(1)
    mx.random.seed(1)
    net = Classifier(cell)
    net.initialize()
    net.hybridize()
    loader, sampler = bucketed_loader()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    calls = train_epoch(net, loader, trainer) + train_epoch(net, loader, trainer)
    shapes = set(calls)
    plans = net.compiled_plans()
    assert len({s[0] for s in shapes}) == len(shapes) == len(sampler.bucket_keys)     # rollover: full batches
    assert len(plans) == len(shapes)
    assert {r.shapes for r in plans} == {(s[0], s[2]) for s in shapes}
    assert all(r.train_mode and r.training == 1 and not r.inference and r.compiles == 1 for r in plans)
    assert sum(r.calls for r in plans) == len(calls)
    assert plans[0].reason == "first call"
    assert all(r.reason.startswith("new shapes or dtypes (input 0: (4, ") for r in plans[1:])


def test_precompile_then_training_compiles_nothing_and_changes_nothing():
    np.random.seed(2)
    mx.random.seed(2)
    net = Classifier(full_shapes=True)
    net.initialize()
    net.hybridize()
    loader, sampler = bucketed_loader(seed=2)
    before = snapshot(net)
    with autograd.record():                            # precompile inside a recording scope records nothing
        records = net.precompile([((4, k), (4,)) for k in sampler.bucket_keys], dtype=["float32", "int32"],
                                 train="both", progress=False)
        assert autograd.is_recording() and autograd.is_training()
    assert len(records) == 2 * len(sampler.bucket_keys)
    assert all(r.calls == 0 and r.compiles == 1 for r in records)
    assert {r.train_mode for r in records} == {True, False}
    after = snapshot(net)
    assert before.keys() == after.keys()
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=name)
    assert all((p.grad().asnumpy() == 0).all() for p in net.collect_params().values() if p.grad_req != "null")

    traced = dict(net._cached_graphs)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    train_epoch(net, loader, trainer)
    with autograd.predict_mode():
        for (tokens, length), _ in loader:
            net(tokens, length)
    assert net._cached_graphs.keys() == traced.keys()           # no new trace
    plans = net.compiled_plans()
    assert all(r.compiles == 1 for r in plans)                  # no new plan either
    assert all(r.calls > 0 for r in plans)


def test_precompile_with_deferred_shapes_leaves_running_statistics_alone():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(5), nn.BatchNorm(), nn.Dropout(0.5), nn.Dense(2))
    net.initialize()
    net.hybridize()
    with autograd.record():
        net.precompile([(3, 4), (6, 4)], progress=False)
    bn = net[1]
    np.testing.assert_array_equal(bn.running_mean.data().asnumpy(), np.zeros(5))
    np.testing.assert_array_equal(bn.running_var.data().asnumpy(), np.ones(5))
    assert net[0].weight.shape == (5, 4)
    n_graphs = len(net._cached_graphs)
    x = nd.random.uniform(shape=(6, 4))
    with autograd.record():
        y = net(x)
    y.backward()
    assert len(net._cached_graphs) == n_graphs == 2
    assert net.compiled_plans()[1].calls == 1


def test_compiled_plans_table_and_errors():
    net = nn.HybridSequential()
    net.add(nn.Dense(3, in_units=2))
    net.initialize()
    assert net.compiled_plans() == []
    with pytest.raises(MXNetError, match="hybridize"):
        net.precompile([(2, 2)])
    net.hybridize()
    net(nd.ones((2, 2)))
    with autograd.train_mode():
        net(nd.ones((2, 2)))
    net(nd.ones((5, 2)))
    plans = net.compiled_plans()
    assert [r.reason for r in plans] == ["first call", "new training mode (False -> True)",
                                         "new shapes or dtypes (input 0: (2, 2) float32 -> (5, 2) float32)"]
    assert [r.inputs for r in plans] == [(((2, 2), "float32"),)] * 2 + [(((5, 2), "float32"),)]
    assert all(r.inference and r.training == 0 and r.calls == 1 and r.planned_bytes is None for r in plans)
    text = str(plans)
    assert text.splitlines()[0].startswith("3 signature(s) traced, 3 plan(s) compiled, 3 call(s)")
    assert "5x2 float32" in text and "why traced" in text
    with pytest.raises(MXNetError, match="train must be"):
        net.precompile([(2, 2)], train="yes")
    with pytest.raises(MXNetError, match="list of entries"):
        net.precompile((2, 2))
    with pytest.raises(MXNetError, match="fewer dtypes"):
        net.precompile([((2, 2), (2, 2))], dtype=["float32"])


def test_static_alloc_plans_report_their_buffers():
    net = nn.HybridSequential()
    net.add(nn.Dense(16, in_units=8, activation="relu"), nn.Dense(4))
    net.initialize()
    net.hybridize(static_alloc=True)
    records = net.precompile([(4, 8), (32, 8)], train=False, progress=False)
    assert all(r.planned_bytes is not None for r in records)
    assert records[1].planned_bytes >= records[0].planned_bytes
