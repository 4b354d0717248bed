"""The fusion pass: which ops fuse, fused vs unfused results (within the approximations' bounds), the number of
kernels, and the rules that keep it safe (convexity, shapes, dtypes, recording)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, config, gluon, nd
from mixnet.symbol.fuse import fuse


def _ops(sym):
    return [n.op.name for n in sym._nodes() if n.op is not None]


class Chain(gluon.HybridBlock):
    """The W1 chain (two branches from x merge into one group) plus a member used outside the group and a
    non-fusible op in between."""

    def hybrid_forward(self, F, x, b):
        h = F.tanh(x * 0.5 + 1) * F.sigmoid(x) - x * x / 3      # one group (b broadcasts in below)
        s = F.sum(h, axis=1, keepdims=True)                      # not fusible: splits the graph
        return F.broadcast_add(F.relu(h + b), s * 2), h


def _run_chain(fusion, monkeypatch, record):
    monkeypatch.setattr(config, "FUSE", fusion)
    block = Chain()
    block.hybridize()
    x = nd.array(np.random.default_rng(0).uniform(-4, 4, (6, 5)).astype(np.float32))
    b = nd.array(np.linspace(-1, 1, 5).astype(np.float32))
    x.attach_grad()
    with autograd.record(train_mode=False) if record else autograd.pause():
        out, h = block(x, b)
        loss = (out * out).sum() + (h * 3).sum()
    if record:
        loss.backward()
    return block._last_graph, out.asnumpy(), h.asnumpy(), x.grad.asnumpy()


def test_fused_plan_matches_unfused_and_counts_kernels(monkeypatch):
    graph, out, h, _ = _run_chain(True, monkeypatch, record=False)
    # one kernel for the chain + (h + b) + relu; the final add reads sum(h), so it stays outside the group
    assert graph.inference.fused_groups == 1
    assert _ops(graph.inference.symbol) == ["_fused_elemwise", "sum", "_mul_scalar", "broadcast_add"]
    _, ref_out, ref_h, _ = _run_chain(False, monkeypatch, record=False)
    np.testing.assert_allclose(out, ref_out, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(h, ref_h, rtol=2e-6, atol=2e-6)


def test_training_plans_fuse_forward_and_backward(monkeypatch):
    graph, out, h, gx = _run_chain(True, monkeypatch, record=True)
    (plan,) = graph._training.values()
    assert plan.forward.fused_groups >= 1 and plan.backward.fused_groups >= 1
    _, ref_out, ref_h, ref_gx = _run_chain(False, monkeypatch, record=True)
    np.testing.assert_allclose(out, ref_out, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(gx, ref_gx, rtol=1e-5, atol=1e-5)


def test_gradients_still_work_through_a_hybridized_fusible_block():
    block = Chain()
    block.hybridize()
    x = nd.array([[0.5, -1.0, 2.0]])
    b = nd.zeros((3,))
    x.attach_grad()
    with autograd.record():
        out, _ = block(x, b)
    out.backward()
    eager = Chain()
    x2 = nd.array([[0.5, -1.0, 2.0]])
    x2.attach_grad()
    with autograd.record():
        out2, _ = eager(x2, b)
    out2.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), x2.grad.asnumpy(), rtol=1e-6)


def test_groups_never_close_a_cycle_through_outside_ops():
    x = mx.sym.var("x")
    a = mx.sym.exp(x)
    outside = mx.sym.sum(a, axis=1, keepdims=True)                 # a -> sum -> back into the add
    y = mx.sym.broadcast_add(mx.sym.tanh(a), outside)
    fused, groups = fuse(y, {"x": (2, 3)}, {"x": np.float32})
    fused_ops = [n.raw["ops"] for n in fused._nodes() if n.op is not None and n.op.name == "_fused_elemwise"]
    assert fused_ops == ["exp+tanh"]                               # the add must wait for sum: not in the group
    got = fused.eval(x=nd.ones((2, 3)))[0].asnumpy()
    np.testing.assert_allclose(got, y.eval(x=nd.ones((2, 3)))[0].asnumpy(), rtol=2e-6)


def test_integer_graphs_and_single_ops_are_left_alone():
    x = mx.sym.var("x")
    _, groups = fuse(x * 2 + 1, {"x": (4,)}, {"x": np.int32})
    assert groups == 0
    _, groups = fuse(mx.sym.exp(x), {"x": (4,)}, {"x": np.float32})
    assert groups == 0


def test_fusion_switch_off(monkeypatch):
    monkeypatch.setattr(config, "FUSE", False)
    block = Chain()
    block.hybridize()
    block(nd.ones((2, 5)), nd.ones((5,)))
    assert block._last_graph.inference.fused_groups == 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_kernel_source_is_readable(dtype):
    x = mx.sym.var("x")
    fused, groups = fuse(mx.sym.tanh(x * 0.5 + 1), {"x": (8,)}, {"x": dtype})
    node = next(n for n in fused._nodes() if n.op is not None)
    source = node.attrs["kernel"].source
    assert groups == 1 and "# _mul_scalar" in source and "# tanh" in source
    assert fused.eval(x=nd.ones((8,), dtype=dtype))[0].dtype is np.dtype(dtype).type


def test_small_groups_stay_unfused_by_default():
    x = mx.sym.var("x")
    chain = mx.sym.tanh(x * 0.5 + 1)
    _, groups = fuse(chain, {"x": (64,)}, {"x": np.float32}, min_size=16384)
    assert groups == 0                                    # a kernel call costs more than 3 numpy passes here
    _, groups = fuse(chain, {"x": (128, 128)}, {"x": np.float32}, min_size=16384)
    assert groups == 1


def test_kernels_compile_in_the_background_while_calls_run_unfused(monkeypatch):
    from mixnet import config
    from mixnet.codegen import numba_cpu
    monkeypatch.setattr(config, "COMPILE_BACKGROUND", True)
    gate = __import__("threading").Event()
    real = numba_cpu.compile_kernel

    def slow_compile(*args, **kwargs):
        gate.wait(10)                                     # the "compile" ends only when the test says so
        return real(*args, **kwargs)

    monkeypatch.setattr(numba_cpu, "compile_kernel", slow_compile)
    block = Chain()
    block.hybridize()
    x = nd.array(np.random.default_rng(0).uniform(-4, 4, (6, 5)).astype(np.float32))
    b = nd.ones((5,))
    first, _ = block(x, b)                                # returns before any kernel is compiled
    plan = block._last_graph.inference
    assert plan.fused_groups == 0
    gate.set()
    plan.wait_fused()
    assert plan.fused_groups == 1
    later, _ = block(x, b)
    np.testing.assert_allclose(later.asnumpy(), first.asnumpy(), rtol=2e-6, atol=2e-6)


def test_a_plan_with_nothing_to_fuse_starts_no_thread(monkeypatch):
    """may_fuse: a graph without a fusible node gets no background fusion (a thread that would find nothing, and
    costs the first call its start); one with a fusible node does."""
    from mixnet.symbol.fuse import may_fuse
    monkeypatch.setattr(config, "COMPILE_BACKGROUND", True)
    dense = gluon.nn.HybridSequential()
    dense.add(gluon.nn.Dense(4, activation="relu", in_units=3), gluon.nn.Dense(2, in_units=4))
    dense.initialize()
    dense.hybridize()
    x = nd.ones((20, 3))
    with autograd.record():
        out = dense(x)
    out.backward()
    plans = [dense._last_graph.inference] if dense._last_graph._inference is not None else []
    for plan in dense._last_graph._training.values():
        plans += [plan.forward, plan.backward]
    assert plans and all(p._fusing is None and not may_fuse(p.symbol) for p in plans)
    chain = Chain()
    chain.hybridize()
    chain(nd.ones((6, 5)), nd.ones((5,)))
    plan = chain._last_graph.inference
    assert plan._fusing is not None
    plan.wait_fused()
    assert plan.fused_groups == 1
