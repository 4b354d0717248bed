"""Reductions fused into the elementwise group they read (symbol/fuse.py, codegen/numba_reduce.py): which ones
fuse, fused vs unfused results, the summation error bound, eager vs hybridized outputs and gradients, serial vs
parallel variants, and the kernel fingerprint.

Error bound tested (numba_reduce's docstring): for float32, each value goes through at most FLUSH = 16 float32
additions, then float64 ones, so |fused - S| <= eps32 * (|S| + 16 * sum|v|), with S the exact sum of the same
float32 values v (numpy's pairwise sum has 16-term float32 leaves too, plus log2(n) float32 levels on top). For
float64 (Kahan-compensated lanes): |fused - S| <= 300 * eps64 * sum|v|. A mean adds the division's rounding.
The chains here are arithmetic only, so the kernel's values v are bit-identical to numpy's.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mixnet as mx
from mixnet import autograd, config, gluon, nd
from mixnet.codegen import cache
from mixnet.codegen.ir import Group, Reduction, Step, inp, step
from mixnet.codegen.numba_cpu import compile_kernel, render_kernel
from mixnet.codegen.reduction import plan
from mixnet.symbol import fuse as fuse_module
from mixnet.symbol.fuse import fuse

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def short_rows_fuse(monkeypatch):
    """The small shapes below reach the row-sum kernels only with the row-length floor lowered."""
    monkeypatch.setattr(fuse_module, "MIN_FUSED_ROW", 1)


def test_short_rows_stay_unfused_by_default(monkeypatch):
    from mixnet.codegen.numba_reduce import FLUSH, LANES
    assert fuse_module.MIN_FUSED_ROW == 1
    monkeypatch.undo()
    assert fuse_module.MIN_FUSED_ROW == LANES * FLUSH
    x = mx.sym.var("x")
    rows = mx.sym.sum(mx.sym.tanh(x * 0.5 + 1) * x, axis=1)
    short, _ = fuse(rows, {"x": (1000, 1000)}, {"x": np.float32})
    long, _ = fuse(rows, {"x": (100, LANES * FLUSH)}, {"x": np.float32})
    assert _ops(short) == ["_fused_elemwise", "sum"] and _ops(long) == ["_fused_elemwise"]


def _fused_nodes(sym):
    return [n for n in sym._nodes() if n.op is not None and n.op.name == "_fused_elemwise"]


def _ops(sym):
    return [n.op.name for n in sym._nodes() if n.op is not None]


def _bound_ok(got, values, axes, kind, dtype):
    """The stated bound, per reduced element: got vs the exact sum (float64 of the float32 values; math.fsum
    for float64) of `values` over `axes`."""
    v = np.asarray(values, np.float64)
    moved = np.moveaxis(v, axes, list(range(v.ndim - len(axes), v.ndim))) if axes else v[..., None]
    rows = moved.reshape(int(np.prod(moved.shape[:v.ndim - len(axes)] if axes else v.shape)), -1)
    exact = np.array([math.fsum(r) for r in rows])
    mags = np.abs(rows).sum(axis=1)
    eps = np.finfo(dtype).eps
    bound = eps * (np.abs(exact) + 16 * mags) if dtype == np.float32 else 300 * eps * mags + eps * np.abs(exact)
    if kind == "mean":
        exact, bound = exact / rows.shape[1], bound / rows.shape[1] + eps * np.abs(exact / rows.shape[1])
    err = np.abs(np.asarray(got, np.float64).reshape(-1) - exact)
    assert np.all(err <= bound), (err.max(), bound[np.argmax(err - bound)])


# ------------------------------------------------------------------------------------------------ which fuse
def test_layouts_of_reductions():
    assert plan((8, 5), (0, 1)) == "trailing"          # all axes: one row
    assert plan((8, 5), (1,)) == "trailing"
    assert plan((8, 5), (0,)) == "leading"
    assert plan((1, 8, 1, 5), (1,)) == "leading"       # size-1 axes do not matter
    assert plan((4, 3, 5), (1, 2)) == "trailing"
    assert plan((4, 3, 5), (1,)) is None                # a middle axis: unfused
    assert plan((4, 3, 5), (0, 2)) is None
    assert plan((4, 1), (1,)) is None                   # adds nothing up


def _sym_cases():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    d = (x - y) * (x - y)
    return [
        (mx.sym.sum(d), "sum"), (mx.sym.sum(d, axis=1), "sum"), (mx.sym.mean(d, axis=0, keepdims=True), "mean"),
        (mx.sym.sum(d, axis=1, exclude=True), "sum"), (mx.sym.mean(d, axis=(0, 1)), "mean"),
        (mx.sym._sum_to(d, shape=(1, 7)), "_sum_to"), (mx.sym._sum_to(d, shape=(7,)), "_sum_to"),
        (mx.sym.sum(x * y, axis=-1, keepdims=True), "sum"),                 # one op fuses with its reduction
    ]


@pytest.mark.parametrize("case", range(8))
def test_sum_mean_sum_to_fuse_into_one_kernel(case):
    sym, name = _sym_cases()[case]
    shapes = {"x": (9, 7), "y": (9, 7)}
    fused, groups = fuse(sym, shapes, {"x": np.float32, "y": np.float32})
    assert groups == 1 and _ops(fused) == ["_fused_elemwise"]
    (node,) = _fused_nodes(fused)
    assert node.raw["ops"].endswith("+" + name)
    rng = np.random.default_rng(case)
    a, b = (nd.array(rng.standard_normal((9, 7)).astype(np.float32)) for _ in range(2))
    got, ref = fused.eval(x=a, y=b)[0].asnumpy(), sym.eval(x=a, y=b)[0].asnumpy()
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-6)


def test_unfusable_reductions_keep_the_unfused_path(monkeypatch):
    x, y = mx.sym.var("x"), mx.sym.var("y")
    shapes, dtypes = {"x": (4, 3, 5), "y": (4, 3, 5)}, {"x": np.float32, "y": np.float32}
    fused, _ = fuse(mx.sym.sum(x * y + 1, axis=1), shapes, dtypes)      # middle axis
    assert _ops(fused) == ["_fused_elemwise", "sum"]
    h = x * y + 1
    fused, _ = fuse(mx.sym.Group([mx.sym.sum(h), h]), shapes, dtypes)  # the result is also an output
    assert sorted(_ops(fused)) == ["_fused_elemwise", "sum"]
    fused, _ = fuse(mx.sym.max(x * y + 1), shapes, dtypes)             # not a sum
    assert _ops(fused) == ["_fused_elemwise", "max"]
    fused, groups = fuse(mx.sym.sum(x * y), shapes, dtypes, device="gpu")
    assert _ops(fused) == ["broadcast_mul", "sum"] and groups == 0     # GPU plans: reductions stay unfused
    monkeypatch.setattr(config, "FUSE_REDUCE", False)
    fused, _ = fuse(mx.sym.sum(x * y + 1), shapes, dtypes)
    assert _ops(fused) == ["_fused_elemwise", "sum"]


def test_min_size_applies_to_the_elementwise_size():
    x = mx.sym.var("x")
    sym = mx.sym.sum(x * x + 1, axis=1)
    _, groups = fuse(sym, {"x": (100, 100)}, {"x": np.float32}, min_size=20000)
    assert groups == 0
    _, groups = fuse(sym, {"x": (100, 100)}, {"x": np.float32}, min_size=10000)
    assert groups == 1


# ------------------------------------------------------------------------------------------------ accuracy
@settings(max_examples=12, deadline=None)
@given(rows=st.integers(1, 40), cols=st.integers(1, 700), lead=st.sampled_from([1, 3]),
       kind=st.sampled_from(["sum", "mean"]), where=st.sampled_from(["all", "leading", "trailing"]),
       keepdims=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_fused_reduction_within_the_stated_bound(rows, cols, lead, kind, where, keepdims, seed):
    shape = (lead, rows, cols)
    axes = {"all": (0, 1, 2), "leading": (0, 1), "trailing": (1, 2)}[where]
    x, y = mx.sym.var("x"), mx.sym.var("y")
    sym = getattr(mx.sym, kind)((x - y) * (x - y) - x * 0.25, axis=axes, keepdims=keepdims)
    fused, _ = fuse(sym, {"x": shape, "y": shape}, {"x": np.float32, "y": np.float32})
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    got = fused.eval(x=nd.array(a), y=nd.array(b))[0].asnumpy()
    assert got.shape == sym.eval(x=nd.array(a), y=nd.array(b))[0].shape
    values = (a - b) * (a - b) - a * np.float32(0.25)
    if plan(shape, axes) is not None:
        assert _ops(fused) == ["_fused_elemwise"]
    _bound_ok(got, values, axes, kind, np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("where,shape,axes", [("all", (300, 257), (0, 1)), ("trailing", (5, 20011), (1,)),
                                              ("leading", (3001, 3), (0,)), ("leading", (70, 1000), (0,))])
def test_large_reductions_within_the_stated_bound(dtype, where, shape, axes):
    # sizes past the lane scratch (FLUSH * LANES = 4096 values): the lanes, their flush and the tail all run
    x, y = mx.sym.var("x"), mx.sym.var("y")
    sym = mx.sym.sum(x * y + x, axis=axes)
    fused, _ = fuse(sym, {"x": shape, "y": shape}, {"x": dtype, "y": dtype})
    assert _ops(fused) == ["_fused_elemwise"]
    rng = np.random.default_rng(1)
    a = rng.uniform(0, 2, shape).astype(dtype)       # positive values: no cancellation hides the error
    b = rng.uniform(0, 2, shape).astype(dtype)
    got = fused.eval(x=nd.array(a, dtype=dtype), y=nd.array(b, dtype=dtype))[0].asnumpy()
    assert got.dtype == dtype
    _bound_ok(got, a * b + a, axes, "sum", dtype)


def test_a_naive_float32_sum_would_fail_the_bound():
    # the bound is tight enough to tell: a running float32 sum of 1e5 positive values misses it
    v = np.random.default_rng(0).uniform(0, 1, (1, 100_000)).astype(np.float32)
    naive = np.float32(0)
    for chunk in np.split(v[0], 100):                # the order a single running sum would add them in
        for value in chunk.tolist():
            naive = np.float32(naive + np.float32(value))
    with pytest.raises(AssertionError):
        _bound_ok(np.array([naive]), v, (1,), "sum", np.float32)


def _sqdiff_group(layout, kind="sum", dtype="float32"):
    return Group([Step("_minus", "{0} - {1}", (inp(0), inp(1)), {}, "model.py:3"),
                  Step("_mul", "{0} * {1}", (step(0), step(0)), {}, "model.py:3")], [1], 2, dtype,
                 Reduction(kind, layout, "sum", "model.py:4"))


@pytest.mark.parametrize("layout,shape", [("trailing", (1, 200_003)), ("trailing", (9, 40_000)),
                                          ("trailing", (2000, 70)), ("leading", (50_000, 5)),
                                          ("leading", (30, 9000))])
def test_parallel_and_serial_variants_agree(layout, shape):
    kernel = compile_kernel(_sqdiff_group(layout))
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    m = shape[0] if layout == "trailing" else shape[1]
    n = a.size
    serial, parallel = np.empty(m, np.float32), np.empty(m, np.float32)
    kernel.ensure_compiled("serial")(n, a.reshape(-1), b.reshape(-1), serial)
    kernel.ensure_compiled("parallel")(n, a.reshape(-1), b.reshape(-1), parallel)
    values, axes = (a - b) * (a - b), (1,) if layout == "trailing" else (0,)
    _bound_ok(serial, values, axes, "sum", np.float32)
    _bound_ok(parallel, values, axes, "sum", np.float32)
    np.testing.assert_allclose(serial, parallel, rtol=40 * np.finfo(np.float32).eps)   # positive values: both within 17 eps


def test_output_over_an_input_buffer_is_safe():
    # the memory planner may hand a dying input's buffer over as the output
    kernel = compile_kernel(_sqdiff_group("leading"))
    a = np.random.default_rng(3).standard_normal((50, 8)).astype(np.float32)
    b = np.ones((50, 8), np.float32)
    expected = ((a - b) * (a - b)).astype(np.float64).sum(axis=0)
    out = a[0]                                          # a view of the first row of an input
    kernel(a, b, out=out)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


# ------------------------------------------------------------------------------------------------ source, cache
def test_source_is_readable_and_fingerprinted(monkeypatch, caplog):
    sources = {(layout, kind): render_kernel(_sqdiff_group(layout, kind))
               for layout in ("trailing", "leading") for kind in ("sum", "mean")}
    plain = render_kernel(Group(_sqdiff_group("leading").steps, [1], 2, "float32"))
    names = {cache.kernel_name(s) for s in list(sources.values()) + [plain]}
    assert len(names) == 5                               # the reduction is part of the fingerprint
    src = sources[("leading", "mean")]
    assert "# _minus         model.py:3" in src and "# _mul           model.py:3" in src
    assert "# sum            model.py:4" in src and "mean over the leading axes" in src
    assert "float64" not in src.split("def element")[1].split("def lanes")[0]   # the chain stays float32
    monkeypatch.setenv("MIXNET_SHOW_CODE", "1")
    compile_kernel(Group(_sqdiff_group("trailing").steps, [1], 2, "float32", Reduction("mean", "trailing", "x")),
                   compile_now=False)
    assert "mixnet fused reduction kernel" in caplog.text      # logged at DEBUG, forced out by the switch


# ------------------------------------------------------------------------------------------------ hybridize
class TanhSquareSum(gluon.HybridBlock):
    def __init__(self, c, **kwargs):
        super().__init__(**kwargs)
        self.w = self.params.get("w", shape=(1, c))
        self.b = self.params.get("b", shape=(c,))

    def hybrid_forward(self, F, x, w, b):
        return F.sum(F.tanh(F.broadcast_add(F.broadcast_mul(x, w), b)) ** 2, axis=1)

    @staticmethod
    def reference(block, x):
        w, b = block.w.data().asnumpy(), block.b.data().asnumpy()
        return (np.tanh(x * w + b).astype(np.float64) ** 2).sum(axis=1)


def _run_block(hybrid, monkeypatch, fuse_reduce=True):
    monkeypatch.setattr(config, "FUSE_REDUCE", fuse_reduce)
    mx.random.seed(0)
    block = TanhSquareSum(64)
    block.initialize(mx.init.Uniform(1.0))
    if hybrid:
        block.hybridize()
    x = nd.array(np.random.default_rng(4).uniform(-2, 2, (48, 64)).astype(np.float32))
    x.attach_grad()
    with autograd.record():
        y = block(x)
    y.backward(nd.array(np.linspace(-1, 1, 48).astype(np.float32)))
    grads = [x.grad.asnumpy(), block.w.grad().asnumpy(), block.b.grad().asnumpy()]
    return block, y.asnumpy(), grads


def test_eager_and_hybridized_outputs_and_gradients_agree(monkeypatch):
    block, out, grads = _run_block(True, monkeypatch)
    (plan_,) = block._last_graph._training.values()
    backward = [n.raw["ops"] for n in _fused_nodes(plan_.backward.symbol)]
    assert any(ops.endswith("+_sum_to") for ops in backward)            # w's broadcast gradient: leading axes
    # training keeps the chain's values for backward, so its forward writes them; inference sums them in-kernel
    x = nd.array(np.random.default_rng(6).uniform(-2, 2, (48, 64)).astype(np.float32))
    inferred = block(x).asnumpy()
    forward = [n.raw["ops"] for n in _fused_nodes(block._last_graph.inference.symbol)]
    assert forward == ["broadcast_mul+broadcast_add+tanh+_power_scalar+sum"]
    np.testing.assert_allclose(inferred, TanhSquareSum.reference(block, x.asnumpy()), rtol=1e-5, atol=1e-5)
    _, ref_out, ref_grads = _run_block(False, monkeypatch)
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-5)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)
    _, off_out, off_grads = _run_block(True, monkeypatch, fuse_reduce=False)
    np.testing.assert_allclose(out, off_out, rtol=1e-5, atol=1e-5)
    for g, r in zip(grads, off_grads):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


class BroadcastLoss(gluon.HybridBlock):
    """Broadcasting in the forward: the backward reduces the gradients of a and b over their broadcast axes,
    each the only result of its own elementwise group (a group with two results keeps its reductions unfused)."""

    def hybrid_forward(self, F, x, a, b):
        return F.broadcast_mul(F.tanh(x), a) * 2 + F.broadcast_mul(x, b)


def test_broadcasting_backward_fuses_its_sum_to(monkeypatch):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((200, 30)).astype(np.float32)
    a = rng.standard_normal((1, 30)).astype(np.float32)
    b = rng.standard_normal((200, 1)).astype(np.float32)
    head = rng.standard_normal((200, 30)).astype(np.float32)

    def run(hybrid):
        block = BroadcastLoss()
        if hybrid:
            block.hybridize()
        arrays = [nd.array(v) for v in (x, a, b)]
        for v in arrays[1:]:
            v.attach_grad()
        with autograd.record():
            y = block(*arrays)
        y.backward(nd.array(head))
        return block, y.asnumpy(), [v.grad.asnumpy() for v in arrays[1:]]

    block, out, grads = run(True)
    (plan_,) = block._last_graph._training.values()
    backward = [n.raw["ops"] for n in _fused_nodes(plan_.backward.symbol)]
    assert sum(ops.endswith("+_sum_to") for ops in backward) == 2      # (1, 30): leading; (200, 1): trailing
    assert "_sum_to" not in _ops(plan_.backward.symbol)
    _, ref_out, ref_grads = run(False)
    np.testing.assert_allclose(out, ref_out, rtol=1e-6, atol=1e-6)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-4)
