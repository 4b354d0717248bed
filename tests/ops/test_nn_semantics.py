"""NN operator semantics checked against values obtained from MXNet 1.9.1 (the expected arrays below were printed
by MXNet 1.9.1 on CPU from the same seeded inputs), plus mixnet-only guarantees (second-order gradients)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd

nd = mx.nd


def _close(a, b, tol=1e-4):
    np.testing.assert_allclose(np.asarray(a.asnumpy() if hasattr(a, "asnumpy") else a, dtype=np.float64),
                               np.asarray(b, dtype=np.float64), rtol=tol, atol=tol)


# ---------------------------------------------------------------------------------------------------------
# BatchNorm
def _bn_inputs():
    rs = np.random.RandomState(0)
    x = nd.array(rs.randn(2, 3, 4, 4))
    return (x, nd.array([1.5, 2, 0.5]), nd.array([0.1, 0.2, 0.3]), nd.array([0.1, 0.2, 0.3]),
            nd.array([1.0, 2.0, 3.0]))


def test_batchnorm_training_updates_running_stats():
    x, g, b, mm, mv = _bn_inputs()
    g.attach_grad()
    with autograd.record():
        out, mean, invstd = nd.BatchNorm(x, g, b, mm, mv, output_mean_var=True)
    out.backward()
    # MXNet 1.9.1: moving = 0.9 * moving + 0.1 * batch statistic (biased variance)
    _close(mm, [0.09878998, 0.17908758, 0.27354598])
    _close(mv, [0.9871347, 1.9012748, 2.8187249])
    _close(mean, [0.08789977, -0.00912417, 0.03545972])
    _close(invstd, [1.0706692, 0.9931961, 0.9173729])     # the third output is 1/sqrt(var + eps)
    _close(out[0, :, 0, 0], [1.8946049, 1.6929758, -0.5469603])   # fix_gamma=True: gamma treated as 1
    _close(g.grad, [0, 0, 0])                                        # ... and gets no gradient


def test_batchnorm_fix_gamma_false_and_inference():
    x, g, b, mm, mv = _bn_inputs()
    with autograd.record():
        out = nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False)
    _close(out[0, :, 0, 0], [2.7919073, 3.1859515, -0.12348014])
    # inference (no record): moving statistics, and nothing is updated
    x, g, b, mm, mv = _bn_inputs()
    out = nd.BatchNorm(x, g, b, mm, mv)
    want = (x.asnumpy()[0, :, 0, 0] - [0.1, 0.2, 0.3]) / np.sqrt(np.array([1.0, 2.0, 3.0]) + 1e-3) + [0.1, 0.2, 0.3]
    _close(out[0, :, 0, 0], want)                                     # gamma fixed to 1, moving statistics
    _close(mm, [0.1, 0.2, 0.3])
    _close(mv, [1, 2, 3])


def test_batchnorm_twice_in_one_record_scope():
    x, g, b, mm, mv = _bn_inputs()
    g.attach_grad()
    with autograd.record():
        y = nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False) * nd.BatchNorm(x * 2, g, b, mm, mv, fix_gamma=False)
    y.backward()
    assert g.grad.shape == (3,)


def test_batchnorm_use_global_stats_gradient():
    x, g, b, mm, mv = _bn_inputs()
    x.attach_grad()
    with autograd.record():
        out = nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False, use_global_stats=True)
    out.backward()
    _close(x.grad[0, :, 0, 0], [1.4992507, 1.4138602, 0.28862706])     # MXNet 1.9.1
    _close(mm, [0.1, 0.2, 0.3])


# ---------------------------------------------------------------------------------------------------------
# Convolution / Deconvolution / Pooling
def _conv_inputs():
    rs = np.random.RandomState(0)
    x = nd.array(rs.randn(1, 4, 5, 5).round(2))
    w = nd.array(rs.randn(4, 2, 3, 3).round(2))
    w2 = nd.array(rs.randn(4, 1, 3, 3).round(2))
    return x, w, w2


def test_convolution_groups_dilation_matches_mxnet():
    x, w, _ = _conv_inputs()
    out = nd.Convolution(x, w, nd.array([0.1, -0.2, 0.3, 0.0]), kernel=(3, 3), num_filter=4, num_group=2,
                         dilate=(2, 2), pad=(1, 1), stride=(1, 2))
    assert out.shape == (1, 4, 3, 2)
    _close(out, [[[[-2.1284, -3.0970], [-3.6463, -2.0145], [-6.5273, 4.9091]],
                  [[3.3587, -5.0020], [3.1334, 1.1611], [-1.1352, 0.2643]],
                  [[-5.3129, 1.1843], [-3.4616, 1.2988], [-1.1120, 3.7917]],
                  [[-5.5963, 2.4712], [-3.5632, 1.5728], [-1.5964, 2.4617]]]], tol=2e-3)


def test_deconvolution_target_shape_matches_mxnet():
    x, _, w2 = _conv_inputs()
    out = nd.Deconvolution(x, w2, kernel=(3, 3), num_filter=2, num_group=2, stride=(2, 2), target_shape=(8, 8))
    assert out.shape == (1, 2, 8, 8)
    _close(out[0, :, :3, :3], [[[-2.0577, -0.8897, -1.2551], [1.3966, -1.3680, -1.7362],
                                [-0.7815, -1.9919, -4.9373]],
                               [[1.6482, 0.0231, 2.0571], [0.0862, 0.6304, 0.7301],
                                [2.0069, -0.4944, -0.5103]]], tol=2e-3)
    shapes = {kw: nd.Deconvolution(nd.ones((1, 2, 5, 5)), nd.ones((2, 3, 3, 3)), kernel=(3, 3), num_filter=3,
                                   stride=(2, 2), **dict(kw)).shape[2:]
              for kw in [(), (("pad", (1, 1)),), (("pad", (1, 1)), ("adj", (1, 1))), (("target_shape", (10, 10)),)]}
    assert list(shapes.values()) == [(11, 11), (9, 9), (10, 10), (10, 10)]


@pytest.mark.parametrize("conv,k,s,p,shape", [
    ("valid", (3, 3), (2, 2), (0, 0), (3, 3)), ("valid", (2, 2), (3, 3), (0, 0), (2, 2)),
    ("valid", (4, 4), (2, 2), (1, 1), (3, 3)), ("full", (2, 2), (3, 3), (0, 0), (3, 3)),
    ("full", (4, 4), (2, 2), (1, 1), (4, 4)), ("full", (3, 3), (2, 2), (1, 1), (4, 4))])
def test_pooling_output_shapes(conv, k, s, p, shape):
    x = nd.ones((1, 2, 7, 7))
    assert nd.Pooling(x, kernel=k, stride=s, pad=p, pooling_convention=conv).shape[2:] == shape


def test_pooling_values_match_mxnet():
    xx = nd.array(np.random.RandomState(0).randn(1, 1, 4, 4))
    # 'full' avg: a window hanging over the end divides by the elements inside the (padded) input only
    _close(nd.Pooling(xx, kernel=(3, 3), stride=(2, 2), pooling_convention="full", pool_type="avg")[0, 0],
           [[0.60385996, 0.93611324], [0.2963332, 0.5939637]])
    _close(nd.Pooling(xx, kernel=(2, 2), stride=(2, 2), pad=(1, 1), pool_type="avg")[0, 0, 0],
           [0.4410131, 0.34472382, 0.5602233])
    _close(nd.Pooling(xx, kernel=(2, 2), stride=(2, 2), pad=(1, 1), pool_type="avg", count_include_pad=False)
           [0, 0, 0], [1.7640524, 0.68944764, 2.2408931])
    _close(nd.Pooling(xx, kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=2).reshape(-1),
           [2.7775621, 2.627757, 0.8793341, 1.563334])
    _close(nd.Pooling(xx, kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=3)[0, 0, 0, 0], 2.232964)
    assert nd.Pooling(nd.ones((1, 2, 5)), kernel=(2,)).shape == (1, 2, 4)      # raw op: stride defaults to 1
    assert nd.Pooling(nd.ones((1, 2, 7, 7)), kernel=(3, 3), global_pool=True, stride=(2, 2)).shape == (1, 2, 1, 1)


def test_conv_second_order_gradient_wgan_gp():
    """d/dw of ||d conv-net / dx||^2 (the gradient penalty), against finite differences. MXNet cannot do this."""
    rs = np.random.RandomState(1)
    xv, wv = rs.randn(1, 2, 5, 5), rs.randn(3, 2, 3, 3)

    def penalty(wnp, record_w=None):
        x = nd.array(xv, dtype="float64")
        w = nd.array(wnp, dtype="float64") if record_w is None else record_w
        x.attach_grad()
        with autograd.record():
            h = nd.Convolution(x, w, kernel=(3, 3), num_filter=3, stride=(2, 2), pad=(1, 1), no_bias=True)
            h = nd.Pooling(nd.tanh(h), kernel=(2, 2), pool_type="max")
            d = (h * h).sum() if hasattr(h, "sum") else h
            (gx,) = autograd.grad(d, [x], create_graph=True)
            gp = (gx * gx)
        return gp

    w = nd.array(wv, dtype="float64")
    w.attach_grad()
    with autograd.record():
        gp = penalty(wv, record_w=w)
    gp.backward()
    eps, num = 1e-6, np.zeros(wv.shape)
    for i in range(wv.size):
        for sgn in (1, -1):
            wp = wv.copy()
            wp.reshape(-1)[i] += sgn * eps
            num.reshape(-1)[i] += sgn * float(penalty(wp).asnumpy().sum()) / (2 * eps)
    np.testing.assert_allclose(w.grad.asnumpy(), num, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# softmax family and SoftmaxOutput
def test_softmax_with_length_matches_mxnet():
    rs = np.random.RandomState(0)
    d = nd.array(rs.randn(2, 4))
    hg = nd.array(rs.randn(2, 4))
    ln = nd.array([2, 3], dtype="int32")
    d.attach_grad()
    with autograd.record():
        o = nd.softmax(d, ln, use_length=True)
    o.backward(hg)
    _close(o, [[0.7964, 0.2036, 0.0, 0.0], [0.686, 0.0399, 0.2741, 0.0]])
    _close(d.grad, [[-0.0833, 0.0833, 0.0, 0.0], [0.0771, -0.021, -0.0561, 0.0]])
    _close(nd.softmax(nd.array([[1, 2, 3]]), nd.array([0], dtype="int32"), use_length=True), [[0, 0, 0]])
    with pytest.raises(mx.MXNetError, match="softmax"):
        nd.softmax(d, nd.array([2, 3]), use_length=True)         # MXNet: lengths must be integers


def test_softmin_log_softmax_temperature():
    x = nd.array([[1, 2, 3]])
    _close(nd.softmin(x, temperature=2.0), [[0.5064804, 0.3071959, 0.18632373]])
    _close(nd.log_softmax(x, temperature=2.0), [[-1.6802697, -1.1802697, -0.68026966]])


def test_softmax_output_gradient_matches_mxnet():
    d = nd.array(np.random.RandomState(0).randn(3, 4))
    label = nd.array([1, 0, 3])
    sm = nd.softmax(d).asnumpy()
    onehot = np.eye(4)[[1, 0, 3]]
    for kw, expected in [
        ({}, sm - onehot), ({"grad_scale": 2.0}, 2 * (sm - onehot)),
        ({"normalization": "batch"}, (sm - onehot) / 3),
        ({"normalization": "valid", "ignore_label": 0}, (sm - onehot) / 2),     # counted without use_ignore
        ({"use_ignore": True, "ignore_label": 0}, (sm - onehot) * [[1], [0], [1]]),
    ]:
        d.attach_grad()
        with autograd.record():
            out = nd.SoftmaxOutput(d, label, **kw)
        out.backward(nd.ones_like(out) * 5)          # the head gradient is ignored, as in MXNet
        _close(d.grad, expected)
    # MXNet 1.9.1 values for smooth_alpha=0.1 and an out-of-range label (no onehot for that row)
    with autograd.record():
        out = nd.SoftmaxOutput(d, label, smooth_alpha=0.1)
    out.backward()
    _close(d.grad[0], [0.2676, -0.8231, 0.1039, 0.4515])
    with autograd.record():
        out = nd.SoftmaxOutput(d, nd.array([1, 7, -2]))
    out.backward()
    _close(d.grad[1], sm[1])
    _close(d.grad[2], sm[2])


def test_regression_outputs_and_makeloss():
    rs = np.random.RandomState(0)
    d, label = nd.array(rs.randn(3, 2)), nd.array(rs.randn(3, 2))
    d.attach_grad()
    with autograd.record():
        out = nd.LinearRegressionOutput(d, label, grad_scale=2.0)
    out.backward(nd.ones_like(out) * 7)
    _close(d.grad, (d.asnumpy() - label.asnumpy()) * 2.0 / 2)      # grad_scale / (size / batch)
    with autograd.record():
        out = nd.MakeLoss(d, normalization="valid", valid_thresh=0.1)
    out.backward()
    _close(d.grad, np.full((3, 2), 0.2))                              # 5 of 6 values exceed 0.1


# ---------------------------------------------------------------------------------------------------------
# Dropout, activations
def test_dropout_identity_outside_training_and_mask_gradient():
    x = nd.array(np.random.RandomState(0).randn(20, 30))
    _close(nd.Dropout(x, p=0.5), x)
    with autograd.record(train_mode=False):
        _close(nd.Dropout(x, p=0.5), x)
    mx.random.seed(3)
    x.attach_grad()
    with autograd.record():
        y = nd.Dropout(x, p=0.5)
    y.backward()
    g, yv, xv = x.grad.asnumpy(), y.asnumpy(), x.asnumpy()
    assert set(np.unique(g)) <= {0.0, 2.0}
    np.testing.assert_allclose(yv, xv * g, rtol=1e-6)
    assert 0.35 < (g == 0).mean() < 0.65
    always = nd.Dropout(x, p=0.3, mode="always", axes=(0,)).asnumpy()
    kept = (always != 0).all(axis=0)
    assert ((always == 0).all(axis=0) | kept).all()                # one mask shared along axis 0
    assert np.isnan(nd.Dropout(x, p=1.0, mode="always").asnumpy()).all()      # MXNet: 0 * 1/(1-p) = NaN


def test_leaky_relu_variants_match_mxnet():
    x = nd.array([[-2.0, -0.5, 0.0, 0.5, 2.0]])
    _close(nd.LeakyReLU(x), [[-0.5, -0.125, 0, 0.5, 2]])
    _close(nd.LeakyReLU(x, act_type="elu"), [[-0.21617, -0.09837, 0, 0.5, 2]])
    _close(nd.LeakyReLU(x, act_type="selu"), [[-1.52017, -0.69176, 0, 0.52535, 2.1014]])
    _close(nd.LeakyReLU(x, act_type="gelu"), [[-0.0455, -0.15427, 0, 0.34573, 1.9545]])
    out, slopes = nd.LeakyReLU(x, act_type="rrelu")
    _close(out, [[-0.459, -0.11475, 0, 0.5, 2]])
    _close(nd.Activation(x, act_type="softrelu"), [[0.12693, 0.47408, 0.69315, 0.97408, 2.12693]])
    x.attach_grad()
    with autograd.record():
        y = nd.LeakyReLU(x, act_type="gelu")
    y.backward()
    _close(x.grad, [[-0.08523, 0.1325, 0.5, 0.8675, 1.08523]])


def test_norm_layers_match_mxnet():
    x4 = nd.array(np.random.RandomState(0).randn(2, 4, 3))
    out, mean, std = nd.GroupNorm(x4, nd.array([1.0, 2.0]), nd.array([0.0, 0.1]), num_groups=2,
                                  output_mean_var=True)
    assert mean.shape == (2, 2) and std.shape == (2, 2)
    _close(std.reshape(-1), [1.0903881, 0.580453, 0.53652537, 1.1672592])
    _close(out[0, 2], [1.821, -1.975, -1.809], tol=2e-3)
    ln = nd.LayerNorm(x4, nd.ones(3), nd.zeros(3), output_mean_var=True)
    assert [a.shape for a in ln] == [(2, 4, 3), (2, 4, 1), (2, 4, 1)]
    assert [a.shape for a in nd.LayerNorm(x4, nd.ones(4), nd.zeros(4), axis=1, output_mean_var=True)] == \
        [(2, 4, 3), (2, 1, 3), (2, 1, 3)]
    _close(nd.L2Normalization(nd.array([[3.0, 4.0]])), [[0.6, 0.8]])
    with pytest.raises(mx.MXNetError, match="L2Normalization"):
        nd.L2Normalization(nd.array([[3.0, 4.0]]), mode="channel")


# ---------------------------------------------------------------------------------------------------------
# Embedding, Sequence*, smooth_l1
def test_embedding_clips_and_scatters():
    w = nd.array(np.arange(12).reshape(4, 3))
    _close(nd.Embedding(nd.array([[0, 3], [5, -1.7]]), w, input_dim=4, output_dim=3),
           [[[0, 1, 2], [9, 10, 11]], [[9, 10, 11], [0, 1, 2]]])
    _close(nd.Embedding(nd.array([1.7, 2.5]), w, input_dim=4, output_dim=3), [[3, 4, 5], [6, 7, 8]])
    w.attach_grad()
    with autograd.record():
        y = nd.Embedding(nd.array([1, 1, 2]), w, input_dim=4, output_dim=3)
    y.backward()
    _close(w.grad, [[0, 0, 0], [2, 2, 2], [1, 1, 1], [0, 0, 0]])


def test_sequence_ops_match_mxnet():
    x = nd.array(np.arange(24).reshape(4, 3, 2))
    sl = nd.array([1, 4, 2])
    _close(nd.SequenceMask(x, sl, use_sequence_length=True, value=-1)[:, :, 0],
           [[0, 2, 4], [-1, 8, 10], [-1, 14, -1], [-1, 20, -1]])
    _close(nd.SequenceMask(x.reshape((3, 4, 2)), sl, use_sequence_length=True, axis=1)[:, :, 0],
           [[0, 0, 0, 0], [8, 10, 12, 14], [16, 18, 0, 0]])
    _close(nd.SequenceLast(x, sl, use_sequence_length=True), [[0, 1], [20, 21], [10, 11]])
    assert nd.SequenceLast(x).shape == (3, 2)
    _close(nd.SequenceLast(x.reshape((3, 4, 2)), sl, use_sequence_length=True, axis=1),
           [[0, 1], [14, 15], [18, 19]])
    _close(nd.SequenceReverse(x, sl, use_sequence_length=True)[:, :, 0],
           [[0, 20, 10], [6, 14, 4], [12, 8, 16], [18, 2, 22]])
    with pytest.raises(mx.MXNetError, match="SequenceMask"):
        nd.SequenceMask(x, sl)                 # a length input without use_sequence_length=True
    x.attach_grad()
    with autograd.record():
        y = nd.SequenceMask(x, sl, use_sequence_length=True, value=-1)
    y.backward()
    _close(x.grad[:, :, 0], [[1, 1, 1], [0, 1, 1], [0, 1, 0], [0, 1, 0]])


def test_smooth_l1():
    x = nd.array([[-2.0, -0.5, 0.0, 0.5, 2.0]])
    _close(nd.smooth_l1(x, scalar=2.0), [[1.875, 0.375, 0, 0.375, 1.875]])
    _close(nd.smooth_l1(x), [[1.5, 0.125, 0, 0.125, 1.5]])


# ---------------------------------------------------------------------------------------------------------
# errors
def test_shape_errors_name_the_op():
    with pytest.raises(mx.MXNetError, match=r"FullyConnected.*weight shape \(3, 4\)"):
        nd.FullyConnected(nd.ones((2, 5)), nd.ones((3, 4)), nd.ones(3), num_hidden=3)
    with pytest.raises(mx.MXNetError, match="Convolution"):
        nd.Convolution(nd.ones((1, 2, 5, 5)), nd.ones((3, 3, 3, 3)), nd.ones(3), kernel=(3, 3), num_filter=3)
    with pytest.raises(mx.MXNetError, match="Convolution"):
        nd.Convolution(nd.ones((1, 2, 5, 5)), nd.ones((3, 2, 3, 3)), kernel=(3, 3), num_filter=3)  # bias missing
    with pytest.raises(mx.MXNetError, match="Deconvolution"):
        nd.Deconvolution(nd.ones((1, 2, 5, 5)), nd.ones((2, 3, 3, 3)), kernel=(3, 3), num_filter=4)
    with pytest.raises(mx.MXNetError, match="BatchNorm"):
        nd.BatchNorm(nd.ones((2, 3)), nd.ones(4), nd.ones(4), nd.ones(4), nd.ones(4))
    with pytest.raises(mx.MXNetError, match="Pooling"):
        nd.Pooling(nd.ones((1, 1, 2, 2)), kernel=(3, 3))
    with pytest.raises(mx.MXNetError, match="Convolution"):
        nd.Convolution(nd.ones((1, 2, 5, 5)), nd.ones((3, 2, 3, 3)), kernel=(3, 3), num_filter=3,
                       no_bias=True, layout="NHWC")
