"""A hybridized call keeps, between calls, what depends only on its parameters and plan: each parameter's array
on the graph's device (CachedGraph._param_arrays) and the plan's per-call positions (TrainingPlan). Each test
changes what those depend on between calls and compares with the same block run eagerly."""
import numpy as np

import mixnet as mx
from mixnet import autograd
from mixnet.gluon import nn


def _pair():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, activation="relu", in_units=3), nn.Dense(2, in_units=4))
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32))
    return net, x


def _grads(net, x):
    with autograd.record():
        y = net(x)
        loss = (y * y).sum()
    loss.backward()
    return y.asnumpy(), [p.grad().asnumpy().copy() for p in net.collect_params().values() if p.grad_req != "null"]


def _check(net, x):
    net.hybridize(active=False, clear=False)
    want_y, want_g = _grads(net, x)
    net.hybridize(clear=False)              # the graphs (and what they keep) traced before
    got_y, got_g = _grads(net, x)
    np.testing.assert_allclose(got_y, want_y, rtol=1e-5, atol=1e-6)
    for a, b in zip(got_g, want_g):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_reinitialized_parameters_are_read_afresh():
    net, x = _pair()
    net.hybridize()
    _grads(net, x)
    _grads(net, x)
    net.initialize(mx.init.Uniform(), force_reinit=True)
    _check(net, x)


def test_set_data_and_cast_reach_the_graph():
    net, x = _pair()
    net.hybridize()
    _grads(net, x)
    net[0].weight.set_data(mx.nd.ones((4, 3)))
    _grads(net, x)
    _check(net, x)
    net.cast("float64")
    _check(net, x.astype("float64"))


def test_frozen_parameter_then_trained_again():
    net, x = _pair()
    net.hybridize()
    _grads(net, x)
    net[0].weight.grad_req = "null"        # a new gradient mask: another training plan
    _check(net, x)
    net[0].weight.grad_req = "write"
    _check(net, x)


def test_new_signature_and_inference_calls():
    net, x = _pair()
    net.hybridize()
    _grads(net, x)
    _check(net, x[:2])                      # another batch size: another graph
    want = net(x).asnumpy()                  # not recording: the inference plan
    net.hybridize(active=False, clear=False)
    np.testing.assert_allclose(want, net(x).asnumpy(), rtol=1e-5, atol=1e-6)
