"""The out= protocol (OpDef.writes_out), generated from the registry, and static_alloc end to end.

1. Every op declaring writes_out: its kernel given a preallocated buffer (zero-filled, and filled with garbage)
   gives exactly what it gives without one, returns that very buffer, and without one returns a fresh array
   (never a view of an input: planned buffers are co-shared by lifetime, so an alias would be overwritten).
2. Hybridized models with static_alloc=True (an MLP, a small CNN, the W6 Dense+ReLU chain) give the same outputs
   and gradients as without, over several calls that reuse the planned buffers, with planned bytes > 0.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mixnet as mx
from mixnet import autograd, gluon
from mixnet.gluon import nn
from mixnet.ops import registry

from .recipes import make_inputs, recipe_cases

# _fused_elemwise takes a generated kernel as its attribute; tests/gluon/test_hybridize.py covers it in a graph
OUT_OPS = [op for op in registry.all_ops() if op.writes_out and op.name != "_fused_elemwise"]


def test_the_benchmark_kernels_write_out():
    names = {op.name for op in OUT_OPS}
    for name in ("FullyConnected", "_fc_data_grad", "_fc_weight_grad", "Activation", "relu", "_relu_bwd",
                 "broadcast_add", "broadcast_mul", "elemwise_add", "_mul_scalar", "log_softmax", "softmax",
                 "Convolution", "_conv_data_grad", "_conv_weight_grad", "Pooling", "_pool_max_bwd"):
        assert name in names, f"{name} should declare writes_out"
    for name in ("Reshape", "Flatten", "expand_dims", "transpose"):      # results may alias their input
        assert not registry.get(name).writes_out, f"{name} returns views: it must not declare writes_out"


def _garbage(shape, dtype):
    if np.dtype(dtype).kind == "f":
        return np.full(shape, np.nan, dtype=dtype)
    return np.full(shape, 7, dtype=dtype)


def check_out(op, shapes, attrs, seed):
    arrays = make_inputs(op.test, shapes, seed)
    parsed = op.parse(attrs)
    fresh = op.kernel(np, *[a.copy() for a in arrays], **parsed)
    fresh = tuple(fresh) if isinstance(fresh, (tuple, list)) else (fresh,)
    for r in fresh:
        assert not any(np.shares_memory(r, a) for a in arrays), f"{op.name} {attrs}: eager result is a view"
    for fill in (np.zeros, _garbage):
        bufs = tuple(fill(r.shape, r.dtype) for r in fresh)
        got = op.kernel(np, *arrays, out=bufs if len(bufs) > 1 else bufs[0], **parsed)
        got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
        for g, b, want in zip(got, bufs, fresh):
            assert g is b, f"{op.name} {attrs}: the result is not the given buffer"
            np.testing.assert_array_equal(g, want, err_msg=f"{op.name} {attrs} (buffer {fill.__name__})")


@pytest.mark.parametrize("op", OUT_OPS, ids=[op.name for op in OUT_OPS])
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_kernel_with_out_equals_kernel_without(op, data):
    for k, (shapes, attrs) in enumerate(op.test.cases):
        check_out(op, shapes, attrs, seed=k)
    if op.test.recipe is not None:
        shapes, attrs = data.draw(recipe_cases(op.test))
        check_out(op, shapes, attrs, data.draw(st.integers(0, 2 ** 16)))


def test_fc_with_out_writes_the_gemm_into_the_buffer():
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((5, 2, 3), (4, 6), (4,)))
    op = registry.get("FullyConnected")
    attrs = op.parse({"num_hidden": 4})
    buf = np.full((5, 4), np.nan, np.float32)
    assert op.kernel(np, x, w, b, out=buf, **attrs) is buf
    np.testing.assert_allclose(buf, x.reshape(5, 6) @ w.T + b, rtol=1e-5)


# ---------------------------------------------------------------------------------------------------------
# static_alloc end to end
def _mlp():
    # 16 rows against 32 features: the hidden values stay row-major and take planned buffers (feature-major ones,
    # 4+ times wider than the batch, keep their own arrays: compiler/pipeline._plannable)
    net = nn.HybridSequential()
    net.add(nn.Dense(32, activation="relu", in_units=20), nn.Dense(32, activation="tanh", in_units=32),
            nn.Dense(10, in_units=32))
    return net, (16, 20)


def _cnn():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, activation="relu", in_channels=1), nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 3, in_channels=4), nn.AvgPool2D(2, 1), nn.Flatten(), nn.Dense(10, activation="relu"),
            nn.Dense(5))
    return net, (4, 1, 12, 12)


def _chain():
    net = nn.HybridSequential()
    for _ in range(4):
        net.add(nn.Dense(16, activation="relu", in_units=16))
    return net, (8, 16)


def _plans(*blocks):
    for block in blocks:
        for graph in block._cached_graphs.values():
            if graph.inference is not None:
                yield graph.inference
            for plan in graph._training.values():
                yield from (p for p in (plan.forward, plan.backward) if p is not None)


def _run(make, static, inputs):
    mx.random.seed(0)
    net, _ = make()
    net.initialize(mx.init.Xavier())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    net.hybridize(static_alloc=static)
    loss_fn.hybridize(static_alloc=static)
    results = []
    for x_np, y_np in inputs:
        x, y = mx.nd.array(x_np), mx.nd.array(y_np)
        x.attach_grad()
        with autograd.record():
            out = net(x)
            loss = loss_fn(out, y)
        loss.backward()
        results.append([out.asnumpy(), loss.asnumpy(), x.grad.asnumpy()]
                       + [p.grad().asnumpy() for p in net.collect_params().values()])
        results[-1].append(net(x).asnumpy())                         # the inference plan too
    for plan in _plans(net, loss_fn):
        plan.wait_fused()
    return results, net, loss_fn


@pytest.mark.parametrize("make", [_mlp, _cnn, _chain], ids=["mlp", "cnn", "dense_relu_chain"])
def test_static_alloc_gives_the_same_outputs_and_gradients(make):
    _, shape = make()
    rng = np.random.default_rng(1)
    inputs = [(rng.standard_normal(shape).astype(np.float32), rng.integers(0, 5, shape[0]).astype(np.float32))
              for _ in range(3)]
    plain, _, _ = _run(make, False, inputs)
    static, net, loss_fn = _run(make, True, inputs)
    for k, (want, got) in enumerate(zip(plain, static)):
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"call {k}")
    # results of earlier calls were not overwritten by later calls reusing the buffers
    again, _, _ = _run(make, True, inputs[:1])
    for w, g in zip(again[0], static[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    plans = list(_plans(net))
    assert plans and all(p.memory_report()["planned"] is not None for p in plans)
    assert sum(p.memory_report()["planned"] for p in plans) > 0
    assert any("out=O" in p.compiled.source for p in plans)


def test_views_of_planned_values_keep_their_buffer():
    """Flatten's result is a view of the pooled value: that buffer is not reused while the view is live, and a
    planned value reaching an output through views is not planned at all."""

    class Net(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            h = F.Pooling(F.relu(x), kernel=(2, 2), stride=(2, 2), pool_type="max")
            flat = F.Flatten(h)
            late = F.relu(flat * 2) + F.relu(flat * 3) + flat
            return late, F.Flatten(F.relu(x) * 5)

    x = mx.nd.array(np.random.default_rng(2).standard_normal((2, 3, 4, 4)).astype(np.float32))
    plain, static = Net(), Net()
    plain.hybridize()
    static.hybridize(static_alloc=True)
    first = [o.asnumpy() for o in static(x)]
    second = [o.asnumpy() for o in static(x * -1)]
    for got, want in zip(first, plain(x)):
        np.testing.assert_array_equal(got, want.asnumpy())
    for got, want in zip(second, plain(x * -1)):
        np.testing.assert_array_equal(got, want.asnumpy())
    assert static._last_graph.inference.memory_report()["planned"] > 0
