"""The GEMM epilogue pass (mixnet/symbol/epilogue.py) and its ops (mixnet/ops/nn_epilogue.py).

1. Where it fires: Dense(act) forward -> _fc_epilogue; the activation backward + bias `_sum_to` -> _act_bwd_bias;
   not when the FullyConnected value has another reader or is a graph output, not for a reduction that keeps
   another axis. The backward is found in whatever form its gradient rule has (a rule rewritten in an
   equivalent form still fuses), but not when the rule reads another value than `_act_bwd_bias` does.
2. Hybridized Dense layers give the eager outputs and gradients, epilogue on and off, for each activation, with and
   without bias, flatten on and off, float32/float64, static_alloc on and off.
3. The Numba loops give what the generic xp code gives (`_fastpath.ENABLED = False`), and warm_up covers the
   argument types real calls pass (so the background child compiles all of them).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mixnet as mx
from mixnet import autograd, config
from mixnet.gluon import nn
from mixnet.ops import _epilogue_kernels, _fastpath, registry
from mixnet.symbol.epilogue import epilogue

ACTS = ("relu", "sigmoid", "tanh", "softrelu")


def _ops(symbol):
    return sorted(n.op.name for n in symbol._nodes() if n.op is not None)


def _x_types(shape=(4, 5), dtype=np.float32):
    return {"x": shape}, {"x": dtype}


# ---------------------------------------------------------------------------------------------------------
# 1. where the pass fires
@pytest.mark.parametrize("act", ACTS)
def test_fc_then_activation_becomes_one_node(act):
    x = mx.sym.Variable("x")
    y = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=3, name="fc"), act_type=act)
    out = epilogue(y, *_x_types())
    assert _ops(out) == ["_fc_epilogue"]
    node = out._outputs[0][0]
    assert node.attrs["act_type"] == act and node.attrs["num_hidden"] == 3 and not node.attrs["no_bias"]
    assert [src.name for src, _ in node.inputs] == ["x", "fc_weight", "fc_bias"]


@pytest.mark.parametrize("op", ["relu", "sigmoid", "tanh"])
def test_the_activation_ops_fuse_too(op):
    x = mx.sym.Variable("x")
    y = getattr(mx.sym, op)(mx.sym.FullyConnected(x, num_hidden=3, no_bias=True, flatten=False))
    assert _ops(epilogue(y, *_x_types((2, 3, 5)))) == ["_fc_epilogue"]


def test_no_fusion_when_the_gemm_output_is_needed_elsewhere():
    x = mx.sym.Variable("x")
    fc = mx.sym.FullyConnected(x, num_hidden=3)
    as_output = mx.sym.Group([mx.sym.Activation(fc, act_type="relu"), fc])
    assert "_fc_epilogue" not in _ops(epilogue(as_output, *_x_types()))
    second_reader = mx.sym.Activation(fc, act_type="tanh") + fc * 2
    assert "_fc_epilogue" not in _ops(epilogue(second_reader, *_x_types()))
    other_act = mx.sym.Activation(fc, act_type="softsign")
    assert "_fc_epilogue" not in _ops(epilogue(other_act, *_x_types()))


def test_backward_pattern_fuses_and_a_reduction_keeping_rows_does_not():
    g, d = mx.sym.Variable("g"), mx.sym.Variable("d")
    dz = mx.sym._relu_bwd(g, d)
    types = ({"g": (6, 4), "d": (6, 4)}, {"g": np.float32, "d": np.float32})
    bias = mx.sym.Reshape(mx.sym._sum_to(mx.sym.Reshape(dz, shape=(-1, 4)), shape=(1, 4)), shape=(4,))
    fused = epilogue(mx.sym.Group([dz * 3, bias]), *types)
    assert "_act_bwd_bias" in _ops(fused) and "_sum_to" not in _ops(fused) and "_relu_bwd" not in _ops(fused)
    rows = mx.sym._sum_to(dz, shape=(6, 1))
    assert "_act_bwd_bias" not in _ops(epilogue(mx.sym.Group([dz, rows]), *types))


def test_inner_nodes_of_a_backward_with_other_readers_block_it():
    g, y = mx.sym.Variable("g"), mx.sym.Variable("y")
    one_minus = 1 - y
    dz = g * y * one_minus                                      # sigmoid's backward, as its rule writes it
    types = ({"g": (6, 4), "y": (6, 4)}, {"g": np.float64, "y": np.float64})
    assert "_act_bwd_bias" in _ops(epilogue(mx.sym._sum_to(dz, shape=(1, 4)), *types))
    shared = mx.sym.Group([mx.sym._sum_to(dz, shape=(1, 4)), one_minus])
    assert "_act_bwd_bias" not in _ops(epilogue(shared, *types))


def _plans(block):
    for graph in block._cached_graphs.values():
        if graph._inference is not None:               # the property would make one
            yield "inference", graph._inference
        for plan in graph._training.values():
            yield "forward", plan.forward
            if plan.backward is not None:
                yield "backward", plan.backward


def _dense_net(act, use_bias, flatten, dtype):
    net = nn.HybridSequential()
    net.add(nn.Dense(6, activation=act, use_bias=use_bias, flatten=flatten, in_units=5 if not flatten else 10),
            nn.Dense(3, flatten=flatten, in_units=6))
    net.initialize(mx.init.Xavier())
    net.cast(dtype)
    return net


def _run(act, use_bias, flatten, dtype, hybrid, static_alloc=False):
    """Outputs and gradients of two training calls and one inference call; returns them and the net."""
    mx.random.seed(3)
    net = _dense_net(act, use_bias, flatten, dtype)
    if hybrid:
        net.hybridize(static_alloc=static_alloc)
    rng = np.random.default_rng(1)
    results = []
    for _ in range(2):
        x = mx.nd.array(rng.standard_normal((4, 2, 5)), dtype=dtype)
        head = mx.nd.array(rng.standard_normal((4, 2, 3) if not flatten else (4, 3)), dtype=dtype)
        x.attach_grad()
        with autograd.record():
            out = net(x)
        out.backward(head)
        results.append([out.asnumpy(), x.grad.asnumpy()]
                        + [p.grad().asnumpy() for p in net.collect_params().values()])
        results[-1].append(net(x).asnumpy())
    return results, net


def _assert_close(got, want, dtype):
    tol = 1e-5 if dtype == "float32" else 1e-12
    for g_call, w_call in zip(got, want):
        for g, w in zip(g_call, w_call):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("act", ACTS)
def test_dense_layers_fire_in_every_plan(act):
    _, net = _run(act, True, True, "float32", hybrid=True)
    seen = {kind: _ops(plan.symbol) for kind, plan in _plans(net)}
    assert "_fc_epilogue" in seen["inference"]
    # softrelu's backward reads its input, which the forward must then keep: no forward epilogue in training
    assert ("_fc_epilogue" in seen["forward"]) == (act != "softrelu")
    assert "_act_bwd_bias" in seen["backward"]
    assert seen["backward"].count("_sum_to") == 1                 # the last layer's bias: no activation there
    # a bias gradient is summed straight to its (N,) shape: no Reshape after the sum (a kernel call per layer
    # per step)
    backward = dict(_plans(net))["backward"].symbol
    sums = {id(n) for n in backward._nodes() if n.op is not None and n.op.name in ("_sum_to", "_act_bwd_bias")}
    assert not [n for n in backward._nodes() if n.op is not None and n.op.name == "Reshape"
                and id(n.inputs[0][0]) in sums]
    inference = dict(_plans(net))["inference"].compiled.source
    assert "# _fc_epilogue dense" in inference and "# Activation" not in inference


@settings(max_examples=16, deadline=None)
@given(act=st.sampled_from(ACTS), use_bias=st.booleans(), flatten=st.booleans(),
       dtype=st.sampled_from(["float32", "float64"]), static_alloc=st.booleans(), flag=st.booleans())
def test_hybridized_dense_equals_eager(act, use_bias, flatten, dtype, static_alloc, flag):
    eager, _ = _run(act, use_bias, flatten, dtype, hybrid=False)
    previous = config.EPILOGUE
    config.EPILOGUE = flag
    try:
        hybrid, net = _run(act, use_bias, flatten, dtype, hybrid=True, static_alloc=static_alloc)
    finally:
        config.EPILOGUE = previous
    _assert_close(hybrid, eager, dtype)
    names = [name for _, plan in _plans(net) for name in _ops(plan.symbol)]
    assert ("_fc_epilogue" in names) == flag
    assert ("_act_bwd_bias" in names) == (flag and use_bias)


def test_static_alloc_hands_the_epilogue_a_planned_buffer():
    _, net = _run("relu", True, True, "float32", hybrid=True, static_alloc=True)
    forward = dict(_plans(net))["inference"].compiled.source
    line = next(s for s in forward.splitlines() if "# _fc_epilogue" in s)
    assert "out=O" in line


# Each activation's rule rewritten in another, equivalent form (patched on its OpDef, as an edit of the rule would
# be): the pass matches what the rule traces to, so it still fires, and the results stay the eager ones.
def _rewritten_rules(act, original):
    y = lambda c: c.outputs[0]                                        # noqa: E731
    return {"relu": lambda c, g: (g * (y(c) > 0),),
            "sigmoid": lambda c, g: (g * (y(c) - y(c) * y(c)),),
            "tanh": lambda c, g: (g - g * y(c) * y(c),),
            "softrelu": lambda c, g: ((g / (1 + mx.nd.exp(-c.inputs[0])),) if c.attrs["act_type"] == "softrelu"
                                      else original(c, g))}[act]


@pytest.mark.parametrize("act", ACTS)
def test_a_rule_rewritten_in_another_form_still_fuses(act, monkeypatch):
    op = registry.get("Activation" if act == "softrelu" else act)
    monkeypatch.setattr(op, "grad", _rewritten_rules(act, op.grad))
    eager, _ = _run(act, True, True, "float32", hybrid=False)
    hybrid, net = _run(act, True, True, "float32", hybrid=True)
    _assert_close(hybrid, eager, "float32")
    backward = dict(_plans(net))["backward"]
    assert "_act_bwd_bias" in _ops(backward.symbol)


def test_a_rule_reading_another_value_does_not_fuse(monkeypatch):
    """softrelu's rule from the output y (sigmoid(x) = -expm1(-y)): _act_bwd_bias(softrelu) reads the input, so
    fusing would take y for x; the pass leaves this backward alone."""
    original = registry.get("Activation").grad

    def from_output(c, g):
        if c.attrs["act_type"] != "softrelu":
            return original(c, g)
        return (-g * mx.nd.expm1(-c.outputs[0]),)
    monkeypatch.setattr(registry.get("Activation"), "grad", from_output)
    eager, _ = _run("softrelu", True, True, "float32", hybrid=False)
    hybrid, net = _run("softrelu", True, True, "float32", hybrid=True)
    _assert_close(hybrid, eager, "float32")
    assert "_act_bwd_bias" not in _ops(dict(_plans(net))["backward"].symbol)


# ---------------------------------------------------------------------------------------------------------
# 3. the Numba loops against the generic code
def _both_paths(kernel, *args, **kwargs):
    """(Numba result, generic result) of one kernel call (inputs with inf/NaN: numpy's warnings silenced)."""
    with np.errstate(all="ignore"):
        fast = kernel(np, *[a.copy() for a in args], **kwargs)
        _fastpath.ENABLED = False
        try:
            generic = kernel(np, *[a.copy() for a in args], **kwargs)
        finally:
            _fastpath.ENABLED = True
    return fast, generic


def _with_specials(rng, shape, dtype):
    a = rng.standard_normal(shape).astype(dtype)
    flat = a.reshape(-1)
    if flat.size >= 4:
        flat[:4] = [np.nan, np.inf, -np.inf, 0.0]
    return a


@settings(max_examples=12, deadline=None)
@given(rows=st.integers(1, 9), n=st.integers(1, 7), dtype=st.sampled_from([np.float32, np.float64]),
       act=st.sampled_from(ACTS), seed=st.integers(0, 2 ** 16))
def test_fc_epilogue_numba_equals_generic(rows, n, dtype, act, seed):
    rng = np.random.default_rng(seed)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((rows, 3), (n, 3), (n,)))
    b[0] = np.nan if n > 2 else b[0]
    op = registry.get("_fc_epilogue")
    attrs = op.parse({"num_hidden": n, "act_type": act})
    fast, generic = _both_paths(op.kernel, x, w, b, **attrs)
    np.testing.assert_array_equal(fast, generic)


@settings(max_examples=12, deadline=None)
@given(rows=st.integers(1, 9), n=st.integers(1, 7), dtype=st.sampled_from([np.float32, np.float64]),
       act=st.sampled_from(ACTS), seed=st.integers(0, 2 ** 16))
def test_act_bwd_bias_numba_equals_generic(rows, n, dtype, act, seed):
    rng = np.random.default_rng(seed)
    g, d = _with_specials(rng, (rows, n), dtype), rng.standard_normal((rows, n)).astype(dtype)
    op = registry.get("_act_bwd_bias")
    attrs = op.parse({"act_type": act, "shape": (1, n)})
    (dz, db), (dz_generic, db_generic) = _both_paths(op.kernel, g, d, **attrs)
    np.testing.assert_array_equal(dz, dz_generic)
    np.testing.assert_allclose(db, db_generic, rtol=1e-6 if dtype == np.float32 else 1e-14, atol=0)


def test_relu_epilogue_keeps_nan_and_zeroes_minus_inf():
    op = registry.get("_fc_epilogue")
    x, w = np.ones((1, 1), np.float32), np.ones((4, 1), np.float32)
    b = np.array([np.nan, -np.inf, -3.0, 2.0], np.float32)
    for enabled in (True, False):
        _fastpath.ENABLED = enabled
        try:
            y = op.kernel(np, x, w, b, **op.parse({"num_hidden": 4, "act_type": "relu"}))
        finally:
            _fastpath.ENABLED = True
        np.testing.assert_array_equal(y, [[np.nan, 0, 0, 3]])


def _wide_run(act, dtype):
    """A training call whose hidden value (2, 16) is wide enough to be feature-major (symbol/epilogue.py)."""
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation=act, in_units=5), nn.Dense(3, in_units=16))
    net.initialize()
    net.cast(dtype)
    net.hybridize()
    with autograd.record():
        out = net(mx.nd.ones((2, 5), dtype=dtype))
    out.backward()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_warm_up_covers_the_signatures_real_calls_use(dtype, monkeypatch):
    import numba
    seen, loops = {}, _epilogue_kernels.loops()
    for loop in loops:
        name = loop.py_func.__name__
        if name.startswith("_"):
            # a helper the loops call from compiled code (_row_sums): a Python spy in its place would make a
            # loop compiled now (a cold cache) fail to type it
            continue

        def spy(*args, _loop=loop, _name=name):
            seen.setdefault(_name, set()).add(tuple(numba.typeof(a) for a in args))
            return _loop(*args)
        monkeypatch.setattr(_epilogue_kernels, name, spy)
    _epilogue_kernels.warm_up(dtype)
    warm, seen = seen, {}
    for act in ("relu", "sigmoid", "tanh"):
        _run(act, True, True, dtype, hybrid=True)
        _run(act, True, False, dtype, hybrid=True, static_alloc=True)
        _wide_run(act, dtype)
    # every loop but the helper that loops call from inside (_row_sums)
    assert set(seen) == {loop.py_func.__name__ for loop in loops if not loop.py_func.__name__.startswith("_")}
    for name, types in seen.items():
        assert types <= warm[name], (name, types - warm[name])


def test_cupy_takes_the_generic_code():
    cupy = pytest.importorskip("cupy", reason="cupy is not installed: the GPU path is not tested here")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as err:                        # noqa: BLE001 - any CUDA failure means no usable GPU
        pytest.skip(f"no usable GPU for cupy ({err})")
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (4, 3), (4,)))
    g, d = rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
    for act in ACTS:
        fc = registry.get("_fc_epilogue")
        attrs = fc.parse({"num_hidden": 4, "act_type": act})
        want = fc.kernel(np, x, w, b, **attrs)
        got = fc.kernel(cupy, *map(cupy.asarray, (x, w, b)), **attrs)
        np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-5, atol=1e-6)
        bwd = registry.get("_act_bwd_bias")
        battrs = bwd.parse({"act_type": act, "shape": (1, 4)})
        want = bwd.kernel(np, g, d, **battrs)
        got = bwd.kernel(cupy, cupy.asarray(g), cupy.asarray(d), **battrs)
        for a, e in zip(got, want):
            np.testing.assert_allclose(cupy.asnumpy(a), e, rtol=1e-5, atol=1e-6)
