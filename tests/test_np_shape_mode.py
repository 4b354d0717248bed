"""MXNet 1.x's np-shape mode for legacy arrays: scalar and zero-size creation only inside it, the symbol JSON
flag, and shape `()` of a creation node (unknown in legacy mode, a scalar in np-shape mode)."""
import json

import numpy as np
import pytest

import mixnet as mx


@pytest.mark.parametrize("make", [lambda s: mx.nd.zeros(s), lambda s: mx.nd.ones(shape=s),
                                  lambda s: mx.nd.full(s, 2.0)])
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3)])
def test_scalar_and_zero_size_creation_need_np_shape(make, shape):
    with pytest.raises(mx.MXNetError, match="np_shape"):
        make(shape)
    with mx.np_shape():
        assert make(shape).shape == shape
    assert not mx.is_np_shape()


def test_decorated_function_and_ops_on_zero_size():
    @mx.use_np_shape
    def joined():
        return mx.nd.concat(mx.nd.ones((0, 3)), mx.nd.ones((2, 3)), dim=0)
    assert joined().shape == (2, 3) and joined.__name__ == "joined"
    # zero-size results of ops exist in legacy mode too (one_hot with depth 0), as in MXNet
    assert mx.nd.one_hot(mx.nd.array([1, 2]), depth=0).shape == (2, 0)


def test_symbol_json_marks_np_shape():
    with mx.np_shape():
        doc = json.loads(mx.sym.var("x").tojson())
    assert doc["attrs"]["is_np_shape"] == ["int", 1]
    assert "is_np_shape" not in json.loads(mx.sym.var("x").tojson())["attrs"]


def test_scalar_creation_node_in_np_shape_mode():
    with mx.np_shape():
        out = (mx.sym.ones(()) + mx.sym.var("x")).eval(x=mx.nd.array(np.zeros((2, 2))))[0]
    np.testing.assert_array_equal(out.asnumpy(), np.ones((2, 2)))


def test_scalar_assign_and_zero_size_head_gradient():
    with mx.np_shape():
        s = mx.nd.ones(())
        s[:] = 4
        assert s.asscalar() == 4
        data = mx.sym.var("data")
        exe = mx.sym.contrib.index_array(data, axes=(1,)).bind(
            mx.cpu(), {"data": mx.nd.ones((0, 0))}, args_grad={"data": mx.nd.zeros((0, 0))})
        exe.forward(is_train=True)
        exe.backward([mx.nd.ones((0, 1))])         # any zero-size head gradient, as MXNet accepts
        assert exe.grad_dict["data"].shape == (0, 0)


def test_backward_before_forward_runs_the_forward():
    x = mx.sym.var("x")
    exe = mx.sym.tile(x, reps=(2,)).bind(mx.cpu(), {"x": mx.nd.array([1.0, 2.0])},
                                         args_grad={"x": mx.nd.zeros((2,))})
    exe.backward(mx.nd.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [4.0, 6.0])


def test_almost_equal_on_scalar_arrays():
    from mixnet.test_utils import almost_equal, assert_almost_equal
    assert_almost_equal(np.array(1.0, dtype=np.float32), np.array(1.0, dtype=np.float32))
    assert almost_equal(np.array(1.0, dtype=np.float16), np.array(1.0005, dtype=np.float16))
    assert not almost_equal(np.array(1.0), np.array(2.0))


def test_infer_shape_partial_reports_unknowns_as_mxnet_in_each_mode():
    # legacy: unknown dims 0, unknown shapes (); np-shape: unknown dims -1, unknown shapes None (MXNet 1.9.1)
    out = mx.sym.slice(mx.sym.var("data", shape=(0, 20)), begin=(None, 3), end=(None, 10))
    assert out.infer_shape_partial()[1] == [(0, 7)]
    assert (mx.sym.var("a") + 1).infer_shape_partial()[0] == [()]
    with mx.np_shape():
        out = mx.sym.slice(mx.sym.var("data", shape=(-1, 20)), begin=(None, 3), end=(None, 10))
        assert out.infer_shape_partial()[1] == [(-1, 7)]
        assert (mx.sym.var("a") + 1).infer_shape_partial()[0] == [None]
