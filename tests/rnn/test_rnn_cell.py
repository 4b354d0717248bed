"""mx.rnn's symbolic cells against what real MXNet 1.9.1 gives (mxnet_rnn_reference.json, written by
make_mxnet_reference.py): parameter and node names, output values of unrolled cells, FusedRNNCell's packed layout;
and the fused cell against its unfused stack (outputs and input gradients through mx.mod.Module)."""
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mixnet as mx
from mixnet.base import MXNetError

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mxnet_rnn_reference.json")) as _f:
    REF = json.load(_f)
N, T, I, H = REF["sizes"]


def _values(shape, phase):
    return np.sin(np.arange(int(np.prod(shape)), dtype=np.float64) * 0.37 + phase).reshape(shape).astype(np.float32)


def _run(sym, shapes):
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    args = {name: mx.nd.array(_values(shape, k)) for k, (name, shape) in
            enumerate(zip(sym.list_arguments(), arg_shapes))}
    return [o.asnumpy() for o in sym.bind(mx.current_context(), args).forward()]   # where args are


def _cell(kind):
    if kind == "lstm":
        return mx.rnn.LSTMCell(H, prefix="rnn_")
    if kind == "gru":
        return mx.rnn.GRUCell(H, prefix="rnn_")
    return mx.rnn.RNNCell(H, activation=kind, prefix="rnn_")


@pytest.mark.parametrize("kind", ["tanh", "relu", "lstm", "gru"])
def test_unrolled_cell_matches_mxnet(kind):
    ref = REF["cells"][kind]
    outputs, states = _cell(kind).unroll(T, mx.sym.var("data"), layout="NTC", merge_outputs=True)
    group = mx.sym.Group([outputs] + states)
    assert group.list_arguments() == ref["arguments"]
    assert group.list_outputs()[1:] == ref["outputs"][1:]          # the first is an auto-named Concat
    named = {n for n in outputs.get_internals().list_outputs() if n.startswith("rnn_")}
    assert named == {n for n in ref["internals"] if n.startswith("rnn_")}
    for got, want in zip(_run(group, {"data": (N, T, I)}), ref["values"]):
        np.testing.assert_allclose(got, np.array(want, dtype=np.float32), rtol=1e-5, atol=1e-6)


def test_bidirectional_cell_matches_mxnet():
    ref = REF["bidirectional"]
    cell = mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(H, prefix="l_"), mx.rnn.GRUCell(H, prefix="r_"),
                                    output_prefix="bi_")
    outputs, states = cell.unroll(T, mx.sym.var("data"), layout="NTC", merge_outputs=False)
    assert len(states) == 2 and len(states[0]) == 2 and len(states[1]) == 1      # nested, as MXNet's
    group = mx.sym.Group(outputs)
    assert group.list_arguments() == ref["arguments"] and group.list_outputs() == ref["outputs"]
    for got, want in zip(_run(group, {"data": (N, T, I)}), ref["values"]):
        np.testing.assert_allclose(got, np.array(want, dtype=np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("key", sorted(REF["fused"]))
def test_fused_unpack_is_mxnets_layout_and_pack_inverts_it(key):
    mode, layers, bi = key.rsplit("-", 2)
    cell = mx.rnn.FusedRNNCell(H, num_layers=int(layers), mode=mode, bidirectional=bi == "True", prefix="f_")
    ref = REF["fused"][key]
    size = sum(int(np.prod(np.shape(v))) for v in ref.values())
    flat = mx.nd.arange(size)
    unpacked = cell.unpack_weights({"f_parameters": flat, "other": flat})
    assert set(unpacked) == set(ref) | {"other"}
    for name, want in ref.items():
        np.testing.assert_array_equal(unpacked[name].asnumpy(), np.array(want, dtype=np.float32))
    np.testing.assert_array_equal(cell.pack_weights(unpacked)["f_parameters"].asnumpy(), flat.asnumpy())
    with pytest.raises(MXNetError, match="fits no input size"):
        cell.unpack_weights({"f_parameters": mx.nd.arange(size + 1)})


def test_encode_sentences_matches_mxnet():
    codes, vocab = mx.rnn.encode_sentences([["a", "b", "c"], ["b", "x", "c"]], invalid_label=1, start_label=0)
    assert codes == REF["encode"]["codes"] and vocab == REF["encode"]["vocab"]
    codes, vocab = mx.rnn.encode_sentences([["a", "q"], ["r"]], vocab={"a": 1}, unknown_token="UNK")
    assert codes == [[1, 0], [0]] and vocab == {"a": 1, "UNK": 0}
    with pytest.raises(MXNetError, match="unknown token 'q'"):
        mx.rnn.encode_sentences([["q"]], vocab={"a": 1})


def _module(sym, dshape, grad_req="write"):
    mod = mx.mod.Module(sym, label_names=None, context=mx.current_context())     # where the test's arrays are
    mod.bind(data_shapes=[("data", dshape)], inputs_need_grad=True, grad_req=grad_req)
    return mod


@settings(max_examples=6, deadline=None)
@given(mode=st.sampled_from(["lstm", "gru", "rnn_tanh", "rnn_relu"]), layers=st.integers(1, 2),
       bidirectional=st.booleans(), batch=st.integers(1, 3), steps=st.integers(1, 3))
def test_fused_cell_equals_its_unfused_stack(mode, layers, bidirectional, batch, steps):
    fused = mx.rnn.FusedRNNCell(H, num_layers=layers, mode=mode, bidirectional=bidirectional, prefix="")
    stack = fused.unfuse()
    dshape = (batch, steps, I)
    mods = []
    for cell in (fused, stack):
        out, _ = cell.unroll(steps, mx.sym.var("data"), layout="NTC", merge_outputs=True)
        mods.append(_module(out, dshape))
    mods[0].init_params()
    args, aux = mods[0].get_params()
    if mode == "lstm":      # init.FusedRNN gives the forget gates' biases forget_bias (1.0)
        np.testing.assert_array_equal(fused.unpack_weights(args)["l0_i2h_f_bias"].asnumpy(), np.ones(H))
    mods[1].set_params(stack.pack_weights(fused.unpack_weights(args)), aux)
    batch_data = mx.io.DataBatch(data=[mx.nd.array(_values(dshape, 0.5))])
    head = mx.nd.array(_values((batch, steps, H * (2 if bidirectional else 1)), 1.5))
    results = []
    for mod in mods:
        mod.forward(batch_data, is_train=True)
        mod.backward(out_grads=[head])
        results.append((mod.get_outputs()[0].asnumpy(), mod.get_input_grads()[0].asnumpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_modifier_cells_and_stepping():
    data = [mx.sym.var(f"t{i}") for i in range(T)]
    base = mx.rnn.GRUCell(H, prefix="g_")
    residual = mx.rnn.ResidualCell(base)
    outputs, _ = residual.unroll(T, data)
    assert [o.name for o in outputs] == [f"g_t{i}_out_plus_residual" for i in range(T)]
    with pytest.raises(MXNetError, match="modifier"):
        base.begin_state()
    shapes = {f"t{i}": (N, H) for i in range(T)}
    assert mx.sym.Group(outputs).infer_shape(**shapes)[1] == [(N, H)] * T
    zoneout = mx.rnn.ZoneoutCell(mx.rnn.LSTMCell(H, prefix="z_"), zoneout_outputs=0.5, zoneout_states=0.5)
    outputs, states = zoneout.unroll(T, data)
    # in inference Dropout keeps every unit, so zoneout keeps the new values: the plain LSTM's numbers
    plain, _ = mx.rnn.LSTMCell(H, prefix="z_").unroll(T, data)
    for got, want in zip(_run(mx.sym.Group(outputs), shapes), _run(mx.sym.Group(plain), shapes)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(MXNetError, match="unfuse"):
        mx.rnn.ZoneoutCell(mx.rnn.FusedRNNCell(H))
    with pytest.raises(MXNetError, match="cannot be stepped"):
        mx.rnn.FusedRNNCell(H)(data[0], [])
    seq = mx.rnn.SequentialRNNCell()
    seq.add(mx.rnn.LSTMCell(H, prefix="a_"))
    seq.add(mx.rnn.DropoutCell(0.5))
    seq.add(mx.rnn.RNNCell(H, prefix="b_"))
    out, states = seq(data[0], seq.begin_state())
    assert len(states) == 3 and [s["shape"] for s in seq.state_info] == [(0, H)] * 3
    assert out.infer_shape(t0=(N, I))[1] == [(N, H)]


def test_shared_params_and_variable_begin_state():
    params = mx.rnn.RNNParams("shared_")
    a, b = mx.rnn.LSTMCell(H, prefix="a_", params=params), mx.rnn.LSTMCell(H, prefix="b_", params=params)
    out_a, _ = a(mx.sym.var("x"), a.begin_state())
    out_b, _ = b(mx.sym.var("x"), b.begin_state(func=mx.sym.Variable))
    assert [n for n in out_a.list_arguments() if "weight" in n] == ["shared_i2h_weight", "shared_h2h_weight"]
    assert "b_begin_state_0" in out_b.list_arguments()
    assert mx.sym.var("b_begin_state_0", __layout__="NC").attr("__layout__") == "NC"
