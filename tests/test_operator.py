"""mx.operator: Python custom operators (CustomOp / CustomOpProp / register, nd.Custom and sym.Custom)."""
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, nd


class _Cube(mx.operator.CustomOp):
    """y = x ** 3; remembers the forward on self (backward checks it ran on the same object)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.forward_ran = True
        aux[0][:] = aux[0] + 1                      # counts forwards, in the aux state
        self.assign(out_data[0], req[0], in_data[0] ** 3)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assert self.forward_ran
        self.assign(in_grad[0], req[0], 3 * in_data[0] ** 2 * out_grad[0])


@mx.operator.register("test_cube")
class _CubeProp(mx.operator.CustomOpProp):
    def list_auxiliary_states(self):
        return ["count"]

    def create_operator(self, ctx, shapes, dtypes):
        assert shapes == [[2, 3]] and dtypes == [0]           # MXNet passes shape lists and dtype codes
        return _Cube()


class _Scale(mx.operator.CustomOp):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * self.factor + in_data[1])
        self.assign(out_data[1], req[1], in_data[0] * 0 + float(is_train))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * self.factor)
        self.assign(in_grad[1], req[1], out_grad[0])


@mx.operator.register("test_scale")
class _ScaleProp(mx.operator.CustomOpProp):
    def __init__(self, factor="1"):
        super().__init__(need_top_grad=True)
        assert isinstance(factor, str)                        # keyword arguments arrive as strings, as in MXNet
        self.factor = float(factor)

    def list_arguments(self):
        return ["a", "b"]

    def list_outputs(self):
        return ["out", "train_flag"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Scale(self.factor)


X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32)


def test_forward_backward_aux_and_state():
    x, count = nd.array(X), nd.zeros((2, 3))
    x.attach_grad()
    with autograd.record():
        y = nd.Custom(x, count, op_type="test_cube")
    y.backward(nd.ones((2, 3)) * 2)
    np.testing.assert_allclose(y.asnumpy(), X ** 3, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * X ** 2, rtol=1e-6)
    np.testing.assert_array_equal(count.asnumpy(), np.ones((2, 3)))


def test_gradient_matches_finite_differences():
    x = nd.array(X.astype(np.float64))
    a, b = x, nd.array(np.ones((2, 3)))
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        out, flag = nd.Custom(a, b, factor=2.5, op_type="test_scale")
        loss = (out * out).sum()
    loss.backward()
    assert flag.asnumpy().max() == 1.0                        # is_train under record()

    def f(v):
        return ((v * 2.5 + 1.0) ** 2).sum()
    eps, base = 1e-6, X.astype(np.float64)
    numeric = np.zeros_like(base)
    for idx in np.ndindex(base.shape):
        hi, lo = base.copy(), base.copy()
        hi[idx] += eps
        lo[idx] -= eps
        numeric[idx] = (f(hi) - f(lo)) / (2 * eps)
    np.testing.assert_allclose(a.grad.asnumpy(), numeric, rtol=1e-5)
    np.testing.assert_allclose(b.grad.asnumpy(), 2 * (base * 2.5 + 1), rtol=1e-6)


def test_assign_req_modes():
    op = mx.operator.CustomOp()
    dst = nd.ones((2,))
    op.assign(dst, "write", nd.array([3, 4]))
    np.testing.assert_array_equal(dst.asnumpy(), [3, 4])
    op.assign(dst, "add", nd.array([1, 1]))
    np.testing.assert_array_equal(dst.asnumpy(), [4, 5])
    op.assign(dst, "inplace", nd.array([7, 7]))
    op.assign(dst, "null", nd.array([0, 0]))
    np.testing.assert_array_equal(dst.asnumpy(), [7, 7])
    with pytest.raises(mx.MXNetError, match="req"):
        op.assign(dst, "bogus", nd.array([0, 0]))


def test_outside_record_and_predict_mode():
    with autograd.predict_mode():
        out, flag = nd.Custom(nd.array(X), nd.array(X), op_type="test_scale")
    np.testing.assert_allclose(out.asnumpy(), 2 * X)
    assert flag.asnumpy().max() == 0.0


def test_symbol_executor_and_shape_inference():
    s = mx.sym.Custom(data=mx.sym.var("data"), op_type="test_cube", name="cube")
    assert s.list_arguments()[0] == "data" and s.list_outputs() == ["cube_output"]
    arg_shapes, out_shapes, _ = s.infer_shape(data=(2, 3))
    assert out_shapes == [(2, 3)] and all(sh == (2, 3) for sh in arg_shapes)
    ex = s.simple_bind(mx.cpu(), data=(2, 3))
    ex.arg_dict["data"][:] = nd.array(X)
    out = ex.forward(is_train=True)[0]
    ex.backward(nd.ones((2, 3)))
    np.testing.assert_allclose(out.asnumpy(), X ** 3, rtol=1e-6)
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), 3 * X ** 2, rtol=1e-6)


class _Net(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x, count):
        return F.Custom(x * 2, count, op_type="test_cube") + 1


def test_hybridize_export_and_reload(tmp_path):
    net = _Net()
    net.hybridize()
    x = nd.array(X)
    x.attach_grad()
    with autograd.record():
        y = net(x, nd.zeros((2, 3)))
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), (2 * X) ** 3 + 1, rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), 24 * X ** 2, rtol=1e-5)
    prefix = os.path.join(tmp_path, "net")
    net.export(prefix)
    loaded = mx.gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data0", "data1"])
    np.testing.assert_allclose(loaded(x, nd.zeros((2, 3))).asnumpy(), (2 * X) ** 3 + 1, rtol=1e-6)


def test_errors_name_the_operator():
    class Failing(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise ValueError("boom")

    @mx.operator.register("test_failing")
    class FailingProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Failing()

    with pytest.raises(mx.MXNetError, match=r"test_failing.*forward.*boom"):
        nd.Custom(nd.ones((2,)), op_type="test_failing")
    with pytest.raises(mx.MXNetError, match="not registered"):
        nd.Custom(nd.ones((2,)), op_type="no_such_op")
    with pytest.raises(mx.MXNetError, match="op_type"):
        nd.Custom(nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match="takes 2 inputs"):
        nd.Custom(nd.ones((2, 3)), nd.ones((2, 3)), nd.ones((2, 3)), op_type="test_cube")
    with pytest.raises(mx.MXNetError, match="CustomOpProp"):
        mx.operator.register("test_bad")(object)


def test_in_data_is_read_only():
    class Writer(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            in_data[0][:] = 0

    @mx.operator.register("test_writer")
    class WriterProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Writer()

    x = nd.ones((2,))
    with pytest.raises(mx.MXNetError, match="test_writer"):
        nd.Custom(x, op_type="test_writer")
    np.testing.assert_array_equal(x.asnumpy(), [1, 1])


def test_star_export_and_registry_listing():
    namespace = {}
    exec("from mixnet.operator import *", namespace)
    assert {"CustomOp", "CustomOpProp", "register"} <= set(namespace)
    names = mx.operator.get_all_registered_operators()
    assert "Custom" in names and "FullyConnected" in names


def test_numpy_op_get_symbol_binds_and_differentiates():
    class Double(mx.operator.NumpyOp):
        def forward(self, in_data, out_data):
            assert isinstance(in_data[0], np.ndarray)
            out_data[0][:] = in_data[0] * 2

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = out_grad[0] * 2

    s = Double()(mx.sym.var("X"), name="double")
    dx = nd.zeros((3,))
    ex = s.bind(mx.cpu(), args=[nd.array([1, 2, 3])], args_grad={"X": dx})
    ex.forward(is_train=True)
    ex.backward(nd.ones((3,)))
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), [2, 4, 6])
    np.testing.assert_array_equal(dx.asnumpy(), [2, 2, 2])
