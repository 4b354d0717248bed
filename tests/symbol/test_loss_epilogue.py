"""The epilogue pass on a classifier's loss (mixnet/symbol/epilogue.py): pick(log_softmax(x)) -> _log_softmax_pick,
and the backward its rules trace to -> _log_softmax_pick_bwd (ops in mixnet/ops/nn_epilogue.py).

1. Where it fires: SoftmaxCrossEntropyLoss's training plans, forward and backward; not for a temperature, another
   axis, 3-d data, or a log_softmax that two picks read. A rule rewritten into another form leaves the results right.
2. A hybridized loss gives the eager losses and gradients, pass on and off, float32/float64, label (B,) and (B, 1).
3. The fused loops give what the two ops' own kernels give, bit for bit, on labels pick clips or wraps (negative,
   too large, fractional, NaN, infinite).
"""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, config
from mixnet.gluon import nn
from mixnet.ops import _fastpath, registry
from mixnet.symbol.epilogue import epilogue

UNFUSED = {"log_softmax", "pick", "_put_along_axis_add", "_log_softmax_bwd"}


def _ops(symbol):
    return {n.op.name for n in symbol._nodes() if n.op is not None}


def _types(data=(6, 4), label=(6,), dtype=np.float32):
    return {"x": data, "label": label}, {"x": dtype, "label": dtype}


# ---------------------------------------------------------------------------------------------------------
# 1. where the pass fires
def test_pick_of_log_softmax_becomes_one_node_with_both_values():
    x, label = mx.sym.Variable("x"), mx.sym.Variable("label")
    logp = mx.sym.log_softmax(x)
    both = mx.sym.Group([-mx.sym.pick(logp, label, axis=-1, keepdims=True), logp * 2])
    out = epilogue(both, *_types())
    assert "_log_softmax_pick" in _ops(out) and not {"log_softmax", "pick"} & _ops(out)


@pytest.mark.parametrize("case", ["temperature", "axis0", "3d", "two_picks", "index_from_logp"])
def test_other_forms_are_left_alone(case):
    x, label = mx.sym.Variable("x"), mx.sym.Variable("label")
    types = _types()
    if case == "temperature":
        y = mx.sym.pick(mx.sym.log_softmax(x, temperature=2.0), label)
    elif case == "axis0":
        y = mx.sym.pick(mx.sym.log_softmax(x, axis=0), label, axis=0)
        types = _types(label=(4,))
    elif case == "3d":
        y = mx.sym.pick(mx.sym.log_softmax(x), label)
        types = _types(data=(2, 3, 4), label=(2, 3))
    elif case == "two_picks":
        logp = mx.sym.log_softmax(x)
        y = mx.sym.pick(logp, label) + mx.sym.pick(logp, label * 0)
    else:                                    # the most likely class's log-probability: fusing would make a cycle
        logp = mx.sym.log_softmax(x)
        y = mx.sym.pick(logp, mx.sym.argmax(logp, axis=-1))
    assert "_log_softmax_pick" not in _ops(epilogue(y, *types))


def test_an_index_computed_from_logp_runs_right_hybridized():
    class MostLikely(nn.HybridBlock):
        def hybrid_forward(self, F, x):
            logp = F.log_softmax(x)
            return F.pick(logp, F.argmax(logp, axis=-1))
    x = mx.nd.array(np.random.default_rng(0).standard_normal((5, 4)))
    block = MostLikely()
    eager = block(x).asnumpy()
    block.hybridize()
    np.testing.assert_allclose(block(x).asnumpy(), eager, rtol=1e-6)
    z = x.asnumpy().astype(np.float64)
    logp = z - z.max(axis=1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(eager, logp.max(axis=1), rtol=1e-5)


def _classifier(dtype):
    mx.random.seed(5)
    net = nn.HybridSequential()
    net.add(nn.Dense(7, activation="tanh", in_units=5), nn.Dense(4, in_units=7))
    net.initialize(mx.init.Xavier())
    net.cast(dtype)
    return net


def _train(dtype, hybrid, label_shape=(6,), sparse=True):
    """Losses, the data gradient and the parameter gradients of two recorded calls; and the loss block."""
    net, loss_fn = _classifier(dtype), mx.gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=sparse)
    if hybrid:
        net.hybridize()
        loss_fn.hybridize()
    rng = np.random.default_rng(2)
    results = []
    for _ in range(2):
        x = mx.nd.array(rng.standard_normal((6, 5)), dtype=dtype)
        label = mx.nd.array(rng.integers(0, 4, size=label_shape), dtype=dtype)
        x.attach_grad()
        with autograd.record():
            loss = loss_fn(net(x), label)
        loss.backward()
        results.append([loss.asnumpy(), x.grad.asnumpy()] + [p.grad().asnumpy() for p in net.collect_params().values()])
    return results, loss_fn


def _training_ops(block):
    forward, backward = set(), set()
    for graph in block._cached_graphs.values():
        for plan in graph._training.values():
            forward |= _ops(plan.forward.symbol)
            backward |= _ops(plan.backward.symbol)
    return forward, backward


def test_the_gluon_loss_fuses_forward_and_backward():
    _, loss_fn = _train("float32", hybrid=True)
    forward, backward = _training_ops(loss_fn)
    assert "_log_softmax_pick" in forward and "_log_softmax_pick_bwd" in backward
    assert not UNFUSED & (forward | backward)


def test_a_pick_rule_rewritten_in_another_form_gives_the_same_results(monkeypatch):
    """pick's gradient written as a one-hot product instead of a scatter: the backward pattern traced from the rules
    changes with it, and whether or not the pass then fuses, the results are the eager ones."""
    pick = registry.get("pick")
    original = pick.grad

    def one_hot_rule(c, g):
        data, index = c.inputs
        if data.ndim != 2 or c.attrs["axis"] % 2 != 1:
            return original(c, g)
        hot = mx.nd.one_hot(mx.nd.Reshape(index, shape=(-1,)), depth=data.shape[1], dtype=data.dtype)
        return mx.nd.broadcast_mul(hot, mx.nd.Reshape(g, shape=(-1, 1))), None
    monkeypatch.setattr(pick, "grad", one_hot_rule)
    eager, _ = _train("float32", hybrid=False)
    hybrid, loss_fn = _train("float32", hybrid=True)
    _assert_close(hybrid, eager, "float32")
    assert "_put_along_axis_add" not in _training_ops(loss_fn)[1]


# ---------------------------------------------------------------------------------------------------------
# 2. results
def _assert_close(got, want, dtype):
    tol = 1e-5 if dtype == "float32" else 1e-12
    for g_call, w_call in zip(got, want):
        for g, w in zip(g_call, w_call):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("label_shape", [(6,), (6, 1)])
@pytest.mark.parametrize("flag", [True, False])
def test_hybridized_loss_equals_eager(dtype, label_shape, flag, monkeypatch):
    eager, _ = _train(dtype, hybrid=False, label_shape=label_shape)
    monkeypatch.setattr(config, "EPILOGUE", flag)
    hybrid, loss_fn = _train(dtype, hybrid=True, label_shape=label_shape)
    _assert_close(hybrid, eager, dtype)
    forward, _ = _training_ops(loss_fn)
    assert ("_log_softmax_pick" in forward) == flag


def test_dense_labels_take_another_path_unchanged():
    eager, _ = _train("float32", hybrid=False, label_shape=(6, 4), sparse=False)
    hybrid, loss_fn = _train("float32", hybrid=True, label_shape=(6, 4), sparse=False)
    _assert_close(hybrid, eager, "float32")
    assert "_log_softmax_pick" not in _training_ops(loss_fn)[0]


# ---------------------------------------------------------------------------------------------------------
# 3. the fused loops against the ops' own kernels
LABELS = [0, 3, -1, 7, 2.7, -0.5, np.nan, np.inf, -np.inf, 1e30, 2, 1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_fused_loops_equal_the_two_kernels_bit_for_bit(dtype, mode, keepdims):
    rng = np.random.default_rng(4)
    data = rng.standard_normal((len(LABELS), 5)).astype(dtype)
    label = np.array(LABELS, dtype)
    head = rng.standard_normal(len(LABELS)).astype(dtype)
    head[0] = -0.0
    if keepdims:
        head = head.reshape(-1, 1)
    fused_fwd, fused_bwd = registry.get("_log_softmax_pick"), registry.get("_log_softmax_pick_bwd")
    log_softmax, pick = registry.get("log_softmax"), registry.get("pick")
    scatter, log_softmax_bwd = registry.get("_put_along_axis_add"), registry.get("_log_softmax_bwd")
    assert _fastpath.numba_kernels(np, data) is not None
    with np.errstate(invalid="ignore"):
        picked, logp = fused_fwd.kernel(np, data, label, keepdims=keepdims, mode=mode)
        want_logp = log_softmax.kernel(np, data, axis=-1, temperature=None, dtype=None, use_length=False)
        want_picked = pick.kernel(np, want_logp, label, axis=-1, keepdims=keepdims, mode=mode)
        dx = fused_bwd.kernel(np, logp, label, head, mode=mode)
        spread = scatter.kernel(np, head.reshape(-1, 1), label.reshape(-1, 1), shape=data.shape, axis=1, mode=mode)
        want_dx = log_softmax_bwd.kernel(np, want_logp, spread, axis=1, temperature=None)
    np.testing.assert_array_equal(logp, want_logp)
    np.testing.assert_array_equal(picked, want_picked)
    np.testing.assert_array_equal(dx, want_dx)
    assert picked.shape == want_picked.shape and np.signbit(dx).tolist() == np.signbit(want_dx).tolist()
