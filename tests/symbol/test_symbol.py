"""mixnet.symbol: the Symbol API, MXNet's naming, JSON byte-compatibility with MXNet 1.9.1, inference, the
printer, errors, and the executor."""
import os
import warnings

import numpy as np
import pytest

import mixnet as mx
from mixnet import symbol as sym
from mixnet.base import MXNetError

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "symbol")


@pytest.fixture(autouse=True)
def _fresh_names():
    with mx.name.NameManager():
        yield


def _read(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return f.read()


def test_json_byte_equal_to_mxnet_for_the_same_graph():
    # the same construction as built_symbol() in tests/data/make_symbol_models.py
    a = sym.var("a", shape=(2, 3), lr_mult=2.0)
    b = sym.var("b", dtype="float16", init=mx.init.Xavier())
    c = sym.elemwise_add(a, b) * 2
    c = 3 - c / 4
    f = sym.FullyConnected(c, num_hidden=4, name="fc1")
    g = sym.Activation(f, act_type="relu")
    h = sym.BatchNorm(g, fix_gamma=False, eps=1e-5)
    i = sym.Dropout(h, p=0.3)
    j = sym.swapaxes(i, dim1=0, dim2=1)
    k = sym.Reshape(j, shape=(-1,))
    s = sym.split(sym.reshape(k, shape=(2, -1)), num_outputs=2, axis=0)
    xs = [sym.var("x%d" % n) for n in range(11)]
    cat = sym.concat(*xs, dim=0)
    conv = sym.Convolution(sym.var("img"), kernel=(3, 3), num_filter=4, pad=(1, 1), no_bias=True)
    pool = sym.Pooling(conv, kernel=(2, 2), pool_type="avg", stride=(2, 2))
    sm = sym.softmax(sym.sum(pool, axis=(2, 3), keepdims=False), axis=-1)
    out = sym.Group([s[0], s[1], cat, sm, sym.broadcast_mul(a, a, name="sq") ** 2])
    assert out.tojson() == _read("built-symbol.json")


@pytest.mark.parametrize("name", ["built", "mlp", "cnn", "lstm"])
def test_mxnet_files_round_trip_byte_equal(name):
    text = _read(f"{name}-symbol.json")
    assert sym.load_json(text).tojson() == text


def test_save_load_atomic(tmp_path):
    x = sym.var("x")
    y = sym.exp(x) + 1
    path = tmp_path / "m-symbol.json"
    y.save(str(path))
    assert os.listdir(tmp_path) == ["m-symbol.json"]
    z = sym.load(str(path))
    assert z.tojson() == y.tojson()
    assert z.list_outputs() == ["_plusscalar0_output"]


def test_auto_naming_and_lists():
    a, b = sym.var("a"), sym.var("b")
    assert (a + b).name == "_plus0" and (a * 2).name == "_mulscalar0" and (-a).name == "_mulscalar1"
    assert (3 - a).name == "_rminusscalar0" and (2 ** a).name == "_rpower_scalar0"
    assert (a == 2).name == "_equal_scalar0" and abs(a).name == "abs0"
    assert sym.Concat(a, b).name == "concat0" and sym.concat(a, b).name == "concat1"
    fc = sym.FullyConnected(a, num_hidden=3)
    assert fc.name == "fullyconnected0"
    assert fc.list_arguments() == ["a", "fullyconnected0_weight", "fullyconnected0_bias"]
    assert sym.FullyConnected(a, num_hidden=3, no_bias=True).list_arguments() == ["a", "fullyconnected1_weight"]
    bn = sym.BatchNorm(fc, name="bn")
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_inputs()[-2:] == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_outputs() == ["bn_output"]
    assert "bn_gamma" in bn.list_arguments() and "bn_moving_mean" not in bn.list_arguments()
    sp = sym.split(a, num_outputs=3, name="sp")
    assert len(sp) == 3 and sp.list_outputs() == ["sp_output0", "sp_output1", "sp_output2"]
    assert sp["sp_output1"].list_outputs() == ["sp_output1"] and sp[2].list_outputs() == ["sp_output2"]
    with pytest.raises(ValueError):
        sp["nope"]
    g = sym.Group([fc, a])
    assert g.list_outputs() == ["fullyconnected0_output", "a"] and g.name is None
    assert repr(g) == "<Symbol group [fullyconnected0, a]>"
    assert fc.get_children().list_outputs() == ["a", "fullyconnected0_weight", "fullyconnected0_bias"]
    assert a.get_children() is None
    internals = bn.get_internals()
    assert "fullyconnected0_output" in internals.list_outputs()
    assert internals["fullyconnected0_output"].name == "fullyconnected0"
    with mx.name.Prefix("net_"):
        assert sym.Activation(a, act_type="relu").name == "net_activation0"


def test_arithmetic_broadcasts():
    a, b = sym.var("a"), sym.var("b")
    c = (a + b) * (a - b) / 2
    _, out, _ = c.infer_shape(a=(2, 3), b=(3,))
    assert out == [(2, 3)]
    res = c.eval(a=mx.nd.ones((2, 3)) * 3, b=mx.nd.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(res[0].asnumpy(), np.tile([4.0, 2.5, 0.0], (2, 1)))


def test_attributes():
    v = sym.var("v", shape=(0, 3), dtype="int32", init="zeros", wd_mult=0.5, attr={"foo": "bar"}, stype="default")
    assert v.list_attr() == {"__shape__": "(0, 3)", "__dtype__": "4", "__init__": "zeros", "__wd_mult__": "0.5",
                             "__storage_type__": "0", "foo": "bar"}
    assert v.attr("foo") == "bar" and v.attr("shape") is None
    with pytest.raises(ValueError, match="double underscores"):
        sym.var("w", foo=1)
    a = sym.var("a")
    fc = sym.FullyConnected(a, num_hidden=3, name="fc")
    assert fc.attr("num_hidden") == "3"
    assert fc.attr_dict()["fc"] == {"num_hidden": "3"}
    assert fc.attr_dict()["fc_weight"] == {"num_hidden": "3"}        # MXNet copies op attrs to made weights
    assert sym.softmax(a, axis=-1, temperature=None).list_attr() == {"axis": "-1", "temperature": "None"}
    assert sym.Cast(a, dtype=np.float16).list_attr() == {"dtype": "float16"}
    assert sym.clip(a, 0, 1.5).list_attr() == {"a_min": "0", "a_max": "1.5"}
    with mx.attribute.AttrScope(ctx_group="dev1"):
        assert sym.exp(a).attr("ctx_group") == "dev1"


def test_infer_shape_and_partial():
    a = sym.var("a")
    fc = sym.FullyConnected(a, num_hidden=3, name="fc")
    assert fc.infer_shape(a=(2, 5)) == ([(2, 5), (3, 5), (3,)], [(2, 3)], [])
    assert fc.infer_shape((2, 5)) == ([(2, 5), (3, 5), (3,)], [(2, 3)], [])
    assert fc.infer_shape_partial() == ([(), (), ()], [()], [])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert fc.infer_shape() == (None, None, None)
    assert "fc_weight" in str(w[0].message)
    bn = sym.BatchNorm(sym.Convolution(a, kernel=(3, 3), num_filter=4, name="conv"), name="bn")
    args, outs, aux = bn.infer_shape(a=(2, 3, 8, 8))
    assert args[1] == (4, 3, 3, 3) and outs == [(2, 4, 6, 6)] and aux == [(4,), (4,)]
    # MXNet's `+` is elementwise: the unknown operand b takes a's shape
    part = sym.Group([fc, a + sym.var("b")]).infer_shape_partial(a=(2, 5))
    assert part[0][3] == (2, 5) and part[1] == [(2, 3), (2, 5)]
    with pytest.raises(MXNetError, match="_plus"):
        (a + sym.var("b")).infer_shape(a=(2, 3), b=(4,))
    assert fc.infer_type(a="float16")[1] == [np.float16]
    assert fc.infer_type() == (None, None, None)


def test_printer_shows_user_lines():
    a = sym.var("a")
    y = sym.FullyConnected(a, num_hidden=3, name="fc")  # the line the printer must name
    line = y._outputs[0][0].location
    assert line.endswith(f"test_symbol.py:{test_printer_shows_user_lines.__code__.co_firstlineno + 2}")
    text = str(y)
    assert "fc = FullyConnected(a, fc_weight, fc_bias, num_hidden=3)" in text
    assert "test_symbol.py:" in text and text == y.debug_str()
    assert repr(y) == "<Symbol fc>"


@pytest.mark.parametrize("text, match", [
    ("{not json", "invalid JSON"),
    ("[]", "top level"),
    ('{"nodes": [], "heads": []}', "no heads"),
    ('{"nodes": [{"op": "null", "name": "a", "inputs": []}], "arg_nodes": [0], "heads": [[3, 0, 0]]}',
     "not an earlier node"),
    ('{"nodes": [{"op": "NoSuchOp", "name": "n0", "inputs": []}], "arg_nodes": [], "heads": [[0, 0, 0]]}',
     "'NoSuchOp'.*'n0'"),
    ('{"nodes": [{"op": "null", "name": "a", "inputs": []}, {"op": "Activation", "name": "act", '
     '"attrs": {"act_type": "__import__(\'os\')"}, "inputs": [[0, 0, 0]]}], "arg_nodes": [0], '
     '"heads": [[1, 0, 0]]}', "act_type"),
    ('{"nodes": [{"op": "null", "name": "a", "inputs": []}, {"op": "FullyConnected", "name": "fc", '
     '"attrs": {"num_hidden": "2", "bogus": "1"}, "inputs": [[0, 0, 0]]}], "arg_nodes": [0], '
     '"heads": [[1, 0, 0]]}', "bogus"),
])
def test_bad_json_errors(text, match):
    with pytest.raises(MXNetError, match=match):
        sym.load_json(text)


def test_old_files_load():
    # 0.8-style: "param" keys, 2-element entries, no node_row_ptr or version, auto-created weights
    old = ('{"nodes": [{"op": "null", "param": {}, "name": "data", "inputs": [], "backward_source_id": -1},'
           '{"op": "FullyConnected", "param": {"no_bias": "False", "num_hidden": "4"}, "name": "fc1",'
           ' "inputs": [[0, 0]], "backward_source_id": -1},'
           '{"op": "Activation", "param": {"act_type": "relu"}, "name": "relu1", "inputs": [[1, 0]]}],'
           ' "arg_nodes": [0], "heads": [[2, 0]]}')
    s = sym.load_json(old)
    assert s.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert s.infer_shape(data=(2, 3))[1] == [(2, 4)]
    # "attr" key (nnvm before 1.0) with a legacy hidden key
    s = sym.load_json('{"nodes": [{"op": "null", "name": "w", "attr": {"lr_mult": "0.5"}, "inputs": []}], '
                      '"arg_nodes": [0], "heads": [[0, 0, 0]], "attrs": {"mxnet_version": ["int", 10500]}}')
    assert s.attr("__lr_mult__") == "0.5"
    # omitted attributes take the op's defaults (BatchNorm eps=1e-3, fix_gamma=True)
    bn = sym.load_json('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "null", "name": "g", '
                       '"inputs": []}, {"op": "null", "name": "b", "inputs": []}, {"op": "null", "name": "m", '
                       '"inputs": []}, {"op": "null", "name": "v", "inputs": []}, {"op": "BatchNorm", "name": '
                       '"bn", "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 1], [4, 0, 1]]}], '
                       '"arg_nodes": [0, 1, 2, 3, 4], "heads": [[5, 0, 0]]}')
    node = bn._outputs[0][0]
    assert node.attrs["eps"] == 1e-3 and node.attrs["fix_gamma"] is True
    assert bn.list_auxiliary_states() == ["m", "v"]


def test_executor_bind_forward_backward():
    a = sym.var("a")
    fc = sym.FullyConnected(a, num_hidden=3, name="fc")
    ex = fc.simple_bind(mx.current_context(), a=(2, 4))                 # where the head gradient is
    assert sorted(ex.arg_dict) == ["a", "fc_bias", "fc_weight"] and sorted(ex.grad_dict) == sorted(ex.arg_dict)
    ex.arg_dict["a"][:] = 1
    ex.arg_dict["fc_weight"][:] = 0.5
    out = ex.forward(is_train=True)
    np.testing.assert_allclose(out[0].asnumpy(), np.full((2, 3), 2.0))
    ex.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(ex.grad_dict["a"].asnumpy(), np.full((2, 4), 1.5))
    np.testing.assert_allclose(ex.grad_arrays[1].asnumpy(), np.full((3, 4), 2.0))
    out = ex.forward(a=mx.nd.zeros((2, 4)))
    np.testing.assert_allclose(out[0].asnumpy(), np.zeros((2, 3)))
    args = {"a": mx.nd.ones((1, 4)), "fc_weight": mx.nd.ones((3, 4)), "fc_bias": mx.nd.zeros(3)}
    ex2 = fc.bind(mx.cpu(), args)
    np.testing.assert_allclose(ex2.forward()[0].asnumpy(), [[4, 4, 4]])
    assert ex2.grad_arrays == [None, None, None]
    res = fc.eval(ctx=mx.cpu(), **args)
    np.testing.assert_allclose(res[0].asnumpy(), [[4, 4, 4]])
    bn = sym.BatchNorm(sym.var("x"), name="bn")
    ex3 = bn.simple_bind(mx.cpu(), x=(4, 3))
    assert sorted(ex3.aux_dict) == ["bn_moving_mean", "bn_moving_var"]
    ex3.aux_dict["bn_moving_var"][:] = 1
    ex3.arg_dict["x"][:] = mx.nd.array(np.arange(12, dtype=np.float32).reshape(4, 3))
    ex3.forward(is_train=True)
    assert ex3.aux_dict["bn_moving_mean"].asnumpy()[0] != 0      # running statistics updated in place
