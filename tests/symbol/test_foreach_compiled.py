"""`_foreach` run compiled (mixnet/symbol/loop.py): the body as one compiled plan per step, the first-order
gradient `_foreach_bwd` as the body's compiled backward per step in reverse. Hybridized vs eager (outputs, input,
state and parameter gradients), vs numpy references, bodies whose state is not elementwise, nested foreach, a
body closing over a parameter, the fallback when the forward saved nothing, and create_graph."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon, nd
from mixnet.ops import registry

T, N, I, H = 5, 3, 4, 6
RTOL, ATOL = 1e-4, 1e-5


def _data(seed=0, shape=(T, N, I)):
    return nd.array(np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32))


class CellLoop(gluon.HybridBlock):
    """F.contrib.foreach over a gluon cell, begin states given as inputs (Keras-MXNet's unroll=False)."""

    def __init__(self, cell, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.cell = cell

    def hybrid_forward(self, F, x, *states):
        outs, last = F.contrib.foreach(lambda xt, s: self.cell(xt, s), x, list(states))
        return [outs] + list(last)


class Custom(gluon.HybridBlock):
    """State that is not elementwise: a matrix product, a softmax over the state and a concat/slice round trip;
    the body reads a parameter it closes over."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.w = self.params.get("w", shape=(H, H), init=mx.init.Uniform(0.5))
            self.proj = gluon.nn.Dense(H, in_units=I, flatten=False)

    def hybrid_forward(self, F, x, h0, w):
        def body(xt, states):
            h, acc = states
            mixed = F.softmax(F.dot(h, w), axis=1) * F.tanh(self.proj(xt))
            both = F.concat(mixed, acc, dim=1)
            new_acc = F.slice_axis(both, axis=1, begin=0, end=H) + F.slice_axis(both, axis=1, begin=H, end=2 * H)
            return [mixed.sum(axis=1), new_acc], [mixed, new_acc]
        (sums, accs), (h, acc) = F.contrib.foreach(body, x, [h0, h0 * 0])
        return sums, accs, h, acc


class Nested(gluon.HybridBlock):
    """A foreach over time whose body runs a foreach over the feature axis."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.w = self.params.get("w", shape=(N, N), init=mx.init.Uniform(0.5))

    def hybrid_forward(self, F, x, h0, w):
        def outer(xt, states):
            def inner(col, s):
                v = F.tanh(F.dot(w, s[0]) + col)
                return v, [v]
            cols, (last,) = F.contrib.foreach(inner, F.transpose(xt), [states[0]])
            return F.transpose(cols), [last * 0.5 + states[0]]
        outs, (h,) = F.contrib.foreach(outer, x, [h0])
        return outs, h


def _pair(make, args):
    """Two blocks with the same parameters, the second hybridized."""
    eager, hybrid = make(), make()
    eager.initialize(mx.init.Uniform(0.5))
    hybrid.initialize()
    eager(*args)
    hybrid(*args)
    for p, q in zip(eager.collect_params().values(), hybrid.collect_params().values()):
        q.set_data(p.data())
    hybrid.hybridize()
    return eager, hybrid


def _run(block, args, train=True):
    args = [a.copy() for a in args]
    for a in args:
        a.attach_grad()
    with autograd.record(train_mode=train):
        outs = block(*args)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        loss = sum(((o * (k + 1.5)) ** 2).sum() for k, o in enumerate(outs))
    loss.backward()
    grads = [p.grad().asnumpy() for p in block.collect_params().values() if p.grad_req != "null"]
    return [o.asnumpy() for o in outs], [a.grad.asnumpy() for a in args], grads


def _assert_same(got, want):
    for g, w in zip(got, want):
        assert len(g) == len(w)
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL * max(1.0, float(np.abs(b).max())))


def _ops(block):
    return {n.op.name for n in block._last_graph.symbol._nodes() if n.op is not None}


CELLS = {
    "lstm": (lambda: CellLoop(gluon.rnn.LSTMCell(H, input_size=I)), 2),
    "gru": (lambda: CellLoop(gluon.rnn.GRUCell(H, input_size=I)), 1),
    "rnn": (lambda: CellLoop(gluon.rnn.RNNCell(H, input_size=I, activation="tanh")), 1),
}


@pytest.mark.parametrize("name", sorted(CELLS))
def test_cell_bodies_hybridized_equal_eager(name, monkeypatch):
    make, n_states = CELLS[name]
    args = [_data()] + [_data(k + 1, (N, H)) for k in range(n_states)]
    bwd = registry.get("_foreach_bwd")
    calls = []
    kernel = bwd.kernel
    monkeypatch.setattr(bwd, "kernel", lambda *a, **k: calls.append(1) or kernel(*a, **k))
    eager, hybrid = _pair(make, args)
    for train in (True, False):
        _assert_same(_run(hybrid, args, train), _run(eager, args, train))
    assert "_foreach" in _ops(hybrid)
    assert calls, "the hybridized backward did not run the compiled per-step backward"
    # a second call reuses the compiled body (and its saved values are found by the backward)
    _assert_same(_run(hybrid, args), _run(eager, args))


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_lstm_body_matches_numpy():
    block = CellLoop(gluon.rnn.LSTMCell(H, input_size=I))
    block.initialize(mx.init.Uniform(0.5))
    block.hybridize()
    x, h0, c0 = _data(), _data(1, (N, H)), _data(2, (N, H))
    outs, h, c = [o.asnumpy() for o in block(x, h0, c0)]
    p = {k.split("_", 1)[1]: v.data().asnumpy() for k, v in block.cell.collect_params().items()}
    hn, cn = h0.asnumpy(), c0.asnumpy()
    want = []
    for t in range(T):
        g = x.asnumpy()[t] @ p["i2h_weight"].T + p["i2h_bias"] + hn @ p["h2h_weight"].T + p["h2h_bias"]
        i, f, z, o = np.split(g, 4, axis=1)
        cn = _sigmoid(f) * cn + _sigmoid(i) * np.tanh(z)
        hn = _sigmoid(o) * np.tanh(cn)
        want.append(hn)
    np.testing.assert_allclose(outs, np.stack(want), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h, hn, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c, cn, rtol=1e-4, atol=1e-5)


def test_gradients_match_finite_differences():
    block = CellLoop(gluon.rnn.GRUCell(2, input_size=2))
    block.initialize(mx.init.Uniform(0.5))
    block.cast("float64")
    block.hybridize()
    r = np.random.RandomState(3)
    x, h0 = r.uniform(-1, 1, (3, 2, 2)), r.uniform(-1, 1, (2, 2))

    def loss(xv):
        outs, _ = block(nd.array(xv, dtype="float64"), nd.array(h0, dtype="float64"))
        return float((outs ** 2).sum().asscalar())

    xs = nd.array(x, dtype="float64")
    xs.attach_grad()
    with autograd.record():
        outs, _ = block(xs, nd.array(h0, dtype="float64"))
        total = (outs ** 2).sum()
    total.backward()
    numeric = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += 1e-6
        down[idx] -= 1e-6
        numeric[idx] = (loss(up) - loss(down)) / 2e-6
    np.testing.assert_allclose(xs.grad.asnumpy(), numeric, rtol=1e-5, atol=1e-7)


def test_state_that_is_not_elementwise_and_a_closed_over_parameter():
    args = [_data(), _data(1, (N, H))]
    eager, hybrid = _pair(Custom, args)
    for train in (True, False):
        _assert_same(_run(hybrid, args, train), _run(eager, args, train))


def test_nested_foreach():
    args = [_data(0, (T, N, 2)), _data(1, (N,))]
    eager, hybrid = _pair(Nested, args)
    _assert_same(_run(hybrid, args), _run(eager, args))


def test_backward_without_saved_forward_runs_it_again():
    """_foreach_bwd on a forward that ran without recording (nothing saved): the same gradients."""
    x, h, w = mx.sym.var("x"), mx.sym.var("h"), mx.sym.var("w")
    outs, (last,) = mx.sym.contrib.foreach(
        lambda xt, s: (mx.sym.tanh(mx.sym.dot(s[0], w) + xt), [mx.sym.tanh(mx.sym.dot(s[0], w) + xt)]), x, [h])
    node = outs._outputs[0][0]
    values = {"x": _data(0, (T, N, H)), "h": _data(1, (N, H)), "w": _data(2, (H, H))}
    ordered = [values[src.name].asnumpy() for src, _ in node.inputs]
    forward = registry.get("_foreach").kernel(np, *ordered, **node.attrs)     # not recording: nothing saved
    heads = [np.ones_like(forward[0]), np.ones_like(forward[1])]
    got = registry.get("_foreach_bwd").kernel(np, *ordered, forward[0], *heads, **node.attrs)
    leaves = [values[src.name].copy() for src, _ in node.inputs]
    for leaf in leaves:
        leaf.attach_grad()
    with autograd.record():
        res = mx.nd.contrib.foreach(
            lambda xt, s: (nd.tanh(nd.dot(s[0], leaves[2]) + xt), [nd.tanh(nd.dot(s[0], leaves[2]) + xt)]),
            leaves[0], [leaves[1]])
        total = res[0].sum() + res[1][0].sum()
    total.backward()
    names = [src.name for src, _ in node.inputs]
    assert names == ["x", "h", "w"]
    for g, leaf in zip(got, leaves):
        np.testing.assert_allclose(g, leaf.grad.asnumpy(), rtol=1e-5, atol=1e-6)


def test_executor_backward_equals_eager():
    x, h, w = mx.sym.var("x"), mx.sym.var("h"), mx.sym.var("w")
    outs, (last,) = mx.sym.contrib.foreach(lambda xt, s: (mx.sym.tanh(mx.sym.dot(s[0], w) + xt) * 2,
                                                          [mx.sym.tanh(mx.sym.dot(s[0], w) + xt)]), x, [h])
    group = mx.sym.Group([outs, last])
    values = {"x": _data(0, (T, N, H)), "h": _data(1, (N, H)), "w": _data(2, (H, H))}
    exe = group.bind(mx.cpu(), {k: v.copy() for k, v in values.items()},
                     args_grad={k: nd.zeros(v.shape) for k, v in values.items()})
    exe.forward(is_train=True)
    exe.backward([nd.ones((T, N, H)), nd.ones((N, H))])
    leaves = {k: v.copy() for k, v in values.items()}
    for leaf in leaves.values():
        leaf.attach_grad()
    with autograd.record():
        def body(xt, s):
            v = nd.tanh(nd.dot(s[0], leaves["w"]) + xt)
            return v * 2, [v]
        o, (lst,) = mx.nd.contrib.foreach(body, leaves["x"], [leaves["h"]])
        total = o.sum() + lst.sum()
    total.backward()
    for k, leaf in leaves.items():
        np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), leaf.grad.asnumpy(), rtol=1e-5, atol=1e-6)


def test_create_graph_through_a_hybridized_foreach():
    """Second order: the generic path (the steps re-run on the tape) gives eager's numbers."""
    make, _ = CELLS["rnn"]
    args = [_data(), _data(1, (N, H))]
    eager, hybrid = _pair(make, args)
    results = []
    for block in (eager, hybrid):
        x = args[0].copy()
        x.attach_grad()
        with autograd.record():
            outs = block(x, args[1])[0]
            (gx,) = autograd.grad((outs ** 2).sum(), [x], create_graph=True)
            second = (gx ** 2).sum()
        second.backward()
        results.append((gx.asnumpy(), x.grad.asnumpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
