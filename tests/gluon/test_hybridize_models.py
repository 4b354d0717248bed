"""hybridize() never changes results for models as users write them: a ResNet-style block (BatchNorm, residual
add), an MLP with Dropout, an Embedding + LSTM + Dense classifier, a 2.0-style `forward` that calls mx.nd
functions and reads `self.weight.data()`; eager vs hybridized outputs and gradients over two signatures in train
and predict mode, and a few gluon.Trainer steps that end with the same losses and parameters."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon
from mixnet.gluon import nn, rnn

from .hybrid_equivalence import assert_hybrid_equals_eager, rand, restore, snapshot

F64 = np.float64


class ResidualUnit(gluon.HybridBlock):
    def __init__(self, channels, stride, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.body = nn.HybridSequential()
            self.body.add(nn.Conv2D(channels, 3, stride, 1, use_bias=False), nn.BatchNorm(), nn.Activation("relu"),
                          nn.Conv2D(channels, 3, 1, 1, use_bias=False), nn.BatchNorm())
            self.down = nn.Conv2D(channels, 1, stride, use_bias=False) if stride != 1 else None

    def hybrid_forward(self, F, x):
        shortcut = self.down(x) if self.down is not None else x
        return F.relu(self.body(x) + shortcut)


def _resnet():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                ResidualUnit(4, 1), ResidualUnit(6, 2), nn.GlobalAvgPool2D(), nn.Dense(3))
    return net


def _mlp():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu"), nn.Dropout(0.5), nn.Dense(6, activation="tanh"), nn.Dropout(0.2),
                nn.Dense(3))
    return net


class TextClassifier(gluon.HybridBlock):
    """Embedding -> LSTM (NTC) -> the output at each sequence's last valid step -> Dense."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.embed = nn.Embedding(12, 4)
            self.lstm = rnn.LSTM(5, num_layers=2, layout="NTC", dropout=0.3, bidirectional=True)
            self.out = nn.Dense(3)

    def hybrid_forward(self, F, tokens, lengths):
        hidden = self.lstm(self.embed(tokens))                       # (N, T, 2H)
        last = F.SequenceLast(hidden, sequence_length=lengths, use_sequence_length=True, axis=1)
        return self.out(last)


class Forward20(gluon.HybridBlock):
    """2.0 style: forward(self, x) calling mx.nd functions and reading parameters with .data() (twice)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(3, 4))
            self.scale = self.params.get("scale", shape=(1,))
            self.dense = nn.Dense(2, flatten=False)

    def forward(self, x):
        h = mx.nd.tanh(mx.nd.dot(x, self.weight.data()))
        h = mx.nd.broadcast_mul(h, self.scale.data()) + mx.nd.sum(self.weight.data() ** 2)
        return self.dense(mx.nd.relu(h))


def _tokens(n, t, seed):
    return np.random.RandomState(seed).randint(0, 12, size=(n, t)).astype(F64)


MODELS = [
    ("resnet_block", _resnet, lambda n, s: [rand((n, 2, 6, 6), s)]),
    ("mlp_dropout", _mlp, lambda n, s: [rand((n, 5), s)]),
    ("embedding_lstm_dense", TextClassifier,
     lambda n, s: [_tokens(n, 5, s), np.random.RandomState(s).randint(1, 6, n).astype(np.int32)]),
    ("forward_2_0_style", Forward20, lambda n, s: [rand((n, 2, 3), s)]),
]


def _initialized(make, args):
    net = make()
    net.initialize(mx.init.Uniform(0.5))
    net.cast(F64)
    net(*[mx.nd.array(a, dtype=a.dtype) for a in args])
    for i, (name, p) in enumerate(sorted(net.collect_params().items())):
        if p.grad_req != "null":
            p.set_data(mx.nd.array(rand(p.shape, 200 + i), dtype=F64))
    return net


@pytest.mark.parametrize("name, make, args, train", [
    pytest.param(*m, train, id=f"{m[0]}-{'train' if train else 'predict'}")
    for m in MODELS for train in ((True, False) if m[0] != "forward_2_0_style" else (True,))])
def test_model_hybridized_equals_eager(name, make, args, train):
    sigs = [args(3, 1), args(2, 40)]
    net = _initialized(make, sigs[0])
    assert_hybrid_equals_eager(net, sigs, train)


def test_parameter_read_twice_is_one_graph_input():
    """Regression: every .data() / var() of a parameter while tracing used to make a new graph variable of the
    same name, and the compiled gradient then kept only one use's share."""
    net = _initialized(Forward20, [rand((2, 2, 3), 1)])
    net.hybridize()
    net(mx.nd.array(rand((2, 2, 3), 1), dtype=F64))
    inputs = net._last_graph.symbol.list_inputs()
    assert len(inputs) == len(set(inputs)), inputs


def _train(net, batches, hybridize, steps):
    if hybridize:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.2, "momentum": 0.9, "wd": 1e-3})
    loss_fn = gluon.loss.SoftmaxCELoss()
    if hybridize:
        loss_fn.hybridize()
    losses = []
    for step in range(steps):
        x, y = batches[step % len(batches)]
        mx.random.seed(100 + step)              # the same dropout masks in both runs
        with autograd.record():
            loss = loss_fn(net(mx.nd.array(x, dtype=F64)), mx.nd.array(y, dtype=F64))
        loss.backward()
        trainer.step(x.shape[0])
        losses.append(loss.asnumpy().copy())
    return losses, snapshot(net)


@pytest.mark.parametrize("make, shape", [(_mlp, (4, 5)), (_resnet, (4, 2, 5, 5))], ids=["mlp_dropout", "resnet"])
def test_trainer_steps_hybridized_equal_eager(make, shape):
    batches = [(rand(shape, 1 + i), np.random.RandomState(i).randint(0, 3, shape[0]).astype(F64))
               for i in range(2)]
    net = _initialized(make, [batches[0][0]])
    start = snapshot(net)
    eager_losses, eager_params = _train(net, batches, False, 4)
    restore(net, start)
    hybrid_losses, hybrid_params = _train(net, batches, True, 4)
    for step, (a, b) in enumerate(zip(hybrid_losses, eager_losses)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"loss at step {step}")
    assert not np.allclose(eager_losses[0], eager_losses[2]), "training moved the parameters"
    for k in eager_params:
        np.testing.assert_allclose(hybrid_params[k], eager_params[k], rtol=1e-10, atol=1e-12, err_msg=k)
