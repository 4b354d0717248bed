"""gluon.contrib.nn against numpy (and MXNet 1.9.1's naming/repr conventions, checked with the oracle)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd
from mixnet.gluon import nn
from mixnet.gluon.contrib import nn as cnn


def _x(*shape):
    return np.random.RandomState(0).uniform(-1, 1, shape).astype(np.float32)


def test_identity():
    x = mx.nd.array(_x(2, 3))
    block = cnn.Identity()
    assert block.name.startswith("identity")
    np.testing.assert_array_equal(block(x).asnumpy(), x.asnumpy())


@pytest.mark.parametrize("hybrid", [False, True])
def test_concurrent_concatenates_children(hybrid):
    net = (cnn.HybridConcurrent if hybrid else cnn.Concurrent)(axis=1)
    with net.name_scope():
        net.add(nn.Dense(3, in_units=4))
        net.add(cnn.Identity())
        net.add(nn.Dense(2, in_units=4))
    net.initialize()
    x = mx.nd.array(_x(5, 4))
    out = net(x)
    d0, d2 = net[0], net[2]
    want = np.concatenate([d0(x).asnumpy(), x.asnumpy(), d2(x).asnumpy()], axis=1)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    assert len(net) == 3
    assert sorted(net.collect_params().keys()) == sorted(
        net.prefix + k for k in ("dense0_weight", "dense0_bias", "dense1_weight", "dense1_bias"))
    x.attach_grad()
    with autograd.record():
        y = net(x)
    y.backward()
    want_grad = 1 + d0.weight.data().asnumpy().sum(0) + d2.weight.data().asnumpy().sum(0)
    np.testing.assert_allclose(x.grad.asnumpy(), np.broadcast_to(want_grad, (5, 4)), rtol=1e-5)


def test_concurrent_default_axis_is_last():
    net = cnn.HybridConcurrent()
    net.add(cnn.Identity(), cnn.Identity())
    assert net(mx.nd.ones((2, 3))).shape == (2, 6)
    assert isinstance(net, mx.gluon.HybridBlock) and not isinstance(cnn.Concurrent(), mx.gluon.HybridBlock)


def _pixel_shuffle_ref(x, factors):
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    k = len(factors)
    out_c = c // int(np.prod(factors))
    y = x.reshape((n, out_c) + tuple(factors) + spatial)
    # (N, C, f1..fk, s1..sk) -> (N, C, s1, f1, s2, f2, ...)
    order = [0, 1]
    for i in range(k):
        order += [2 + k + i, 2 + i]
    y = y.transpose(order)
    return y.reshape((n, out_c) + tuple(s * f for s, f in zip(spatial, factors)))


@pytest.mark.parametrize("cls,factor,shape", [
    (cnn.PixelShuffle1D, 3, (2, 6, 5)),
    (cnn.PixelShuffle2D, 2, (2, 8, 3, 4)),
    (cnn.PixelShuffle2D, (2, 3), (1, 12, 3, 2)),
    (cnn.PixelShuffle3D, (1, 2, 3), (2, 12, 2, 3, 2)),
    (cnn.PixelShuffle3D, 2, (1, 8, 1, 2, 3)),
])
def test_pixel_shuffle(cls, factor, shape):
    x = _x(*shape)
    k = len(shape) - 2
    factors = (factor,) * k if isinstance(factor, int) else factor
    out = cls(factor)(mx.nd.array(x))
    np.testing.assert_array_equal(out.asnumpy(), _pixel_shuffle_ref(x, factors))


def test_pixel_shuffle_2d_explicit_layout():
    # out[n, c, h*f1 + i, w*f2 + j] = x[n, c*f1*f2 + i*f2 + j, h, w]
    x = np.arange(1 * 8 * 2 * 2, dtype=np.float32).reshape(1, 8, 2, 2)
    out = cnn.PixelShuffle2D((2, 2))(mx.nd.array(x)).asnumpy()
    for c in range(2):
        for i in range(2):
            for j in range(2):
                np.testing.assert_array_equal(out[0, c, i::2, j::2], x[0, c * 4 + i * 2 + j])


def test_pixel_shuffle_repr_and_gradient():
    assert repr(cnn.PixelShuffle2D((2, 3))) == "PixelShuffle2D((2, 3))"
    assert repr(cnn.PixelShuffle1D(2)) == "PixelShuffle1D(2)"
    assert repr(cnn.PixelShuffle3D(2)) == "PixelShuffle3D((2, 2, 2))"
    x = mx.nd.array(_x(1, 4, 2, 2))
    w = mx.nd.array(_x(1, 1, 4, 4) * 3)
    x.attach_grad()
    with autograd.record():
        y = (cnn.PixelShuffle2D(2)(x) * w).sum()
    y.backward()
    # the gradient is w shuffled back: the inverse permutation (space_to_depth-like)
    want = w.asnumpy().reshape(1, 1, 2, 2, 2, 2).transpose(0, 1, 3, 5, 2, 4).reshape(1, 4, 2, 2)
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-6)
    with pytest.raises(ValueError):
        cnn.PixelShuffle2D((1, 2, 3))


def test_sync_batch_norm_is_batch_norm():
    x = mx.nd.array(_x(4, 3, 2, 2))
    sbn = cnn.SyncBatchNorm(num_devices=2)
    bn = nn.BatchNorm()
    assert isinstance(sbn, nn.BatchNorm)
    assert sbn.name.startswith("syncbatchnorm")
    assert sorted(k[len(sbn.prefix):] for k in sbn.collect_params()) == \
        ["beta", "gamma", "running_mean", "running_var"]
    sbn.initialize()
    bn.initialize()
    with autograd.record():
        a = sbn(x)
        b = bn(x)
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)
    xs = x.asnumpy()
    mean, var = xs.mean(axis=(0, 2, 3)), xs.var(axis=(0, 2, 3))
    np.testing.assert_allclose(a.asnumpy(), (xs - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sbn.running_mean.data().asnumpy(), bn.running_mean.data().asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(sbn(x).asnumpy(), bn(x).asnumpy(), rtol=1e-6)       # inference: running stats
    assert repr(sbn) == (f"SyncBatchNorm(eps=1e-05, momentum=0.9, fix_gamma=False, use_global_stats=False, "
                         f"ndev=2, key='{sbn.prefix}', in_channels=3)")
