"""The fused RNN op against MXNet 1.9.1, and the semantics mixnet adds (sequence_length for every mode and both
directions, dropout replayed in the gradient, state clipping), plus `_rnn_param_concat` and `param_size`."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd
from mixnet.ops.rnn import param_size

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _inputs(mode, T, N, I, H, L, bidir):
    """Deterministic inputs (the same formulas generated MXNet's values below)."""
    D = 2 if bidir else 1
    data = (np.sin(np.arange(T * N * I) * 0.7 + 0.3) * 0.8).reshape(T, N, I).astype(np.float32)
    params = (np.cos(np.arange(param_size(mode, L, I, H, bidir)) * 0.37) * 0.5).astype(np.float32)
    h0 = (np.sin(np.arange(L * D * N * H) * 1.3) * 0.3).reshape(L * D, N, H).astype(np.float32)
    c0 = (np.cos(np.arange(L * D * N * H) * 0.9) * 0.3).reshape(L * D, N, H).astype(np.float32)
    return data, params, h0, c0


# Values computed with MXNet 1.9.1 (CPU, oneDNN build) by:
#   args = [data, params, h0(, c0)] as above; data and params attach_grad(); in autograd.record():
#   outs = mx.nd.RNN(*args, state_size=H, num_layers=L, bidirectional=bidir, mode=mode, state_outputs=True)
#   loss = (outs[0] * cos(0.5 * arange(outs[0].size)).reshape(outs[0].shape)).sum() + 0.5 * outs[1].sum()
#   loss.backward(); dx = data.grad; dparams_proj[k-1] = params.grad @ cos(0.1 * k * arange(size)), k = 1..4.
# Key: (mode, T, N, I, H, num_layers, bidirectional).
MXNET_CASES = [
    (("lstm", 3, 2, 3, 2, 2, False), dict(
        out0=[-0.05418633, -0.0001945618, 0.02985599, 0.0871674, -0.03227123, 0.00128226, 0.01690388, 0.061308,
              -0.02597034, -0.004096542, -0.004713909, 0.02807386],
        out1=[0.009950838, 0.01784942, 0.00615882, -0.04235046, -0.02597034, -0.004096542, -0.004713909,
              0.02807386],
        out2=[0.01794273, 0.03190598, 0.01755137, -0.07695809, -0.05179459, -0.00805233, -0.009260824,
              0.05450362],
        dx=[0.00792808, 0.01950154, 0.02843556, 0.02281889, 0.04010949, 0.05197146, -0.0005684745, 0.01317429,
            0.02513397, 0.03277233, 0.05557976, 0.07086471, 0.0263369, 0.06372771, 0.09249327, 0.008327617,
            0.04451352, 0.07467471],
        dparams_proj=[-0.901573, -0.746412, 0.162933, 0.070554])),
    (("lstm", 3, 2, 3, 2, 2, True), dict(
        out0=[-0.03415392, 0.01634953, -0.08462828, -0.01924853, -0.02621771, -0.06007091, 0.009090554,
              0.02176997, -0.0279079, 0.003628161, -0.04646805, -0.01112426, -0.03359517, -0.006733001, 0.01719351,
              0.02775007, -0.02352543, 0.01758896, -0.06953522, 0.01582505, -0.02305964, -0.01174355, 0.07098725,
              0.03562221],
        out1=[0.05014353, 0.0535645, 0.03008515, -0.01517054, -0.0212341, 0.01332066, 0.0430759, 0.04846971,
              -0.02352543, 0.01758896, -0.02305964, -0.01174355, -0.08462828, -0.01924853, 0.009090554, 0.02176997],
        out2=[0.08842339, 0.09521586, 0.08259763, -0.02726529, -0.0627549, 0.03001, 0.0839273, 0.101867,
              -0.04544755, 0.03461536, -0.0451837, -0.02205478, -0.1571458, -0.03686407, 0.01818622, 0.04343832],
        dx=[0.03593737, 0.01493498, -0.008088789, 0.05949964, 0.04658472, 0.02736478, 0.005896445, 0.001358425,
            -0.003363453, 0.04725964, 0.04961573, 0.04525657, 0.03147245, 0.06173657, 0.08364493, 0.03100672,
            0.04277089, 0.04874623],
        dparams_proj=[0.058824, 0.013289, -0.082789, -0.065457])),
    (("gru", 3, 2, 3, 2, 2, False), dict(
        out0=[-0.1827321, -0.08484066, 0.2633814, 0.1823173, -0.09755561, -0.01872078, 0.2214574, 0.09808953,
              -0.01415109, 0.08506767, 0.2087361, 0.155385],
        out1=[-0.3943115, -0.2832417, -0.2426937, -0.2432958, -0.01415109, 0.08506767, 0.2087361, 0.155385],
        dx=[-0.003284027, -0.001525756, 0.0004390179, -0.002295013, -0.0004352744, 0.001483377, -0.04918103,
            -0.02061604, 0.01073923, 0.01987723, 0.04206615, 0.05856161, 0.05048735, 0.1031367, 0.1418269,
            -0.03219546, -0.009046635, 0.01532661],
        dparams_proj=[2.297292, 1.022608, -0.056183, -0.011809])),
    (("gru", 3, 2, 3, 2, 2, True), dict(
        out0=[-0.4581769, -0.2378929, -0.09032682, 0.1511666, -0.2525429, -0.1632736, -0.09652749, 0.1050564,
              -0.5506677, -0.1565035, -0.01188279, 0.08994161, -0.4631441, -0.2203566, -0.1764613, 0.2305914,
              -0.4418451, -0.2383465, 0.04282863, -0.1600478, -0.5666881, -0.1350879, -0.1557114, 0.2672869],
        out1=[0.1087178, 0.1312775, 0.2571481, 0.1031176, 0.0305138, 0.1015062, 0.07488389, 0.04955768,
              -0.4418451, -0.2383465, -0.5666881, -0.1350879, -0.09032682, 0.1511666, -0.09652749, 0.1050564],
        dx=[-0.1379526, -0.09415003, -0.03760467, -0.1015948, -0.06452411, -0.01872039, -0.1708353, -0.1003234,
            -0.01623315, -0.03346511, -0.0008071437, 0.03196007, 0.04364306, 0.08577199, 0.1162921, -0.1296518,
            -0.05384355, 0.02925214],
        dparams_proj=[-1.818558, -2.232757, -0.789789, -1.107154])),
    (("rnn_tanh", 3, 2, 3, 2, 1, True), dict(
        out0=[0.5915534, -0.4063683, -0.9749979, -0.8290943, 0.2205943, -0.04862002, -0.9534373, -0.9411613,
              -0.6401772, -0.4769754, -0.8118293, -0.9570227, 0.6447409, -0.3543872, -0.9460502, -0.6694444, 0.5114,
              0.4412434, -0.8253295, -0.8241534, -0.6586601, -0.5174047, -0.148033, -0.7789819],
        out1=[0.5114, 0.4412434, -0.6586601, -0.5174047, -0.9749979, -0.8290943, -0.9534373, -0.9411613],
        dx=[0.6019493, 0.4415961, 0.2214749, -0.8143432, -0.5296321, -0.173238, -0.3059268, -0.2250901,
            -0.1137885, 0.4755616, 0.3322865, 0.144038, 0.2090107, 0.1309075, 0.03508671, -0.1296936, -0.07156518,
            -0.003750749],
        dparams_proj=[5.811894, 5.626185, 3.295231, 0.651701])),
]


def _run(mode, T, N, I, H, L, bidir, dtype=np.float32):
    data, params, h0, c0 = _inputs(mode, T, N, I, H, L, bidir)
    args = [mx.nd.array(data, dtype=dtype), mx.nd.array(params, dtype=dtype), mx.nd.array(h0, dtype=dtype)]
    if mode == "lstm":
        args.append(mx.nd.array(c0, dtype=dtype))
    for a in args[:2]:
        a.attach_grad()
    with autograd.record():
        outs = mx.nd.RNN(*args, state_size=H, num_layers=L, bidirectional=bidir, mode=mode, state_outputs=True)
        w = mx.nd.array(np.cos(np.arange(outs[0].size) * 0.5).reshape(outs[0].shape), dtype=dtype)
        loss = (outs[0] * w).sum() + outs[1].sum() * 0.5
    loss.backward()
    return outs, args


@pytest.mark.parametrize("key,want", MXNET_CASES, ids=[f"{k[0]}-L{k[5]}-{'bi' if k[6] else 'uni'}"
                                                      for k, _ in MXNET_CASES])
def test_rnn_matches_mxnet(key, want):
    outs, args = _run(*key)
    mode = key[0]
    assert len(outs) == (3 if mode == "lstm" else 2)
    for k, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy().ravel(), want[f"out{k}"], rtol=1e-4, atol=2e-6)
    np.testing.assert_allclose(args[0].grad.asnumpy().ravel(), want["dx"], rtol=1e-4, atol=2e-6)
    gp = args[1].grad.asnumpy().astype(np.float64)
    proj = [gp @ np.cos(np.arange(gp.size) * 0.1 * k) for k in range(1, 5)]
    np.testing.assert_allclose(proj, want["dparams_proj"], rtol=1e-4, atol=1e-5)


def test_output_count_and_shapes():
    x = mx.nd.ones((4, 3, 5))
    H = 6
    p = mx.nd.ones((param_size("gru", 2, 5, H, True),)) * 0.01
    s = mx.nd.zeros((4, 3, H))
    out = mx.nd.RNN(x, p, s, state_size=H, num_layers=2, bidirectional=True, mode="gru")
    assert isinstance(out, mx.nd.NDArray) and out.shape == (4, 3, 2 * H)
    out, hn = mx.nd.RNN(x, p, s, state_size=H, num_layers=2, bidirectional=True, mode="gru", state_outputs=True)
    assert hn.shape == (4, 3, H)
    with pytest.raises(mx.MXNetError, match="RNN"):
        mx.nd.RNN(x, p[:-1], s, state_size=H, num_layers=2, bidirectional=True, mode="gru")


def test_param_size_both_call_forms():
    # MXNet: mx.sym.RNN(..., state_size=3, num_layers=1, mode='lstm', projection_size=2).infer_shape(x=(3,2,4))
    # gives parameters (102,).
    assert param_size("lstm", 1, 4, 3, False, 2) == 102
    assert param_size("lstm", 2, 4, 5, False) == 4 * 5 * (4 + 5 + 2) + 4 * 5 * (5 + 5 + 2)
    attrs = mx.ops.registry.get("RNN").parse({"state_size": 5, "num_layers": 2, "mode": "gru",
                                              "bidirectional": True})
    assert param_size(attrs, 4) == param_size("gru", 2, 4, 5, True)


# ---------------------------------------------------------------------------------------------------------
# sequence_length: padding never matters; each sequence equals its own unpadded run
def _seq_args(mode, T, N, I, H, L, bidir, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    D = 2 if bidir else 1
    data = rng.uniform(-1, 1, (T, N, I)).astype(dtype)
    params = rng.uniform(-0.6, 0.6, param_size(mode, L, I, H, bidir)).astype(dtype)
    h0 = rng.uniform(-0.5, 0.5, (L * D, N, H)).astype(dtype)
    c0 = rng.uniform(-0.5, 0.5, (L * D, N, H)).astype(dtype)
    return data, params, h0, c0


def _call(mode, H, L, bidir, data, params, h0, c0, lens=None, grad=False):
    args = [mx.nd.array(a, dtype=a.dtype) for a in (data, params, h0)]
    if mode == "lstm":
        args.append(mx.nd.array(c0, dtype=c0.dtype))
    if grad:
        for a in args:
            a.attach_grad()
    if lens is not None:
        args.append(mx.nd.array(np.asarray(lens, dtype=np.float32)))
    with autograd.record():
        outs = mx.nd.RNN(*args, state_size=H, num_layers=L, bidirectional=bidir, mode=mode, state_outputs=True,
                         use_sequence_length=lens is not None)
        loss = sum((o * o).sum() for o in outs)
    if grad:
        loss.backward()
        return [o.asnumpy() for o in outs], [a.grad.asnumpy() for a in args[:4 if mode == "lstm" else 3]]
    return [o.asnumpy() for o in outs], None


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_sequence_length_padding_is_invisible(mode):
    T, N, I, H, L, bidir = 4, 3, 2, 3, 2, True
    data, params, h0, c0 = _seq_args(mode, T, N, I, H, L, bidir, seed=1)
    lens = [4, 2, 1]
    outs, grads = _call(mode, H, L, bidir, data, params, h0, c0, lens, grad=True)
    # padded outputs are zero
    for n, ln in enumerate(lens):
        assert np.all(outs[0][ln:, n] == 0)
    # extra padding, NaN everywhere past each length: same outputs, states and gradients, no NaN anywhere
    padded = np.full((T + 3, N, I), np.nan)
    for n, ln in enumerate(lens):
        padded[:ln, n] = data[:ln, n]
    outs2, grads2 = _call(mode, H, L, bidir, padded, params, h0, c0, lens, grad=True)
    np.testing.assert_allclose(outs2[0][:T], outs[0], rtol=1e-12, atol=1e-14)
    assert np.all(outs2[0][T:] == 0)
    for a, b in zip(outs[1:], outs2[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    for k, (a, b) in enumerate(zip(grads, grads2)):
        assert np.all(np.isfinite(b)), f"NaN padding leaked into the gradient of input {k}"
        if k == 0:
            b = b[:T]
            b = np.where(np.isnan(padded[:T]), 0, b)
            assert np.all(b[np.isnan(padded[:T])] == 0)
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12, err_msg=f"input {k}")
    # each sequence alone, truncated to its length, without sequence_length (reverse direction included)
    D = 2
    for n, ln in enumerate(lens):
        o1, _ = _call(mode, H, L, bidir, data[:ln, n:n + 1], params, h0[:, n:n + 1], c0[:, n:n + 1])
        np.testing.assert_allclose(outs[0][:ln, n], o1[0][:, 0], rtol=1e-12, atol=1e-14)
        for a, b in zip(outs[1:], o1[1:]):
            np.testing.assert_allclose(a[:, n], b[:, 0], rtol=1e-12, atol=1e-14)
    assert outs[1].shape == (L * D, N, H)


def test_sequence_length_gradient_matches_finite_differences_gru():
    mode, T, N, I, H, L, bidir = "gru", 3, 2, 2, 2, 1, True
    data, params, h0, c0 = _seq_args(mode, T, N, I, H, L, bidir, seed=3)
    lens = [3, 2]
    _, grads = _call(mode, H, L, bidir, data, params, h0, c0, lens, grad=True)

    def loss(d, p, h):
        outs, _ = _call(mode, H, L, bidir, d, p, h, c0, lens)
        return sum(float((o * o).sum()) for o in outs)

    base = [data, params, h0]
    for k in range(3):
        num = np.zeros(base[k].size)
        for j in range(base[k].size):
            for sgn in (1, -1):
                arrs = [a.copy() for a in base]
                arrs[k].reshape(-1)[j] += sgn * 1e-6
                num[j] += sgn * loss(*arrs) / 2e-6
        np.testing.assert_allclose(grads[k].ravel(), num, rtol=1e-5, atol=1e-7, err_msg=f"input {k}")


def test_sequence_length_out_of_range_is_an_error():
    data, params, h0, c0 = _seq_args("gru", 3, 2, 2, 2, 1, False, seed=0)
    with pytest.raises(mx.MXNetError, match="sequence_length"):
        _call("gru", 2, 1, False, data, params, h0, c0, lens=[4, 1])


# ---------------------------------------------------------------------------------------------------------
# dropout between layers, clipping, second order
def test_dropout_between_layers_is_replayed_in_the_gradient():
    mode, T, N, I, H, L = "lstm", 3, 2, 2, 3, 2
    data, params, h0, c0 = _seq_args(mode, T, N, I, H, L, False, seed=5)
    args = [mx.nd.array(a, dtype=a.dtype) for a in (data, params, h0, c0)]
    kw = dict(state_size=H, num_layers=L, mode=mode, p=0.5)
    ref = mx.nd.RNN(*args, state_size=H, num_layers=L, mode=mode).asnumpy()
    np.testing.assert_array_equal(mx.nd.RNN(*args, **kw).asnumpy(), ref)      # no dropout outside training
    with autograd.train_mode():
        mx.random.seed(7)
        a = mx.nd.RNN(*args, **kw).asnumpy()
        mx.random.seed(7)
        b = mx.nd.RNN(*args, **kw).asnumpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, ref)
    args[1].attach_grad()
    mx.random.seed(7)
    with autograd.record():
        loss = (mx.nd.RNN(*args, **kw) ** 2).sum()
    loss.backward()
    g = args[1].grad.asnumpy()

    def f(p):
        mx.random.seed(7)
        with autograd.train_mode():
            return float((mx.nd.RNN(args[0], mx.nd.array(p, dtype=p.dtype), *args[2:], **kw).asnumpy() ** 2).sum())

    rng = np.random.default_rng(0)
    for j in rng.choice(params.size, 8, replace=False):
        e = np.zeros_like(params)
        e[j] = 1e-6
        np.testing.assert_allclose(g[j], (f(params + e) - f(params - e)) / 2e-6, rtol=1e-5, atol=1e-8)


def test_lstm_state_clipping():
    mode, T, N, I, H = "lstm", 4, 2, 2, 3
    data, params, h0, c0 = _seq_args(mode, T, N, I, H, 1, False, seed=2)
    params = params * 4
    args = [mx.nd.array(a, dtype=a.dtype) for a in (data, params, h0, c0)]
    free = mx.nd.RNN(*args, state_size=H, num_layers=1, mode=mode, state_outputs=True)
    clipped = mx.nd.RNN(*args, state_size=H, num_layers=1, mode=mode, state_outputs=True,
                        lstm_state_clip_min=-0.2, lstm_state_clip_max=0.25)
    c = clipped[2].asnumpy()
    assert np.abs(free[2].asnumpy()).max() > 0.3
    assert c.min() >= -0.2 and c.max() <= 0.25
    with pytest.raises(mx.MXNetError, match="together"):
        mx.nd.RNN(*args, state_size=H, num_layers=1, mode=mode, lstm_state_clip_min=-1.0)


def test_second_order_gradient_through_lstm():
    """d/dparams of <dloss/ddata, v>, against finite differences of the first-order gradient."""
    mode, T, N, I, H, L = "lstm", 2, 1, 2, 2, 1
    data, params, h0, c0 = _seq_args(mode, T, N, I, H, L, False, seed=4)
    v = np.random.default_rng(9).uniform(-1, 1, data.shape)

    def first(p, create_graph=False):
        x = mx.nd.array(data, dtype=np.float64)
        pp = mx.nd.array(p, dtype=np.float64)
        x.attach_grad()
        pp.attach_grad()
        with autograd.record():
            out = mx.nd.RNN(x, pp, mx.nd.array(h0, dtype=np.float64), mx.nd.array(c0, dtype=np.float64),
                             state_size=H, num_layers=L, mode=mode)
            loss = (out ** 2).sum()
        gx, = autograd.grad(loss, [x], create_graph=create_graph)
        return gx, pp

    gx, pp = first(params, create_graph=True)
    with autograd.record():
        total = (gx * mx.nd.array(v, dtype=np.float64)).sum()
    total.backward()
    analytic = pp.grad.asnumpy()
    num = np.zeros(params.size)
    for j in range(params.size):
        e = np.zeros_like(params)
        e[j] = 1e-6
        num[j] = ((first(params + e)[0].asnumpy() * v).sum() - (first(params - e)[0].asnumpy() * v).sum()) / 2e-6
    np.testing.assert_allclose(analytic, num, rtol=1e-5, atol=1e-8)


# ---------------------------------------------------------------------------------------------------------
def test_rnn_param_concat_joins_and_splits():
    a, b = mx.nd.array(np.arange(6.0)), mx.nd.array(np.arange(4.0) + 10)
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = mx.nd._rnn_param_concat(a, b, dim=0)
        (y * mx.nd.array(np.arange(10.0))).sum().backward()
    np.testing.assert_array_equal(y.asnumpy(), np.concatenate([np.arange(6.0), np.arange(4.0) + 10]))
    np.testing.assert_array_equal(a.grad.asnumpy(), np.arange(6.0))
    np.testing.assert_array_equal(b.grad.asnumpy(), np.arange(6.0, 10.0))
