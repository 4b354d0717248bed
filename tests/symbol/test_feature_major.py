"""Feature-major values in compiled graphs (symbol/epilogue.py, ops/nn_epilogue.py, ops/nn_conv.py).

A hidden Dense activation read only by the next Dense layers (and the backward) is computed as weight @ data.T and
kept as the transpose of a C-contiguous (N, rows) array; the backward's data gradient that its activation backward
reads is written the same way. Only the layout changes:
1. where the pass marks values feature-major, and where it does not (a value the user gets, a value another op
   reads, 3-d values);
2. the kernels give the same values for either layout, mixed layouts included, with the Numba loops and without;
3. the memory planner never writes an elementwise result over a feature-major array.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mixnet as mx
from mixnet import autograd
from mixnet.gluon import nn
from mixnet.ops import _fastpath, registry
from mixnet.symbol import memory
from mixnet.symbol.graph import Node, graph_types
from mixnet.symbol.symbol import Symbol


def _plans(block):
    for graph in block._cached_graphs.values():
        if graph._inference is not None:
            yield "inference", graph._inference
        for plan in graph._training.values():
            yield "forward", plan.forward
            if plan.backward is not None:
                yield "backward", plan.backward


def _marked(block):
    """{plan kind: sorted (op name, feature_major) of its _fc_epilogue and _fc_data_grad nodes}."""
    return {kind: sorted((n.op.name, bool(n.attrs.get("feature_major"))) for n in plan.symbol._nodes()
                         if n.op is not None and n.op.name in ("_fc_epilogue", "_fc_data_grad"))
            for kind, plan in _plans(block)}


def _train_and_predict(net, x):
    with autograd.record():
        out = net(x)
    out = out[-1] if isinstance(out, (tuple, list)) else out
    out.backward()
    return net(x)


class TwoOutputs(nn.HybridBlock):
    """Returns the hidden activation too: the user gets it, so it stays row-major."""

    def __init__(self):
        super().__init__()
        self.hidden, self.out = nn.Dense(16, activation="relu", in_units=5), nn.Dense(3, in_units=16)

    def hybrid_forward(self, F, x):
        h = self.hidden(x)
        return h, self.out(h)


class ReadElsewhere(nn.HybridBlock):
    """The hidden activation is also read by an elementwise op: it stays row-major."""

    def __init__(self):
        super().__init__()
        self.hidden, self.out = nn.Dense(16, activation="relu", in_units=5), nn.Dense(16, in_units=16)

    def hybrid_forward(self, F, x):
        h = self.hidden(x)
        return self.out(h) + h


def _mlp(act="relu", widths=(16, 12)):
    """Hidden values of 3 rows are wide enough (N >= 4 rows) at these widths."""
    net = nn.HybridSequential()
    bias = mx.init.Uniform(0.5)                     # not zeros: a bias lost on the way would show
    net.add(nn.Dense(widths[0], activation=act, in_units=5, bias_initializer=bias),
            nn.Dense(widths[1], activation=act, in_units=widths[0], bias_initializer=bias),
            nn.Dense(3, in_units=widths[1]))
    return net


# ---------------------------------------------------------------------------------------------------------
# 1. where values are feature-major
@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh"])
def test_hidden_layers_of_an_mlp_are_feature_major_in_every_plan(act):
    net = _mlp(act)
    net.initialize()
    net.hybridize()
    x = mx.nd.random.uniform(shape=(3, 5))
    _train_and_predict(net, x)
    marked = _marked(net)
    assert marked["inference"] == [("_fc_epilogue", True)] * 2
    assert marked["forward"] == [("_fc_epilogue", True)] * 2
    # the two data gradients that the activation backwards read; the net's input takes no gradient
    assert marked["backward"] == [("_fc_data_grad", True)] * 2


def test_a_value_the_user_gets_stays_row_major():
    net = TwoOutputs()
    net.initialize()
    net.hybridize()
    x = mx.nd.random.uniform(shape=(3, 5))
    h, _ = _train_and_predict(net, x)
    assert all(not major for kind in _marked(net).values() for _, major in kind)
    assert h.asnumpy().flags.c_contiguous


def test_a_value_another_op_reads_stays_row_major():
    net = ReadElsewhere()
    net.initialize()
    net.hybridize()
    _train_and_predict(net, mx.nd.random.uniform(shape=(3, 5)))
    assert all(not major for kind in _marked(net).values() for _, major in kind)


@pytest.mark.parametrize("rows, marked", [(3, True), (4, False), (1, False)])
def test_only_values_wide_against_the_batch_are_feature_major(rows, marked):
    """(rows, 12) is feature-major from 12 >= 4 * rows on (where the transposed GEMM gains), two rows at least;
    forward and backward decide alike."""
    net = _mlp(widths=(12, 12))
    net.initialize()
    net.hybridize()
    _train_and_predict(net, mx.nd.random.uniform(shape=(rows, 5)))
    got = _marked(net)
    assert got["forward"] == [("_fc_epilogue", marked)] * 2
    assert got["backward"] == [("_fc_data_grad", marked)] * 2


def test_three_d_values_stay_row_major():
    net = nn.HybridSequential()
    net.add(nn.Dense(6, activation="relu", flatten=False, in_units=5), nn.Dense(3, flatten=False, in_units=6))
    net.initialize()
    net.hybridize()
    _train_and_predict(net, mx.nd.random.uniform(shape=(2, 7, 5)))
    assert all(not major for kind in _marked(net).values() for _, major in kind)


def test_the_last_layer_activation_returned_to_the_user_is_row_major():
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu", in_units=5), nn.Dense(12, activation="relu", in_units=16))
    net.initialize()
    net.hybridize()
    out = _train_and_predict(net, mx.nd.random.uniform(shape=(3, 5)))
    assert out.asnumpy().flags.c_contiguous
    assert _marked(net)["inference"] == [("_fc_epilogue", False), ("_fc_epilogue", True)]


@pytest.mark.parametrize("static_alloc", [False, True])
def test_hybridized_mlp_equals_eager_in_outputs_and_gradients(static_alloc):
    results = []
    for hybrid in (False, True):
        mx.random.seed(5)
        net = _mlp()
        net.initialize(mx.init.Xavier())
        if hybrid:
            net.hybridize(static_alloc=static_alloc)
        x = mx.nd.array(np.random.default_rng(2).standard_normal((3, 5)), dtype="float32")
        x.attach_grad()
        got = []
        for _ in range(2):
            with autograd.record():
                out = net(x)
            out.backward()
            got.append([out.asnumpy(), x.grad.asnumpy()] + [p.grad().asnumpy() for p in net.collect_params().values()])
        results.append(got)
    for eager, hybrid in zip(*results):
        for want, have in zip(eager, hybrid):
            np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6)


@settings(max_examples=12, deadline=None)
@given(act=st.sampled_from(["relu", "sigmoid", "tanh", "softrelu"]), rows=st.integers(2, 5),
       use_bias=st.booleans(), dtype=st.sampled_from(["float32", "float64"]), static_alloc=st.booleans())
def test_wide_mlps_hybridized_equal_eager(act, rows, use_bias, dtype, static_alloc):
    """Every activation, with and without bias, both float dtypes, static_alloc on and off: the hybridized MLP,
    whose hidden values (rows, 24) and (rows, 20) are feature-major, gives the eager outputs and gradients."""
    results = []
    for hybrid in (False, True):
        mx.random.seed(7)
        net = nn.HybridSequential()
        bias = mx.init.Uniform(0.5)                 # not zeros: a bias lost on the way would show
        net.add(nn.Dense(24, activation=act, use_bias=use_bias, in_units=5, bias_initializer=bias),
                nn.Dense(20, activation=act, use_bias=use_bias, in_units=24, bias_initializer=bias),
                nn.Dense(3, in_units=20))
        net.initialize(mx.init.Xavier())
        net.cast(dtype)
        if hybrid:
            net.hybridize(static_alloc=static_alloc)
        x = mx.nd.array(np.random.default_rng(rows).standard_normal((rows, 5)), dtype=dtype)
        x.attach_grad()
        got = []
        for _ in range(2):
            with autograd.record():
                out = net(x)
            out.backward(mx.nd.ones_like(out))
            got.append([out.asnumpy(), x.grad.asnumpy()] + [p.grad().asnumpy() for p in net.collect_params().values()])
        results.append(got)
        if hybrid and act != "softrelu":        # softrelu's backward reads the pre-activation: no forward epilogue
            assert _marked(net)["forward"] == [("_fc_epilogue", True)] * 2
    tol = 1e-5 if dtype == "float32" else 1e-12
    for eager, hybrid in zip(*results):
        for want, have in zip(eager, hybrid):
            np.testing.assert_allclose(have, want, rtol=tol, atol=tol)


# ---------------------------------------------------------------------------------------------------------
# 2. the kernels, either layout
def _kernel(name):
    return registry.get(name).kernel


def _paths():
    """The Numba loops, then the generic code."""
    for enabled in (True, False):
        _fastpath.ENABLED = enabled
        try:
            yield enabled
        finally:
            _fastpath.ENABLED = True


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "softrelu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fc_epilogue_feature_major_gives_the_row_major_values(act, dtype):
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((9, 5), (7, 5), (7,)))
    b[1] = np.nan
    op = registry.get("_fc_epilogue")
    for _ in _paths():
        want = op.kernel(np, x, w, b, **op.parse({"num_hidden": 7, "act_type": act}))
        got = op.kernel(np, x, w, b, **op.parse({"num_hidden": 7, "act_type": act, "feature_major": True}))
        assert got.shape == (9, 7) and got.T.flags.c_contiguous and not got.flags.c_contiguous
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
        assert np.isnan(got[:, 1]).all()
        # a feature-major input to the next layer gives that layer's row-major values
        w2 = rng.standard_normal((3, 7)).astype(dtype)
        np.testing.assert_allclose(_kernel("FullyConnected")(np, got, w2, None, num_hidden=3, no_bias=True,
                                                             flatten=True),
                                   want @ w2.T,
                                   rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_fc_epilogue_feature_major_writes_a_given_buffer_row_major():
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (5, 3), (5,)))
    op = registry.get("_fc_epilogue")
    out = np.empty((4, 5), np.float32)
    got = op.kernel(np, x, w, b, **op.parse({"num_hidden": 5, "act_type": "relu", "feature_major": True}), out=out)
    assert np.shares_memory(got, out)
    np.testing.assert_allclose(out, np.maximum(x @ w.T + b, 0), rtol=1e-6)


def test_fc_data_grad_feature_major():
    rng = np.random.default_rng(2)
    g, w = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    got = _kernel("_fc_data_grad")(np, g, w, feature_major=True)
    assert got.shape == (6, 5) and got.T.flags.c_contiguous
    np.testing.assert_allclose(got, g @ w, rtol=1e-6)


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "softrelu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layouts", ["FF", "FC", "CF"])
def test_act_bwd_bias_gives_the_same_values_for_any_layout(act, dtype, layouts):
    rng = np.random.default_rng(3)
    g, d = rng.standard_normal((37, 11)).astype(dtype), rng.standard_normal((37, 11)).astype(dtype)
    g[0, 0], g[1, 2] = np.nan, np.inf
    op = registry.get("_act_bwd_bias")
    attrs = op.parse({"act_type": act, "shape": (1, 11)})
    as_layout = {"C": np.ascontiguousarray, "F": np.asfortranarray}
    with np.errstate(all="ignore"):
        want_dz, want_db = op.kernel(np, g, d, **attrs)
        for _ in _paths():
            dz, db = op.kernel(np, as_layout[layouts[0]](g), as_layout[layouts[1]](d), **attrs)
            np.testing.assert_array_equal(dz, want_dz)             # the same products
            # the bias sum: the same numbers added, in another order for feature-major arrays
            np.testing.assert_allclose(db, want_db, rtol=1e-5 if dtype == np.float32 else 1e-13)
            assert db.shape == (1, 11)


# ---------------------------------------------------------------------------------------------------------
# 3. the memory planner
def test_inplace_reuse_never_writes_over_a_feature_major_value():
    x, w = Node(None, "x"), Node(None, "w")
    x.types, w.types = (((4, 3), np.dtype(np.float32)),), (((5, 3), np.dtype(np.float32)),)
    results = {}
    for major in (False, True):
        fc = Node(registry.get("_fc_epilogue"), "fc", {"num_hidden": 5, "no_bias": True, "flatten": True,
                                                       "act_type": "relu", "feature_major": major},
                  {}, [(x, 0), (w, 0)])
        fc.types = (((4, 5), np.dtype(np.float32)),)
        neg = Node(registry.get("negative"), "neg", {}, {}, [(fc, 0)])
        neg.types = fc.types
        symbol = Symbol([(neg, 0)])
        results[major] = memory.inplace_reuse(symbol, *graph_types(symbol._outputs))
    assert len(results[False]) == 1                   # the row-major value is reused...
    assert results[True] == {}                        # ...the feature-major one is not



def test_static_alloc_plans_no_buffer_for_a_feature_major_value():
    """A planned buffer is row-major: handed to a feature-major data gradient, it would make the kernel compute the
    other layout (W2 ran 4.6% slower so). Under static_alloc the feature-major values keep their own arrays, the
    values stay marked, and the row-major ones still get planned buffers."""
    net = _mlp(widths=(16, 16))
    net.add(nn.Dense(16, in_units=3), nn.Dense(4, in_units=16))      # row-major data gradients too: planned
    net.initialize()
    net.hybridize(static_alloc=True)
    _train_and_predict(net, mx.nd.random.uniform(shape=(3, 5)))
    (_, backward), = [(kind, plan) for kind, plan in _plans(net) if kind == "backward"]
    compiled = backward._current.plan
    planned = {id(n): bool(n.attrs.get("feature_major")) for n in compiled.graph._nodes() if n.op is not None
               and any((id(n), i) in compiled._slot_of for i in range(n.num_outputs()))}
    marked = [n for n in compiled.graph._nodes() if n.op is not None and n.attrs.get("feature_major")]
    assert len(marked) == 2
    assert planned and not any(planned.values())

def test_one_row_stays_row_major():
    """One row is a matrix-vector product, which OpenBLAS runs ~5% slower transposed: the kernels keep it as is
    (a (1, N) array is both C- and F-contiguous, so every reader takes it either way)."""
    rng = np.random.default_rng(4)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((1, 5), (7, 5), (7,)))
    op = registry.get("_fc_epilogue")
    y = op.kernel(np, x, w, b, **op.parse({"num_hidden": 7, "act_type": "relu", "feature_major": True}))
    assert y.strides == (7 * 4, 4)                      # not the transpose of a (7, 1) array: strides (4, 4)
    g = _kernel("_fc_data_grad")(np, y, rng.standard_normal((7, 3)).astype(np.float32), feature_major=True)
    assert g.strides == (3 * 4, 4)
