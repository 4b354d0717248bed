"""In-place reuse in compiled graphs (memory.inplace_reuse): an elementwise op writes its result over an input
whose last use it is. Never over a graph input, an output, a planned buffer, or a value a live view still reads."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import config
from mixnet.symbol import autodiff
from mixnet.symbol.compile import CompiledGraph


def _compile(sym, inplace=True, **shapes):
    types = autodiff.exact_types(sym, shapes, {k: np.float32 for k in shapes})
    old = config.INPLACE
    config.INPLACE = inplace
    try:
        return CompiledGraph(sym, list(shapes), mx.cpu(), types=types)
    finally:
        config.INPLACE = old


def _run(graph, *arrays):
    return [np.array(r) for r in graph(list(arrays), False)]


def test_an_elementwise_chain_reuses_one_buffer_and_keeps_its_results():
    x = mx.sym.var("x")
    y = mx.sym.tanh(mx.sym.exp(x) * 2 + 1) - 3
    graph, plain = _compile(y, x=(4, 5)), _compile(y, inplace=False, x=(4, 5))
    assert graph.source.count("out=v") == 4 and "out=" not in plain.source
    data = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    before = data.copy()
    np.testing.assert_array_equal(_run(graph, data)[0], _run(plain, data)[0])
    np.testing.assert_array_equal(data, before)                     # the graph input is never written


def test_a_value_still_read_through_a_view_is_not_overwritten():
    x = mx.sym.var("x")
    e = mx.sym.exp(x)
    view = mx.sym.Reshape(e, shape=(5, 4))                   # made before e's last direct use (e * 2) ...
    first = mx.sym.Reshape(view, shape=(4, 5)) + e * 2
    y = first + mx.sym.Reshape(view * 3, shape=(4, 5))        # ... and read after it
    graph = _compile(y, x=(4, 5))
    lines = graph.source.splitlines()
    assert "out=" not in next(line for line in lines if "_mul_scalar" in line and "v1," in line)
    data = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(_run(graph, data)[0], np.exp(data) * 6, rtol=1e-6)


def test_outputs_and_other_shapes_are_not_overwritten():
    x, b = mx.sym.var("x"), mx.sym.var("b")
    e = mx.sym.exp(x)
    y = mx.sym.Group([e, mx.sym.broadcast_add(mx.sym.sum(e, axis=0, keepdims=True), b) * 2])
    graph = _compile(y, x=(4, 5), b=(3, 5))
    assert "out=v" in graph.source                   # the product over the sum, not over e (an output)
    data = np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32)
    bias = np.ones((3, 5), np.float32)
    got = _run(graph, data, bias)
    np.testing.assert_allclose(got[0], np.exp(data), rtol=1e-6)
    np.testing.assert_allclose(got[1], (np.exp(data).sum(0, keepdims=True) + bias) * 2, rtol=1e-5)


@pytest.mark.parametrize("static_alloc", [False, True])
def test_hybridized_training_matches_eager(static_alloc):
    from mixnet import autograd
    from mixnet.gluon import nn
    nets = []
    for hybrid in (False, True):
        mx.random.seed(3)
        net = nn.HybridSequential()
        net.add(nn.Dense(16, activation="relu", in_units=8), nn.Dense(16, activation="tanh", in_units=16), nn.Dense(3, in_units=16))
        net.initialize()
        if hybrid:
            net.hybridize(static_alloc=static_alloc)
        nets.append(net)
    x = mx.nd.array(np.random.default_rng(4).standard_normal((6, 8)).astype(np.float32))
    outs = []
    for net in nets:
        x.attach_grad()
        with autograd.record():
            y = (mx.nd.relu(net(x)) * 3 - 1).sum()
        y.backward()
        outs.append([x.grad.asnumpy()] + [p.grad().asnumpy() for p in net.collect_params().values()])
    for got, want in zip(outs[1], outs[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
