"""Compiled backwards write a parameter's gradient straight into its gradient buffer (GradContext.grad_buffer):
only where that is the leaf's single contribution and grad_req is 'write'; results always equal the eager ones."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon
from mixnet.gluon import nn


def _mlp(seed=0):
    mx.random.seed(seed)
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu", in_units=8), nn.Dense(4, in_units=16))
    net.initialize(mx.init.Xavier())
    return net


def _grads(net):
    return {name: p.grad().asnumpy().copy() for name, p in net.collect_params().items()}


def _x(seed=1, shape=(5, 8)):
    return mx.nd.array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_weight_gradients_land_in_the_buffers_without_a_copy():
    eager, hybrid = _mlp(), _mlp()
    hybrid.hybridize()
    x = _x()
    for net in (eager, hybrid):
        with autograd.record():
            net(x).sum().backward()
    buffers = {name: p.grad()._data for name, p in hybrid.collect_params().items()}
    plan = next(iter(next(iter(hybrid._cached_graphs.values()))._training.values()))
    assert "out=D0" in plan.backward.compiled.source            # the first Dense's weight gradient
    with autograd.record():
        hybrid(x).sum().backward()
    for name, p in hybrid.collect_params().items():
        assert p.grad()._data is buffers[name]                   # the same buffers, written in place
    for (name, want), got in zip(_grads(eager).items(), _grads(hybrid).values()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_parameter_used_by_two_calls_gets_the_sum():
    eager, hybrid = _mlp(), _mlp()
    hybrid.hybridize()
    x1, x2 = _x(1), _x(2)
    for net in (eager, hybrid):
        with autograd.record():
            (net(x1).sum() + (net(x2) * 2).sum()).backward()
    for (name, want), got in zip(_grads(eager).items(), _grads(hybrid).values()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_grad_req_add_accumulates():
    eager, hybrid = _mlp(), _mlp()
    hybrid.hybridize()
    x = _x()
    for net in (eager, hybrid):
        net.collect_params().setattr("grad_req", "add")
        for _ in range(2):
            with autograd.record():
                net(x).sum().backward()
    for (name, want), got in zip(_grads(eager).items(), _grads(hybrid).values()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_autograd_grad_leaves_the_buffers_alone():
    net = _mlp()
    net.hybridize()
    x = _x()
    with autograd.record():
        net(x).sum().backward()
    before = _grads(net)
    weight = net[0].weight.data()
    with autograd.record():
        y = net(x * 3).sum()
    g = autograd.grad(y, [weight])[0]
    for (name, want), got in zip(before.items(), _grads(net).values()):
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert not np.allclose(g.asnumpy(), before[net[0].weight.name])


class _TwoHeads(gluon.HybridBlock):
    """Two Dense layers reading the same input: the second weight gradient reads the input after the first."""

    def __init__(self):
        super().__init__()
        self.a = nn.Dense(8, in_units=8)
        self.b = nn.Dense(8, in_units=8)

    def hybrid_forward(self, F, x):
        return self.a(x) + self.b(x) * 2


def test_a_gradient_buffer_read_as_data_is_not_overwritten_midway():
    """The net reads a weight's own gradient buffer as its input: that gradient must not be written into the
    buffer while the backward still reads it."""
    results = []
    for hybrid in (False, True):
        mx.random.seed(0)
        net = _TwoHeads()
        net.initialize(mx.init.Xavier())
        if hybrid:
            net.hybridize()
        with autograd.record():
            net(_x(shape=(8, 8))).sum().backward()          # allocates the gradient buffers
        for _ in range(2):
            data = net.a.weight.grad()                        # the buffer itself is the input
            with autograd.record():
                (net(data) ** 2).sum().backward()
        results.append(_grads(net))
    for (name, want), got in zip(results[0].items(), results[1].values()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("static_alloc", [False, True])
def test_trainer_steps_match_eager(static_alloc):
    nets = [_mlp(), _mlp()]
    nets[1].hybridize(static_alloc=static_alloc)
    x, y = _x(), mx.nd.array([0, 1, 2, 3, 0])
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    for net in nets:
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
        for _ in range(3):
            with autograd.record():
                loss(net(x), y).backward()
            trainer.step(5)
    for p0, p1 in zip(nets[0].collect_params().values(), nets[1].collect_params().values()):
        np.testing.assert_allclose(p1.data().asnumpy(), p0.data().asnumpy(), rtol=1e-5, atol=1e-6)
