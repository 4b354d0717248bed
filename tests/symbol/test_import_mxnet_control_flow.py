"""Models with `_foreach` / `_while_loop` / `_cond` nodes exported by real MXNet 1.9.1
(tests/data/make_control_flow_models.py) load with SymbolBlock.imports and mx.sym.load, give MXNet's outputs,
input gradients and parameter gradients, and are written back byte for byte."""
import json
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd
from mixnet.gluon.symbol_block import SymbolBlock

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "symbol")
MODELS = {"cf_foreach": ["data0", "data1"], "cf_while": ["data0", "data1"], "cf_cond": ["data"]}


def _array(spec):
    return mx.nd.array(np.array(spec["data"], dtype=np.float32).reshape(spec["shape"]))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_mxnet_control_flow_model_matches_mxnet(name):
    blk = SymbolBlock.imports(os.path.join(DATA, f"{name}-symbol.json"), MODELS[name],
                              os.path.join(DATA, f"{name}-0000.params"))
    with open(os.path.join(DATA, f"{name}-io.json")) as f:
        calls = json.load(f)
    for call in calls:                           # cf_cond: one call per branch
        xs = [_array(x) for x in call["inputs"]]
        for x in xs:
            x.attach_grad()
        with autograd.record(train_mode=False):
            outs = blk(*xs)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        heads = [mx.nd.array(np.array(h, dtype=np.float32).reshape(o.shape)) for h, o in zip(call["head_grads"], outs)]
        autograd.backward(outs, heads, train_mode=False)
        rows = call["valid_rows"]
        for k, (o, ref) in enumerate(zip(outs, call["outputs"])):
            want = np.array(ref["data"]).reshape(ref["shape"])
            got = o.asnumpy()
            if k == 0 and rows is not None:      # while_loop: MXNet's padding rows are uninitialized memory
                assert not got[rows:].any(), "mixnet pads with zero rows"
                got, want = got[:rows], want[:rows]
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        for x, g in zip(xs, call["input_grads"]):
            np.testing.assert_allclose(x.grad.asnumpy().ravel(), g, rtol=1e-4, atol=1e-6)
        params = blk.collect_params()
        for key, g in call["param_grads"].items():
            np.testing.assert_allclose(params[key].grad().asnumpy().ravel(), g, rtol=1e-4, atol=1e-5, err_msg=key)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_mxnet_control_flow_json_is_written_back_byte_for_byte(name):
    path = os.path.join(DATA, f"{name}-symbol.json")
    with open(path) as f:
        text = f.read()
    assert '"subgraphs"' in text
    assert mx.sym.load(path).tojson() == text


def test_mxnet_foreach_model_shapes_and_printed_subgraph():
    sym = mx.sym.load(os.path.join(DATA, "cf_foreach-symbol.json"))
    args, outs, _ = sym.infer_shape(data0=(7, 2, 3), data1=(2, 4))
    assert outs == [(7, 2, 4), (2, 4)]
    assert dict(zip(sym.list_arguments(), args))["rnn_w"] == (4, 4)
    text = str(sym)
    body = text[text.index("  body:"):]
    assert "    var rnn_w" in body and "__subgraph_name__" not in text and "subgraph_name" not in text
