"""hybridize(): tracing per signature, identical results to eager (outputs and gradients), clear errors for
Python control flow on traced values, hooks, and export that MXNet (and mixnet) import."""
import json
import os
import warnings

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon, nd
from mixnet.gluon import nn

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "symbol")


def make_net():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1, activation="relu"), nn.BatchNorm(), nn.MaxPool2D(),
                nn.Flatten(), nn.Dense(8, activation="tanh"), nn.Dropout(0.0), nn.Dense(3))
    return net


def run(net, x, train):
    x = x.copy()
    x.attach_grad()
    with autograd.record(train_mode=train):
        y = net(x)
        loss = (y * y).sum()
    loss.backward()
    grads = {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items() if p.grad_req != "null"}
    return y.asnumpy(), x.grad.asnumpy(), grads


@pytest.mark.parametrize("train", [True, False])
def test_hybridized_equals_eager_outputs_and_gradients(train):
    mx.random.seed(3)
    x1 = nd.random.uniform(-1, 1, shape=(2, 2, 6, 6))
    x2 = nd.random.uniform(-1, 1, shape=(3, 2, 6, 6))       # a second signature re-traces
    eager, hybrid = make_net(), make_net()
    eager.initialize(mx.init.Xavier())
    eager(x1)
    hybrid.initialize()
    hybrid(x1)
    for name, p in hybrid.collect_params().items():
        p.set_data(eager.collect_params()[name.replace(hybrid.prefix, eager.prefix)].data())
    hybrid.hybridize()
    for x in (x1, x2, x1):
        ye, gxe, ge = run(eager, x, train)
        yh, gxh, gh = run(hybrid, x, train)
        np.testing.assert_allclose(yh, ye, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(gxh, gxe, rtol=1e-6, atol=1e-7)
        for (ne, a), (nh, b) in zip(sorted(ge.items()), sorted(gh.items())):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=nh)
    assert len(hybrid._cached_graphs) == 2


def test_deferred_shapes_and_retrace_counts():
    net = make_net()
    net.initialize()
    net.hybridize()
    out = net(nd.ones((1, 2, 4, 4)))
    assert out.shape == (1, 3)
    net(nd.ones((1, 2, 4, 4)))
    assert len(net._cached_graphs) == 1
    with autograd.record():
        net(nd.ones((1, 2, 4, 4)))
    assert len(net._cached_graphs) == 2          # training mode is part of the signature


class TwoStyle(gluon.HybridBlock):
    """2.0-style forward: parameters read with .data(), lists and None accepted."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.scale = gluon.Parameter("scale", shape=(3,), init=mx.init.Constant(2.0))

    def forward(self, xs, bias=None):
        a, b = xs
        out = a * self.scale.data() + b
        return out if bias is None else out + bias


def test_forward_style_lists_and_none_inputs():
    block = TwoStyle()
    block.initialize()
    a, b, c = nd.ones((2, 3)), nd.ones((2, 3)), nd.full((2, 3), 10.0)
    expected1 = block([a, b]).asnumpy()
    expected2 = block([a, b], c).asnumpy()
    block.hybridize()
    np.testing.assert_array_equal(block([a, b]).asnumpy(), expected1)
    np.testing.assert_array_equal(block([a, b], None).asnumpy(), expected1)   # a trailing None: a default
    # a trailing argument given after calls without it re-traces (MXNet raises; eager accepts it)
    np.testing.assert_array_equal(block([a, b], c).asnumpy(), expected2)
    with pytest.raises(ValueError, match="argument structure"):       # as MXNet's cached op: fixed structure
        block([a, b, c])
    block.hybridize()                                                  # clears the caches: a new structure
    np.testing.assert_array_equal(block([a, b], c).asnumpy(), expected2)
    np.testing.assert_array_equal(block([a, b]).asnumpy(), expected1)   # a trailing argument dropped


class Branchy(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        if x.sum() > 0:            # Python control flow on a traced value
            return x
        return -x


def test_python_control_flow_on_traced_value_is_a_clear_error():
    block = Branchy()
    block.hybridize()
    with pytest.raises(mx.MXNetError, match=r"contrib.cond.*\n  at .*test_hybridize.py:\d+"):
        block(nd.ones((2,)))


def test_child_hooks_keep_firing():
    net = make_net()
    net.initialize()
    seen = []
    net[0].register_forward_hook(lambda blk, inp, out: seen.append(out.shape))
    net.hybridize()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        net(nd.ones((1, 2, 4, 4)))
        net(nd.ones((1, 2, 4, 4)))
    assert seen == [(1, 4, 4, 4)] * 2


def test_export_round_trip_and_mxnet_layout(tmp_path):
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu"), nn.BatchNorm(), nn.Dense(3))
    net.initialize()
    with pytest.raises(mx.MXNetError, match="hybridize"):
        net.export(str(tmp_path / "early"))
    net.hybridize()
    x = nd.random.uniform(shape=(4, 5))
    expected = net(x).asnumpy()
    sym_file, params_file = net.export(str(tmp_path / "model"), epoch=3)
    assert params_file.endswith("model-0003.params")
    keys = sorted(nd.load(params_file))
    assert "aux:net_batchnorm0_running_mean" in keys and "arg:net_dense0_weight" in keys
    imported = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(imported(x).asnumpy(), expected, rtol=1e-6)
    # Same graph as MXNet 1.9.1's export of this net (tests/data/symbol/hybrid_mlp_bn-symbol.json), except that
    # mixnet records the parameter shapes it knows instead of MXNet's pre-inference (0 = unknown) ones.
    ours = json.load(open(sym_file))
    theirs = json.load(open(os.path.join(DATA, "hybrid_mlp_bn-symbol.json")))
    strip = lambda g: [(n["op"], n["name"], {k: v for k, v in n.get("attrs", {}).items() if k != "__shape__"},  # noqa
                        n["inputs"]) for n in g["nodes"]]
    assert strip(ours) == strip(theirs)
    assert ours["heads"] == theirs["heads"] and ours["arg_nodes"] == theirs["arg_nodes"]


class AddToDense(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = nn.Dense(4, in_units=3)

    def hybrid_forward(self, F, x, y):
        h = self.dense(x)
        return F.broadcast_add(h, y)           # LINE-ADD


def _line_of(marker):
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if marker in line and "def _line_of" not in line)


def test_printed_graph_is_golden_and_names_user_lines():
    block = AddToDense(prefix="blk_")
    block.initialize()
    block.hybridize()
    block(nd.ones((2, 3)), nd.ones((4,)))
    text = str(block._last_graph.symbol)
    lines = [line.split("#")[0].rstrip() for line in text.splitlines()]
    assert lines == [
        "var data0",
        "var blk_dense0_weight (dtype=0, lr_mult=1.0, shape=(4, 3), storage_type=0, wd_mult=1.0)",
        "var blk_dense0_bias (dtype=0, init=zeros, lr_mult=1.0, shape=(4,), storage_type=0, wd_mult=1.0)",
        "blk_dense0_fwd = FullyConnected(data0, blk_dense0_weight, blk_dense0_bias, flatten=True, no_bias=False, "
        "num_hidden=4)",
        "var data1",
        "blk_broadcast_add0 = broadcast_add(blk_dense0_fwd, data1)",
        "outputs: blk_broadcast_add0",
    ]
    assert f"test_hybridize.py:{_line_of('# LINE-ADD')}" in text.splitlines()[5]


def test_shape_mismatch_inside_hybridized_block_names_node_and_user_line():
    block = AddToDense()
    block.initialize()
    block.hybridize()
    with pytest.raises(mx.MXNetError) as info:
        block(nd.ones((2, 3)), nd.ones((5,)))
    message = str(info.value)
    assert "broadcast_add" in message and "(2, 4) float32, (5,) float32" in message
    assert f"test_hybridize.py:{_line_of('# LINE-ADD')}" in message


def test_check_mode_passes_with_dropout_and_batchnorm_in_training():
    net = make_net()
    net[5]._rate = 0.5                       # a real Dropout: the check replays the same random draws
    net.initialize()
    x = nd.random.uniform(shape=(2, 2, 6, 6))
    net(x)                                   # shapes known: every hybridized call below is checked
    net.hybridize(check=3)
    for _ in range(3):
        with autograd.record():
            y = net(x)
        y.backward()
    assert net._checks_left == 0


def test_check_mode_reports_the_first_diverging_node():
    from mixnet.gluon.check_mode import HybridizeCheckError
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu"), nn.Dense(3))
    net.initialize()
    net.hybridize(check=True)
    x = nd.random.uniform(shape=(4, 5))
    net(x)
    # Simulate a compiler bug: the cached graph computes something else than the block's code.
    node = next(n for n in net._last_graph.graph._nodes() if n.op is not None and n.op.name == "Activation")
    node.attrs = dict(node.attrs, act_type="tanh")
    with pytest.raises(HybridizeCheckError, match=r"first divergence at graph node '.*dense0_relu_fwd' "
                                                  r"\(Activation"):
        net(x)


class Accumulate(gluon.HybridBlock):
    """F.contrib.foreach over the rows of x, closing over a parameter."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = gluon.Parameter("w", shape=(2,), init=mx.init.Constant(0.5))

    def forward(self, x, h):
        F = mx.sym if isinstance(x, mx.sym.Symbol) else nd
        w = self.w.data()

        def body(xt, states):
            s = states[0] * w + xt
            return s, [s]
        outs, states = F.contrib.foreach(body, x, [h])
        return outs, states[0]


def test_foreach_hybridizes_with_eager_results_and_gradients():
    x, h = nd.arange(6).reshape((3, 2)), nd.ones((2,))
    eager, hybrid = Accumulate(), Accumulate()
    eager.initialize()
    hybrid.initialize()
    hybrid.hybridize()
    results = []
    for block in (eager, hybrid):
        xx = x.copy()
        xx.attach_grad()
        with autograd.record():
            outs, last = block(xx, h)
            loss = outs.sum() + last.sum()
        loss.backward()
        results.append((outs.asnumpy(), last.asnumpy(), xx.grad.asnumpy(), block.w.grad().asnumpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-6)
    assert len(hybrid._cached_graphs) == 1


class Choose(gluon.HybridBlock):
    def hybrid_forward(self, F, a):
        return F.contrib.cond(a.sum() < 5, lambda: a * 2, lambda: a * 3)


def test_cond_in_a_hybridized_block_is_one_graph_node():
    block = Choose()
    block.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")                          # no eager fallback
        assert block(nd.array([1.0])).asscalar() == 2
        assert block(nd.array([10.0])).asscalar() == 30      # the branch is chosen per call, as eagerly
    assert [n.op.name for n in block._last_graph.symbol._nodes() if n.op is not None][-1] == "_cond"


class TwoPointOh(gluon.HybridBlock):
    """2.0-style code calling mx.nd functions on what, while tracing, are symbols."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = nn.Dense(4, in_units=3)

    def forward(self, x):
        h = mx.nd.relu(self.dense(x))
        outs, states = mx.nd.contrib.foreach(lambda xt, st: (xt * 2, [st[0] + xt]), h, [h.sum(axis=0) * 0])
        return mx.nd.sum(outs, axis=0) + states[0]


def test_nd_functions_on_traced_values_become_graph_nodes():
    block = TwoPointOh()
    block.initialize()
    x = nd.random.uniform(shape=(2, 3))
    eager = block(x).asnumpy()
    block.hybridize()
    np.testing.assert_allclose(block(x).asnumpy(), eager, rtol=1e-6)
    assert block._last_graph is not None


class WithConstant(gluon.HybridBlock):
    def forward(self, x):
        return x + mx.nd.ones((3,))           # an array made inside forward: a constant


def test_array_constants_inside_forward_become_graph_constants(tmp_path):
    block = WithConstant()
    block.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # no eager fallback
        x = nd.array([1.0, 2.0, 3.0])
        x.attach_grad()
        with autograd.record():
            y = block(x)
        y.backward()
    assert y.asnumpy().tolist() == [2, 3, 4] and x.grad.asnumpy().tolist() == [1, 1, 1]
    const = [n for n in block._last_graph.symbol.list_arguments() if n != "data"]
    assert len(const) == 1 and const[0].startswith("const")
    sym_file, params_file = block.export(str(tmp_path / "const"))
    imported = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    assert imported(nd.array([0.0, 1.0, 2.0])).asnumpy().tolist() == [1, 2, 3]


def test_ndarray_and_symbol_do_not_mix_outside_hybridize():
    with pytest.raises(mx.MXNetError, match="outside hybridize"):
        mx.sym.var("x") + nd.ones((3,))


# ---------------------------------------------------------------------------------------------- the CachedOp
def _mlp():
    net = nn.HybridSequential(prefix="m_")
    with net.name_scope():
        net.add(nn.Dense(6, activation="tanh", in_units=4), nn.Dense(3, in_units=6))
    net.initialize(mx.init.Xavier())
    return net


def test_a_hybridized_call_is_one_tape_node_with_a_compiled_backward():
    net = _mlp()
    net.hybridize()
    x = nd.random.uniform(shape=(5, 4))
    with autograd.record():
        y = net(x)
    assert y._node.op.name == "_CachedOp"
    assert y._node.inputs and all(i._node is not None for i in y._node.inputs)   # only what is differentiated
    (plan,) = net._last_graph._training.values()
    assert plan.wrt == [n for n in net._last_graph.names if n != "data"]          # x has no attach_grad
    source = plan.backward.compiled.source                       # readable: one commented line per node
    assert "# _fc_weight_grad" in source
    backward_ops = [n.op.name for n in plan.backward.symbol._nodes() if n.op is not None]
    assert backward_ops.count("_fc_data_grad") == 1              # the second layer's only: x needs no gradient
    y.backward()
    grads = {k: p.grad().asnumpy().copy() for k, p in net.collect_params().items()}
    eager = _mlp()
    for name, p in eager.collect_params().items():
        p.set_data(net.collect_params()[name].data())
    with autograd.record():
        eager(x).backward()
    for k, p in eager.collect_params().items():
        np.testing.assert_allclose(grads[k], p.grad().asnumpy(), rtol=1e-5, atol=1e-6)


def test_higher_order_gradients_through_a_hybridized_block():
    class Cube(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.sin(x) * x * x

    x = nd.array([0.3, -1.2, 2.0])
    results = []
    for hybrid in (False, True):
        block = Cube()
        if hybrid:
            block.hybridize()
        xx = x.copy()
        xx.attach_grad()
        with autograd.record():
            y = block(xx)
            (dy,) = autograd.grad(y, [xx], create_graph=True)
            z = dy.sum()
        z.backward()
        results.append((dy.asnumpy(), xx.grad.asnumpy()))
    xs = x.asnumpy()
    np.testing.assert_allclose(results[1][0], np.cos(xs) * xs ** 2 + 2 * xs * np.sin(xs), rtol=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5)


def test_hybridized_loss_and_training_step_match_eager():
    x = nd.random.uniform(shape=(8, 4))
    label = nd.array([0, 1, 2, 0, 1, 2, 0, 1])
    losses = []
    for hybrid in (False, True):
        mx.random.seed(0)
        net = _mlp()
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        if hybrid:
            net.hybridize()
            loss_fn.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
        trace = []
        for _ in range(3):
            with autograd.record():
                loss = loss_fn(net(x), label)
            loss.backward()
            trainer.step(8)
            trace.append(loss.mean().asscalar())
        losses.append(trace)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
    assert losses[1][2] < losses[1][0]


def test_errors_inside_compiled_graphs_name_the_node_and_line():
    class Bad(gluon.HybridBlock):
        def hybrid_forward(self, F, x, y):
            return F.dot(x, y)          # the shapes only clash at run time, for the second signature

    block = Bad()
    block.hybridize()
    block(nd.ones((2, 3)), nd.ones((3, 4)))
    with pytest.raises(mx.MXNetError, match=r"dot.*\(2, 3\).*\n?.*test_hybridize.py:\d+"):
        block(nd.ones((2, 3)), nd.ones((2, 4)))


# ---------------------------------------------------------------------------------------------- static_alloc
class FusibleChain(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        a = F.tanh(x * 0.5 + 1) * F.sigmoid(x)          # fused, and read twice: not an output
        s = F.sum(a, axis=1, keepdims=True)
        return F.broadcast_add(F.exp(a) * 2 - a, s)


def test_static_alloc_reuses_planned_buffers_and_keeps_results():
    x1 = nd.array(np.random.default_rng(0).uniform(-2, 2, (16, 50)).astype(np.float32))
    x2 = x1 * 3
    plain, static = FusibleChain(), FusibleChain()
    plain.hybridize()
    static.hybridize(static_alloc=True)
    first = static(x1)
    second = static(x2)                        # reuses the same planned buffers
    np.testing.assert_array_equal(first.asnumpy(), plain(x1).asnumpy())   # outputs are never overwritten
    np.testing.assert_array_equal(second.asnumpy(), plain(x2).asnumpy())
    plan = static._last_graph.inference
    assert "out=O" in plan.compiled.source
    report = plan.memory_report()
    assert report["planned"] == 2 * 4096 and report["peak"] < report["naive"]   # two 3200-byte values, 4 KiB class
    assert plain._last_graph.inference.memory_report()["planned"] is None
    x = x1.copy()
    x.attach_grad()
    with autograd.record():
        y = static(x)
    y.backward()
    xp = x1.copy()
    xp.attach_grad()
    with autograd.record():
        yp = plain(xp)
    yp.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), xp.grad.asnumpy(), rtol=1e-6)


class _DenseChain(gluon.HybridBlock):
    """Dense, then an elementwise chain whose intermediate values the backward needs (relu's and tanh's outputs):
    mirroring keeps only the Dense output and recomputes the chain."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(16, in_units=16)

    def hybrid_forward(self, F, x):
        return F.tanh(F.relu(self.dense(x)) * 2 + 1)


def test_mirror_recomputes_elementwise_values_and_keeps_gradients(monkeypatch):
    from mixnet import config
    results = {}
    for mirror in (False, True, "env"):
        mx.random.seed(0)
        net = nn.HybridSequential()
        for _ in range(3):
            net.add(_DenseChain())
        net.initialize(mx.init.Xavier())
        if mirror == "env":
            monkeypatch.setattr(config, "MIRROR", True)
            net.hybridize()
        else:
            net.hybridize(mirror=mirror)
        x = nd.random.uniform(-1, 1, shape=(8, 16))
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        (plan,) = net._last_graph._training.values()
        results[mirror] = (plan.saved_bytes, [p.grad().asnumpy() for p in net.collect_params().values()])
    assert results[True][0] < results[False][0] and results["env"][0] == results[True][0]
    for a, b in zip(results[False][1], results[True][1]):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def test_log_compiles_says_why_a_block_traced_again(monkeypatch, caplog):
    from mixnet import config
    monkeypatch.setattr(config, "LOG_COMPILES", True)
    net = _mlp()
    net.hybridize()
    net(nd.ones((2, 4)))
    net(nd.ones((2, 4)))
    net(nd.ones((3, 4)))
    with autograd.train_mode():
        net(nd.ones((3, 4)))
    lines = [r.getMessage() for r in caplog.records if r.name == "mixnet.gluon.cached_graph"]
    assert len(lines) == 3
    assert lines[0].endswith("first call")
    assert "new shapes or dtypes" in lines[1] and "(2, 4)" in lines[1] and "(3, 4)" in lines[1]
    assert "new training mode (False -> True)" in lines[2]


def test_backward_frees_the_values_a_hybridized_call_saved():
    net = _mlp()
    net.hybridize()
    x = nd.ones((4, 4))
    with autograd.record():
        y = net(x)
    node = y._node
    assert node.attrs["saved"]                            # the forward kept what the backward reads
    y.backward()
    assert node.attrs is None                             # and backward let go of it, though y lives on
    with pytest.raises(mx.MXNetError, match="retain_graph"):
        y.backward()
