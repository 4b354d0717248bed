"""Silent pitfalls made loud: a float64 input to a float32 network, attach_grad() on an integer array, and
backward() on a freed graph vs on an array that was never recorded (two different messages)."""
import warnings

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon
from mixnet.base import InputDtypeWarning, MXNetError, MXNetWarning


def _mlp():
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(4, activation="relu"), gluon.nn.Dense(2))
    net.initialize()
    return net


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [w for w in caught if issubclass(w.category, InputDtypeWarning)]


# ------------------------------------------------------------------------------------------ float64 inputs
@pytest.mark.parametrize("hybridize", [False, True])
def test_float64_input_to_a_float32_net_warns_once_naming_block_and_dtypes(hybridize):
    net = _mlp()
    if hybridize:
        net.hybridize()
    x = mx.nd.from_numpy(np.ones((3, 5)))            # float64, as numpy made it (on the CPU, as MXNet's) ...
    x = x.as_in_context(mx.current_context())        # ... where the net is (the default device)
    out, caught = _caught(lambda: net(x))
    assert out.dtype == np.float64                   # mixnet's behaviour is kept (MXNet raises instead) ...
    assert len(caught) == 1                          # ... but said once, by the outer block only
    text = str(caught[0].message)
    assert f"HybridSequential {net.name!r}" in text and "input 0 is float64" in text and "float32" in text
    assert "astype('float32')" in text and "net.cast('float64')" in text
    assert issubclass(caught[0].category, MXNetWarning)
    _, again = _caught(lambda: net(x))
    assert again == []                               # once per block


def test_float64_warning_for_a_child_called_on_its_own_too():
    net = _mlp()
    _, caught = _caught(lambda: net[1](mx.nd.ones((2, 4), dtype="float64")))
    assert len(caught) == 1 and repr(net[1].name) in str(caught[0].message)


@pytest.mark.parametrize("case", ["float32 input", "net cast to float64", "no parameters", "int input"])
def test_no_float64_warning_when_nothing_is_mixed(case):
    net = _mlp()
    x = mx.nd.ones((3, 5), dtype="float64")
    if case == "float32 input":
        x = mx.nd.ones((3, 5))
    elif case == "net cast to float64":
        net.cast("float64")
    elif case == "no parameters":
        net = gluon.loss.L2Loss()
        x = (mx.nd.ones((3, 2), dtype="float64"), mx.nd.ones((3, 2), dtype="float64"))
    else:
        net = gluon.nn.Embedding(10, 3)
        net.initialize()
        x = mx.nd.array([1, 2], dtype="int32")
    args = x if isinstance(x, tuple) else (x,)
    _, caught = _caught(lambda: net(*args))
    assert caught == []


# ------------------------------------------------------------------------------------------ attach_grad on ints
def test_mxnet_truncates_integer_gradients_and_mixnet_says_so():
    x = mx.nd.array([1, 2, 3], dtype="int32")
    _, caught = _caught(x.attach_grad)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "int32" in text and "1.5 becomes 1" in text and "astype('float32')" in text
    with autograd.record():
        y = (x * 1.5).sum()
    y.backward()
    assert x.grad.dtype == np.int32 and x.grad.asnumpy().tolist() == [1, 1, 1]   # MXNet 1.9.1's result


@pytest.mark.parametrize("dtype, grad_req, warns", [
    ("uint8", "write", True), ("int64", "add", True), ("bool", "write", True),
    ("float16", "write", False), ("float64", "write", False), ("int32", "null", False),
])
def test_attach_grad_warning_by_dtype(dtype, grad_req, warns):
    x = mx.nd.array([1, 0], dtype=dtype)
    _, caught = _caught(lambda: x.attach_grad(grad_req))
    assert len(caught) == int(warns)


# ------------------------------------------------------------------------------------------ backward messages
def test_backward_twice_says_the_graph_was_freed_and_how_to_keep_it():
    x = mx.nd.ones((2,))
    x.attach_grad()
    with autograd.record():
        y = (x * x).sum()
    y.backward()
    with pytest.raises(MXNetError) as info:
        y.backward()
    text = str(info.value)
    assert "freed" in text and "retain_graph=True" in text and "autograd.record()" not in text


@pytest.mark.parametrize("how", ["outside record", "no attached grad", "plain array"])
def test_backward_on_something_never_recorded_says_so(how):
    x = mx.nd.ones((2,))
    if how == "outside record":
        x.attach_grad()
        y = x * 2
    elif how == "no attached grad":
        with autograd.record():
            y = x * 2
    else:
        y = x
    with pytest.raises(MXNetError) as info:
        y.backward()
    text = str(info.value)
    assert "autograd.record()" in text and "attach_grad()" in text
    assert "retain_graph" not in text and "freed" not in text


def test_retain_graph_still_allows_a_second_backward():
    x = mx.nd.ones((2,))
    x.attach_grad()
    with autograd.record():
        y = (x * 3).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.asnumpy().tolist() == [3, 3]
