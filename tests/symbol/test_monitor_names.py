"""Executor monitor callbacks with monitor_all name arrays as MXNet does: a variable input is reported under its
own name and then as `<node>_<input>`; ops MXNet registers without input names use input0, ...; variadic ops
arg0, ...; hidden outputs are reported too."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


def _names(sym, **shapes):
    seen = []
    exe = sym.simple_bind(mx.cpu(), grad_req="null", **shapes)
    exe.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=True)
    exe.forward()
    return seen


def test_variable_names_precede_each_input():
    conv = mx.sym.Convolution(mx.sym.var("data"), kernel=(2, 2), num_filter=1, name="conv")
    assert _names(conv, data=(1, 3, 4, 4)) == ["data", "conv_data", "conv_weight", "conv_weight", "conv_bias",
                                               "conv_bias", "conv_output"]


@pytest.mark.parametrize("make,expected", [
    (lambda d: mx.sym.Activation(d, act_type="relu", name="act"), ["data", "act_input0", "act_output"]),
    (lambda d: mx.sym.concat(d, d, dim=0, name="concat"),
     ["data", "concat_arg0", "data", "concat_arg1", "concat_output"]),
])
def test_input_names_of_unnamed_and_variadic_ops(make, expected):
    assert _names(make(mx.sym.var("data")), data=(2, 3)) == expected


def test_float_softmax_length_binds_and_fails_at_forward():
    data, length = mx.sym.var("data"), mx.sym.var("length")
    exe = mx.sym.softmax(data, length, axis=1, use_length=True).simple_bind(mx.cpu(), data=(2, 3), length=(2,))
    with pytest.raises(MXNetError, match="integer dtype"):
        exe.forward()
    ok = mx.nd.softmax(mx.nd.ones((2, 3)), mx.nd.array([1, 3], dtype="int32"), axis=1, use_length=True)
    np.testing.assert_allclose(ok.asnumpy()[0], [1, 0, 0])
