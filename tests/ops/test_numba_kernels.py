"""The Numba fast paths of the CPU kernels (mixnet/ops/_numba_kernels.py, used by _conv_fast.py, nn_act.py and the
SGD optimizer when mixnet/ops/_fastpath.py allows) give the same answers as the generic xp code they stand in for.

The generated op tests (test_generated.py) already run the fast paths against numpy references and finite
differences, since they are on by default; here each path is compared with the generic one (`_fastpath.ENABLED =
False`) on the geometry the generated cases do not reach: strides, dilations, padding, groups, 1-D, several sample
blocks, non-contiguous inputs, float64, ties, NaN and infinities.
"""
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

from mixnet.ops import _conv_fast, _fastpath, nn_act, nn_conv

from .recipes import fast_and_generic as _both


@pytest.fixture(autouse=True)
def _loaded():
    """The loops loaded, as after a first convolution: ReLU's backward only uses them once loaded."""
    assert _fastpath.numba_kernels(np, np.zeros(1, np.float32)) is not None


def _same(fast, slow, rtol=1e-5, atol=1e-5):
    assert fast.shape == slow.shape and fast.dtype == slow.dtype, (fast.shape, fast.dtype, slow.shape, slow.dtype)
    np.testing.assert_allclose(fast, slow, rtol=rtol, atol=atol)


# (data shape, weight shape, stride, dilate, pad, groups)
CONV_CASES = [
    ((2, 4, 9, 8), (6, 2, 3, 2), (2, 1), (1, 2), (1, 2), 2),
    ((3, 2, 7), (4, 2, 3), (2,), (2,), (3,), 1),
    ((1, 3, 5, 5), (3, 1, 3, 3), (1, 1), (1, 1), (0, 0), 3),
    ((2, 1, 6, 6), (2, 1, 5, 5), (3, 3), (1, 1), (2, 2), 1),
    ((5, 3, 8, 7), (4, 3, 2, 3), (1, 2), (2, 1), (0, 1), 1),
    ((2, 2, 4, 4), (2, 2, 1, 1), (2, 2), (1, 1), (0, 0), 1),
    ((3, 16, 6, 5), (6, 8, 3, 3), (1, 1), (1, 1), (1, 1), 2),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block", [None, 7])
@pytest.mark.parametrize("f_last", [False, True])
@pytest.mark.parametrize("case", CONV_CASES, ids=[str(c[0]) + str(c[1]) for c in CONV_CASES])
def test_convolution_kernels_match_generic_path(case, f_last, block, dtype, monkeypatch):
    xs, ws, stride, dilate, pad, group = case
    monkeypatch.setattr(_conv_fast, "_F_LAST_MIN_K", 1 if f_last else 10 ** 9)      # both GEMM orientations
    if block is not None:            # a few columns per block: several sample blocks, the last one partial
        monkeypatch.setattr(_conv_fast, "_BLOCK", block)
        monkeypatch.setattr(_conv_fast, "_BLOCK_COLUMNS", 1)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype)
    geo = (ws[2:], stride, dilate, pad, group)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    y, y_slow = _both(lambda: nn_conv.conv_forward(np, x, w, *geo, bias=b))
    _same(y, y_slow, tol, tol)
    g = rng.standard_normal(y.shape).astype(dtype)
    _same(*_both(lambda: nn_conv.conv_data_grad(np, g, w, xs[2:], *geo)), tol, tol)
    _same(*_both(lambda: nn_conv.conv_weight_grad(np, x, g, *geo)), tol, 10 * tol)


@st.composite
def conv_geometry(draw):
    nd = draw(st.integers(1, 2))
    group = draw(st.integers(1, 2))
    c, f = group * draw(st.integers(1, 3)), group * draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dilate = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    pad = tuple(draw(st.integers(0, 2)) for _ in range(nd))
    spatial = tuple(max(d * (k - 1) + 1 - 2 * p, 1) + draw(st.integers(0, 4))
                    for k, d, p in zip(kernel, dilate, pad))
    return (draw(st.integers(1, 3)), c) + spatial, (f, c // group) + kernel, stride, dilate, pad, group


@given(conv_geometry(), st.sampled_from([np.float32, np.float64]), st.booleans())
def test_convolution_fast_path_on_drawn_geometry(case, dtype, f_last):
    xs, ws, stride, dilate, pad, group = case
    old = _conv_fast._F_LAST_MIN_K
    _conv_fast._F_LAST_MIN_K = 1 if f_last else 10 ** 9
    try:
        rng = np.random.default_rng(5)
        x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
        geo = (ws[2:], stride, dilate, pad, group)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        y, y_slow = _both(lambda: nn_conv.conv_forward(np, x, w, *geo))
        _same(y, y_slow, tol, tol)
        g = rng.standard_normal(y.shape).astype(dtype)
        _same(*_both(lambda: nn_conv.conv_data_grad(np, g, w, xs[2:], *geo)), tol, tol)
        _same(*_both(lambda: nn_conv.conv_weight_grad(np, x, g, *geo)), tol, 10 * tol)
    finally:
        _conv_fast._F_LAST_MIN_K = old


def test_convolution_fast_path_takes_non_contiguous_inputs():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 8, 6, 2)).astype(np.float32).transpose(0, 3, 1, 2)      # (3, 2, 8, 6), strided
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32).transpose(0, 3, 1, 2)      # (4, 2, 3, 3)
    geo = ((3, 3), (2, 1), (1, 1), (1, 0), 1)
    y, y_slow = _both(lambda: nn_conv.conv_forward(np, x, w, *geo))
    _same(y, y_slow)
    g = rng.standard_normal(y.shape[::-1]).astype(np.float32).T                        # reversed strides
    _same(*_both(lambda: nn_conv.conv_data_grad(np, g, w, x.shape[2:], *geo)))
    _same(*_both(lambda: nn_conv.conv_weight_grad(np, x, g, *geo)), atol=1e-4)


@pytest.mark.parametrize("f_last", [False, True])
def test_convolution_fast_path_empty_batch(f_last, monkeypatch):
    monkeypatch.setattr(_conv_fast, "_F_LAST_MIN_K", 1 if f_last else 10 ** 9)
    x, w = np.ones((0, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32)
    geo = ((3, 3), (), (), (), 1)
    y, y_slow = _both(lambda: nn_conv.conv_forward(np, x, w, *geo))
    _same(y, y_slow)
    g = np.ones((0, 3, 3, 3), np.float32)
    _same(*_both(lambda: nn_conv.conv_data_grad(np, g, w, (5, 5), *geo)))
    dw, dw_slow = _both(lambda: nn_conv.conv_weight_grad(np, x, g, *geo))
    _same(dw, dw_slow)
    assert not dw.any()


def test_fast_path_only_for_numpy_floats_of_one_dtype():
    f32, f64 = np.zeros(2, np.float32), np.zeros(2, np.float64)
    assert _fastpath.numba_kernels(np, f32, f32) is not None
    assert _fastpath.numba_kernels(np, f64) is not None
    assert _fastpath.numba_kernels(np, f32, f64) is None
    assert _fastpath.numba_kernels(np, np.zeros(2, np.int32)) is None
    assert _fastpath.numba_kernels(object(), f32) is None          # another array module (cupy)


def test_light_kernels_do_not_load_numba(monkeypatch):
    f32 = np.zeros(2, np.float32)
    monkeypatch.setattr(_fastpath, "_module", None)
    assert _fastpath.numba_kernels(np, f32, load=False) is None
    assert _fastpath.numba_kernels(np, f32) is not None                # a heavy kernel loads them
    assert _fastpath.numba_kernels(np, f32, load=False) is not None    # then the light ones use them too


def test_integer_convolution_still_uses_the_generic_path():
    x = np.arange(2 * 2 * 5 * 5, dtype=np.int32).reshape(2, 2, 5, 5)
    w = np.ones((3, 2, 2, 2), np.int32)
    y = nn_conv.conv_forward(np, x, w, (2, 2), (), (), (), 1)
    ref = nn_conv._ref_conv(x, w, (2, 2))
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, ref)


_POOL = dict(kernel=(), pool_type="max", global_pool=False, pooling_convention="valid", stride=(), pad=(),
             p_value=None, count_include_pad=None, layout=None, cudnn_off=False)
POOL_CASES = [
    ((2, 3, 6, 6), dict(kernel=(2, 2), stride=(2, 2))),
    ((2, 3, 7, 5), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1))),
    ((1, 2, 6, 5), dict(kernel=(3, 2), stride=(2, 2), pooling_convention="full")),
    ((1, 2, 7), dict(kernel=(3,), stride=(2,), pooling_convention="same")),
    ((2, 3, 4, 3), dict(global_pool=True)),
    ((1, 2, 5, 5), dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1))),
]


def _pool_data(kind, shape, rng):
    if kind == "normal":
        return rng.standard_normal(shape)
    x = rng.integers(0, 3, shape).astype(np.float64)         # many ties: the first maximum must win
    if kind == "nan":
        x.reshape(-1)[rng.integers(0, x.size, 3)] = np.nan
    elif kind == "-inf":                                      # windows of -inf next to -inf padding
        x[:] = -np.inf
        x.reshape(-1)[rng.integers(0, x.size, 2)] = 1
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["normal", "ties", "nan", "-inf"])
@pytest.mark.parametrize("case", POOL_CASES, ids=[str(c[0]) + str(sorted(c[1])) for c in POOL_CASES])
def test_max_pool_backward_matches_generic_path(case, kind, dtype):
    shape, attrs = case
    attrs = dict(_POOL, **attrs)
    rng = np.random.default_rng(3)
    x = _pool_data(kind, shape, rng).astype(dtype)
    y = nn_conv._k_pooling(np, x, **attrs)
    g = rng.standard_normal(y.shape).astype(dtype)
    fast, slow = _both(lambda: nn_conv._k_pool_max_bwd(np, g, x, **attrs))
    _same(fast, slow, 1e-6, 1e-6)          # overlapping windows add in another order: rounding only


def test_max_pool_backward_non_contiguous():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 4, 3, 2)).astype(np.float32).transpose(3, 2, 0, 1)      # (2, 3, 4, 4)
    g = rng.standard_normal((2, 2, 3, 2)).astype(np.float32).transpose(0, 2, 3, 1)      # (2, 3, 2, 2)
    attrs = dict(_POOL, kernel=(2, 2), stride=(2, 2))
    fast, slow = _both(lambda: nn_conv._k_pool_max_bwd(np, g, x, **attrs))
    np.testing.assert_array_equal(fast, slow)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_backward_matches_generic_path(dtype):
    g = np.array([[1.5, -2.0, np.inf, np.nan, -np.inf, 3.0], [0.5, -1.0, 2.0, np.nan, 1.0, -0.0]], dtype)
    x = np.array([[1.0, -1.0, -1.0, 2.0, 0.0, np.nan], [0.0, 2.0, np.inf, -1.0, -np.inf, 1.0]], dtype)
    with np.errstate(invalid="ignore"):                     # inf * 0 on the generic path
        fast, slow = _both(lambda: nn_act._k_relu_bwd(np, g, x))
    assert fast.dtype == slow.dtype == dtype
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(np.signbit(fast), np.signbit(slow))           # -2 * 0 is -0 on both paths
    with np.errstate(invalid="ignore"):
        fast, slow = _both(lambda: nn_act._k_relu_bwd(np, g.T, x.T))             # non-contiguous
    np.testing.assert_array_equal(fast, slow)


def test_workspace_is_reused_and_bounded(monkeypatch):
    a = _fastpath.workspace("test-slot", (4, 8), np.float32)
    b = _fastpath.workspace("test-slot", (2, 3), np.float64)
    assert a.flags.c_contiguous and b.flags.c_contiguous and b.shape == (2, 3) and b.dtype == np.float64
    assert np.shares_memory(a, b)                                 # smaller requests reuse the buffer
    c = _fastpath.workspace("test-slot", (100,), np.float64)
    assert not np.shares_memory(a, c) and c.shape == (100,)       # a larger one replaces it
    monkeypatch.setattr(_fastpath, "WORKSPACE_LIMIT", 64)
    d = _fastpath.workspace("test-slot", (100,), np.float64)
    assert not np.shares_memory(c, d)                             # above the limit: a fresh array, not kept
    assert not np.shares_memory(_fastpath.workspace("test-slot", (4,), np.float64), d)


def test_import_mixnet_does_not_import_numba():
    code = "import sys, mixnet; print('numba' in sys.modules)"
    root = pathlib.Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root).stdout
    assert out.strip() == "False"
