"""Training on a GPU gives the CPU's numbers: the same model, the same initial weights and data, trained a few
steps on mx.cpu() and on mx.gpu(0), eager and hybridized, with the optimizers and layers users train with.

The op-level tests (MIXNET_TEST_CONTEXT=gpu runs the whole suite on the GPU) check each op alone; these check what
a user sees from a training loop: the loss curve and the final weights. Skipped, with the reason printed, on a
machine without a GPU (CI has none: these run in GPU sessions, see benchmarks/README.md).
"""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon
from mixnet.gluon import nn, rnn

GPU_REASON = None if mx.context.num_gpus() else "needs a GPU (mx.context.num_gpus() == 0)"
pytestmark = pytest.mark.skipif(GPU_REASON is not None, reason=str(GPU_REASON))


def _features(*shape):
    def make(rng):
        return [rng.standard_normal(shape).astype(np.float32)], rng.integers(0, 5, shape[0]).astype(np.float32)
    return make


def _mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(32, activation="relu"), nn.Dense(32, activation="tanh"), nn.Dense(5))
    return net, _features(16, 20)


def _cnn():
    net = nn.HybridSequential()       # no bias before BatchNorm: its gradient is rounding noise, which Adam scales up
    net.add(nn.Conv2D(6, 3, padding=1, use_bias=False), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(2),
            nn.Conv2D(8, 3), nn.GlobalAvgPool2D(), nn.Dense(5))
    return net, _features(8, 3, 8, 8)


class _Recurrent(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.lstm = rnn.LSTM(12, num_layers=2, layout="NTC")
        self.out = nn.Dense(5, flatten=False)

    def hybrid_forward(self, F, x):
        return self.out(self.lstm(x)).mean(axis=1)


def _lstm():
    return _Recurrent(), _features(6, 7, 4)


class _Tokens(gluon.HybridBlock):
    """The demo's shape of model: embedding, a GRU stack over valid lengths, the last valid step, a Dense."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.embed = nn.Embedding(11, 8)
        self.gru = rnn.GRU(16, num_layers=2, layout="NTC", use_sequence_length=True)
        self.out = nn.Dense(5)

    def hybrid_forward(self, F, tokens, length):
        steps = self.gru(self.embed(tokens), sequence_length=length)
        return self.out(F.SequenceLast(steps, sequence_length=length, use_sequence_length=True, axis=1))


def _tokens(rng):
    tokens = rng.integers(0, 11, (6, 5)).astype(np.float32)
    return [tokens, np.array([5, 3, 1, 4, 5, 2], np.float32)], rng.integers(0, 5, 6).astype(np.float32)


def _gru():
    return _Tokens(), _tokens


MODELS = {"mlp": _mlp, "cnn": _cnn, "lstm": _lstm, "gru_lengths": _gru}
OPTIMIZERS = {"sgd": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}),
              "adam": ("adam", {"learning_rate": 0.01, "clip_gradient": 1.0})}


def _train(make, ctx, weights, inputs, y, optimizer, hybridize, steps=6):
    net, _ = make()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    net.initialize(mx.init.Xavier(), ctx=ctx)
    xs = [mx.nd.array(a, ctx=ctx) for a in inputs]
    net(*xs)                                            # shapes known: the CPU run's weights can be set
    params = list(net.collect_params().values())       # in creation order; the names' counters differ per net
    assert [p.shape for p in params] == [w.shape for w in weights]
    for param, value in zip(params, weights):
        param.set_data(mx.nd.array(value, ctx=ctx))
    if hybridize:
        net.hybridize()
        loss_fn.hybridize()
    trainer = gluon.Trainer(net.collect_params(), *OPTIMIZERS[optimizer])
    ys = mx.nd.array(y, ctx=ctx)
    losses = []
    for _ in range(steps):
        with autograd.record():
            loss = loss_fn(net(*xs), ys)
        loss.backward()
        trainer.step(y.shape[0])
        losses.append(float(loss.mean().asscalar()))
    return losses, [p.data().asnumpy() for p in params]


@pytest.mark.parametrize("hybridize", [False, True], ids=["eager", "hybridized"])
@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
@pytest.mark.parametrize("model", list(MODELS))
def test_training_on_the_gpu_matches_the_cpu(model, optimizer, hybridize):
    make = MODELS[model]
    net, make_inputs = make()
    inputs, y = make_inputs(np.random.default_rng(0))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    net(*[mx.nd.array(a) for a in inputs])
    weights = [p.data().asnumpy() for p in net.collect_params().values()]
    cpu_losses, cpu_weights = _train(make, mx.cpu(), weights, inputs, y, optimizer, hybridize)
    gpu_losses, gpu_weights = _train(make, mx.gpu(0), weights, inputs, y, optimizer, hybridize)
    assert cpu_losses[-1] < cpu_losses[0], f"the CPU run did not learn: {cpu_losses}"
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=2e-3, atol=1e-4, err_msg="loss curve, GPU vs CPU")
    for k, (got, want) in enumerate(zip(gpu_weights, cpu_weights)):
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-4, err_msg=f"parameter {k} after training")


def test_a_batch_made_by_dataloader_workers_is_on_the_cpu_under_a_gpu_default():
    """Workers make batches on the CPU (MXNet: cpu_shared), even when the loop runs under `with mx.gpu(0):`;
    the forked worker cannot use the parent's CUDA context."""
    features = np.arange(24, dtype=np.float32).reshape(12, 2)
    data = gluon.data.ArrayDataset(features, np.arange(12))
    with mx.gpu(0):
        batches = list(gluon.data.DataLoader(data, batch_size=4, num_workers=2))
    assert [b[0].context for b in batches] == [mx.cpu()] * 3
    np.testing.assert_array_equal(np.concatenate([b[0].asnumpy() for b in batches]), features)


def test_waitall_and_wait_to_read_wait_for_the_gpu():
    import cupy
    x = mx.nd.ones((2048, 2048), ctx=mx.gpu(0))
    y = mx.nd.dot(x, x)
    y.wait_to_read()
    assert cupy.cuda.get_current_stream().done
    for _ in range(3):
        y = mx.nd.dot(y, x) * 1e-3
    mx.nd.waitall()
    assert cupy.cuda.get_current_stream().done


def test_dlpack_round_trip_on_the_gpu_shares_memory():
    x = mx.nd.arange(6, ctx=mx.gpu(0)).reshape((2, 3))
    y = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(x))
    assert y.context == mx.gpu(0)
    y[:] = 7
    np.testing.assert_array_equal(x.asnumpy(), np.full((2, 3), 7, np.float32))


def _demo_trace(ctx, weights, batches, hybridize, settings):
    """The demo's model and step (mixnet/demo.py: Adam with clip_gradient, a 3-D softmax cross-entropy, bucketed
    batches) from the given weights: the loss of each step."""
    from mixnet import demo
    net = demo.Calculator(settings["hidden"], settings["layers"], batches[0][2].shape[1])
    net.initialize(mx.init.Xavier(), ctx=ctx)
    chars, length, _ = batches[0]
    net(mx.nd.array(chars, ctx=ctx), mx.nd.array(length, ctx=ctx))
    for param, value in zip(net.collect_params().values(), weights):
        param.set_data(mx.nd.array(value, ctx=ctx))
    if hybridize:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": settings["lr"], "clip_gradient": 1.0})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss(axis=-1)
    losses = []
    for chars, length, target in batches:
        with autograd.record():
            loss = loss_fn(net(mx.nd.array(chars, ctx=ctx), mx.nd.array(length, ctx=ctx)),
                           mx.nd.array(target, ctx=ctx))
        loss.backward()
        trainer.step(chars.shape[0])
        losses.append(float(loss.mean().asscalar()))
    return losses, [p.data().asnumpy() for p in net.collect_params().values()]


@pytest.mark.parametrize("hybridize", [False, True], ids=["eager", "hybridized"])
def test_the_demo_model_trains_the_same_on_the_gpu(hybridize):
    from mixnet import demo
    settings = demo.QUICK
    with mx.cpu():
        mx.random.seed(0)
        np.random.seed(0)
        texts, answers = demo.data.make_problems(800, settings["max_digits"], 0, "+")
        width = demo.data.answer_width(settings["max_digits"])
        loader, _ = demo.bucketed_loader(texts, answers, width, settings["batch_size"], training=True)
        batches = [(c.asnumpy(), n.asnumpy().astype(np.float32), t.asnumpy()) for (c, n), t in loader][:20]
        net = demo.Calculator(settings["hidden"], settings["layers"], width)
        net.initialize(mx.init.Xavier())
        net(mx.nd.array(batches[0][0]), mx.nd.array(batches[0][1]))
        weights = [p.data().asnumpy() for p in net.collect_params().values()]
    cpu_losses, cpu_weights = _demo_trace(mx.cpu(), weights, batches, hybridize, settings)
    gpu_losses, gpu_weights = _demo_trace(mx.gpu(0), weights, batches, hybridize, settings)
    print("cpu", np.round(cpu_losses, 4), "\ngpu", np.round(gpu_losses, 4))
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=5e-3, atol=1e-4, err_msg="demo loss curve, GPU vs CPU")
    for k, (got, want) in enumerate(zip(gpu_weights, cpu_weights)):
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3, err_msg=f"parameter {k} after 20 steps")
