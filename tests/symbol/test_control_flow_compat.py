"""mx.sym.contrib control flow as MXNet's callers see it: closure (free) variables are arguments that bind's
args_grad reaches, unused inputs raise MXNet's exception types, subgraph names are counted on AttrScope."""
from collections import defaultdict

import numpy as np
import pytest

import mixnet as mx
from mixnet.attribute import AttrScope
from mixnet.base import MXNetError


def test_free_variables_of_while_loop_get_gradients_through_bind():
    free, i = mx.sym.var("free"), mx.sym.var("i")
    outs, final = mx.sym.contrib.while_loop(lambda i: i < 3, lambda i: (i * free, i + 1), [i], max_iterations=3)
    sym = mx.sym.Group([outs[0] * 1, final[0] * 1])
    assert sorted(sym.list_arguments()) == ["free", "i"]
    grads = {"free": mx.nd.zeros((1,)), "unrelated": mx.nd.zeros((1,))}     # extra keys are ignored
    exe = sym.bind(mx.cpu(), {"free": mx.nd.array([2.0]), "i": mx.nd.array([0.0])}, args_grad=grads)
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy().ravel(), [0, 2, 4])
    exe.backward([mx.nd.ones((3, 1)), mx.nd.ones((1,))])
    np.testing.assert_array_equal(grads["free"].asnumpy(), [0 + 1 + 2])       # d(sum i*free)/dfree


def test_unused_foreach_state_is_an_assertion_error_as_in_mxnet():
    data, state, free = mx.sym.var("d"), mx.sym.var("s"), mx.sym.var("f")
    with pytest.raises(AssertionError, match="state 0 is not used") as info:
        mx.sym.contrib.foreach(lambda x, states: (x, [free]), data, [state])
    assert isinstance(info.value, MXNetError)


def test_unused_loop_variable_is_a_value_error_as_in_mxnet():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    with pytest.raises(ValueError, match="loop variable 1 is not used") as info:
        mx.sym.contrib.while_loop(lambda a, b: a < 3, lambda a, b: (a, [a + 1, a]), [a, b], max_iterations=2)
    assert isinstance(info.value, MXNetError)


def test_subgraph_names_are_counted_on_attr_scope(monkeypatch):
    monkeypatch.setattr(AttrScope, "_subgraph_names", defaultdict(int))
    x = mx.sym.var("x")
    for _ in range(2):
        mx.sym.contrib.cond(x > 0.5, lambda: x * 2, lambda: x * 3, name="my_cond")
    assert dict(AttrScope._subgraph_names) == {"my_cond_pred": 2, "my_cond_then": 2, "my_cond_else": 2}
