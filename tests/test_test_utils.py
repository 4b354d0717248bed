import os
import sys

import numpy as np
import pytest

import mixnet as mx
from mixnet import test_utils as tu


def test_assert_almost_equal_passes_within_default_tolerance():
    tu.assert_almost_equal(np.ones(3, np.float32), np.ones(3, np.float32) + 5e-4)     # float32: atol 1e-3
    tu.assert_almost_equal(mx.nd.ones((2, 2)), np.ones((2, 2), np.float32))
    tu.assert_almost_equal(np.array([1.0, np.nan]), np.array([1.0, np.nan]), equal_nan=True)
    tu.assert_almost_equal(np.ones((2, 3)), np.ones(3))                               # broadcasting
    # infinities and float16 values whose difference overflows compare equal as numpy.isclose says
    tu.assert_almost_equal(np.array([np.inf, -np.inf, 1.0], np.float32), np.array([np.inf, -np.inf, 1.0]))
    tu.assert_almost_equal(np.array([6e4, -6e4], np.float16), np.array([6e4, -6e4], np.float16))
    assert not tu.almost_equal(np.array([6e4], np.float16), np.array([-6e4], np.float16))


def test_assert_almost_equal_fails_with_location_in_message():
    a = np.zeros((2, 3), np.float32)
    b = a.copy()
    b[1, 2] = 1.0
    b[0, 0] = 0.01
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(a, b, names=("mine", "ref"))
    msg = str(info.value)
    assert "(1, 2)" in msg and "mine" in msg and "ref" in msg and "rtol" in msg
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.ones(3), np.ones(3) + 1e-4)          # float64: rtol 1e-5, atol 1e-20
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([np.nan]), np.array([np.nan]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.ones((2, 3)), np.ones(3), use_broadcast=False)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([1, 2], np.int32), np.array([1, 3], np.int32))


def test_tolerance_defaults():
    assert tu.get_tols(np.ones(1, np.float16), np.ones(1, np.float32), None, None) == (1e-2, 1e-1)
    assert tu.get_tols(np.ones(1), np.ones(1), None, None) == (1e-5, 1e-20)
    assert tu.get_tols(np.ones(1, np.int32), np.ones(1, np.int32), None, None) == (0, 0)
    assert tu.almost_equal(np.ones(2, np.float16), np.ones(2, np.float16) + 0.05)
    assert not tu.almost_equal(np.ones(2), np.ones(3))


def test_same_and_assert_exception():
    assert tu.same(mx.nd.array([1, 2]), np.array([1, 2], np.float32))
    assert not tu.same(np.array([1, 2]), np.array([1, 3]))
    tu.assert_exception(lambda x: 1 / x, ZeroDivisionError, 0)
    with pytest.raises(AssertionError):
        tu.assert_exception(lambda: None, ValueError)


def test_random_helpers():
    x = tu.random_arrays((2, 3))
    assert x.shape == (2, 3) and x.dtype == np.float32
    xs = tu.random_arrays((2,), ())
    assert xs[0].shape == (2,) and np.isscalar(xs[1])
    u = tu.random_uniform_arrays((3,), low=2, high=3)[0]
    assert np.all((u >= 2) & (u < 3))
    assert len(set(tu.random_sample(range(10), 4))) == 4
    arr = tu.rand_ndarray((3, 4), dtype="float64")
    assert arr.shape == (3, 4) and arr.dtype == np.float64
    csr = tu.rand_ndarray((4, 5), stype="csr", density=0.5)
    assert csr.stype == "csr" and len(csr.data) == 10 and np.all(csr.data.asnumpy() > 0)
    with pytest.raises(mx.MXNetError):
        tu.rand_ndarray((2, 2), stype="invalid")
    for _ in range(20):
        s = tu.rand_shape_nd(3, dim=4)
        assert len(s) == 3 and all(1 <= d <= 4 for d in s)
        assert all(1 <= d <= 10 for d in tu.rand_shape_2d()) and len(tu.rand_shape_3d()) == 3
        assert all(d >= 0 for d in tu.rand_shape_2d(allow_zero_size=True))


def test_np_reduce_and_effective_dtype():
    x = np.arange(24.0).reshape(2, 3, 4)
    assert np.array_equal(tu.np_reduce(x, (0, 2), True, np.sum), x.sum(axis=(0, 2), keepdims=True))
    assert np.array_equal(tu.np_reduce(x, None, False, np.max), x.max())
    assert tu.effective_dtype(mx.nd.ones((2,))) == np.float32


def test_environment_and_context():
    os.environ.pop("MIXNET_TU_TEST", None)
    with tu.environment("MIXNET_TU_TEST", "1"):
        assert os.environ["MIXNET_TU_TEST"] == "1"
        with tu.environment({"MIXNET_TU_TEST": None}):
            assert "MIXNET_TU_TEST" not in os.environ
        assert os.environ["MIXNET_TU_TEST"] == "1"
    assert "MIXNET_TU_TEST" not in os.environ
    assert tu.default_context() == mx.current_context()        # cpu(0), unless the suite runs on another device
    tu.set_default_context(mx.cpu(1))
    try:
        assert tu.default_context() == mx.cpu(1)
    finally:
        tu.set_default_context(None)


def test_use_np_and_discard_stderr():
    @tu.use_np
    def f():
        return 3
    assert f() == 3
    with tu.discard_stderr():
        sys.stderr.write("hidden\n")
        os.write(2, b"hidden too\n")


def test_check_numeric_gradient_passes():
    x = np.random.uniform(0.5, 2, (3, 4))
    tu.check_numeric_gradient(lambda a: mx.nd.exp(a) * a, [x])
    tu.check_numeric_gradient(lambda a, b: mx.nd.dot(a, b), [x, np.random.rand(4, 2)])
    tu.check_numeric_gradient(lambda lhs, rhs: lhs / rhs, {"lhs": x, "rhs": x + 1}, grad_nodes=["rhs"])
    tu.check_numeric_gradient(lambda a: (mx.nd.sin(a), a * a), [mx.nd.array(x)])


class _WrongSquare(mx.autograd.Function):
    def forward(self, x):
        self.save_for_backward(x)
        return x * x

    def backward(self, dy):
        x, = self.saved_tensors
        return dy * x          # wrong: should be 2 * x * dy


def test_check_numeric_gradient_fails_on_wrong_gradient():
    with pytest.raises(AssertionError, match="NUMERICAL_0"):
        tu.check_numeric_gradient(lambda a: _WrongSquare()(a), [np.random.uniform(0.5, 2, (3,))])


def test_check_numeric_gradient_rejects_non_callables():
    with pytest.raises(mx.MXNetError, match="callable"):
        tu.check_numeric_gradient("not a symbol", [np.ones(2)])


# ---------------------------------------------------------------------------------------------------------
# statistical checks of generators
def test_chi2_sf_matches_known_values():
    # P(X >= x) for chi-square: closed forms for 2 dof (exp(-x/2)) and tabulated critical values
    for x in (0.0, 0.5, 3.0, 40.0):
        assert tu.chi2_sf(x, 2) == pytest.approx(np.exp(-x / 2), rel=1e-12, abs=1e-300)
    assert tu.chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, rel=1e-9)
    assert tu.chi2_sf(9.487729036781154, 4) == pytest.approx(0.05, rel=1e-9)
    assert tu.chi2_sf(67.50480642, 50) == pytest.approx(0.05, rel=1e-6)


def _normal_ppf_buckets():
    # quartiles of N(0, 1)
    q = 0.6744897501960817
    return [(-np.inf, -q), (-q, 0.0), (0.0, q), (q, np.inf)], [0.25] * 4


def test_verify_generator_accepts_a_right_generator_and_rejects_a_wrong_one():
    rng = np.random.default_rng(0)
    buckets, probs = _normal_ppf_buckets()
    pvalues = tu.verify_generator(lambda n: rng.normal(size=n), buckets, probs, nsamples=20000, nrepeat=5)
    assert len(pvalues) == 5 and all(0 <= p <= 1 for p in pvalues)
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda n: rng.normal(0.1, 1.0, size=n), buckets, probs, nsamples=20000, nrepeat=5)
    with pytest.raises(AssertionError):            # samples outside every bucket count against the fit
        tu.verify_generator(lambda n: rng.normal(size=n), buckets[1:3], [0.5, 0.5], nsamples=20000, nrepeat=3)


def test_verify_generator_discrete_buckets():
    rng = np.random.default_rng(1)
    tu.verify_generator(lambda n: rng.integers(0, 3, size=n), [0, 1, 2], [1 / 3] * 3, nsamples=9000)
    with pytest.raises(AssertionError):
        tu.verify_generator(lambda n: rng.choice(3, size=n, p=[0.4, 0.3, 0.3]), [0, 1, 2], [1 / 3] * 3,
                            nsamples=9000)


def test_gen_buckets_probs_with_ppf_and_moment_checks():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda p: 2 * p - 1, 4)    # uniform(-1, 1)
    assert buckets == [(-1.0, -0.5), (-0.5, 0.0), (0.0, 0.5), (0.5, 1.0)] and probs == [0.25] * 4
    rng = np.random.default_rng(2)
    assert tu.mean_check(lambda n: rng.normal(size=n), 0.0, 1.0, nsamples=20000)
    assert not tu.mean_check(lambda n: rng.normal(0.5, 1.0, size=n), 0.0, 1.0, nsamples=20000)
    assert tu.var_check(lambda n: rng.normal(size=n), 1.0, nsamples=20000)
    with pytest.raises(mx.MXNetError, match="nbuckets"):
        tu.gen_buckets_probs_with_ppf(lambda p: p, 0)


def test_retry_reruns_assertion_failures_only():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) == 3
    flaky()
    assert len(calls) == 3


# ---------------------------------------------------------------------------------------------------------
# tolerances and small helpers
def test_default_tolerance_tables_and_dict_tolerances():
    assert tu.default_rtols()[np.dtype(np.float16)] == 1e-2 and tu.default_atols()[np.dtype(np.float64)] == 1e-20
    assert tu.default_rtols()[np.dtype(np.int32)] == 0
    eps = tu.default_numeric_eps()
    assert eps[np.dtype(np.float32)] == 2.0 ** -9 and eps[np.dtype(np.float64)] == 2.0 ** -14
    # a dict of dtype -> tolerance picks per dtype and falls back to the defaults
    rtol, atol = tu.get_tols(np.ones(1, np.float32), np.ones(1, np.float32), {np.float32: 0.5}, None)
    assert (rtol, atol) == (0.5, 1e-3)
    assert tu.get_tolerance(np.ones(1, np.float16), {np.float32: 0.5}, tu.default_rtols()) == 1e-2
    assert tu.get_rtol() == 1e-5 and tu.get_atol(0.3) == 0.3


def test_assert_almost_equal_with_err_tolerates_a_fraction():
    a = np.zeros(10, np.float32)
    b = a.copy()
    b[0] = 1.0                                       # 10% of the elements differ
    tu.assert_almost_equal_with_err(a, b, etol=0.15)
    with pytest.raises(AssertionError, match="error rate"):
        tu.assert_almost_equal_with_err(a, b, etol=0.05)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(a, b)        # no etol: every element must match


def test_sparse_helpers():
    rsp = tu.create_sparse_array_zd((5, 2), "row_sparse", 0.5, rsp_indices=[3, 1])
    assert rsp.stype == "row_sparse" and rsp.indices.asnumpy().tolist() == [1, 3]
    arr, (indptr, indices, data) = tu.rand_sparse_ndarray((3, 4), "csr", density=1)
    assert indptr.asnumpy().tolist() == [0, 4, 8, 12] and np.allclose(arr.asnumpy()[arr.asnumpy() != 0],
                                                                      data.asnumpy())
    with pytest.raises(mx.MXNetError, match="distribution"):
        tu.rand_sparse_ndarray((2, 2), "csr", distribution="powerlaw")


# ---------------------------------------------------------------------------------------------------------
# checking Symbols
_a, _b = mx.sym.Variable("a"), mx.sym.Variable("b")


def test_check_symbolic_forward_list_and_dict():
    x, y = np.random.rand(2, 3), np.random.rand(2, 3)
    sym = _a * _b
    outs = tu.check_symbolic_forward(sym, [x, y], [x * y])
    assert outs[0].dtype == np.float32
    tu.check_symbolic_forward(sym, {"a": x, "b": y}, {sym.list_outputs()[0]: x * y},
                              dtype=np.float64, rtol=1e-12, atol=0)
    with pytest.raises(AssertionError, match="EXPECTED_"):
        tu.check_symbolic_forward(_a * _b, [x, y], [x + y])
    with pytest.raises(mx.MXNetError, match="do not match"):
        tu.check_symbolic_forward(_a * _b, {"a": x}, [x])
    with pytest.raises(mx.MXNetError, match="dtype"):
        tu.check_symbolic_forward(_a * _b, [x, y], [x * y], dtype=np.int32)


def test_check_symbolic_backward_grad_reqs():
    x, y, head = np.random.rand(2, 3), np.random.rand(2, 3), np.random.rand(2, 3)
    sym = _a * _b
    for req in ("write", "add"):
        grads = tu.check_symbolic_backward(sym, [x, y], [head], [head * y, head * x], grad_req=req)
        assert set(grads) == {"a", "b"}
        with pytest.raises(AssertionError, match="BACKWARD_a"):
            tu.check_symbolic_backward(sym, [x, y], [head], [head * x, head * y], grad_req=req)
    # 'null' leaves the buffer alone, whatever the expected value; mixed per argument by dict
    tu.check_symbolic_backward(sym, [x, y], [head], {"a": np.zeros((2, 3)), "b": head * x},
                               grad_req={"a": "null", "b": "write"})
    # out_grads None means ones; expected may name only some arguments
    tu.check_symbolic_backward(sym, {"a": x, "b": y}, None, {"b": x})


def test_check_symbolic_backward_with_aux_states():
    data = mx.sym.Variable("data")
    bn = mx.sym.BatchNorm(data, name="bn", fix_gamma=True, use_global_stats=True, eps=1e-5)
    x = np.random.rand(2, 3, 2)
    mean, var = np.random.rand(3), np.random.rand(3) + 0.5
    want = (x - mean[:, None]) / np.sqrt(var[:, None] + 1e-5)
    tu.check_symbolic_forward(bn, [x, np.ones(3), np.zeros(3)], [want], aux_states=[mean, var],
                              dtype=np.float64)
    with pytest.raises(mx.MXNetError, match="aux_states"):
        tu.check_symbolic_forward(bn, [x, np.ones(3), np.zeros(3)], [want])


class _WrongSquareOp(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 3 * in_data[0] * out_grad[0])       # should be 2x


@mx.operator.register("tu_wrong_square")
class _WrongSquareProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _WrongSquareOp()


def test_check_numeric_gradient_on_symbols():
    x, y = np.random.uniform(0.5, 1.5, (2, 3)), np.random.uniform(0.5, 1.5, (2, 3))
    tu.check_numeric_gradient(_a * _b, [x, y])
    tu.check_numeric_gradient(mx.sym.sin(_a) / _b, {"a": x, "b": y}, grad_nodes=["b"], dtype=np.float64)
    tu.check_numeric_gradient(mx.sym.exp(_a) * _b, [x, y], grad_nodes={"a": "add", "b": "null"},
                              numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
    with pytest.raises(AssertionError, match="NUMERICAL_data"):
        tu.check_numeric_gradient(mx.sym.Custom(mx.sym.Variable("data"), op_type="tu_wrong_square"), [x])
    with pytest.raises(mx.MXNetError, match="one output"):
        tu.check_numeric_gradient(mx.sym.Group([_a * 2, _a * 3]), [x])
    with pytest.raises(mx.MXNetError, match="not arguments"):
        tu.check_numeric_gradient(_a * _b, [x, y], grad_nodes=["c"])


def test_check_numeric_gradient_with_aux_states():
    data = mx.sym.Variable("data")
    bn = mx.sym.BatchNorm(data, name="bn", fix_gamma=False)
    x = np.random.uniform(-1, 1, (4, 2, 2))
    tu.check_numeric_gradient(bn, [x, np.ones(2), np.zeros(2)], aux_states=[np.zeros(2), np.ones(2)],
                              numeric_eps=1e-3, rtol=1e-2, atol=1e-3, dtype=np.float64)


def test_check_consistency_across_dtypes_and_symbols():
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, num_filter=2, kernel=(3, 3), name="conv")
    ctx_list = [{"ctx": mx.cpu(0), "data": (2, 3, 5, 5), "type_dict": {"data": t}}
                for t in (np.float64, np.float32, np.float16)]
    gt = tu.check_consistency(conv, ctx_list)
    assert gt["conv_output"].dtype == np.float64 and gt["conv_weight"].shape == (2, 3, 3, 3)
    ctx = {"ctx": mx.cpu(0), "data": (3, 4)}
    with mx.name.NameManager():                      # the same output names for both symbols
        method, magic = data.abs(name="abs0"), abs(data)
    tu.check_consistency([method, magic], [ctx, ctx])
    with pytest.raises(AssertionError, match="Predict error"):
        tu.check_consistency([mx.sym.sin(data, name="f"), mx.sym.cos(data, name="f")], [ctx, ctx], grad_req="null")
    with pytest.raises(AssertionError, match="Train error"):            # same forward, different gradient
        tu.check_consistency([mx.sym.identity(data, name="f"), mx.sym.make_loss(data, name="f")], [ctx, ctx])
    tu.check_consistency([mx.sym.sin(data, name="f"), mx.sym.cos(data, name="f")], [ctx, ctx], raise_on_err=False)


def test_check_consistency_on_an_unavailable_gpu():
    if mx.context.num_gpus():
        pytest.skip("a GPU is available here; the error path needs a machine without one")
    data = mx.sym.Variable("data")
    with pytest.raises(mx.MXNetError, match=r"ctx_list\[0\].*gpu\(0\)"):
        tu.check_consistency(mx.sym.sin(data), [{"ctx": mx.gpu(0), "data": (2,)}, {"ctx": mx.cpu(0), "data": (2,)}])


def test_simple_forward_and_symbol_structure():
    x = np.random.rand(2, 2)
    assert np.allclose(tu.simple_forward(_a * _b, a=x, b=x), x * x)
    assert tu.same_symbol_structure(mx.sym.sin(_a), mx.sym.sin(_b))
    assert not tu.same_symbol_structure(mx.sym.sin(_a), mx.sym.cos(_a))


# ---------------------------------------------------------------------------------------------------------
# optimizers
def test_compare_optimizer_same_and_different():
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9),
                         mx.optimizer.SGD(learning_rate=0.1, momentum=0.9), (3, 4), np.float32)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.2), (3, 4),
                             np.float32)
    with pytest.raises(AssertionError):             # same weights after one step is not enough: states differ
        tu.compare_optimizer(mx.optimizer.Adam(beta2=0.999), mx.optimizer.Adam(beta2=0.9), (3,), np.float32)
    with pytest.raises(mx.MXNetError, match="storage type"):
        tu.compare_optimizer(mx.optimizer.SGD(), mx.optimizer.SGD(), (3,), np.float32, w_stype="invalid")
    tu.compare_ndarray_tuple((mx.nd.ones(2), (mx.nd.zeros(1),)), (np.ones(2), (np.zeros(1),)))


def test_compare_optimizer_multi_tensor():
    # opt2 updates every tensor in one call with lists (MXNet's multi-tensor form), opt1 one at a time
    shapes = [(3, 4), (5,), (2, 2)]
    for dtype, kwargs in ((np.float32, {}), (np.float16, {"multi_precision": True})):
        tu.compare_optimizer(mx.optimizer.LAMB(**kwargs), mx.optimizer.LAMB(**kwargs), shapes, dtype,
                             rtol=1e-6, atol=1e-3, ntensors=len(shapes))
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.LAMB(), mx.optimizer.LAMB(wd=0.5), shapes, np.float32,
                             ntensors=len(shapes))



def test_numeric_gradient_check_with_sparse_gradient_stypes():
    # MXNet code asks for csr / row_sparse gradients by name; their values are what is compared
    data = mx.sym.var("data")
    sym = mx.sym.square(data)
    x = mx.nd.array(np.random.uniform(-1, 1, size=(3, 4))).tostype("csr")
    mx.test_utils.check_numeric_gradient(sym, [x], grad_stype_dict={"data": "csr"})
    mx.test_utils.check_symbolic_backward(sym, [x], [mx.nd.ones((3, 4))], [2 * x.asnumpy()],
                                          grad_stypes={"data": "row_sparse"})
    with pytest.raises(mx.MXNetError, match="unknown stype 'dense'"):
        mx.test_utils.check_numeric_gradient(sym, [x], grad_stype_dict={"data": "dense"})
