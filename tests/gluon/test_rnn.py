"""gluon.rnn against MXNet 1.9.1's recorded results (tests/data/make_rnn_reference.py): the fused layers and
the cells unrolled with valid_length give MXNet's outputs and states, with MXNet's parameter names; plus the
layer's call conventions and save_parameters names."""
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet.gluon import rnn

REF = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "gluon", "rnn_reference.npz"))
LAYERS = {"lstm": lambda: rnn.LSTM(3, 2, bidirectional=True), "gru": lambda: rnn.GRU(3, layout="NTC"),
          "rnn": lambda: rnn.RNN(3, activation="tanh")}
CELLS = {"lstmcell": lambda: rnn.LSTMCell(3), "grucell": lambda: rnn.GRUCell(3),
         "bicell": lambda: rnn.BidirectionalCell(rnn.LSTMCell(3), rnn.GRUCell(2)),
         "rescell": lambda: rnn.ResidualCell(rnn.GRUCell(2))}


def _set_params(block):
    for i, (_, p) in enumerate(sorted(block.collect_params().items())):
        p.set_data(mx.nd.array(np.random.RandomState(i + 7).uniform(-0.5, 0.5, p.shape).astype("float32")))


def _names(block):
    """Names without the auto-numbered first prefix (its counter depends on what the process made before)."""
    return [n.split("_", 1)[1] if n.split("_", 1)[0][-1].isdigit() else n
            for n in sorted(block.collect_params().keys())]


def _ref_names(tag):
    return [n.split("_", 1)[1] if n.split("_", 1)[0][-1].isdigit() else n for n in REF[tag + "_names"]]


@pytest.mark.parametrize("tag", sorted(LAYERS))
def test_layer_matches_mxnet(tag):
    layer = LAYERS[tag]()
    layer.initialize()
    x = REF["x"] if layer._layout == "TNC" else REF["x"].transpose(1, 0, 2)
    layer(mx.nd.array(x))
    _set_params(layer)
    assert _names(layer) == _ref_names(tag)
    np.testing.assert_allclose(layer(mx.nd.array(x)).asnumpy(), REF[tag], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("tag", sorted(CELLS))
def test_cell_unroll_with_valid_length_matches_mxnet(tag):
    cell = CELLS[tag]()
    cell.initialize()
    data, valid = mx.nd.array(REF["x"].transpose(1, 0, 2)), mx.nd.array(REF["valid_length"])
    cell.unroll(4, data, layout="NTC", merge_outputs=True, valid_length=valid)
    _set_params(cell)
    assert _names(cell) == _ref_names(tag)
    outputs, states = cell.unroll(4, data, layout="NTC", merge_outputs=True, valid_length=valid)
    np.testing.assert_allclose(outputs.asnumpy(), REF[tag], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states[0].asnumpy(), REF[tag + "_state0"], rtol=1e-5, atol=1e-6)


def test_layer_returns_states_only_when_given():
    layer = rnn.GRU(4, num_layers=2)
    layer.initialize()
    x = mx.nd.ones((3, 2, 5))
    out = layer(x)
    assert out.shape == (3, 2, 4)
    out, states = layer(x, layer.begin_state(2))
    assert out.shape == (3, 2, 4) and [s.shape for s in states] == [(2, 2, 4)]
    assert layer.l0_i2h_weight.shape == (12, 5) and layer.l1_i2h_weight.shape == (12, 4)
    with pytest.raises(mx.base.MXNetError, match="invalid recurrent state shape"):
        layer(x, mx.nd.zeros((2, 3, 4)))


def test_save_parameters_uses_mxnets_unfused_names(tmp_path):
    for layer, want in ((rnn.LSTM(2, input_size=3), "_unfused.0.i2h_weight"),
                        (rnn.LSTM(2, input_size=3, bidirectional=True), "_unfused.0.r_cell.h2h_bias")):
        layer.initialize()
        assert want in layer._collect_params_with_prefix()
        path = str(tmp_path / "p.params")
        layer.save_parameters(path)
        again = type(layer)(2, input_size=3, bidirectional=layer._dir == 2)
        again.load_parameters(path)
        for p, q in zip(layer.collect_params().values(), again.collect_params().values()):
            np.testing.assert_array_equal(p.data().asnumpy(), q.data().asnumpy())
