"""The fused normalization kernels: softmax / log_softmax / softmin, LayerNorm and BatchNorm forwards with a Numba
fast path, and their fused backward ops (_softmax_bwd, _log_softmax_bwd, _layernorm_bwd, _batchnorm_bwd,
_batchnorm_global_bwd).

The generated tests (test_generated.py, test_compiled.py, test_writes_out.py) check each op against its numpy
reference, finite differences and the compiled graph on small cases. Here:
1. Numba fast path vs the generic xp code (`_fastpath.ENABLED = False`), forward and backward, any axis, float32
   and float64, NaN / inf, BatchNorm's moving statistics;
2. the fused gradient (eager backward, create_graph=False) vs the composite rule (create_graph=True runs it), and
   which of the two ran;
3. eager vs hybridized outputs and gradients (the compiled backward uses the fused ops);
4. second-order gradients through LayerNorm / BatchNorm / softmax (composite, eager and through a hybridized
   block) vs finite differences of the fused first-order gradient.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mixnet as mx
from mixnet import autograd, gluon
from mixnet.base import MXNetError
from mixnet.ops import _fastpath, _numba_kernels, registry

from .recipes import fast_and_generic as _both

FUSED = ("_softmax_bwd", "_log_softmax_bwd", "_layernorm_bwd", "_batchnorm_bwd", "_batchnorm_global_bwd")


@pytest.fixture(autouse=True)
def _loaded():
    assert _fastpath.numba_kernels(np, np.zeros(1, np.float32)) is not None


@pytest.fixture
def calls(monkeypatch):
    """Counts the kernel calls of the fused backward ops."""
    seen = {name: 0 for name in FUSED}
    for name in FUSED:
        op = registry.get(name)

        def counted(*args, _kernel=op.kernel, _name=name, **kwargs):
            seen[_name] += 1
            return _kernel(*args, **kwargs)
        monkeypatch.setattr(op, "kernel", counted)
    return seen


def _close(fast, slow, dtype):
    tol = 2e-5 if np.dtype(dtype) == np.float32 else 1e-12
    for f, s in zip(fast, slow):
        assert f.shape == s.shape and f.dtype == s.dtype, (f.shape, f.dtype, s.shape, s.dtype)
        np.testing.assert_allclose(f, s, rtol=tol, atol=tol)


def _kernel(name, *arrays, out=None, **attrs):
    op = registry.get(name)
    extra = {"out": out} if out is not None else {}
    res = op.kernel(np, *arrays, **op.parse(attrs), **extra)
    return tuple(res) if isinstance(res, (tuple, list)) else (res,)


shapes_axes = st.lists(st.integers(1, 7), min_size=1, max_size=4).flatmap(
    lambda s: st.tuples(st.just(tuple(s)), st.integers(-len(s), len(s) - 1)))


# ---------------------------------------------------------------------------------------------------------
# 1. fast path vs generic
@settings(max_examples=12, deadline=None)
@given(sa=shapes_axes, dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 2 ** 16),
       kind=st.sampled_from(["softmax", "log_softmax", "softmin"]), temp=st.sampled_from([None, 0.7]))
def test_softmax_fast_equals_generic(sa, dtype, seed, kind, temp):
    shape, axis = sa
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    _close(*_both(lambda: _kernel(kind, x, axis=axis, temperature=temp)), dtype)
    y = _kernel(kind, x, axis=axis, temperature=temp)[0]
    if kind == "log_softmax":
        _close(*_both(lambda: _kernel("_log_softmax_bwd", y, g, axis=axis, temperature=temp)), dtype)
    else:
        _close(*_both(lambda: _kernel("_softmax_bwd", y, g, axis=axis, temperature=temp,
                                      softmin=kind == "softmin")), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_fast_path_nan_inf_rows(dtype):
    x = np.array([[1, 2, np.nan, 0], [np.inf, 1, 2, 3], [-np.inf] * 4, [-np.inf, 0, 1, -np.inf],
                  [1e30, -1e30, 0, 88]], dtype)
    with np.errstate(invalid="ignore"):
        for kind in ("softmax", "log_softmax"):
            fast, slow = _both(lambda: _kernel(kind, x))
            np.testing.assert_array_equal(np.isnan(fast[0]), np.isnan(slow[0]))
            np.testing.assert_allclose(fast[0], slow[0], rtol=1e-6, atol=1e-30)


@settings(max_examples=25, deadline=None)
@given(d=st.sampled_from([1, 3, 8, 13, 40, 63, 64, 100]), dtype=st.sampled_from(["float32", "float64"]),
       seed=st.integers(0, 2 ** 16),
       specials=st.lists(st.tuples(st.integers(0, 99), st.sampled_from([np.nan, np.inf, -np.inf])), max_size=3),
       temp=st.sampled_from([None, 0.7]), spread=st.sampled_from([4.0, 400.0]))
def test_softmax_long_rows_with_specials(d, dtype, seed, specials, temp, spread):
    """Short rows (processed in blocks) and long ones (row by row, from 64), longer than the loops' unrolling (the
    row maximum runs eight lanes, the sums SIMD partial sums), with NaN / inf anywhere: fast path vs generic,
    forward and backward. With spread 400, exp overflows (float32 and float64) unless the row maximum is exact."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((3, d)) * spread).astype(dtype)
    for pos, value in specials:
        x[pos % 3, pos * 7 % d] = value
    g = rng.standard_normal((3, d)).astype(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        for kind in ("softmax", "log_softmax", "softmin"):
            fast, slow = _both(lambda: _kernel(kind, x, temperature=temp))
            np.testing.assert_array_equal(np.isnan(fast[0]), np.isnan(slow[0]))
            _close(fast, slow, dtype)
            y = np.where(np.isfinite(slow[0]), slow[0], 0).astype(dtype)
            bwd = "_log_softmax_bwd" if kind == "log_softmax" else "_softmax_bwd"
            extra = {"softmin": True} if kind == "softmin" else {}
            _close(*_both(lambda: _kernel(bwd, y, g, temperature=temp, **extra)), dtype)


@pytest.mark.parametrize("d", [3, 10, 13, 64, 100])
def test_softmax_row_maximum_at_every_position(d):
    """Row j has its maximum (far above the rest, so that exp overflows from any smaller shift) at position j: the
    row maximum's eight lanes and tail, in the block and the row-by-row loops."""
    rng = np.random.default_rng(d)
    x = rng.standard_normal((d, d)).astype(np.float32)
    x[np.arange(d), np.arange(d)] = 300.0
    for kind in ("softmax", "log_softmax"):
        _close(*_both(lambda: _kernel(kind, x)), "float32")
        assert np.isfinite(_kernel(kind, x)[0]).all()


@pytest.mark.parametrize("shape", [(300, 9), (5, 1000), (2, 2500)])
@pytest.mark.parametrize("kind", ["softmax", "log_softmax", "softmin"])
def test_softmax_row_blocks(shape, kind):
    """The softmax loops work on blocks of short rows (several blocks of many rows) and on long rows one by one:
    fast path vs generic, forward and backward, with a temperature so that z is staged."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 5).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    for temp in (None, 0.7):
        fast, slow = _both(lambda: _kernel(kind, x, temperature=temp))
        _close(fast, slow, "float32")
        bwd = "_log_softmax_bwd" if kind == "log_softmax" else "_softmax_bwd"
        extra = {"softmin": True} if kind == "softmin" else {}
        _close(*_both(lambda: _kernel(bwd, slow[0], g, temperature=temp, **extra)), "float32")


@settings(max_examples=12, deadline=None)
@given(sa=shapes_axes, dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 2 ** 16))
def test_layernorm_fast_equals_generic(sa, dtype, seed):
    shape, axis = sa
    rng = np.random.default_rng(seed)
    d = shape[axis]
    stats = tuple(1 if i == axis % len(shape) else n for i, n in enumerate(shape))
    x = (rng.standard_normal(shape) + 5).astype(dtype)          # an offset mean: cancellation in the variance
    g = rng.standard_normal(shape).astype(dtype)
    gamma, beta = (rng.standard_normal(d).astype(dtype) for _ in range(2))
    gm, gs = (rng.standard_normal(stats).astype(dtype) for _ in range(2))
    _close(*_both(lambda: _kernel("LayerNorm", x, gamma, beta, axis=axis, eps=1e-3)), dtype)
    _close(*_both(lambda: _kernel("_layernorm_bwd", x, g, gamma, gm, gs, axis=axis, eps=1e-3)), dtype)


def _bn_forward(x, gamma, beta, mm, mv, is_train, **attrs):
    op = registry.get("BatchNorm")
    mm, mv = mm.copy(), mv.copy()
    outs = op.kernel(np, x, gamma, beta, mm, mv, is_train=is_train, **op.parse(attrs))
    return outs + (mm, mv)


@settings(max_examples=12, deadline=None)
@given(sa=shapes_axes, dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 2 ** 16),
       fix_gamma=st.booleans(), mode=st.sampled_from(["train", "global", "predict"]))
def test_batchnorm_fast_equals_generic(sa, dtype, seed, fix_gamma, mode):
    shape, axis = sa
    rng = np.random.default_rng(seed)
    c = shape[axis]
    x = (rng.standard_normal(shape) * 2 + 3).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    gamma, beta, mm, s1, s2 = (rng.standard_normal(c).astype(dtype) for _ in range(5))
    mv = rng.uniform(0.5, 2, c).astype(dtype)
    attrs = dict(axis=axis, fix_gamma=fix_gamma, eps=1e-3, use_global_stats=mode == "global",
                 is_train=mode != "predict")
    _close(*_both(lambda: _bn_forward(x, gamma, beta, mm, mv, **attrs)), dtype)
    bwd = dict(axis=axis, fix_gamma=fix_gamma, eps=1e-3)
    _close(*_both(lambda: _kernel("_batchnorm_bwd", x, g, gamma, s1, s2, **bwd)), dtype)
    _close(*_both(lambda: _kernel("_batchnorm_global_bwd", x, g, gamma, mm, mv, **bwd)), dtype)


def test_batchnorm_global_backward_ignores_infinite_data():
    """With moving statistics dx = g * gamma * invstd: an infinite x does not turn dx into NaN."""
    x = np.array([[np.inf, 1.0], [2.0, 3.0]], np.float32)
    g = np.ones((2, 2), np.float32)
    one = np.ones(2, np.float32)
    for dx, _, _ in _both(lambda: _kernel("_batchnorm_global_bwd", x, g, one, one * 0, one, eps=0.0)):
        np.testing.assert_array_equal(dx, np.ones((2, 2), np.float32))


def test_layernorm_writes_into_given_buffers():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    gamma, beta = np.ones(6, np.float32), np.zeros(6, np.float32)
    bufs = (np.full((4, 6), np.nan, np.float32), np.full((4, 1), np.nan, np.float32),
            np.full((4, 1), np.nan, np.float32))
    got = _kernel("LayerNorm", x, gamma, beta, out=bufs)
    assert all(a is b for a, b in zip(got, bufs))
    np.testing.assert_allclose(bufs[0], (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5),
                               rtol=1e-5, atol=1e-5)


def test_warm_up_covers_the_normalization_signatures(monkeypatch):
    """Every argument-type tuple the normalization fast paths pass (eager forward and backward of LayerNorm,
    BatchNorm in training and inference, softmax, log_softmax) is one warm_up passes, so the background child
    compiles all of them."""
    import numba
    names = ("softmax_forward", "softmax_backward", "layernorm_forward", "layernorm_backward", "batchnorm_sums",
             "channel_affine")
    for dtype in ("float32", "float64"):
        seen = {}
        for name in names:
            loop = getattr(_numba_kernels, name)

            def spy(*args, _loop=loop, _name=name):
                seen.setdefault(_name, set()).add(tuple(numba.typeof(a) for a in args))
                return _loop(*args)
            monkeypatch.setattr(_numba_kernels, name, spy)
        _numba_kernels.warm_up(dtype)
        warm, seen = seen, {}
        rng = np.random.default_rng(0)
        x = mx.nd.array(rng.standard_normal((2, 3, 4)), dtype=dtype)
        gamma, beta = mx.nd.ones((3,), dtype=dtype), mx.nd.zeros((3,), dtype=dtype)
        gamma.attach_grad()
        x.attach_grad()
        for train in (True, False):
            with autograd.record(train_mode=train):
                y = mx.nd.BatchNorm(x, gamma, beta, mx.nd.zeros((3,), dtype=dtype), mx.nd.ones((3,), dtype=dtype),
                                    fix_gamma=False)
                y = mx.nd.LayerNorm(y, mx.nd.ones((4,), dtype=dtype), mx.nd.zeros((4,), dtype=dtype))
                y = mx.nd.log_softmax(y, axis=1) + mx.nd.softmax(y)
            y.backward()
        assert set(names) == set(seen)
        for name, types in seen.items():
            assert types <= warm[name], (dtype, name, types - warm[name])
        monkeypatch.undo()


# ---------------------------------------------------------------------------------------------------------
# 2. fused gradient vs composite
def _grads(fn, arrays, create_graph, head=None):
    xs = [mx.nd.array(a, dtype=a.dtype) for a in arrays]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        out = fn(*xs)
    head = mx.nd.array(head if head is not None else np.ones(out.shape), dtype=out.dtype)
    return [g.asnumpy() for g in autograd.grad(out, xs, head_grads=head, create_graph=create_graph)]


def _weighted(outs):
    """sum_k (k + 1) * sum(outs[k] ** 2): every output (the statistics too) gets a gradient."""
    return sum((o * o).sum() * (k + 1) for k, o in enumerate(outs))


CASES = {
    "LayerNorm": (lambda x, g, b: mx.nd.LayerNorm(x, g, b, axis=-1), ((4, 6), (6,), (6,)), "_layernorm_bwd"),
    "LayerNorm_axis1": (lambda x, g, b: mx.nd.LayerNorm(x, g, b, axis=1), ((2, 5, 3), (5,), (5,)),
                        "_layernorm_bwd"),
    "LayerNorm_stats": (lambda x, g, b: _weighted(mx.nd.LayerNorm(x, g, b, output_mean_var=True)) * x,
                        ((3, 4), (4,), (4,)), "_layernorm_bwd"),
    "BatchNorm": (lambda x, g, b: mx.nd.BatchNorm(x, g, b, mx.nd.zeros(g.shape, dtype=g.dtype), mx.nd.ones(g.shape, dtype=g.dtype),
                                                  fix_gamma=False), ((4, 3, 2, 2), (3,), (3,)), "_batchnorm_bwd"),
    "BatchNorm_stats": (lambda x, g, b: _weighted(mx.nd.BatchNorm(
        x, g, b, mx.nd.zeros(g.shape, dtype=g.dtype), mx.nd.ones(g.shape, dtype=g.dtype), fix_gamma=False, output_mean_var=True, axis=-1))
        * x, ((5, 3), (3,), (3,)), "_batchnorm_bwd"),
    "BatchNorm_global": (lambda x, g, b: mx.nd.BatchNorm(x, g, b, mx.nd.ones(g.shape, dtype=g.dtype) * 0.3,
                                                         mx.nd.ones(g.shape, dtype=g.dtype) * 1.7, fix_gamma=False,
                                                         use_global_stats=True),
                         ((4, 3, 2), (3,), (3,)), "_batchnorm_global_bwd"),
    "softmax": (lambda x: mx.nd.softmax(x, axis=0, temperature=1.5), ((4, 5),), "_softmax_bwd"),
    "softmin": (lambda x: mx.nd.softmin(x), ((3, 5),), "_softmax_bwd"),
    "log_softmax": (lambda x: mx.nd.log_softmax(x, axis=1), ((2, 4, 3),), "_log_softmax_bwd"),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CASES))
def test_fused_gradient_equals_composite(name, dtype, calls):
    fn, shapes, fused = CASES[name]
    rng = np.random.default_rng(1)
    arrays = [rng.uniform(0.5, 2, s).astype(dtype) for s in shapes]
    out_shape = fn(*[mx.nd.array(a, dtype=dtype) for a in arrays]).shape
    head = rng.standard_normal(out_shape)
    fast = _grads(fn, arrays, False, head)
    assert calls[fused] == 1
    composite = _grads(fn, arrays, True, head)
    assert calls[fused] == 1, "create_graph=True must run the composite rule"
    for f, c in zip(fast, composite):
        np.testing.assert_allclose(f, c, rtol=1e-4 if dtype == "float32" else 1e-10, atol=1e-5 if
                                   dtype == "float32" else 1e-12)


# ---------------------------------------------------------------------------------------------------------
# 3. eager vs hybridized, outputs and gradients
class _Net(gluon.HybridBlock):
    def __init__(self, norm, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = gluon.nn.Dense(12, flatten=False, in_units=5)
            self.norm = norm

    def hybrid_forward(self, F, x):
        y = self.norm(self.dense(x))
        return F.log_softmax(y, axis=-1) + F.softmax(y, axis=1)


@pytest.mark.parametrize("make, shape", [
    (lambda: gluon.nn.LayerNorm(in_channels=12), (3, 4, 5)),
    (lambda: gluon.nn.LayerNorm(axis=1, in_channels=4), (3, 4, 5)),
    (lambda: gluon.nn.BatchNorm(axis=-1, in_channels=12), (3, 4, 5)),
    (lambda: gluon.nn.BatchNorm(axis=1, in_channels=4, center=True, scale=True), (3, 4, 5)),
])
@pytest.mark.parametrize("train", [True, False])
def test_hybridized_equals_eager(make, shape, train, calls):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(np.float32)
    head = rng.standard_normal(shape[:-1] + (12,)).astype(np.float32)
    results = []
    for hybrid in (False, True):
        mx.random.seed(0)
        net = _Net(make())
        net.initialize(mx.init.Xavier(rnd_type="gaussian", magnitude=2), force_reinit=True)
        prng = np.random.default_rng(5)                      # the same non-trivial gamma / beta / statistics
        for p in net.norm.collect_params().values():
            p.set_data(mx.nd.array(prng.uniform(0.5, 1.5, p.shape) if p.name.endswith(("gamma", "var"))
                                   else prng.uniform(-0.5, 0.5, p.shape)))
        if hybrid:
            net.hybridize()
        xin = mx.nd.array(x)
        xin.attach_grad()
        params = {k: p for k, p in net.collect_params().items() if p.grad_req != "null"}
        with autograd.record(train_mode=train):
            out = net(xin)
        out.backward(mx.nd.array(head))
        results.append([out.asnumpy(), xin.grad.asnumpy()] + [p.grad().asnumpy() for p in params.values()])
    for e, h in zip(*results):
        np.testing.assert_allclose(h, e, rtol=1e-4, atol=1e-5)
    # the norm, softmax and log_softmax backward, eager and in the compiled backward graph
    assert sum(calls.values()) == 2 * 3, calls


# ---------------------------------------------------------------------------------------------------------
# 4. second order
def _first_order_dot(fn, arrays, probe, head):
    grads = _grads(fn, arrays, False, head)
    return sum(float((g * p).sum()) for g, p in zip(grads, probe))


@pytest.mark.parametrize("name", ["LayerNorm", "LayerNorm_axis1", "BatchNorm", "BatchNorm_global", "softmax",
                                  "log_softmax"])
def test_second_order_equals_finite_differences_of_fused_first_order(name):
    fn, shapes, _ = CASES[name]
    rng = np.random.default_rng(3)
    arrays = [rng.uniform(0.5, 2, s) for s in shapes]
    out_shape = fn(*[mx.nd.array(a, dtype="float64") for a in arrays]).shape
    head = rng.standard_normal(out_shape)
    probe = [rng.uniform(-1, 1, s) for s in shapes]
    xs = [mx.nd.array(a, dtype="float64") for a in arrays]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        out = fn(*xs)
        grads = autograd.grad(out, xs, head_grads=mx.nd.array(head, dtype="float64"), create_graph=True)
        total = sum((g * mx.nd.array(p, dtype="float64")).sum() for g, p in zip(grads, probe))
    total.backward()
    eps = 1e-6
    for k, a in enumerate(arrays):
        num = np.zeros(a.shape)
        for j in range(a.size):
            orig = a.flat[j]
            a.flat[j] = orig + eps
            plus = _first_order_dot(fn, arrays, probe, head)
            a.flat[j] = orig - eps
            minus = _first_order_dot(fn, arrays, probe, head)
            a.flat[j] = orig
            num.flat[j] = (plus - minus) / (2 * eps)
        np.testing.assert_allclose(xs[k].grad.asnumpy(), num, rtol=1e-4, atol=1e-6, err_msg=f"{name} input {k}")


def test_second_order_through_a_hybridized_block():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 5)).astype(np.float64)
    results = []
    for hybrid in (False, True):
        mx.random.seed(0)
        net = _Net(gluon.nn.LayerNorm(in_channels=12))
        net.initialize(mx.init.Xavier(), force_reinit=True)
        net.cast("float64")
        if hybrid:
            net.hybridize()
        xin = mx.nd.array(x, dtype="float64")
        xin.attach_grad()
        with autograd.record():
            out = net(xin)
            (gx,) = autograd.grad((out * out).sum(), [xin], create_graph=True)
            total = (gx * gx).sum()
        total.backward()
        results.append((gx.asnumpy(), xin.grad.asnumpy()))
    for e, h in zip(*results):
        np.testing.assert_allclose(h, e, rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------------------------------------------------
def test_fused_ops_reject_mismatched_shapes():
    x = mx.nd.ones((2, 3))
    with pytest.raises(MXNetError, match=r"_layernorm_bwd: gamma shape \(2,\) does not match \(3,\)"):
        mx.nd._layernorm_bwd(x, x, mx.nd.ones((2,)), mx.nd.ones((2, 1)), mx.nd.ones((2, 1)))
    with pytest.raises(MXNetError, match=r"_batchnorm_bwd: gradient shape \(2, 2\) does not match"):
        mx.nd._batchnorm_bwd(x, mx.nd.ones((2, 2)), mx.nd.ones((3,)), mx.nd.ones((3,)), mx.nd.ones((3,)))
    with pytest.raises(MXNetError, match=r"_softmax_bwd: gradient shape"):
        mx.nd._softmax_bwd(x, mx.nd.ones((3, 2)))
