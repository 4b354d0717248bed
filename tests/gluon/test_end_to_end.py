"""MXNet-1.x-style Gluon training scripts, end to end: name_scope, initialize(Xavier), Trainer, autograd.record,
loss.backward(), trainer.step(batch_size), mx.metric.Accuracy, DataLoader over ArrayDataset; then
save/load_parameters and Trainer.save/load_states (bit-exact resumption); and the same kind of script written
with `import mxnet as mx`, run with mixnet standing in for mxnet through sys.modules."""
import sys
import time

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon, nd
from mixnet.gluon import nn


# ---------------------------------------------------------------------------------------------- data
def blobs(n=600, dim=20, classes=3, seed=0):
    """`classes` Gaussian blobs in `dim`-D (well separated): returns float32 features and labels."""
    rng = np.random.RandomState(seed)
    centers = rng.normal(0, 1, (classes, dim)) * 2.0
    y = rng.randint(0, classes, n)
    x = centers[y] + rng.normal(0, 1, (n, dim))
    return x.astype(np.float32), y.astype(np.float32)


def quadrant_images(n=480, size=12, seed=1):
    """1 x size x size images of noise with one bright 3x3 square; the class is the quadrant holding it."""
    rng = np.random.RandomState(seed)
    x = rng.normal(0, 0.3, (n, 1, size, size))
    y = rng.randint(0, 4, n)
    half = size // 2
    for i, c in enumerate(y):
        r0, c0 = (c // 2) * half, (c % 2) * half
        r, col = r0 + rng.randint(0, half - 2), c0 + rng.randint(0, half - 2)
        x[i, 0, r:r + 3, col:col + 3] += 1.5
    return x.astype(np.float32), y.astype(np.float32)


# ---------------------------------------------------------------------------------------------- models
def make_mlp():
    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Dense(32, activation="relu"))
        net.add(nn.Dense(3))
    return net


def make_cnn():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(channels=8, kernel_size=3, padding=1))
        net.add(nn.BatchNorm())
        net.add(nn.Activation("relu"))
        net.add(nn.MaxPool2D(pool_size=2))
        net.add(nn.Flatten())
        net.add(nn.Dense(4))
    return net


def evaluate(net, loader):
    metric = mx.metric.Accuracy()
    for data, label in loader:
        metric.update([label], [net(data)])
    return metric.get()[1]


def train(net, trainer, loader, epochs):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    metric = mx.metric.Accuracy()
    for _ in range(epochs):
        metric.reset()
        for data, label in loader:
            with autograd.record():
                output = net(data)
                loss = loss_fn(output, label)
            loss.backward()
            trainer.step(data.shape[0])
            metric.update([label], [output])
    return metric.get()


def _weights(net):
    return {name: p.data().asnumpy().copy() for name, p in net.collect_params().items()}


# ---------------------------------------------------------------------------------------------- tests
def test_mlp_on_gaussian_blobs():
    x, y = blobs()
    train_data = gluon.data.DataLoader(gluon.data.ArrayDataset(x[:480], y[:480]), batch_size=32, shuffle=True)
    test_data = gluon.data.DataLoader(gluon.data.ArrayDataset(x[480:], y[480:]), batch_size=64)
    net = make_mlp()
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    start = time.time()
    name, train_acc = train(net, trainer, train_data, epochs=5)
    assert name == "accuracy"
    assert train_acc >= 0.95
    assert evaluate(net, test_data) >= 0.95
    assert time.time() - start < 10


@pytest.fixture(scope="module")
def _trained_cnns():
    return {}


@pytest.fixture
def trained_cnn(_trained_cnns):
    """The CNN trained once per module, on first use: in a test, so on the test's default device (a module-scoped
    fixture runs before the per-test default device applies)."""
    if "cnn" not in _trained_cnns:
        _trained_cnns["cnn"] = _train_cnn()
    return _trained_cnns["cnn"]


def _train_cnn():
    x, y = quadrant_images()
    train_data = gluon.data.DataLoader(gluon.data.ArrayDataset(x[:400], y[:400]), batch_size=32, shuffle=True)
    net = make_cnn()
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    start = time.time()
    _, train_acc = train(net, trainer, train_data, epochs=4)
    elapsed = time.time() - start
    return net, trainer, (x, y), train_acc, elapsed


def test_cnn_on_quadrant_images(trained_cnn):
    net, _, (x, y), train_acc, elapsed = trained_cnn
    assert train_acc >= 0.9
    test_data = gluon.data.DataLoader(gluon.data.ArrayDataset(x[400:], y[400:]), batch_size=40)
    assert evaluate(net, test_data) >= 0.9                       # predict mode: BatchNorm's running statistics
    assert elapsed < 10
    assert net[0].weight.shape == (8, 1, 3, 3) and net[-1].weight.shape == (4, 8 * 6 * 6)


def test_save_load_parameters_reproduces_predictions(trained_cnn, tmp_path):
    net, _, (x, _), _, _ = trained_cnn
    path = str(tmp_path / "cnn.params")
    net.save_parameters(path)
    clone = make_cnn()
    clone.load_parameters(path)                                  # deferred shapes come from the file
    batch = nd.array(x[400:])
    np.testing.assert_array_equal(clone(batch).asnumpy(), net(batch).asnumpy())
    # hybridized, the loaded copy still predicts the same
    clone.hybridize()
    np.testing.assert_array_equal(clone(batch).asnumpy(), net(batch).asnumpy())


@pytest.mark.parametrize("optimizer, params", [("adam", {"learning_rate": 0.01}),
                                               ("sgd", {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-4})])
def test_trainer_states_resume_bit_exactly(trained_cnn, tmp_path, optimizer, params):
    net0, _, (x, y), _, _ = trained_cnn
    base = str(tmp_path / "base.params")
    net0.save_parameters(base)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    batches = [(nd.array(x[i:i + 16]), nd.array(y[i:i + 16])) for i in (0, 16, 32, 48, 64)]

    def step(net, trainer, batch):
        data, label = batch
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])

    # run A: 3 steps (so the optimizer has state), save, continue 2 steps
    net_a = make_cnn()
    net_a.load_parameters(base)
    trainer_a = gluon.Trainer(net_a.collect_params(), optimizer, dict(params))
    for batch in batches[:3]:
        step(net_a, trainer_a, batch)
    states, weights = str(tmp_path / "a.states"), str(tmp_path / "a.params")
    trainer_a.save_states(states)
    net_a.save_parameters(weights)
    for batch in batches[3:]:
        step(net_a, trainer_a, batch)

    # run B: a fresh net and Trainer resume from the files and take the same 2 steps
    net_b = make_cnn()
    net_b.load_parameters(weights)
    trainer_b = gluon.Trainer(net_b.collect_params(), optimizer, dict(params))
    trainer_b.load_states(states)
    for batch in batches[3:]:
        step(net_b, trainer_b, batch)

    wa, wb = _weights(net_a), _weights(net_b)
    assert [k.split("_", 1)[1] for k in wa] == [k.split("_", 1)[1] for k in wb]
    for (ka, va), vb in zip(wa.items(), wb.values()):
        assert va.dtype == vb.dtype and (va == vb).all(), ka

    # without the optimizer state the resumed run differs (the test can tell)
    net_c = make_cnn()
    net_c.load_parameters(weights)
    trainer_c = gluon.Trainer(net_c.collect_params(), optimizer, dict(params))
    for batch in batches[3:]:
        step(net_c, trainer_c, batch)
    assert any((va != vc).any() for va, vc in zip(wa.values(), _weights(net_c).values()))


# ---------------------------------------------------------------------------------------------- drop-in use
MXNET_SCRIPT = '''
import mxnet as mx
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

def run(x, y):
    ctx = mx.cpu()
    dataset = gluon.data.ArrayDataset(nd.array(x), nd.array(y))
    loader = gluon.data.DataLoader(dataset, batch_size=32, shuffle=True, last_batch="keep")
    net = nn.HybridSequential(prefix="mlp_")
    with net.name_scope():
        net.add(nn.Dense(32, activation="relu"), nn.Dropout(0.1), nn.Dense(3))
    net.initialize(mx.init.Xavier(magnitude=2.24), ctx=ctx)
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    metric = mx.metric.Accuracy()
    for epoch in range(4):
        metric.reset()
        for data, label in loader:
            data, label = data.as_in_context(ctx), label.as_in_context(ctx)
            with autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
            loss.backward()
            trainer.step(batch_size=data.shape[0])
            metric.update(labels=[label], preds=[out])
        name, acc = metric.get()
    return net, name, acc, mx.__name__
'''


@pytest.fixture
def mixnet_as_mxnet(monkeypatch):
    """Makes `import mxnet` (and every `mxnet.sub.module`) resolve to mixnet, for this test only."""
    for name in list(sys.modules):
        if name == "mxnet" or name.startswith("mxnet."):
            monkeypatch.delitem(sys.modules, name)
    for name, module in list(sys.modules.items()):
        if name == "mixnet" or name.startswith("mixnet."):
            monkeypatch.setitem(sys.modules, "mxnet" + name[len("mixnet"):], module)


def test_mxnet_script_runs_on_mixnet_unchanged(mixnet_as_mxnet):
    namespace = {}
    exec(compile(MXNET_SCRIPT, "user_script.py", "exec"), namespace)
    assert namespace["mx"] is mx and namespace["nn"] is nn
    x, y = blobs(seed=3)
    net, name, acc, module_name = namespace["run"](x, y)
    assert module_name == "mixnet" and name == "accuracy"
    assert acc >= 0.95
    assert sorted(net.collect_params().keys()) == ["mlp_dense0_bias", "mlp_dense0_weight", "mlp_dense1_bias",
                                                   "mlp_dense1_weight"]
    pred = net(nd.array(x, ctx=mx.cpu())).argmax(axis=1).asnumpy()          # the script trains on mx.cpu()
    assert (pred == y).mean() >= 0.95
