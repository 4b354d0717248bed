"""The Executor's MXNet 1.x semantics: outputs allocated at bind, backward after a plain forward, bind's
list/dict arguments and grad_req forms, head-gradient casting, reshape's shared memory, simple_bind's dtypes,
the monitor callback, debug_str's memory report and the common-subexpression-eliminated graph."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


def _bind_mul(**kwargs):
    sym = mx.sym.var("a") * mx.sym.var("b")
    args = {"a": mx.nd.array([[1, 2, 3]]), "b": mx.nd.array([[4, 5, 6]])}
    grads = {"a": mx.nd.zeros((1, 3)), "b": mx.nd.zeros((1, 3))}
    return sym.bind(mx.cpu(), args, args_grad=grads, **kwargs)


def test_outputs_exist_at_bind_and_forward_writes_into_them():
    exe = _bind_mul()
    out = exe.outputs[0]
    assert out.shape == (1, 3) and out.dtype == np.float32
    exe.forward()
    assert exe.outputs[0] is out
    np.testing.assert_array_equal(out.asnumpy(), [[4, 10, 18]])
    assert list(exe.output_dict) == exe._symbol.list_outputs() and exe.output_dict[exe._symbol.list_outputs()[0]] is out


def test_backward_after_a_plain_forward_gives_the_gradient_at_those_values():
    exe = _bind_mul()
    exe.forward()                                   # is_train=False, as MXNet's tests call it
    exe.backward([mx.nd.ones((1, 3))])
    np.testing.assert_array_equal(exe.grad_dict["a"].asnumpy(), [[4, 5, 6]])
    np.testing.assert_array_equal(exe.grad_dict["b"].asnumpy(), [[1, 2, 3]])
    exe.backward([mx.nd.ones((1, 3))])              # again, from the same forward: 'write' gives the same
    np.testing.assert_array_equal(exe.grad_dict["a"].asnumpy(), [[4, 5, 6]])


def test_head_gradient_of_another_dtype_is_cast():
    exe = _bind_mul()
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((1, 3), dtype="float64") * 2)
    assert exe.grad_dict["a"].dtype == np.float32
    np.testing.assert_array_equal(exe.grad_dict["a"].asnumpy(), [[8, 10, 12]])


def test_head_gradient_of_another_dtype_is_cast_in_autograd():
    x = mx.nd.ones((2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = (x * x).sum(axis=1)
    y.backward(mx.nd.ones((2,), dtype="float64"))
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full((2, 3), 2))


def test_grad_req_forms_and_extra_dict_keys():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    args = {"a": mx.nd.ones((2,)), "b": mx.nd.ones((2,)) * 3, "unused": mx.nd.ones((1,))}  # extra keys ignored
    ga, gb = mx.nd.ones((2,)) * 10, mx.nd.ones((2,)) * 10
    exe = (a * b).bind(mx.cpu(), args, args_grad={"a": ga, "b": gb, "c": mx.nd.zeros((1,))},
                       grad_req={"a": "add"})        # b is not listed: 'null'
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2,)))
    np.testing.assert_array_equal(ga.asnumpy(), [13, 13])
    np.testing.assert_array_equal(gb.asnumpy(), [10, 10])
    exe = (a * b).bind(mx.cpu(), [mx.nd.ones((2,)), mx.nd.ones((2,))], args_grad=[None, mx.nd.zeros((2,))],
                       grad_req=["write", "write"])
    assert exe.grad_arrays[0] is None and exe.grad_dict["a"] is None
    with pytest.raises(MXNetError, match="grad_req"):
        (a * b).bind(mx.cpu(), args, grad_req="sometimes")
    with pytest.raises(MXNetError, match="missing"):
        (a * b).bind(mx.cpu(), {"a": mx.nd.ones((2,))})


def test_unreached_argument_gets_zero_gradient():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    sym = mx.sym.Group([a * 2, mx.sym.BlockGrad(b * 2)])
    gb = mx.nd.ones((2,)) * 7                       # whatever was there is overwritten by 'write'
    exe = sym.bind(mx.cpu(), {"a": mx.nd.ones((2,)), "b": mx.nd.ones((2,))},
                   args_grad={"a": mx.nd.zeros((2,)), "b": gb})
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2,)), mx.nd.ones((2,))])
    np.testing.assert_array_equal(gb.asnumpy(), [0, 0])
    np.testing.assert_array_equal(exe.grad_dict["a"].asnumpy(), [2, 2])


def test_backward_without_gradient_arrays_does_nothing():
    a = mx.sym.var("a")
    exe = (a * 2).bind(mx.cpu(), {"a": mx.nd.ones((2,))})
    exe.forward()
    exe.backward(mx.nd.ones((2,)))
    assert exe.grad_arrays == [None]


def test_reshape_shares_memory():
    x = mx.sym.var("x")
    y = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req="null")
    exe.arg_dict["x"][:] = 1
    exe.arg_dict["fc_weight"][:] = 1
    exe.arg_dict["fc_bias"][:] = 0
    small = exe.reshape(x=(3, 4))
    assert small.arg_dict["fc_weight"] is exe.arg_dict["fc_weight"]
    small.forward()
    np.testing.assert_array_equal(small.outputs[0].asnumpy(), np.full((3, 4), 4))
    np.testing.assert_array_equal(exe.outputs[0].asnumpy()[:3], np.full((3, 4), 4))   # written through
    with pytest.raises(MXNetError, match="allow_up_sizing"):
        exe.reshape(x=(6, 4))
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_dict["x"][:] = 0
    assert (exe.arg_dict["x"].asnumpy() == 1).all()
    pair = mx.sym.elemwise_add(mx.sym.var("a"), mx.sym.var("b")).simple_bind(mx.cpu(), a=(4,), b=(4,))
    with pytest.raises(MXNetError, match="partial_shaping"):
        pair.reshape(a=(3,))                        # b would change too, though not given
    assert pair.reshape(partial_shaping=True, a=(3,)).arg_dict["b"].shape == (3,)


def test_simple_bind_honours_type_dict_and_variable_dtype():
    a = mx.sym.var("a", dtype="float16")
    b = mx.sym.var("b")
    exe = (a + b).simple_bind(mx.cpu(), a=(2, 3), b=(2, 3))
    assert exe.arg_dict["a"].dtype == np.float16 and exe.arg_dict["b"].dtype == np.float16
    x, idx = mx.sym.var("x"), mx.sym.var("idx")
    exe = mx.sym.BlockGrad(mx.sym.batch_take(x, idx)).simple_bind(
        mx.cpu(), x=(4, 3), idx=(4,), type_dict={"x": np.float64, "idx": np.int32})
    assert exe.arg_dict["x"].dtype == np.float64 and exe.arg_dict["idx"].dtype == np.int32
    assert exe.outputs[0].dtype == np.float64
    exe.forward()
    exe.backward()
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), np.zeros((4, 3)))
    with pytest.raises(MXNetError, match="cannot infer"):
        (x * 2 + mx.sym.var("z")).simple_bind(mx.cpu())


def test_monitor_callback_sees_every_node():
    a = mx.sym.var("a")
    sym = mx.sym.relu(a * 2, name="act")
    exe = sym.bind(mx.cpu(), {"a": mx.nd.array([-1, 1])})
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.__setitem__(name, arr.asnumpy()), monitor_all=True)
    exe.forward()
    np.testing.assert_array_equal(seen["act_output"], [0, 2])
    np.testing.assert_array_equal(seen["act_input0"], [-2, 2])     # MXNet: relu lists no input names


def test_debug_str_reports_what_backward_keeps():
    data = mx.sym.var("data")
    for _ in range(6):
        data = data * data

    def allocated(sym, **kwargs):
        text = sym.simple_bind(mx.cpu(), data=(64, 1024), **kwargs).debug_str()
        assert "Op:broadcast_mul" in text and "Variable:data" in text
        return int(text.rsplit("Total ", 1)[1].split(" MB")[0])
    train = allocated(data)
    inference = allocated(data, grad_req="null")
    blocked = allocated(mx.sym.stop_gradient(data))
    assert train > inference == blocked


def test_get_optimized_symbol_merges_common_subexpressions(monkeypatch):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    sym = mx.sym.Group([(a + b) * 2 + (a + b), (a + b) * 2 + (a + b)])
    args = {"a": mx.nd.ones((2,)), "b": mx.nd.ones((2,))}
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "0")
    plain = sym.bind(mx.cpu(), args)
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "1")
    merged = sym.bind(mx.cpu(), args)
    n_plain = len(plain.get_optimized_symbol().get_internals())
    n_merged = len(merged.get_optimized_symbol().get_internals())
    # a, b, four a+b, two *2, two +  ->  a, b, a+b, *2, +, and a copy that keeps the two outputs distinct
    assert (n_plain, n_merged) == (10, 6)
    for exe in (plain, merged):
        outs = exe.forward()
        assert outs[0] is not outs[1]
        np.testing.assert_array_equal(outs[1].asnumpy(), [6, 6])


def test_copy_params_from_casts_and_refuses_unknown_names():
    a = mx.sym.var("a")
    exe = (a * 2).bind(mx.cpu(), {"a": mx.nd.zeros((2,), dtype="float16")})
    exe.copy_params_from({"a": mx.nd.array([1, 2], dtype="float64")})
    assert exe.arg_dict["a"].dtype == np.float16
    np.testing.assert_array_equal(exe.arg_dict["a"].asnumpy(), [1, 2])
    with pytest.raises(MXNetError, match="allow_extra_params"):
        exe.copy_params_from({"b": mx.nd.ones((2,))})
    exe.copy_params_from({"b": mx.nd.ones((2,))}, allow_extra_params=True)
