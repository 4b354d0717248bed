"""The convolution and pooling kernels write their results straight into an out= buffer (writes_out: planned
buffers under hybridize(static_alloc=True), a parameter's gradient buffer in a compiled backward).

test_writes_out.py checks that every writes_out op gives the same values with a buffer as without; here the buffer
must be written in place: the very buffer comes back, and the call allocates no result (tracemalloc: the peak with
the buffer is at least 0.9 result sizes below the peak without; on the Numba fast path, whose temporaries live in
workspaces, the peak with the buffer is below half a result; the generic forward's GEMM temporary holds at most
4096 output positions). Both the fast path and the generic one (`_fastpath.ENABLED = False`), float32 and
float64, groups, strides, dilations, padding, 1-D/2-D/3-D, both GEMM orientations and several sample blocks. A
buffer the kernels cannot write directly (another dtype, not C-contiguous, overlapping an input) still gets the
right values, by a copy.
"""
import tracemalloc

import numpy as np
import pytest

from mixnet.ops import _conv_fast, _fastpath, nn_conv, registry

DTYPES = [np.float32, np.float64]


@pytest.fixture(autouse=True)
def _loaded():
    """The Numba loops of both dtypes loaded (a first call may only start loading them in the background)."""
    for dtype in DTYPES:
        _fastpath.numba_kernels(np, np.zeros(1, dtype))
    _fastpath.wait_compiled()
    for dtype in DTYPES:
        assert _fastpath.numba_kernels(np, np.zeros(1, dtype)) is not None


@pytest.fixture(params=["fast", "generic"])
def path(request, monkeypatch):
    monkeypatch.setattr(_fastpath, "ENABLED", request.param == "fast")
    return request.param



# (data shape, weight shape, stride, dilate, pad, groups)
GEOMETRY = [
    ((3, 4, 9, 8), (6, 2, 3, 2), (2, 1), (1, 2), (1, 2), 2),
    ((2, 2, 11), (4, 2, 3), (2,), (2,), (3,), 1),
    ((2, 3, 6, 5), (3, 1, 3, 3), (1, 1), (1, 1), (1, 1), 3),
    ((4, 16, 6, 5), (6, 8, 3, 3), (1, 2), (1, 1), (1, 0), 2),
    ((2, 1, 7, 7), (2, 1, 5, 5), (3, 3), (1, 1), (2, 2), 1),
]
GEO_IDS = [f"{c[0]}{c[1]}s{c[2]}d{c[3]}p{c[4]}g{c[5]}" for c in GEOMETRY]


def _nan(shape, dtype):
    return np.full(shape, np.nan, dtype)


def _conv_calls(case, dtype, bias=True):
    """{name: (call taking out=, result shape)} for the three convolution kernels of one geometry."""
    xs, ws, stride, dilate, pad, group = case
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype) if bias else None
    geo = (ws[2:], stride, dilate, pad, group)
    y = nn_conv.conv_forward(np, x, w, *geo, bias=b)
    g = rng.standard_normal(y.shape).astype(dtype)
    return {
        "forward": (lambda out=None: nn_conv.conv_forward(np, x, w, *geo, bias=b, dest=out), y.shape),
        "data_grad": (lambda out=None: nn_conv.conv_data_grad(np, g, w, xs[2:], *geo, dest=out), xs),
        "weight_grad": (lambda out=None: nn_conv.conv_weight_grad(np, x, g, *geo, dest=out), ws),
    }


def _check_in_place(call, shape, dtype):
    fresh = call()
    buf = _nan(shape, dtype)
    got = call(buf)
    assert got is buf, "the result is not the given buffer"
    np.testing.assert_array_equal(buf, fresh)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("f_last", [False, True])
@pytest.mark.parametrize("case", GEOMETRY, ids=GEO_IDS)
def test_convolutions_fill_the_given_buffer(case, f_last, bias, dtype, path, monkeypatch):
    monkeypatch.setattr(_conv_fast, "_F_LAST_MIN_K", 1 if f_last else 10 ** 9)
    for name, (call, shape) in _conv_calls(case, dtype, bias).items():
        _check_in_place(call, shape, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("f_last", [False, True])
def test_several_sample_blocks_and_one_sample_blocks(f_last, dtype, monkeypatch):
    """Blocks of one sample (where the forward GEMM writes the result's rows itself) and of a few samples."""
    monkeypatch.setattr(_conv_fast, "_F_LAST_MIN_K", 1 if f_last else 10 ** 9)
    monkeypatch.setattr(_conv_fast, "_BLOCK_COLUMNS", 1)
    for block in (1, 300):
        monkeypatch.setattr(_conv_fast, "_BLOCK", block)
        for case in GEOMETRY[:2]:
            for name, (call, shape) in _conv_calls(case, dtype).items():
                _check_in_place(call, shape, dtype)
                _fastpath.ENABLED = False
                try:
                    slow = call()
                finally:
                    _fastpath.ENABLED = True
                tol = 1e-4 if dtype == np.float32 else 1e-11
                np.testing.assert_allclose(call(_nan(shape, dtype)), slow, rtol=tol, atol=tol, err_msg=name)


@pytest.mark.parametrize("dtype", DTYPES)
def test_3d_convolutions_fill_the_given_buffer(dtype):
    case = ((2, 4, 5, 6, 5), (4, 2, 2, 3, 2), (2, 1, 1), (1, 2, 1), (1, 1, 0), 2)
    for name, (call, shape) in _conv_calls(case, dtype).items():
        _check_in_place(call, shape, dtype)


def test_an_empty_batch_fills_the_weight_gradient_buffer(path):
    x, g = np.ones((0, 2, 5, 5), np.float32), np.ones((0, 3, 3, 3), np.float32)
    buf = _nan((3, 2, 3, 3), np.float32)
    assert nn_conv.conv_weight_grad(np, x, g, (3, 3), (), (), (), 1, dest=buf) is buf
    assert not buf.any()


# ---------------------------------------------------------------------------------------------------------
# no allocation of the result's size
def _peak(fn):
    """Peak traced bytes of one call of fn, after a first call (workspaces, Numba dispatch) outside the trace."""
    fn()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _check_no_result_allocation(call, shape, dtype, path, saved=0.9):
    buf = _nan(shape, dtype)
    nbytes = buf.nbytes
    with_out, fresh = _peak(lambda: call(buf)), _peak(call)
    assert with_out + saved * nbytes <= fresh, (with_out, fresh, nbytes)
    if path == "fast":               # the fast paths' temporaries live in workspaces kept between calls
        assert with_out < nbytes / 2, (with_out, nbytes)


# Results of 64 KiB and more (float32; the forward and data gradient 192 KiB and more), so that neither the
# interpreter's small allocations nor numpy's iterator buffers (~64 KiB for the forward's transposing bias add)
# matter. No padding: the generic im2col's padded copy of the input would set the peak instead of the result
# (the in-place tests above cover padding).
MEMORY_CASES = [
    ((4, 32, 26, 22), (64, 16, 3, 3), (1, 1), (1, 1), (0, 0), 2),
    ((4, 32, 30, 32), (48, 32, 3, 3), (2, 1), (1, 2), (0, 0), 1),
    ((4, 32, 600), (64, 32, 3), (1,), (2,), (0,), 1),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("f_last", [False, True])
@pytest.mark.parametrize("case", MEMORY_CASES, ids=[str(c[0]) + str(c[1]) for c in MEMORY_CASES])
def test_convolutions_allocate_no_result_with_a_buffer(case, f_last, dtype, path, monkeypatch):
    monkeypatch.setattr(_conv_fast, "_F_LAST_MIN_K", 1 if f_last else 10 ** 9)
    for name, (call, shape) in _conv_calls(case, dtype).items():
        _check_no_result_allocation(call, shape, dtype, path)


_POOL = dict(kernel=(), pool_type="max", global_pool=False, pooling_convention="valid", stride=(), pad=(),
             p_value=None, count_include_pad=None, layout=None, cudnn_off=False)
POOL_CASES = [
    ((4, 16, 32, 32), dict(kernel=(2, 2), stride=(2, 2))),                          # exact tiling
    ((4, 16, 33, 33), dict(kernel=(3, 3), stride=(3, 3))),
    ((4, 16, 31, 31), dict(kernel=(3, 3), stride=(2, 2))),                          # overlapping windows
    ((8, 16, 1025), dict(kernel=(3,), stride=(2,))),
    ((4, 16, 31, 29), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1))),
    ((4, 16, 30, 30), dict(kernel=(3, 2), stride=(2, 2), pooling_convention="full")),
    ((8, 16, 513), dict(kernel=(3,), stride=(2,), pooling_convention="same")),
]


def _pool_call(case, dtype, nan=False):
    shape, attrs = case
    attrs = dict(_POOL, **attrs)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(dtype)
    if nan:                                            # the generic path's argmax route
        x.reshape(-1)[::97] = np.nan
    g = rng.standard_normal(nn_conv._k_pooling(np, x, **attrs).shape).astype(dtype)
    return lambda out=None: nn_conv._k_pool_max_bwd(np, g, x, out=out, **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", POOL_CASES, ids=[str(c[0]) + str(sorted(c[1].items())) for c in POOL_CASES])
def test_max_pool_backward_writes_the_buffer(case, dtype, path):
    call = _pool_call(case, dtype)
    _check_in_place(call, case[0], dtype)
    _check_in_place(_pool_call(case, dtype, nan=True), case[0], dtype)
    padded = case[1].get("pad") or case[1].get("pooling_convention")
    if path == "fast":
        _check_no_result_allocation(call, case[0], dtype, path)
    elif not padded:        # the generic path's padded copy of the input sets its peak when there is padding;
        _check_no_result_allocation(call, case[0], dtype, path, saved=0.75)     # its hit masks, in part


@pytest.mark.parametrize("pool_type", ["avg", "sum"])
def test_average_pooling_backward_writes_the_buffer(pool_type, path):
    op = registry.get("_pool_lin_bwd")
    attrs = op.parse({"shape": (31, 29), "kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": pool_type})
    g = np.random.default_rng(5).standard_normal((4, 16, 16, 15)).astype(np.float32)
    call = lambda out=None: op.kernel(np, g, out=out, **attrs)                      # noqa: E731
    _check_in_place(call, (4, 16, 31, 29), np.float32)
    _check_no_result_allocation(call, (4, 16, 31, 29), np.float32, "generic")


# ---------------------------------------------------------------------------------------------------------
# the op kernels and buffers they cannot write directly
def test_weight_gradient_lands_in_the_parameter_gradient_buffer(path):
    """A compiled backward hands the parameter's gradient array to _conv_weight_grad as out=."""
    op = registry.get("_conv_weight_grad")
    attrs = op.parse({"kernel": (3, 3), "stride": (1, 1), "pad": (1, 1), "num_group": 1})
    rng = np.random.default_rng(6)
    x, g = rng.standard_normal((4, 8, 9, 9)).astype(np.float32), rng.standard_normal((4, 16, 9, 9)).astype(np.float32)
    grad_buffer = _nan((16, 8, 3, 3), np.float32)
    address = grad_buffer.__array_interface__["data"][0]
    assert op.kernel(np, x, g, out=grad_buffer, **attrs) is grad_buffer
    assert grad_buffer.__array_interface__["data"][0] == address
    np.testing.assert_array_equal(grad_buffer, op.kernel(np, x, g, **attrs))


@pytest.mark.parametrize("name", ["Convolution", "_conv", "_conv_data_grad", "_conv_weight_grad", "Deconvolution",
                                  "_pool_max_bwd"])
def test_buffers_the_kernels_cannot_write_directly_get_a_copy(name, path):
    """Another dtype and a transposed buffer: the fresh result is copied in. (test_writes_out.py covers matching
    buffers for every case of the registry.)"""
    op = registry.get(name)
    for shapes, attrs in op.test.cases:
        rng = np.random.default_rng(7)
        arrays = [rng.uniform(0.2, 2.0, s).astype(np.float32) for s in shapes]
        parsed = op.parse(attrs)
        want = op.kernel(np, *arrays, **parsed)
        for buf in (_nan(want.shape, np.float64), _nan(want.shape[::-1], np.float32).T):
            assert op.kernel(np, *arrays, out=buf, **parsed) is buf
            np.testing.assert_allclose(buf, want, rtol=1e-6, err_msg=f"{name} {attrs}")


def test_a_buffer_overlapping_an_input_gets_a_copy(path):
    """The kernels read their inputs while they write: a buffer that is an input is written after the result is
    complete, with the right values."""
    shape, attrs = POOL_CASES[1]
    rng = np.random.default_rng(8)
    data = rng.standard_normal(shape).astype(np.float32)
    attrs = dict(_POOL, **attrs)
    g = rng.standard_normal(nn_conv._k_pooling(np, data, **attrs).shape).astype(np.float32)
    want = nn_conv._k_pool_max_bwd(np, g, data.copy(), **attrs)
    got = nn_conv._k_pool_max_bwd(np, g, data, out=data, **attrs)
    assert got is data
    np.testing.assert_array_equal(data, want)
    xs, ws = (2, 4, 6, 6), (4, 4, 3, 3)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    want = nn_conv.conv_data_grad(np, x, w, (6, 6), (3, 3), (), (), (1, 1), 1)
    got = nn_conv._k_conv_dgrad(np, x, w, kernel=(3, 3), stride=(), dilate=(), pad=(1, 1), num_group=1,
                                shape=(6, 6), out=x)
    assert got is x
    np.testing.assert_allclose(x, want, rtol=1e-6)
