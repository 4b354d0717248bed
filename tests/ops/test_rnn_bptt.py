"""The RNN op's first-order gradient: the hand-derived BPTT over the forward's saved activations (`_rnn_bwd`,
mixnet/ops/_rnn_fast.py) against the composite re-run (what create_graph=True uses), against finite differences,
Numba step loops against their numpy twins, padding invariance of the gradients (zero / NaN / huge padding), and
that a training step uses the saved activations instead of running the forward again."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mixnet as mx
from mixnet import autograd, gluon
from mixnet.ops import _fastpath, _rnn_fast
from mixnet.ops import rnn as rnn_op
from mixnet.ops.rnn import param_size

_OPTIONS = ("layers", "bidir", "lens", "proj", "clip", "clip_nan", "dropout")


def _make(mode, T, N, I, H, opts, dtype="float32", seed=0):
    rng = np.random.RandomState(seed)
    L = 2 if "layers" in opts or "dropout" in opts else 1
    bidir = "bidir" in opts
    D = 2 if bidir else 1
    proj = 2 if "proj" in opts and mode == "lstm" else None
    R = proj or H
    attrs = dict(state_size=H, num_layers=L, bidirectional=bidir, mode=mode, state_outputs=True,
                 projection_size=proj)
    if mode == "lstm" and ("clip" in opts or "clip_nan" in opts):
        attrs.update(lstm_state_clip_min=-0.25, lstm_state_clip_max=0.3, lstm_state_clip_nan="clip_nan" in opts)
    if "dropout" in opts:
        attrs["p"] = 0.4
    arrays = [rng.uniform(-1, 1, (T, N, I)),
              rng.uniform(-0.6, 0.6, param_size(mode, L, I, H, bidir, proj)),
              rng.uniform(-0.4, 0.4, (L * D, N, R))]
    if mode == "lstm":
        arrays.append(rng.uniform(-0.4, 0.4, (L * D, N, H)))
    arrays = [mx.nd.array(a, dtype=dtype) for a in arrays]
    if "lens" in opts:
        lens = rng.randint(0, T + 1, N)
        lens[:1] = T
        if "short" in opts:              # the last steps are padding for every sequence (the forward skips them)
            lens = np.minimum(lens, max(T - 2, 0))
        attrs["use_sequence_length"] = True
        arrays.append(mx.nd.array(lens, dtype=dtype))
    return arrays, attrs


def _heads(outs, seed=1):
    rng = np.random.RandomState(seed)
    return [mx.nd.array(rng.uniform(-1, 1, o.shape), dtype=o.dtype) for o in outs]


def _grads(arrays, attrs, heads=None, create_graph=False):
    """(outputs, gradients of sum(outputs * heads) w.r.t. data, parameters, states) in training mode."""
    n_diff = 4 if attrs["mode"] == "lstm" else 3
    wrt = arrays[:n_diff]
    for x in wrt:
        x.attach_grad()
    mx.random.seed(7)
    with autograd.record():
        outs = mx.nd.RNN(*arrays, **attrs)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        heads = heads or _heads(outs)
        loss = sum((o * h).sum() for o, h in zip(outs, heads))
    if create_graph:
        grads = autograd.grad(loss, wrt, create_graph=True)
    else:
        loss.backward()
        grads = [x.grad for x in wrt]
    return [o.asnumpy() for o in outs], [g.asnumpy() for g in grads]


def _close(a, b, rtol=2e-5, atol=2e-6):
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


CONFIGS = [(mode, opts) for mode in ("lstm", "gru", "rnn_tanh", "rnn_relu")
           for opts in ((), ("layers", "bidir"), ("lens",), ("lens", "bidir", "layers"), ("dropout", "bidir"))] + [
    ("lstm", ("proj",)), ("lstm", ("proj", "bidir", "layers", "lens")), ("lstm", ("clip",)),
    ("lstm", ("clip_nan", "lens", "bidir")), ("lstm", ("clip", "proj", "dropout")),
    ("lstm", ("lens", "short", "proj", "bidir", "layers")), ("gru", ("lens", "short", "layers", "bidir")),
    ("rnn_relu", ("lens", "short")), ("rnn_tanh", ("lens", "short", "bidir"))]


@pytest.mark.parametrize("mode,opts", CONFIGS, ids=lambda v: v if isinstance(v, str) else "-".join(v) or "plain")
def test_bptt_matches_composite(mode, opts):
    arrays, attrs = _make(mode, 5, 3, 3, 4, opts)
    out_fast, g_fast = _grads(arrays, attrs)
    out_comp, g_comp = _grads(arrays, attrs, create_graph=True)
    _close(out_fast, out_comp, 0, 0)
    _close(g_fast, g_comp)


@pytest.mark.parametrize("mode,opts", [("lstm", ("lens", "bidir", "layers", "proj")), ("lstm", ("clip",)),
                                       ("lstm", ("lens", "short", "clip")),
                                       ("gru", ("lens", "bidir", "layers")), ("rnn_tanh", ("bidir",))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numba_steps_match_numpy_steps(mode, opts, dtype, monkeypatch):
    arrays, attrs = _make(mode, 6, 4, 3, 5, opts, dtype=dtype)
    _grads(arrays, attrs)
    _fastpath.wait_compiled()
    assert _fastpath.numba_kernels(np, arrays[0].asnumpy()) is not None
    out_nb, g_nb = _grads(arrays, attrs)
    monkeypatch.setattr(_rnn_fast, "KERNELS", False)
    out_np, g_np = _grads(arrays, attrs)
    tol = (2e-6, 2e-6) if dtype == "float32" else (1e-12, 1e-13)
    _close(out_nb, out_np, *tol)
    _close(g_nb, g_np, 10 * tol[0], 10 * tol[1])


@settings(max_examples=8, deadline=None)
@given(mode=st.sampled_from(["lstm", "gru", "rnn_tanh", "rnn_relu"]),
       opts=st.sets(st.sampled_from(_OPTIONS[:5] + ("short",)), max_size=3),
       T=st.integers(1, 4), N=st.integers(1, 3), seed=st.integers(0, 100))
def test_bptt_matches_finite_differences(mode, opts, T, N, seed):
    """float64: the fused gradient of sum(outputs * heads) against central differences, every input entry."""
    arrays, attrs = _make(mode, T, N, 2, 3, opts, dtype="float64", seed=seed)
    _, grads = _grads(arrays, attrs)
    outs = mx.nd.RNN(*arrays, **attrs)
    heads = [h.asnumpy() for h in _heads(outs)]

    def f(values):
        with autograd.predict_mode():
            res = mx.nd.RNN(*[mx.nd.array(v, dtype="float64") for v in values], **attrs)
        return sum(float((r.asnumpy() * h).sum()) for r, h in zip(res, heads))

    values = [a.asnumpy() for a in arrays]
    eps = 1e-6
    for k, g in enumerate(grads):
        num = np.zeros_like(g)
        for i in range(g.size):
            v = [x.copy() for x in values]
            v[k].reshape(-1)[i] += eps
            up = f(v)
            v[k].reshape(-1)[i] -= 2 * eps
            num.reshape(-1)[i] = (up - f(v)) / (2 * eps)
        np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("pad", [0.0, np.nan, 1e30])
@pytest.mark.parametrize("hybrid", [False, True])
def test_gradients_do_not_depend_on_padding(mode, pad, hybrid):
    """Layer outputs and gradients (parameters, valid data) are the same with 2 or 5 padded steps of zeros, NaN
    or huge values; padded data gets an exact zero gradient."""
    T, N, I, H = 4, 3, 3, 4
    lens = np.array([4, 2, 0])
    layer = {"lstm": gluon.rnn.LSTM, "gru": gluon.rnn.GRU, "rnn_tanh": gluon.rnn.RNN,
             "rnn_relu": lambda *a, **k: gluon.rnn.RNN(*a, activation="relu", **k)}[mode](
        H, num_layers=2, bidirectional=True, input_size=I, use_sequence_length=True)
    layer.initialize(mx.init.Uniform(0.5))
    if hybrid:
        layer.hybridize()
    base = np.random.RandomState(3).uniform(-1, 1, (T, N, I))
    results = []
    for extra in (2, 5):
        x = np.full((T + extra, N, I), pad)
        x[:T] = base
        for n, ln in enumerate(lens):
            x[ln:, n] = pad
        data = mx.nd.array(x)
        data.attach_grad()
        with autograd.record():
            out = layer(data, sequence_length=mx.nd.array(lens))
            loss = (out[:T] * mx.nd.array(np.cos(np.arange(T * N * 2 * H)).reshape(T, N, 2 * H))).sum()
        loss.backward()
        dx = data.grad.asnumpy()
        for n, ln in enumerate(lens):
            assert (dx[ln:, n] == 0).all()
        results.append([out.asnumpy()[:T], dx[:T]] + [p.grad().asnumpy() for p in layer.collect_params().values()])
    for a, b in zip(*results):
        assert np.isfinite(a).all()
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _count_forwards(monkeypatch):
    calls = []
    real = _rnn_fast.forward

    def counting(*args, **kwargs):
        calls.append(args[-1])           # save
        return real(*args, **kwargs)
    monkeypatch.setattr(_rnn_fast, "forward", counting)
    return calls


@pytest.mark.parametrize("hybrid", [False, True, "static_alloc"])
def test_training_step_uses_the_saved_activations(hybrid, monkeypatch):
    layer = gluon.rnn.LSTM(4, num_layers=2, input_size=3)
    layer.initialize()
    if hybrid:
        layer.hybridize(static_alloc=hybrid == "static_alloc")
    x = mx.nd.array(np.random.uniform(-1, 1, (5, 2, 3)))
    with autograd.record():
        layer(x).backward()              # the first hybridized call traces and compiles
    calls = _count_forwards(monkeypatch)
    for _ in range(2):
        with autograd.record():
            out = layer(x)
        out.backward()
    assert calls == [True, True]         # one forward per step, saving; the backward found what it saved
    with autograd.predict_mode():
        layer(x)
    assert calls[-1] is False            # inference saves nothing


def test_backward_without_the_saved_activations_recomputes_them():
    arrays, attrs = _make("lstm", 4, 2, 3, 3, ("lens", "bidir", "layers"))
    _, expected = _grads(arrays, attrs)
    n_diff = 4
    for x in arrays[:n_diff]:
        x.attach_grad()
    with autograd.record():
        outs = mx.nd.RNN(*arrays, **attrs)
        loss = sum((o * h).sum() for o, h in zip(outs, _heads(outs)))
    rnn_op._RESERVES._entries.clear()
    loss.backward()
    _close([x.grad.asnumpy() for x in arrays[:n_diff]], expected, 0, 0)


def test_second_order_gradient_still_uses_the_composite():
    """create_graph=True: the gradient is differentiable again (the fused BPTT is first order only)."""
    arrays, attrs = _make("gru", 3, 2, 2, 3, ("bidir",), dtype="float64")
    data = arrays[0]
    data.attach_grad()
    with autograd.record():
        out = mx.nd.RNN(*arrays, **attrs)[0]
        (g,) = autograd.grad((out * out).sum(), [data], create_graph=True)
        z = (g * g).sum()
    z.backward()
    assert np.isfinite(data.grad.asnumpy()).all() and np.abs(data.grad.asnumpy()).sum() > 0


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_empty_batch(mode):
    arrays, attrs = _make(mode, 3, 0, 2, 3, ("bidir", "layers", "lens") + (("proj",) if mode == "lstm" else ()))
    outs, grads = _grads(arrays, attrs)
    assert outs[0].shape == (3, 0, 2 * (attrs["projection_size"] or 3))
    assert grads[1].shape == arrays[1].shape and not grads[1].any()
