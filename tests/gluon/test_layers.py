"""Every gluon.nn layer (and gluon.contrib.nn) against an independent numpy reference, with input and parameter
gradients checked by central finite differences in float64.

`check_layer` is the shared helper: it initializes the layer, casts it to float64, gives every parameter random
values, compares the forward with the numpy reference, compares the analytic gradients of sum(out * cotangent)
with finite differences (on a sample of elements of each tensor), and finally hybridizes the layer and checks the
outputs and gradients are *identical* (hybridize currently runs eagerly; this pins that down for the compiler).

The numpy references follow MXNet 1.9.1's semantics (checked against the oracle while writing them): biased batch
variance in the BatchNorm running statistics, avg-pool divisors clipped to the padded input, `full` pooling
convention for ceil_mode, exact-erf GELU, GroupNorm scaling per group (gamma has shape (num_groups,)).
"""
import itertools
import math

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd
from mixnet.gluon import nn
from mixnet.gluon.contrib import nn as cnn

F64 = "float64"
FD_EPS = 1e-6
FD_SAMPLES = 10          # elements checked per tensor (all of them when the tensor is smaller)


# ---------------------------------------------------------------------------------------------- shared helper
def _rand(shape, seed, low=-1.0, high=1.0):
    return np.random.RandomState(seed).uniform(low, high, shape)


def _local_params(layer):
    """{name without the layer's prefix: Parameter} for every parameter of the layer and its children."""
    return {name[len(layer.prefix):]: p for name, p in layer.collect_params().items()}


def _mode(train):
    return autograd.train_mode() if train else autograd.predict_mode()


def _run(layer, xs, train, cot, grad_inputs, seed=7):
    """Forward under autograd.record, then backward of sum(out * cot). Returns (out, input grads, param grads)."""
    mx.random.seed(seed)
    arrs = [mx.nd.array(x, dtype=x.dtype) for x in xs]
    for a, g in zip(arrs, grad_inputs):
        if g:
            a.attach_grad()
    with autograd.record(train_mode=train):
        out = layer(*arrs)
    out.backward(mx.nd.array(cot, dtype=out.dtype))
    in_grads = [a.grad.asnumpy().copy() if g else None for a, g in zip(arrs, grad_inputs)]
    p_grads = {k: p.grad().asnumpy().copy() for k, p in _local_params(layer).items() if p.grad_req != "null"}
    return out.asnumpy().copy(), in_grads, p_grads


def _sample(shape, rng):
    size = int(np.prod(shape))
    flat = np.arange(size) if size <= FD_SAMPLES else rng.choice(size, FD_SAMPLES, replace=False)
    return [np.unravel_index(i, shape) for i in flat]


def _fd(objective, arr, idxs, commit=lambda: None):
    """Central differences of objective() w.r.t. arr[idx] (arr is modified in place and restored)."""
    grads = []
    for idx in idxs:
        old = arr[idx]
        arr[idx] = old + FD_EPS
        commit()
        plus = objective()
        arr[idx] = old - FD_EPS
        commit()
        minus = objective()
        arr[idx] = old
        commit()
        grads.append((plus - minus) / (2 * FD_EPS))
    return np.array(grads)


def _randomize_params(layer, seed):
    """Random values for every trainable parameter and for the BatchNorm running statistics."""
    for i, (name, p) in enumerate(sorted(_local_params(layer).items())):
        if name.endswith("running_var"):
            value = _rand(p.shape, seed + i, 0.5, 1.5)
        elif p.grad_req != "null" or name.endswith("running_mean"):
            value = _rand(p.shape, seed + i)
        else:
            continue
        p.set_data(mx.nd.array(value, dtype=F64))


def check_layer(layer, xs, ref, train=False, grad_inputs=None, rtol=1e-6, atol=1e-9, fd=True, hybrid=True,
                seed=0):
    """Checks `layer` on float64 inputs `xs` against `ref(xs, params) -> out` (params: numpy values keyed by the
    parameter names without the layer prefix); then gradients vs finite differences; then hybridize().
    Returns the float64 output."""
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    grad_inputs = [True] * len(xs) if grad_inputs is None else grad_inputs
    layer.initialize(mx.init.Uniform(0.5))
    layer.cast(F64)
    with _mode(train):
        layer(*[mx.nd.array(x, dtype=F64) for x in xs])          # materializes deferred parameters
    _randomize_params(layer, seed + 100)
    params = {k: p.data().asnumpy().copy() for k, p in _local_params(layer).items()}
    assert all(v.dtype == np.float64 for v in params.values())

    expected = ref(xs, params)
    with _mode(train):
        eager_out = layer(*[mx.nd.array(x, dtype=F64) for x in xs])
    assert eager_out.dtype == np.float64
    np.testing.assert_allclose(eager_out.asnumpy(), expected, rtol=rtol, atol=atol)

    cot = _rand(eager_out.shape, seed + 1)
    out, in_grads, p_grads = _run(layer, xs, train, cot, grad_inputs)
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=atol)

    if fd:
        rng = np.random.RandomState(seed + 2)
        work = [x.copy() for x in xs]

        def objective():
            mx.random.seed(7)
            with _mode(train):
                y = layer(*[mx.nd.array(x, dtype=F64) for x in work]).asnumpy()
            return float((y * cot).sum())

        for i, (x, g) in enumerate(zip(work, in_grads)):
            if g is None:
                continue
            idxs = _sample(x.shape, rng)
            np.testing.assert_allclose([g[idx] for idx in idxs], _fd(objective, x, idxs), rtol=1e-4, atol=1e-6,
                                       err_msg=f"gradient of input {i}")
        for name, g in p_grads.items():
            param = _local_params(layer)[name]
            value = param.data().asnumpy().copy()
            idxs = _sample(value.shape, rng)
            numeric = _fd(objective, value, idxs, lambda: param.set_data(mx.nd.array(value, dtype=F64)))
            np.testing.assert_allclose([g[idx] for idx in idxs], numeric, rtol=1e-4, atol=1e-6,
                                       err_msg=f"gradient of parameter {name}")

    if hybrid:
        layer.hybridize()
        h_out, h_in_grads, h_p_grads = _run(layer, xs, train, cot, grad_inputs)
        # float64 throughout: the compiled graph may only differ by summation order (a few ulp), never more
        close = dict(rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(h_out, out, **close)
        for a, b in zip(h_in_grads, in_grads):
            if b is not None:
                np.testing.assert_allclose(a, b, **close)
        assert h_p_grads.keys() == p_grads.keys()
        for k in p_grads:
            np.testing.assert_allclose(h_p_grads[k], p_grads[k], err_msg=k, **close)
        layer.hybridize(active=False)
    return out


# ---------------------------------------------------------------------------------------------- numpy references
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


_ERF = np.vectorize(math.erf)

ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
    "softrelu": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
}


def ref_dense(x, w, b, flatten=True, act=None):
    x2 = x.reshape(x.shape[0], -1) if flatten else x
    y = x2 @ w.T + (0 if b is None else b)
    return ACTIVATIONS[act](y) if act else y


def _bshape(ndim, axis, n):
    shape = [1] * ndim
    shape[axis] = n
    return shape


def ref_batchnorm(x, p, axis=1, eps=1e-5, train=False, scale=True, use_global_stats=False):
    axis = axis % x.ndim
    red = tuple(i for i in range(x.ndim) if i != axis)
    c = x.shape[axis]
    if train and not use_global_stats:
        mean, var = x.mean(red), x.var(red)
    else:
        mean, var = p["running_mean"], p["running_var"]
    gamma = p["gamma"] if scale else np.ones(c)
    bs = _bshape(x.ndim, axis, c)
    return (x - mean.reshape(bs)) / np.sqrt(var.reshape(bs) + eps) * gamma.reshape(bs) + p["beta"].reshape(bs)


def ref_instancenorm(x, p, eps=1e-5):
    red = tuple(range(2, x.ndim))
    bs = _bshape(x.ndim, 1, x.shape[1])
    xhat = (x - x.mean(red, keepdims=True)) / np.sqrt(x.var(red, keepdims=True) + eps)
    return xhat * p["gamma"].reshape(bs) + p["beta"].reshape(bs)


def ref_layernorm(x, p, axis=-1, eps=1e-5):
    bs = _bshape(x.ndim, axis, x.shape[axis])
    xhat = (x - x.mean(axis, keepdims=True)) / np.sqrt(x.var(axis, keepdims=True) + eps)
    return xhat * p["gamma"].reshape(bs) + p["beta"].reshape(bs)


def ref_groupnorm(x, p, groups, eps=1e-5):
    xg = x.reshape(x.shape[0], groups, -1)
    xhat = (xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + eps)
    return (xhat * p["gamma"].reshape(1, -1, 1) + p["beta"].reshape(1, -1, 1)).reshape(x.shape)


def _tup(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


def ref_conv(x, w, b, stride=1, pad=0, dilate=1, groups=1):
    nd_ = x.ndim - 2
    stride, pad, dilate = _tup(stride, nd_), _tup(pad, nd_), _tup(dilate, nd_)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    k = w.shape[2:]
    out_sp = [(xp.shape[2 + i] - dilate[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd_)]
    n, c = x.shape[:2]
    o = w.shape[0]
    cg, og = c // groups, o // groups
    out = np.zeros((n, o, *out_sp))
    for kidx in itertools.product(*[range(kk) for kk in k]):
        sl = tuple(slice(kidx[i] * dilate[i], kidx[i] * dilate[i] + stride[i] * (out_sp[i] - 1) + 1, stride[i])
                   for i in range(nd_))
        patch = xp[(slice(None), slice(None)) + sl]
        for g in range(groups):
            wk = w[(slice(g * og, (g + 1) * og), slice(None)) + kidx]
            out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch[:, g * cg:(g + 1) * cg], wk)
    if b is not None:
        out += b.reshape([1, -1] + [1] * nd_)
    return out


def ref_deconv(x, w, b, stride=1, pad=0, dilate=1, groups=1, adj=0):
    """Transposed convolution as the scatter-add adjoint of ref_conv; weight (in_channels, out/groups, *k)."""
    nd_ = x.ndim - 2
    stride, pad, dilate, adj = _tup(stride, nd_), _tup(pad, nd_), _tup(dilate, nd_), _tup(adj, nd_)
    n, c = x.shape[:2]
    in_sp, k, og = x.shape[2:], w.shape[2:], w.shape[1]
    cg = c // groups
    full = [(in_sp[i] - 1) * stride[i] + dilate[i] * (k[i] - 1) + 1 + adj[i] for i in range(nd_)]
    buf = np.zeros((n, og * groups, *full))
    for kidx in itertools.product(*[range(kk) for kk in k]):
        sl = tuple(slice(kidx[i] * dilate[i], kidx[i] * dilate[i] + stride[i] * (in_sp[i] - 1) + 1, stride[i])
                   for i in range(nd_))
        for g in range(groups):
            wk = w[(slice(g * cg, (g + 1) * cg), slice(None)) + kidx]
            contrib = np.einsum("nc...,co->no...", x[:, g * cg:(g + 1) * cg], wk)
            buf[(slice(None), slice(g * og, (g + 1) * og)) + sl] += contrib
    out_sp = [(in_sp[i] - 1) * stride[i] - 2 * pad[i] + dilate[i] * (k[i] - 1) + 1 + adj[i] for i in range(nd_)]
    out = buf[(slice(None), slice(None)) + tuple(slice(pad[i], pad[i] + out_sp[i]) for i in range(nd_))]
    if b is not None:
        out = out + b.reshape([1, -1] + [1] * nd_)
    return out


def ref_pool(x, kernel, stride=None, pad=0, pool_type="max", ceil_mode=False, count_include_pad=True):
    nd_ = x.ndim - 2
    kernel = _tup(kernel, nd_)
    stride = kernel if stride is None else _tup(stride, nd_)
    pad = _tup(pad, nd_)
    size = x.shape[2:]
    extra = [s - 1 if ceil_mode else 0 for s in stride]
    out_sp = [(size[i] + 2 * pad[i] - kernel[i] + extra[i]) // stride[i] + 1 for i in range(nd_)]
    out = np.zeros(x.shape[:2] + tuple(out_sp))
    for pos in np.ndindex(*out_sp):
        start = [pos[i] * stride[i] - pad[i] for i in range(nd_)]
        end = [min(start[i] + kernel[i], size[i] + pad[i]) for i in range(nd_)]
        padded_count = int(np.prod([end[i] - start[i] for i in range(nd_)]))
        lo = [max(s, 0) for s in start]
        hi = [min(e, size[i]) for i, e in enumerate(end)]
        win = x[(slice(None), slice(None)) + tuple(slice(lo[i], hi[i]) for i in range(nd_))]
        axes = tuple(range(2, x.ndim))
        if pool_type == "max":
            out[(slice(None), slice(None)) + pos] = win.max(axes)
        else:
            count = padded_count if count_include_pad else int(np.prod([h - l for l, h in zip(lo, hi)]))
            out[(slice(None), slice(None)) + pos] = win.sum(axes) / count
    return out


def ref_pixel_shuffle(x, factors):
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    k = len(factors)
    y = x.reshape((n, c // int(np.prod(factors))) + tuple(factors) + spatial)
    order = [0, 1] + [a for i in range(k) for a in (2 + k + i, 2 + i)]     # (N, C, s1, f1, s2, f2, ...)
    y = y.transpose(order)
    return y.reshape((n, y.shape[1]) + tuple(s * f for s, f in zip(spatial, factors)))


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


# ---------------------------------------------------------------------------------------------- the case table
def _dense_ref(flatten=True, act=None, bias=True):
    return lambda xs, p: ref_dense(xs[0], p["weight"], p["bias"] if bias else None, flatten, act)


def _conv_ref(fn, **kw):
    return lambda xs, p: fn(xs[0], p["weight"], p.get("bias"), **kw)


def _pool_ref(**kw):
    return lambda xs, p: ref_pool(xs[0], **kw)


def _global_ref(kind):
    def ref(xs, p):
        axes = tuple(range(2, xs[0].ndim))
        return (xs[0].max if kind == "max" else xs[0].mean)(axes, keepdims=True)
    return ref


def _seq(cls, children):
    net = cls()
    with net.name_scope():
        net.add(*children())
    return net


def _concurrent(cls):
    net = cls(axis=1)
    with net.name_scope():
        net.add(nn.Dense(3, in_units=4), cnn.Identity(), nn.Dense(2, in_units=4, activation="tanh"))
    return net


def _concurrent_ref(xs, p):
    x = xs[0]
    return np.concatenate([ref_dense(x, p["dense0_weight"], p["dense0_bias"]), x,
                           ref_dense(x, p["dense1_weight"], p["dense1_bias"], act="tanh")], axis=1)


def _seq_ref(xs, p):
    h = ref_dense(xs[0], p["dense0_weight"], p["dense0_bias"], act="relu")
    return ref_dense(h, p["dense1_weight"], p["dense1_bias"])


CASES = [
    # id, layer factory, input shapes, reference, kwargs for check_layer
    ("dense", lambda: nn.Dense(3, in_units=8), [(2, 2, 4)], _dense_ref(), {}),
    ("dense_noflatten", lambda: nn.Dense(3, flatten=False, in_units=4), [(2, 3, 4)], _dense_ref(False), {}),
    ("dense_tanh_nobias", lambda: nn.Dense(3, activation="tanh", use_bias=False, in_units=4), [(2, 4)],
     _dense_ref(act="tanh", bias=False), {}),
    ("dense_relu", lambda: nn.Dense(5, activation="relu", in_units=4), [(3, 4)], _dense_ref(act="relu"), {}),
] + [
    (f"activation_{act}", (lambda a=act: nn.Activation(a)), [(2, 5)],
     (lambda xs, p, a=act: ACTIVATIONS[a](xs[0])), {})
    for act in ACTIVATIONS
] + [
    ("leakyrelu", lambda: nn.LeakyReLU(0.2), [(2, 5)], lambda xs, p: np.where(xs[0] > 0, xs[0], 0.2 * xs[0]), {}),
    ("prelu", lambda: nn.PReLU(), [(2, 5)], lambda xs, p: np.where(xs[0] > 0, xs[0], p["alpha"] * xs[0]), {}),
    ("prelu_channels", lambda: nn.PReLU(in_channels=3), [(2, 3, 4)],
     lambda xs, p: np.where(xs[0] > 0, xs[0], p["alpha"].reshape(1, 3, 1) * xs[0]), {}),
    ("elu", lambda: nn.ELU(0.7), [(2, 5)], lambda xs, p: np.where(xs[0] > 0, xs[0], 0.7 * np.expm1(xs[0])), {}),
    # no finite differences: SELU's gradient is MXNet's rule, lambda * (y + alpha) for x <= 0, which is not the
    # exact derivative (tests/ops/test_mxnet_grad_rules.py pins it)
    ("selu", lambda: nn.SELU(), [(2, 5)],
     lambda xs, p: SELU_SCALE * np.where(xs[0] > 0, xs[0], SELU_ALPHA * np.expm1(xs[0])), {"fd": False}),
    ("swish", lambda: nn.Swish(1.5), [(2, 5)], lambda xs, p: xs[0] * _sigmoid(1.5 * xs[0]), {}),
    ("gelu", lambda: nn.GELU(), [(2, 5)], lambda xs, p: 0.5 * xs[0] * (1 + _ERF(xs[0] / np.sqrt(2))), {}),
    ("dropout_predict", lambda: nn.Dropout(0.5), [(3, 4)], lambda xs, p: xs[0], {}),
    ("dropout_zero_rate_train", lambda: nn.Dropout(0.0), [(3, 4)], lambda xs, p: xs[0], {"train": True}),
    # normalization
    ("batchnorm_predict", lambda: nn.BatchNorm(in_channels=3), [(4, 3, 2)],
     lambda xs, p: ref_batchnorm(xs[0], p), {}),
    ("batchnorm_train", lambda: nn.BatchNorm(in_channels=3), [(4, 3, 2)],
     lambda xs, p: ref_batchnorm(xs[0], p, train=True), {"train": True}),
    ("batchnorm_train_axis_last", lambda: nn.BatchNorm(axis=-1, in_channels=3), [(4, 2, 3)],
     lambda xs, p: ref_batchnorm(xs[0], p, axis=-1, train=True), {"train": True}),
    ("batchnorm_predict_axis_last", lambda: nn.BatchNorm(axis=-1, in_channels=3), [(4, 2, 3)],
     lambda xs, p: ref_batchnorm(xs[0], p, axis=-1), {}),
    ("batchnorm_train_noscale_nocenter", lambda: nn.BatchNorm(scale=False, center=False, in_channels=3),
     [(4, 3, 2)], lambda xs, p: ref_batchnorm(xs[0], p, train=True, scale=False), {"train": True}),
    ("batchnorm_global_stats_train", lambda: nn.BatchNorm(use_global_stats=True, epsilon=1e-3, in_channels=2),
     [(3, 2, 2, 2)], lambda xs, p: ref_batchnorm(xs[0], p, eps=1e-3, train=True, use_global_stats=True),
     {"train": True}),
    ("batchnormrelu_train", lambda: nn.BatchNormReLU(in_channels=3), [(4, 3, 2)],
     lambda xs, p: np.maximum(ref_batchnorm(xs[0], p, train=True), 0), {"train": True}),
    ("instancenorm", lambda: nn.InstanceNorm(in_channels=3, scale=True), [(2, 3, 4)],
     lambda xs, p: ref_instancenorm(xs[0], p), {}),
    ("instancenorm_default_noscale", lambda: nn.InstanceNorm(in_channels=2), [(2, 2, 2, 3)],
     lambda xs, p: ref_instancenorm(xs[0], dict(p, gamma=np.ones(2))), {}),
    ("layernorm", lambda: nn.LayerNorm(in_channels=4), [(2, 3, 4)], lambda xs, p: ref_layernorm(xs[0], p), {}),
    ("layernorm_axis1", lambda: nn.LayerNorm(axis=1, epsilon=1e-3, in_channels=3), [(2, 3, 4)],
     lambda xs, p: ref_layernorm(xs[0], p, axis=1, eps=1e-3), {}),
    ("groupnorm", lambda: nn.GroupNorm(num_groups=2), [(2, 4, 3)], lambda xs, p: ref_groupnorm(xs[0], p, 2), {}),
    ("groupnorm_one_group", lambda: nn.GroupNorm(), [(2, 2, 2, 2)], lambda xs, p: ref_groupnorm(xs[0], p, 1), {}),
    # shape / wrapper layers
    ("embedding", lambda: nn.Embedding(6, 3), [np.array([[0, 5, 2], [2, 2, 1]])],
     lambda xs, p: p["weight"][xs[0].astype(int)], {"grad_inputs": [False]}),
    ("flatten", lambda: nn.Flatten(), [(2, 3, 2)], lambda xs, p: xs[0].reshape(2, -1), {}),
    ("lambda_name", lambda: nn.Lambda("tanh"), [(2, 3)], lambda xs, p: np.tanh(xs[0]), {"hybrid": False}),
    ("lambda_fn", lambda: nn.Lambda(lambda x: x * x + 1), [(2, 3)], lambda xs, p: xs[0] ** 2 + 1,
     {"hybrid": False}),
    ("hybridlambda_name", lambda: nn.HybridLambda("sigmoid"), [(2, 3)], lambda xs, p: _sigmoid(xs[0]), {}),
    ("hybridlambda_fn", lambda: nn.HybridLambda(lambda F, x: F.relu(x) * 3), [(2, 3)],
     lambda xs, p: np.maximum(xs[0], 0) * 3, {}),
    ("sequential", lambda: _seq(nn.Sequential, lambda: [nn.Dense(4, activation="relu", in_units=3),
                                                        nn.Dense(2, in_units=4)]),
     [(2, 3)], _seq_ref, {"hybrid": False}),
    ("hybridsequential", lambda: _seq(nn.HybridSequential, lambda: [nn.Dense(4, activation="relu", in_units=3),
                                                                    nn.Dense(2, in_units=4)]),
     [(2, 3)], _seq_ref, {}),
    ("reflectionpad2d", lambda: nn.ReflectionPad2D(2), [(1, 2, 3, 4)],
     lambda xs, p: np.pad(xs[0], ((0, 0), (0, 0), (2, 2), (2, 2)), mode="reflect"), {}),
    # contrib
    ("identity", lambda: cnn.Identity(), [(2, 3)], lambda xs, p: xs[0], {}),
    ("concurrent", lambda: _concurrent(cnn.Concurrent), [(2, 4)], _concurrent_ref, {"hybrid": False}),
    ("hybridconcurrent", lambda: _concurrent(cnn.HybridConcurrent), [(2, 4)], _concurrent_ref, {}),
    ("pixelshuffle1d", lambda: cnn.PixelShuffle1D(3), [(2, 6, 2)], lambda xs, p: ref_pixel_shuffle(xs[0], (3,)),
     {}),
    ("pixelshuffle2d", lambda: cnn.PixelShuffle2D((2, 3)), [(1, 12, 2, 2)],
     lambda xs, p: ref_pixel_shuffle(xs[0], (2, 3)), {}),
    ("pixelshuffle3d", lambda: cnn.PixelShuffle3D(2), [(1, 8, 1, 2, 2)],
     lambda xs, p: ref_pixel_shuffle(xs[0], (2, 2, 2)), {}),
    # convolutions
    ("conv1d", lambda: nn.Conv1D(3, 3, in_channels=2), [(2, 2, 6)], _conv_ref(ref_conv), {}),
    ("conv1d_stride_pad_dil", lambda: nn.Conv1D(2, 2, strides=2, padding=1, dilation=2, in_channels=2),
     [(1, 2, 7)], _conv_ref(ref_conv, stride=2, pad=1, dilate=2), {}),
    ("conv2d", lambda: nn.Conv2D(3, (2, 3), in_channels=2), [(2, 2, 4, 5)], _conv_ref(ref_conv), {}),
    ("conv2d_all_options", lambda: nn.Conv2D(4, 3, strides=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2,
                                             in_channels=4),
     [(1, 4, 5, 5)], _conv_ref(ref_conv, stride=(2, 1), pad=(1, 2), dilate=(1, 2), groups=2), {}),
    ("conv2d_relu_nobias", lambda: nn.Conv2D(2, 2, activation="relu", use_bias=False, in_channels=1),
     [(2, 1, 3, 3)], lambda xs, p: np.maximum(ref_conv(xs[0], p["weight"], None), 0), {}),
    ("conv3d", lambda: nn.Conv3D(2, 2, padding=1, strides=2, in_channels=2), [(1, 2, 3, 3, 3)],
     _conv_ref(ref_conv, stride=2, pad=1), {}),
    ("conv3d_groups", lambda: nn.Conv3D(2, (1, 2, 2), groups=2, in_channels=2), [(1, 2, 2, 3, 3)],
     _conv_ref(ref_conv, groups=2), {}),
    ("conv1d_transpose", lambda: nn.Conv1DTranspose(2, 3, in_channels=2), [(2, 2, 4)], _conv_ref(ref_deconv), {}),
    ("conv1d_transpose_options", lambda: nn.Conv1DTranspose(2, 3, strides=2, padding=1, output_padding=1,
                                                            dilation=2, in_channels=2),
     [(1, 2, 4)], _conv_ref(ref_deconv, stride=2, pad=1, adj=1, dilate=2), {}),
    ("conv2d_transpose", lambda: nn.Conv2DTranspose(3, (2, 3), strides=2, padding=(0, 1), output_padding=(1, 0),
                                                    in_channels=2),
     [(1, 2, 3, 3)], _conv_ref(ref_deconv, stride=2, pad=(0, 1), adj=(1, 0)), {}),
    ("conv2d_transpose_groups", lambda: nn.Conv2DTranspose(4, 2, groups=2, dilation=2, in_channels=2),
     [(1, 2, 2, 3)], _conv_ref(ref_deconv, groups=2, dilate=2), {}),
    ("conv3d_transpose", lambda: nn.Conv3DTranspose(2, 2, strides=2, padding=1, output_padding=1, in_channels=2),
     [(1, 2, 2, 2, 2)], _conv_ref(ref_deconv, stride=2, pad=1, adj=1), {}),
    # pooling
    ("maxpool1d", lambda: nn.MaxPool1D(), [(2, 2, 6)], _pool_ref(kernel=2), {}),
    ("maxpool1d_ceil_pad", lambda: nn.MaxPool1D(3, 2, padding=1, ceil_mode=True), [(1, 2, 6)],
     _pool_ref(kernel=3, stride=2, pad=1, ceil_mode=True), {}),
    ("avgpool1d", lambda: nn.AvgPool1D(3, 1), [(2, 2, 5)], _pool_ref(kernel=3, stride=1, pool_type="avg"), {}),
    ("maxpool2d", lambda: nn.MaxPool2D((2, 3), (1, 2)), [(1, 2, 4, 5)], _pool_ref(kernel=(2, 3), stride=(1, 2)),
     {}),
    ("maxpool2d_ceil_pad", lambda: nn.MaxPool2D(3, 2, padding=1, ceil_mode=True), [(1, 1, 6, 5)],
     _pool_ref(kernel=3, stride=2, pad=1, ceil_mode=True), {}),
    ("avgpool2d_pad_include", lambda: nn.AvgPool2D(3, 2, padding=1), [(1, 2, 5, 5)],
     _pool_ref(kernel=3, stride=2, pad=1, pool_type="avg"), {}),
    ("avgpool2d_pad_exclude", lambda: nn.AvgPool2D(3, 2, padding=1, count_include_pad=False), [(1, 2, 5, 5)],
     _pool_ref(kernel=3, stride=2, pad=1, pool_type="avg", count_include_pad=False), {}),
    ("avgpool2d_ceil_include", lambda: nn.AvgPool2D(3, 2, padding=1, ceil_mode=True), [(1, 1, 6, 6)],
     _pool_ref(kernel=3, stride=2, pad=1, pool_type="avg", ceil_mode=True), {}),
    ("avgpool2d_ceil_exclude", lambda: nn.AvgPool2D(2, ceil_mode=True, count_include_pad=False), [(1, 1, 5, 5)],
     _pool_ref(kernel=2, pool_type="avg", ceil_mode=True, count_include_pad=False), {}),
    ("maxpool3d", lambda: nn.MaxPool3D(2, padding=(0, 1, 0)), [(1, 2, 2, 3, 4)],
     _pool_ref(kernel=2, pad=(0, 1, 0)), {}),
    ("avgpool3d_ceil", lambda: nn.AvgPool3D(2, ceil_mode=True), [(1, 1, 3, 3, 2)],
     _pool_ref(kernel=2, pool_type="avg", ceil_mode=True), {}),
] + [
    (f"global{kind}pool{d}d", (lambda k=kind, d=d: getattr(nn, f"Global{k.capitalize()}Pool{d}D")()),
     [(2, 2) + (3, 2, 3)[:d]], _global_ref(kind), {})
    for kind in ("max", "avg") for d in (1, 2, 3)
]


@pytest.mark.parametrize("name, make, shapes, ref, kwargs", CASES, ids=[c[0] for c in CASES])
def test_layer_forward_and_gradients(name, make, shapes, ref, kwargs):
    xs = [s if isinstance(s, np.ndarray) else _rand(s, 1) for s in shapes]
    check_layer(make(), xs, ref, **kwargs)


# Layers with several outputs, checked against numpy in files of their own.
COVERED_ELSEWHERE = {"DotProductAttention": "tests/gluon/test_sequence_loss_attention.py",
                     "MultiHeadAttention": "tests/gluon/test_sequence_loss_attention.py"}


def test_every_public_layer_is_covered():
    covered = {type(c[1]()).__name__ for c in CASES} | set(COVERED_ELSEWHERE)
    for module in (nn, cnn):
        for name in dir(module):
            cls = getattr(module, name)
            if isinstance(cls, type) and issubclass(cls, mx.gluon.Block) \
                    and name not in ("Block", "HybridBlock", "SymbolBlock", "SyncBatchNorm"):
                assert name in covered, f"{module.__name__}.{name} has no case"


# ---------------------------------------------------------------------------------------------- behaviours
@pytest.mark.parametrize("axes", [(), (1,)])
def test_dropout_train_vs_predict(axes):
    rate = 0.4
    layer = nn.Dropout(rate, axes=axes)
    x = mx.nd.array(_rand((400, 5), 3, 0.5, 1.5))
    np.testing.assert_array_equal(layer(x).asnumpy(), x.asnumpy())                 # not training: identity
    with autograd.predict_mode():
        np.testing.assert_array_equal(layer(x).asnumpy(), x.asnumpy())
    x.attach_grad()
    with autograd.record():
        y = layer(x)
    y.backward()
    out, xn = y.asnumpy(), x.asnumpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], xn[kept] / (1 - rate), rtol=1e-6)
    assert abs((~kept).mean() - rate) < 0.06
    np.testing.assert_allclose(x.grad.asnumpy(), kept / (1 - rate), rtol=1e-6)
    if axes:    # one mask per row, broadcast along axis 1
        assert np.all(kept.all(axis=1) | (~kept).all(axis=1))
    with autograd.record(train_mode=False):
        np.testing.assert_array_equal(layer(x).asnumpy(), x.asnumpy())


@pytest.mark.parametrize("axis, shape", [(1, (4, 3, 2)), (-1, (5, 3))])
def test_batchnorm_running_statistics(axis, shape):
    momentum = 0.8
    bn = nn.BatchNorm(axis=axis, momentum=momentum)
    bn.initialize()
    bn.cast(F64)
    xs = [_rand(shape, s) * 2 + 1 for s in (1, 2)]
    red = tuple(i for i in range(len(shape)) if i != axis % len(shape))
    c = shape[axis]
    mean, var = np.zeros(c), np.ones(c)
    for x in xs:
        xa = mx.nd.array(x, dtype=F64)
        with autograd.record():
            y = bn(xa)
        y.backward()
        np.testing.assert_allclose(y.asnumpy(), ref_batchnorm(x, {"gamma": np.ones(c), "beta": np.zeros(c)},
                                                              axis=axis, train=True), atol=1e-10)
        mean = momentum * mean + (1 - momentum) * x.mean(red)
        var = momentum * var + (1 - momentum) * x.var(red)          # biased batch variance, as MXNet 1.9.1
        np.testing.assert_allclose(bn.running_mean.data().asnumpy(), mean, rtol=1e-7)
        np.testing.assert_allclose(bn.running_var.data().asnumpy(), var, rtol=1e-7)
    # predict mode uses (and leaves alone) the running statistics
    y = bn(mx.nd.array(xs[0], dtype=F64))
    p = {"gamma": np.ones(c), "beta": np.zeros(c), "running_mean": mean, "running_var": var}
    np.testing.assert_allclose(y.asnumpy(), ref_batchnorm(xs[0], p, axis=axis), atol=1e-10)
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(), mean, rtol=1e-7)
    # record(train_mode=False) also uses them
    with autograd.record(train_mode=False):
        y = bn(mx.nd.array(xs[1], dtype=F64))
    np.testing.assert_allclose(y.asnumpy(), ref_batchnorm(xs[1], p, axis=axis), atol=1e-10)
    np.testing.assert_allclose(bn.running_var.data().asnumpy(), var, rtol=1e-7)


def test_batchnorm_scale_center_false_params():
    bn = nn.BatchNorm(scale=False, center=False)
    assert bn.gamma.grad_req == "null" and bn.beta.grad_req == "null"
    bn.initialize()
    x = mx.nd.array(_rand((4, 2, 3), 0))
    x.attach_grad()
    with autograd.record():
        y = bn(x)
    y.backward()
    np.testing.assert_allclose(bn.gamma.data().asnumpy(), 1)
    np.testing.assert_allclose(bn.beta.data().asnumpy(), 0)
    with pytest.raises(RuntimeError):          # MXNetError is a RuntimeError, as in MXNet
        bn.gamma.grad()


def test_embedding_weight_gradient_accumulates_repeated_indices():
    emb = nn.Embedding(4, 2)
    emb.initialize()
    idx = mx.nd.array([[1, 1], [3, 1]])
    with autograd.record():
        y = emb(idx)
    y.backward()
    np.testing.assert_array_equal(emb.weight.grad().asnumpy(), [[0, 0], [3, 3], [0, 0], [1, 1]])


def test_sequential_indexing_slicing_len():
    for cls in (nn.Sequential, nn.HybridSequential):
        net = cls()
        with net.name_scope():
            net.add(nn.Dense(4, in_units=3), nn.Activation("relu"))
            net.add(nn.Dense(2, in_units=4))
        assert len(net) == 3
        assert isinstance(net[0], nn.Dense) and isinstance(net[-1], nn.Dense) and net[1]._act_type == "relu"
        head = net[:2]
        assert type(head) is cls and len(head) == 2 and head[0] is net[0] and head[1] is net[1]
        assert len(net[1:]) == 2 and net[1:][1] is net[2]
        net.initialize()
        x = mx.nd.array(_rand((2, 3), 0))
        np.testing.assert_array_equal(net(x).asnumpy(), net[2](net[:2](x)).asnumpy())
        assert list(net._children.keys()) == ["0", "1", "2"]


# ---------------------------------------------------------------------------------------------- deferred shapes
DEFERRED = [
    ("dense", lambda c: nn.Dense(3, in_units=c), (2, 2, 3), 6),
    ("dense_noflatten", lambda c: nn.Dense(3, flatten=False, in_units=c), (2, 2, 3), 3),
    ("batchnorm", lambda c: nn.BatchNorm(in_channels=c), (2, 3, 2), 3),
    ("batchnorm_axis_last", lambda c: nn.BatchNorm(axis=-1, in_channels=c), (2, 2, 4), 4),
    ("instancenorm", lambda c: nn.InstanceNorm(in_channels=c, scale=True), (2, 3, 4), 3),
    ("layernorm", lambda c: nn.LayerNorm(in_channels=c), (2, 3, 4), 4),
    ("conv1d", lambda c: nn.Conv1D(2, 2, in_channels=c), (1, 3, 5), 3),
    ("conv2d_groups", lambda c: nn.Conv2D(4, 2, groups=2, in_channels=c), (1, 4, 3, 3), 4),
    ("conv3d", lambda c: nn.Conv3D(2, 2, in_channels=c), (1, 2, 3, 3, 3), 2),
    ("conv2d_transpose", lambda c: nn.Conv2DTranspose(2, 3, strides=2, in_channels=c), (1, 3, 2, 2), 3),
    ("conv2d_transpose_groups", lambda c: nn.Conv2DTranspose(4, 2, groups=2, in_channels=c), (1, 2, 2, 2), 2),
    ("conv1d_transpose", lambda c: nn.Conv1DTranspose(2, 3, in_channels=c), (1, 3, 4), 3),
    ("conv3d_transpose", lambda c: nn.Conv3DTranspose(2, 2, in_channels=c), (1, 2, 2, 2, 2), 2),
]


@pytest.mark.parametrize("name, make, shape, size", DEFERRED, ids=[d[0] for d in DEFERRED])
def test_deferred_shape_inference_matches_explicit(name, make, shape, size):
    explicit, deferred = make(size), make(0)
    explicit.initialize(mx.init.Uniform(0.5))
    deferred.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(_rand(shape, 5))
    with pytest.raises(mx.gluon.parameter.DeferredInitializationError):
        deferred.weight.data() if hasattr(deferred, "weight") else deferred.gamma.data()
    deferred(x)                                                        # infers the shapes and initializes
    e_params, d_params = _local_params(explicit), _local_params(deferred)
    assert e_params.keys() == d_params.keys()
    for k in e_params:
        assert e_params[k].shape == d_params[k].shape, k
        d_params[k].set_data(e_params[k].data())
    with autograd.record():
        ye = explicit(x)
    ye.backward()
    with autograd.record():
        yd = deferred(x)
    yd.backward()
    np.testing.assert_array_equal(yd.asnumpy(), ye.asnumpy())
    for k, p in e_params.items():
        if p.grad_req != "null":
            np.testing.assert_array_equal(d_params[k].grad().asnumpy(), p.grad().asnumpy())
    assert repr(deferred) == repr(explicit)


def test_deferred_nested_network_and_hybridize():
    def build():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Conv2D(3, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(),
                    nn.Flatten(), nn.Dense(4))
        return net
    a, b = build(), build()
    a.initialize()
    b.initialize()
    b.hybridize()
    x = mx.nd.array(_rand((2, 2, 4, 4), 0))
    a(x)
    b(x)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        assert pa.shape == pb.shape
        pb.set_data(pa.data())
    assert a[0].weight.shape == (3, 2, 3, 3) and a[-1].weight.shape == (4, 12)
    with autograd.record():
        ya = a(x)
    ya.backward()
    with autograd.record():
        yb = b(x)
    yb.backward()
    np.testing.assert_array_equal(ya.asnumpy(), yb.asnumpy())
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        if pa.grad_req != "null":
            np.testing.assert_array_equal(pa.grad().asnumpy(), pb.grad().asnumpy())
