"""Trainer.step reuses what depends only on the parameter set between steps (the parameters' arrays and gradient
buffers: Trainer._targets; the optimizer's parameter groups: Optimizer._grouped; the flat buffers:
FlatCache.flats). Each test changes one thing those caches depend on between two steps and checks the second
step against the SGD formula computed by hand, w -= lr * grad / batch_size."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon
from mixnet.gluon import nn

BATCH = 4


def _setup(optimizer="sgd", params=None):
    net = nn.HybridSequential()
    net.add(nn.Dense(3, in_units=5), nn.Dense(2, in_units=3))
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), optimizer, params or {"learning_rate": 0.1})
    x = mx.nd.array(np.random.default_rng(0).standard_normal((BATCH, 5)).astype(np.float32))
    return net, trainer, x


def _backward(net, x):
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()


def _values(net):
    return {name: p.data().asnumpy().copy() for name, p in net.collect_params().items()}


def _grads(net):
    return {name: p.grad().asnumpy().copy() for name, p in net.collect_params().items() if p.grad_req != "null"}


def _expected(before, grads, lr, mults=None):
    mults = mults or {}
    return {name: w - np.float32(lr * mults.get(name, 1.0)) * grads[name] / BATCH if name in grads else w
            for name, w in before.items()}


def _check_step(net, trainer, x, lr, mults=None):
    _backward(net, x)
    before, grads = _values(net), _grads(net)
    trainer.step(BATCH)
    after = _values(net)
    for name, want in _expected(before, grads, lr, mults).items():
        np.testing.assert_allclose(after[name], want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_steady_steps_follow_the_formula():
    net, trainer, x = _setup()
    for _ in range(3):
        _check_step(net, trainer, x, 0.1)


def test_grad_req_null_then_write_again():
    net, trainer, x = _setup()
    _check_step(net, trainer, x, 0.1)
    first = net[0].weight
    first.grad_req = "null"
    _backward(net, x)
    frozen = first.data().asnumpy().copy()
    trainer.step(BATCH)
    np.testing.assert_array_equal(first.data().asnumpy(), frozen)
    first.grad_req = "write"
    _check_step(net, trainer, x, 0.1)
    assert not np.array_equal(first.data().asnumpy(), frozen)


def test_grad_req_add_accumulates():
    net, trainer, x = _setup()
    _check_step(net, trainer, x, 0.1)
    for p in net.collect_params().values():
        p.grad_req = "add"
        p.zero_grad()
    _backward(net, x)
    _backward(net, x)
    before, grads = _values(net), _grads(net)
    trainer.step(BATCH)
    for name, want in _expected(before, grads, 0.1).items():
        np.testing.assert_allclose(_values(net)[name], want, rtol=1e-5, atol=1e-6)


def test_learning_rate_and_multiplier_changes_apply_at_once():
    net, trainer, x = _setup()
    _check_step(net, trainer, x, 0.1)
    trainer.set_learning_rate(0.05)
    _check_step(net, trainer, x, 0.05)
    name = net[1].weight.name
    net[1].weight.lr_mult = 3.0
    _check_step(net, trainer, x, 0.05, {name: 3.0})


def test_lr_scheduler_changes_the_rate_every_step():
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.1)
    net, trainer, x = _setup(params={"learning_rate": 0.1, "lr_scheduler": sched})
    lrs = []
    for _ in range(3):
        _backward(net, x)
        before, grads = _values(net), _grads(net)
        trainer.step(BATCH)
        lr = trainer.learning_rate
        lrs.append(lr)
        for name, want in _expected(before, grads, lr).items():
            np.testing.assert_allclose(_values(net)[name], want, rtol=1e-5, atol=1e-6)
    assert lrs[0] > lrs[1] > lrs[2]


def test_reinitialized_and_cast_parameters_are_updated():
    net, trainer, x = _setup()
    _check_step(net, trainer, x, 0.1)
    net.initialize(mx.init.Uniform(), force_reinit=True)      # new arrays and gradient buffers
    _check_step(net, trainer, x, 0.1)
    net.cast("float64")
    _check_step(net, trainer, x.astype("float64"), 0.1)
    assert net[0].weight.data().dtype == np.float64


def test_replaced_buffers_are_repacked():
    net, trainer, x = _setup()
    _check_step(net, trainer, x, 0.1)
    w = net[0].weight.data()
    w._data = w._data.copy()                # outside the flat buffer now
    _check_step(net, trainer, x, 0.1)
    _check_step(net, trainer, x, 0.1)


def test_a_new_gradient_buffer_is_the_one_stepped():
    net, trainer, x = _setup()
    _check_step(net, trainer, x, 0.1)
    net[0].weight.data().attach_grad()      # a new .grad buffer; the parameter's arrays and grad_req unchanged
    _check_step(net, trainer, x, 0.1)
    _check_step(net, trainer, x, 0.1)


def test_stale_gradients_and_ignore_stale_grad():
    net, trainer, x = _setup()
    _check_step(net, trainer, x, 0.1)
    with pytest.raises(UserWarning):
        trainer.step(BATCH)                 # nothing ran backward since
    with autograd.record():
        loss = (net[0](x) ** 2).sum()       # only the first layer gets gradients
    loss.backward()
    second = net[1].weight.data().asnumpy().copy()
    first = net[0].weight.data().asnumpy().copy()
    trainer.step(BATCH, ignore_stale_grad=True)
    np.testing.assert_array_equal(net[1].weight.data().asnumpy(), second)
    assert not np.array_equal(net[0].weight.data().asnumpy(), first)


@pytest.mark.parametrize("name", ["sgd", "nag", "adam"])
def test_a_new_trainer_on_packed_parameters(name):
    """A second Trainer (a new optimizer, its own flat buffers) on parameters the first one packed steps as a
    fresh Trainer on an unpacked copy of them does."""
    net, trainer, x = _setup(name, {"learning_rate": 0.01})
    for _ in range(2):
        _backward(net, x)
        trainer.step(BATCH)
    copy, _, _ = _setup(name, {"learning_rate": 0.01})
    for p, q in zip(copy.collect_params().values(), net.collect_params().values()):
        p.set_data(q.data())
    results = []
    for model in (net, copy):
        fresh = gluon.Trainer(model.collect_params(), name, {"learning_rate": 0.01})
        for _ in range(2):
            _backward(model, x)
            fresh.step(BATCH)
        results.append(list(_values(model).values()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def _two_device_run(tmp_path, reload_into_same):
    """SGD with a per-update schedule on a parameter held on two devices (an Updater per device, one optimizer):
    2 steps, save, then either 2 more steps and a reload of the saved states (and the weights) into the same
    Trainer, or a new Trainer loading them; then 1 step. Returns the values and the per-device update counts."""
    ctxs = [mx.cpu(0), mx.cpu(1)]
    p = gluon.Parameter("p", shape=(3,), init="ones")
    p.initialize(ctx=ctxs)
    def new_trainer():
        sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.1)
        return gluon.Trainer([p], "sgd", {"learning_rate": 0.1, "lr_scheduler": sched}, update_on_kvstore=False)

    trainer = new_trainer()

    def step():
        with autograd.record():
            losses = [(p.data(c) * mx.nd.array([1.0, 2.0, 3.0], ctx=c)).sum() for c in ctxs]
        for loss in losses:
            loss.backward()
        trainer.step(1)

    step()
    step()
    fname = str(tmp_path / f"two-{reload_into_same}.states")
    trainer.save_states(fname)
    weights = p.data(ctxs[0]).copy()
    if reload_into_same:
        step()
        step()
        p.set_data(weights)                # load_states restores the optimizer, not the weights
    else:
        trainer = new_trainer()
    trainer.load_states(fname)
    step()
    counts = trainer._optimizer._all_index_update_counts
    return [p.data(c).asnumpy() for c in ctxs], {dev: dict(c) for dev, c in counts.items()}


def test_update_counts_per_device_follow_a_reload(tmp_path):
    """Each device's updater selects that device's update counts before it updates (Optimizer.
    _set_current_context, which keeps the last selection while nothing replaced the counts): after load_states
    replaced them in a Trainer that had already stepped, the next step counts and schedules from the loaded
    counts, exactly as a new Trainer loading the same file does."""
    same_values, same_counts = _two_device_run(tmp_path, True)
    new_values, new_counts = _two_device_run(tmp_path, False)
    assert same_counts == new_counts
    assert all(count == {0: 3} for count in same_counts.values()) and len(same_counts) == 2
    for a, b in zip(same_values, new_values):
        np.testing.assert_array_equal(a, b)
