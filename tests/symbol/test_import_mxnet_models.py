"""Models exported by real MXNet 1.9.1 (tests/data/make_symbol_models.py) load with SymbolBlock.imports and give
MXNet's outputs, input gradients and parameter gradients."""
import json
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd
from mixnet import symbol as sym
from mixnet.gluon.symbol_block import SymbolBlock

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "symbol")


def _load_io(name):
    with open(os.path.join(DATA, f"{name}-io.json")) as f:
        return json.load(f)


def _inputs(io):
    return [mx.nd.array(np.array(x["data"], dtype=x["dtype"]).reshape(x["shape"]), dtype=x["dtype"])
            for x in io["inputs"]]


def _check(name, input_names, train_mode=False):
    blk = SymbolBlock.imports(os.path.join(DATA, f"{name}-symbol.json"), input_names,
                              os.path.join(DATA, f"{name}-0000.params"))
    io = _load_io(name)
    xs = _inputs(io)
    for i in io["input_grads"]:
        xs[int(i)].attach_grad()
    with autograd.record(train_mode=train_mode):
        y = blk(*xs)
    y.backward(mx.nd.array(np.array(io["head_grad"], dtype=np.float32).reshape(y.shape)), train_mode=train_mode)
    ref = np.array(io["output"]["data"]).reshape(io["output"]["shape"])
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    for i, g in io["input_grads"].items():
        np.testing.assert_allclose(xs[int(i)].grad.asnumpy().ravel(), g, rtol=1e-4, atol=1e-6)
    params = blk.collect_params()
    for key, g in io["param_grads"].items():
        np.testing.assert_allclose(params[key].grad().asnumpy().ravel(), g, rtol=1e-4, atol=1e-5, err_msg=key)
    return blk


def test_mlp_matches_mxnet():
    blk = _check("mlp", ["data"])
    text = blk.describe()
    assert repr(blk).splitlines() == ["SymbolBlock(", "<Symbol mlp_dense2_fwd> : 1 -> 1", ")"]
    assert "inputs: data" in text and "mlp_dense0_weight (8, 10) float32" in text


def test_cnn_matches_mxnet_with_aux_states():
    blk = _check("cnn", ["data"])
    params = blk.collect_params()
    assert params["cnn_batchnorm0_running_mean"].grad_req == "null"
    assert params["cnn_conv0_weight"].grad_req == "write"
    assert "[aux]" in blk.describe()


def test_lstm_matches_mxnet():
    _check("lstm", ["data0", "data1"], train_mode=True)


def test_imports_errors_are_clear(tmp_path):
    path = os.path.join(DATA, "mlp-symbol.json")
    with pytest.raises(mx.base.MXNetError, match="not variables of the graph"):
        SymbolBlock.imports(path, ["nope"])
    blk = SymbolBlock.imports(path, "data")
    with pytest.raises(mx.base.MXNetError, match="takes 1 input"):
        blk(mx.nd.ones((1, 10)), mx.nd.ones((1, 10)))


def test_symbol_block_from_symbols_trains():
    x = sym.var("x")
    y = sym.FullyConnected(x, num_hidden=3, name="fc") * 2 + 1
    blk = SymbolBlock(y, [x])
    blk.initialize(mx.init.Constant(0.5))
    data = mx.nd.array(np.arange(8, dtype=np.float32).reshape(2, 4))
    data.attach_grad()
    with autograd.record():
        out = blk(data)
    out.backward()
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out.asnumpy(), (data.asnumpy().sum(1, keepdims=True) * 0.5 + 0.5) * 2 + 1 +
                               np.zeros((2, 3)), rtol=1e-6)
    np.testing.assert_allclose(data.grad.asnumpy(), np.full((2, 4), 3.0), rtol=1e-6)
    np.testing.assert_allclose(blk.collect_params()["fc_bias"].grad().asnumpy(), [4, 4, 4])
