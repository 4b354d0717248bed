"""Hybridized blocks using contrib.foreach / while_loop / cond: each is one graph node holding its subgraph(s), and
the block gives eager's outputs and gradients (inputs and parameters), for two input signatures, in train and
predict mode, for 1.x hybrid_forward (F.contrib.*) and 2.0-style forward (mx.nd.contrib.* on traced values)."""
import contextlib
import warnings

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon, nd
from mixnet.gluon import nn


class ForeachCell(gluon.HybridBlock):
    """An RNN-like cell over the sequence; BatchNorm outside the loop makes train and predict mode differ."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.norm = nn.BatchNorm(axis=2)
            self.proj = nn.Dense(4, flatten=False)
            self.w = self.params.get("w", shape=(4, 4))

    def hybrid_forward(self, F, x, h0, w):
        xs = self.proj(self.norm(x))

        def body(xt, states):
            h = F.tanh(F.dot(states[0], w) + xt)
            return [h * 2, h.sum(axis=1)], [h, states[1] + 1]
        (outs, sums), (h, count) = F.contrib.foreach(body, xs, [h0, h0.sum(axis=1)])
        return outs + sums.expand_dims(2), h * count.expand_dims(1)


class WhileGrow(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.s = self.params.get("s", shape=(3,), init=mx.init.Uniform(0.9))

    def hybrid_forward(self, F, x, s):
        def func(i, v):
            step = F.broadcast_mul(v, s)
            return step, [i + 1, v + F.abs(step) + 0.3]
        first = F.slice_axis(x, axis=0, begin=0, end=1).reshape((-1,))
        i0 = F.slice_axis(first, axis=0, begin=0, end=1) * 0          # a loop counter made from the data
        outs, (i, v) = F.contrib.while_loop(lambda i, v: (v.sum() < 4) * (i < 6), func, [i0, first],
                                            max_iterations=6)
        return outs, F.broadcast_mul(v, i)


class CondBlock(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = nn.Dense(3)
            self.drop = nn.Dropout(0.0)                       # train-aware op inside a branch

    def hybrid_forward(self, F, x):
        h = self.dense(x)
        return F.contrib.cond(h.sum() > 0, lambda: self.drop(h) * h, lambda: F.sin(h) - x.sum())


class ForeachForward(gluon.HybridBlock):
    """2.0 style: forward calls mx.nd functions; the parameter is read inside the body."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = gluon.Parameter("w", shape=(3,), init=mx.init.Uniform(0.8))

    def forward(self, x):
        def body(xt, states):
            s = mx.nd.tanh(states[0] * self.w.data() + xt)
            return s, [s]
        h0 = mx.nd.zeros_like(mx.nd.slice_axis(x, axis=0, begin=0, end=1).reshape((-1,)))
        outs, states = mx.nd.contrib.foreach(body, x, [h0])
        return outs, states[0]


class CondWhileForward(gluon.HybridBlock):
    """2.0 style: cond nested with while_loop, both through mx.nd.contrib on traced values."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = nn.Dense(2, in_units=2)

    def forward(self, x):
        h = self.dense(x)

        def then():
            _, (v,) = mx.nd.contrib.while_loop(lambda v: v.sum() < 5, lambda v: (None, [v * 1.5 + 0.1]), [h],
                                               max_iterations=20)
            return v
        return mx.nd.contrib.cond(h.sum() > -100, then, lambda: h * 0)


def _same_params(eager, hybrid, args):
    eager.initialize(mx.init.Uniform(0.7))
    hybrid.initialize()
    eager(*args)
    hybrid(*args)
    for p, q in zip(eager.collect_params().values(), hybrid.collect_params().values()):
        q.set_data(p.data())


def _run(block, args, train):
    args = [a.copy() for a in args]
    for a in args:
        a.attach_grad()
    with autograd.record(train_mode=train):
        outs = block(*args)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        loss = sum(((o * (k + 1.5)) ** 2).sum() for k, o in enumerate(outs))
    loss.backward()
    params = [p.grad().asnumpy() for p in block.collect_params().values() if p.grad_req != "null"]
    return [o.asnumpy() for o in outs], [a.grad.asnumpy() for a in args], params


def _compare(make, signatures, node_op):
    eager, hybrid = make(), make()
    _same_params(eager, hybrid, signatures[0])
    hybrid.hybridize()
    for args in signatures:
        for train in (True, False):
            got, want = _run(hybrid, args, train), _run(eager, args, train)
            for g, w in zip(got, want):
                assert len(g) == len(w)
                for a, b in zip(g, w):       # float32 sums over the steps: rounding grows with the values
                    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(b).max())))
    assert len(hybrid._cached_graphs) == 2 * len(signatures)        # one per signature and mode
    ops = [n.op.name for n in hybrid._last_graph.symbol._nodes() if n.op is not None]
    assert node_op in ops
    return hybrid


def test_foreach_block_matches_eager_for_two_lengths():
    r = np.random.RandomState(0)
    sig = [[nd.array(r.uniform(-1, 1, (t, 2, 3))), nd.array(r.uniform(-1, 1, (2, 4)))] for t in (3, 6)]
    hybrid = _compare(lambda: ForeachCell(prefix="cell_"), sig, "_foreach")
    ops = [n.op.name for n in hybrid._last_graph.symbol._nodes() if n.op is not None]
    assert "stack" not in ops and ops.count("_foreach") == 1          # one node, not an unrolled loop


def test_while_loop_block_matches_eager():
    r = np.random.RandomState(1)
    sig = [[nd.array(r.uniform(0, 0.5, (2, 3)))], [nd.array(r.uniform(0, 0.2, (4, 3)))]]
    _compare(lambda: WhileGrow(prefix="grow_"), sig, "_while_loop")


def test_cond_block_matches_eager_on_both_branches():
    sig = [[nd.array([[1.0, 2.0], [0.5, 0.1]])], [nd.array([[-3.0, -1.0], [0.2, 0.4], [1.0, -2.0]])]]
    hybrid = _compare(lambda: CondBlock(prefix="pick_"), sig, "_cond")
    # the branch is chosen per call from the value, in the same cached graph
    for x in (nd.array([[1.0, 2.0], [0.5, 0.1]]), nd.array([[-1.0, -2.0], [-0.5, -0.1]])):
        eager_like = CondBlock(prefix="pick_")
        eager_like.initialize()
        eager_like(x)
        for p, q in zip(hybrid.collect_params().values(), eager_like.collect_params().values()):
            q.set_data(p.data())
        np.testing.assert_allclose(hybrid(x).asnumpy(), eager_like(x).asnumpy(), rtol=1e-6)


def test_two_point_oh_forward_with_nd_contrib_foreach():
    r = np.random.RandomState(2)
    sig = [[nd.array(r.uniform(-1, 1, (t, 3)))] for t in (2, 5)]
    hybrid = _compare(lambda: ForeachForward(prefix="acc_"), sig, "_foreach")
    node = next(n for n in hybrid._last_graph.symbol._nodes() if n.op is not None and n.op.name == "_foreach")
    assert [src.name for src, _ in node.inputs][-1] == hybrid.w.name      # the parameter: an input of the node


def test_two_point_oh_nested_cond_and_while_loop():
    sig = [[nd.array([[0.3, 0.4]])], [nd.array([[0.1, 0.2], [0.3, 0.1], [0.2, 0.2]])]]
    hybrid = _compare(lambda: CondWhileForward(prefix="nest_"), sig, "_cond")
    text = str(hybrid._last_graph.symbol)
    assert "  then_branch:" in text and "_while_loop(" in text and "\n      cond:" in text


def test_no_eager_fallback_warning():
    block = WhileGrow(prefix="quiet_")
    block.initialize()
    block.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        block(nd.ones((2, 3)) * 0.1)


class WrongStates(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        h0 = F.zeros_like(F.slice_axis(x, axis=0, begin=0, end=1).reshape((-1,)))
        outs, states = F.contrib.foreach(lambda xt, s: (xt, [s[0], s[0]]), x, [h0])    # two states for one
        return outs


class ShapeChange(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        h0 = F.zeros_like(F.slice_axis(x, axis=0, begin=0, end=1).reshape((-1,)))
        outs, states = F.contrib.foreach(lambda xt, s: (xt, [F.concat(s[0], xt, dim=0)]), x, [h0])
        return outs


def test_errors_name_the_op_and_the_users_line():
    block = WrongStates()
    block.hybridize()
    with pytest.raises(mx.MXNetError, match=r"contrib.foreach: the body returned 2 state\(s\).*\n  at .*"
                                            r"test_hybridize_control_flow.py:\d+"):
        block(nd.ones((3, 2)))
    block = ShapeChange()
    block.hybridize()
    with pytest.raises(mx.MXNetError, match=r"contrib.foreach: .*state 0 of shape \(2,\) into shape \(4,\)"
                                            r"[\s\S]*test_hybridize_control_flow.py:\d+"):
        block(nd.ones((3, 2)))


def test_export_and_import_round_trip(tmp_path):
    r = np.random.RandomState(4)
    x, h = nd.array(r.uniform(-1, 1, (4, 2, 3))), nd.array(r.uniform(-1, 1, (2, 4)))
    block = ForeachCell(prefix="cell_")
    block.initialize(mx.init.Uniform(0.5))
    block.hybridize()
    want = [o.asnumpy() for o in block(x, h)]
    block.export(str(tmp_path / "cell"))
    loaded = gluon.SymbolBlock.imports(str(tmp_path / "cell-symbol.json"), ["data0", "data1"],
                                       str(tmp_path / "cell-0000.params"))
    # the first call (traced) ran the body op by op, this one compiled (fused kernels): float32 rounding differs by
    # a few ulps of the outputs' magnitude (~1), e.g. 4.6e-7 on an element of 0.013 with cpu(1)'s initial weights
    for a, b in zip(loaded(x, h), want):
        np.testing.assert_allclose(a.asnumpy(), b, rtol=1e-5, atol=1e-6)
    with open(tmp_path / "cell-symbol.json") as f:
        text = f.read()
    assert '"op": "_foreach"' in text and '"subgraphs"' in text and '"remain_locs": "[1]"' in text


class DropoutInLoop(gluon.HybridBlock):
    """Dropout inside the body: the gradient must see the forward's masks."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.drop = nn.Dropout(0.5)
            self.w = self.params.get("w", shape=(3,), init=mx.init.Uniform(0.9))

    def hybrid_forward(self, F, x, w):
        def body(xt, states):
            h = self.drop(F.broadcast_mul(xt, w)) + states[0]
            return h * h, [h]
        outs, states = F.contrib.foreach(body, x, [F.zeros_like(F.slice_axis(x, axis=0, begin=0, end=1)
                                                                .reshape((-1,)))])
        return outs, states[0]


@pytest.mark.parametrize("device", [None, 1])
def test_random_ops_inside_the_body_replay_their_draws_in_backward(device):
    # device 1: on cpu(1) the compiled foreach must draw from cpu(1)'s generator, as the eager loop does. Numpy
    # arrays do not say which cpu(k) they are on: the kernel learns it from the generator its graph hands it.
    with mx.Context(mx.cpu(device)) if device else contextlib.nullcontext():
        x = [nd.array(np.random.RandomState(5).uniform(0.5, 1, (6, 3)))]
        eager, hybrid = DropoutInLoop(prefix="drop_"), DropoutInLoop(prefix="drop_")
        _same_params(eager, hybrid, x)
        hybrid.hybridize()
        results = []
        for block in (eager, hybrid):
            mx.random.seed(11)
            if device:
                mx.random.seed(3, ctx=mx.cpu(0))          # cpu(0)'s stream apart from cpu(1)'s
            results.append(_run(block, x, True))
    for g, w in zip(*results):
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=1e-6)
    outs = results[0][0][0]
    assert (outs == 0).any() and (outs != 0).any()                  # the masks did drop some elements
    node = next(n for n in hybrid._last_graph.symbol._nodes() if n.op is not None and n.op.name == "_foreach")
    assert node.num_outputs() == 3 and node.num_visible() == 2       # the generator state is a hidden output
    assert '"node_row_ptr"' in hybrid._last_graph.symbol.tojson()


def test_check_mode_runs_control_flow_blocks_and_catches_a_wrong_subgraph():
    from mixnet.gluon.check_mode import HybridizeCheckError
    from mixnet.ops import registry
    x = [nd.array(np.random.RandomState(6).uniform(-1, 1, (3, 2, 3))), nd.ones((2, 4))]
    block = ForeachCell(prefix="checked_")
    block.initialize()
    block.hybridize(check=True)
    with autograd.record():
        block(*x)[0].backward()                    # eager and compiled agree: no error
    block = ForeachCell(prefix="broken_")
    block.initialize()
    block.hybridize(check=True)
    block(*x)
    # Simulate a compiler bug inside the body: the compiled loop computes sigmoid where the code says tanh.
    node = next(n for n in block._last_graph.graph._nodes() if n.op is not None and n.op.name == "_foreach")
    tanh = next(n for n in node.attrs["body"]._nodes() if n.op is not None and n.op.name == "tanh")
    tanh.op = registry.get("sigmoid")
    block._checks_left = 1
    with pytest.raises(HybridizeCheckError, match="output 0 of the graph run differs from the eager one"):
        block(*x)
