"""A hybridized block's repeated call on plain NDArray arguments finds its graph through the block's CallIndex
(gluon/cached_graph.py fast_call) without the general path. Each test changes, between calls, something the
index must not outlive (hooks below, children, the training mode, the input's shape/dtype/device object, op
hooks, check mode) and checks the result against the block run eagerly, or that the hook fires."""
import copy
import pickle

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon
from mixnet.gluon import cached_graph, nn


def _net():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, activation="relu", in_units=3), nn.Dense(2, in_units=4))
    net.initialize(mx.init.Xavier())
    return net


def _x(n=5, dtype=np.float32):
    return mx.nd.array(np.random.default_rng(1).standard_normal((n, 3)).astype(dtype), dtype=dtype)


def _eager(net, *args):
    net.hybridize(active=False, clear=False)
    try:
        return net(*args).asnumpy()
    finally:
        net.hybridize(clear=False)


def test_repeated_calls_skip_the_general_path(monkeypatch):
    # the other tests here would pass vacuously if the fast path were never taken
    net, x = _net(), _x()
    net.hybridize()
    net(x)                                   # predict mode
    with autograd.record():                  # training mode: a key of its own
        net(x)
    calls = []
    general = cached_graph.call_hybridized
    monkeypatch.setattr(cached_graph, "call_hybridized", lambda *a: calls.append(1) or general(*a))
    with autograd.record():
        net(x)
    net(x)
    assert calls == [], "a known call went through call_hybridized"
    net(_x(2))                               # a new signature does
    assert calls == [1]


@pytest.mark.parametrize("where", ["child", "grandchild"])
@pytest.mark.parametrize("kind", ["forward", "pre"])
def test_hook_added_below_after_calls_fires(where, kind):
    outer = nn.HybridSequential()
    inner = _net()
    outer.add(inner)
    outer.hybridize()
    x = _x()
    outer(x)
    outer(x)
    target = inner if where == "child" else inner[0]
    seen = []
    if kind == "forward":
        handle = target.register_forward_hook(lambda block, args, out: seen.append(block))
    else:
        handle = target.register_forward_pre_hook(lambda block, args: seen.append(block))
    with pytest.warns(UserWarning, match="forward hooks"):
        got = outer(x).asnumpy()
    assert seen == [target]
    handle.detach()
    again = outer(x).asnumpy()
    assert seen == [target], "a detached hook fired"
    np.testing.assert_allclose(got, again, rtol=1e-6)


def test_child_registered_after_calls_changes_the_result():
    net, x = _net(), _x()
    net.hybridize()
    net(x)
    net(x)
    net.add(nn.Dense(7, in_units=2))
    net[2].initialize()
    out = net(x)
    assert out.shape == (5, 7)
    np.testing.assert_allclose(out.asnumpy(), _eager(net, x), rtol=1e-5, atol=1e-6)


def test_training_mode_is_part_of_the_key():
    net = nn.HybridSequential()
    net.add(nn.Dropout(0.5))
    net.hybridize()
    x = mx.nd.ones((64, 64))
    with autograd.record(train_mode=True):
        net(x)
        net(x)
    with autograd.record(train_mode=False):
        out = net(x)
    np.testing.assert_array_equal(out.asnumpy(), x.asnumpy())      # predict mode: dropout is the identity
    with autograd.record(train_mode=True):
        dropped = net(x)
    assert (dropped.asnumpy() == 0).any()


class _ModeBranch(gluon.HybridBlock):
    """Traces a different graph per training mode (Python control flow on the mode)."""

    def forward(self, x):
        return x * 2 if autograd.is_training() else x + 1


def test_a_graph_traced_per_training_mode():
    block = _ModeBranch()
    block.hybridize()
    x = mx.nd.full((2, 3), 3.0)
    with autograd.train_mode():
        block(x)
        block(x)
    with autograd.predict_mode():
        np.testing.assert_array_equal(block(x).asnumpy(), np.full((2, 3), 4.0))
    with autograd.train_mode():
        np.testing.assert_array_equal(block(x).asnumpy(), np.full((2, 3), 6.0))
    assert len(block._cached_graphs) == 2


def test_same_shape_other_dtype_traces_its_own_graph():
    block = _ModeBranch()
    block.hybridize()
    x = mx.nd.ones((2, 3))
    block(x)
    block(x)
    out = block(x.astype("float64"))
    assert out.dtype == np.float64 and len(block._cached_graphs) == 2


def test_hybridize_again_after_calls_uses_the_new_graphs():
    net, x = _net(), _x()
    net.hybridize()
    net(x)
    net(x)
    net.hybridize(static_alloc=True)          # clears the traced graphs
    net(x)
    net(x)
    (graph,) = net._cached_graphs.values()
    assert graph.static_alloc and graph.calls == 2


def test_new_shape_and_dtype_after_calls():
    net, x = _net(), _x()
    net.hybridize()
    net(x)
    net(x)
    small = _x(2)
    np.testing.assert_allclose(net(small).asnumpy(), _eager(net, small), rtol=1e-5, atol=1e-6)
    net.cast("float64")
    x64 = _x(5, np.float64)
    out = net(x64)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy(), _eager(net, x64), rtol=1e-12)


def test_equal_contexts_of_other_identity_share_the_graph_and_the_index_stays_bounded():
    net, x = _net(), _x()
    net.hybridize()
    want = net(x).asnumpy()
    for _ in range(cached_graph.CallIndex.LIMIT + 10):
        ctx = mx.Context(x.context.device_type, x.context.device_id)     # x's, as a new Context object each time
        y = mx.nd.array(x.asnumpy(), ctx=ctx)
        np.testing.assert_allclose(net(y).asnumpy(), want, rtol=1e-6)
    assert len(net._cached_graphs) == 1
    assert len(net._call_index) <= cached_graph.CallIndex.LIMIT


def test_op_hook_and_check_mode_registered_after_calls():
    net, x = _net(), _x()
    net.hybridize()
    net(x)
    net(x)
    names = []
    net.register_op_hook(lambda name, op, arr: names.append(name))
    net(x)
    assert names, "the op hook did not fire"
    net = _net()                                # (an op hook takes precedence over check mode)
    net.hybridize()
    net(x)
    net(x)
    net.hybridize(check=True, clear=False)
    checked = net._checks_left
    net(x)
    assert net._checks_left == checked - 1, "check mode did not run"


def test_grad_req_add_and_null_after_calls():
    net, x = _net(), _x()
    net.hybridize()
    weight = net[0].weight

    def backward():
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()

    backward()
    once = weight.grad().asnumpy().copy()
    net.collect_params().setattr("grad_req", "add")
    net.collect_params().zero_grad()
    backward()
    backward()
    np.testing.assert_allclose(weight.grad().asnumpy(), 2 * once, rtol=1e-5, atol=1e-6)
    weight.grad_req = "null"
    backward()                                  # another gradient mask; the bias still gets gradients
    assert net[0].bias.grad() is not None


def test_retain_graph_and_create_graph_through_a_fast_call():
    net, x = _net(), _x()
    net.hybridize()
    net(x)
    net(x)
    x.attach_grad()
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward(retain_graph=True)
    first = x.grad.asnumpy().copy()
    loss.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), first, rtol=1e-6)
    with autograd.record():
        y = (net(x) ** 2).sum()
        (gx,) = autograd.grad(y, [x], create_graph=True)
        z = (gx * gx).sum()
    z.backward()
    got = x.grad.asnumpy().copy()
    net.hybridize(active=False, clear=False)
    with autograd.record():
        y = (net(x) ** 2).sum()
        (gx,) = autograd.grad(y, [x], create_graph=True)
        z = (gx * gx).sum()
    z.backward()
    np.testing.assert_allclose(got, x.grad.asnumpy(), rtol=1e-4, atol=1e-6)


def test_two_losses_on_one_net():
    net, x = _net(), _x()
    label = mx.nd.array([0, 1, 0, 1, 1])
    losses = [gluon.loss.SoftmaxCrossEntropyLoss(), gluon.loss.L2Loss()]
    for loss in losses:
        loss.hybridize()
    got = []
    for _ in range(2):
        for loss in losses:
            with autograd.record():
                value = loss(net(x), label if isinstance(loss, gluon.loss.SoftmaxCrossEntropyLoss)
                             else mx.nd.zeros((5, 2)))
            value.backward()
            got.append(net[0].weight.grad().asnumpy().copy())
    np.testing.assert_allclose(got[0], got[2], rtol=1e-6)
    np.testing.assert_allclose(got[1], got[3], rtol=1e-6)
    assert not np.allclose(got[0], got[1])


def test_a_copied_index_starts_empty():
    index = cached_graph.CallIndex({}, 3)
    index[("key",)] = (lambda: None, ())          # not picklable: a copy must not try
    for copied in (copy.deepcopy(index), pickle.loads(pickle.dumps(index))):
        assert isinstance(copied, cached_graph.CallIndex) and not copied and copied.graphs is None


def test_a_child_runs_eagerly_inside_its_parents_check_mode_call():
    # check mode's reference run is eager all the way down: a child's known call must not run compiled there
    inner = _net()
    outer = nn.HybridSequential()
    outer.add(inner)
    outer.hybridize(check=True)
    x = _x()
    inner(x)
    inner(x)
    (graph,) = inner._cached_graphs.values()
    calls = graph.calls
    outer(x)
    assert graph.calls == calls


def test_clearing_the_graphs_drops_the_index():
    # the index must not keep the old graphs (and their buffers) alive after hybridize() cleared them
    net, x = _net(), _x()
    net.hybridize()
    net(x)
    net(x)
    net.hybridize()
    assert net._call_index is None
    net(x)
    net.add(nn.Dense(2, in_units=2))
    assert net._call_index is None
