"""SequenceSoftmaxCELoss and contrib.nn DotProductAttention / MultiHeadAttention against numpy: the loss is the
mean cross entropy over each sequence's valid steps; attention gives padded keys exactly zero weight."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon, nd
from mixnet.gluon.contrib.nn import DotProductAttention, MultiHeadAttention


def _log_softmax(x):
    z = x - x.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


@pytest.mark.parametrize("hybrid", [False, True])
def test_sequence_softmax_ce_is_the_mean_over_valid_steps(hybrid):
    rng = np.random.default_rng(0)
    pred, label, length = rng.normal(size=(3, 5, 4)), rng.integers(0, 4, (3, 5)), np.array([5, 2, 0])
    weight = rng.uniform(size=(3, 5))
    loss = gluon.loss.SequenceSoftmaxCELoss(weight=2.0)
    if hybrid:
        loss.hybridize()
    got = loss(nd.array(pred), nd.array(label), nd.array(length), nd.array(weight)).asnumpy()
    ce = -np.take_along_axis(_log_softmax(pred), label[..., None], -1)[..., 0] * weight
    want = [2.0 * ce[b, :n].mean() if n else 0.0 for b, n in enumerate(length)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_sequence_softmax_ce_time_major_dense_labels_from_logits():
    rng = np.random.default_rng(1)
    pred = _log_softmax(rng.normal(size=(4, 2, 3)))                      # T, B, C
    label = rng.dirichlet(np.ones(3), size=(4, 2))
    length = np.array([1, 4])
    loss = gluon.loss.SequenceSoftmaxCELoss(sparse_label=False, from_logits=True, layout="TNC")
    got = loss(nd.array(pred), nd.array(label), nd.array(length)).asnumpy()
    ce = -(pred * label).sum(-1)
    np.testing.assert_allclose(got, [ce[:1, 0].mean(), ce[:4, 1].mean()], rtol=1e-5)


def test_sequence_softmax_ce_does_not_change_with_padding_unlike_a_mean_over_t():
    """GluonNLP's MaskedSoftmaxCELoss divides by the padded length; this loss does not."""
    rng = np.random.default_rng(2)
    pred, label = rng.normal(size=(2, 3, 4)), rng.integers(0, 4, (2, 3))
    longer = np.concatenate([pred, np.full((2, 4, 4), np.nan)], 1), np.concatenate([label, np.zeros((2, 4))], 1)
    length = nd.array([3, 2])
    loss = gluon.loss.SequenceSoftmaxCELoss()
    short = loss(nd.array(pred), nd.array(label), length).asnumpy()
    np.testing.assert_array_equal(loss(nd.array(longer[0]), nd.array(longer[1]), length).asnumpy(), short)


def test_sequence_softmax_ce_bad_layout():
    with pytest.raises(mx.base.MXNetError, match="layout"):
        gluon.loss.SequenceSoftmaxCELoss(layout="NCT")


def _attention_ref(q, k, v, klen, scaled=True):
    s = q @ k.transpose(0, 2, 1) / (np.sqrt(q.shape[-1]) if scaled else 1.0)
    for b, n in enumerate(klen):
        s[b, :, n:] = -np.inf
    with np.errstate(invalid="ignore"):
        w = np.exp(s - s.max(-1, keepdims=True))
        w = np.nan_to_num(w / w.sum(-1, keepdims=True))
    return w @ v, w


@pytest.mark.parametrize("scaled", [True, False])
def test_dot_product_attention_matches_numpy_and_padded_keys_get_zero_weight(scaled):
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(3, 4, 2)), rng.normal(size=(3, 5, 2)), rng.normal(size=(3, 5, 3))
    klen, qlen = np.array([5, 2, 0]), np.array([4, 3, 1])
    att = DotProductAttention(scaled=scaled)
    ctx, w = att(nd.array(q), nd.array(k), nd.array(v), nd.array(klen), nd.array(qlen))
    want_ctx, want_w = _attention_ref(q, k, v, klen, scaled)
    for b, n in enumerate(qlen):
        want_ctx[b, n:], want_w[b, n:] = 0, 0
    np.testing.assert_allclose(w.asnumpy(), want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ctx.asnumpy(), want_ctx, rtol=1e-5, atol=1e-6)
    assert np.all(w.asnumpy()[1, :, 2:] == 0) and np.all(w.asnumpy()[2] == 0)
    ctx_all, _ = att(nd.array(q), nd.array(k), nd.array(v))            # no lengths: every step is valid
    np.testing.assert_allclose(ctx_all.asnumpy(), _attention_ref(q, k, v, [5, 5, 5], scaled)[0], rtol=1e-5,
                               atol=1e-6)


def test_multi_head_attention_matches_numpy_and_hybridized():
    rng = np.random.default_rng(4)
    net = MultiHeadAttention(6, 2, use_bias=False)
    net.initialize(mx.init.Normal(0.5))
    x, length = rng.normal(size=(2, 4, 3)), np.array([4, 2])
    out, w = net(nd.array(x), None, None, None, nd.array(length))
    wq, wk, wv, wo = (getattr(net, n).weight.data().asnumpy() for n in ("proj_query", "proj_key", "proj_value",
                                                                            "proj_out"))
    heads = lambda a: a.reshape(2, 4, 2, 3).transpose(0, 2, 1, 3).reshape(4, 4, 3)
    ctx, want_w = _attention_ref(heads(x @ wq.T), heads(x @ wk.T), heads(x @ wv.T), np.repeat(length, 2))
    want = ctx.reshape(2, 2, 4, 3).transpose(0, 2, 1, 3).reshape(2, 4, 6) @ wo.T
    want[1, 2:] = 0
    want_w = want_w.reshape(2, 2, 4, 4)
    want_w[1, :, 2:] = 0
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.asnumpy(), want_w, rtol=1e-4, atol=1e-5)
    net.hybridize()
    out_h, _ = net(nd.array(x), None, None, None, nd.array(length))
    np.testing.assert_allclose(out_h.asnumpy(), out.asnumpy(), rtol=1e-5, atol=1e-6)


def test_multi_head_attention_rejects_units_not_divisible_by_heads():
    with pytest.raises(ValueError, match="multiple of num_heads"):
        MultiHeadAttention(7, 2)


def test_attention_gradients_skip_nan_padding():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 5, 3))
    x[1, 2:] = np.nan
    net = MultiHeadAttention(4, 2)
    net.initialize()
    data = nd.array(x)
    data.attach_grad()
    with autograd.record():
        out, _ = net(data, None, None, None, nd.array([5, 2]))
        loss = nd.SequenceMean(out, nd.array([5, 2]), use_sequence_length=True, axis=1).sum()
    loss.backward()
    assert np.isfinite(out.asnumpy()).all() and np.all(data.grad.asnumpy()[1, 2:] == 0)
    assert all(np.isfinite(p.grad().asnumpy()).all() for p in net.collect_params().values())
