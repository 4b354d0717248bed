"""Makes tests/data/gluon/rnn_reference.npz with real MXNet 1.9.1 (never run by the tests themselves):

    ~/.venvs/mxref/bin/python tests/data/make_rnn_reference.py

gluon.rnn layers (2-layer bidirectional LSTM, NTC GRU, tanh RNN) and cells unrolled with valid_length (LSTMCell,
GRUCell, BidirectionalCell, ResidualCell): parameters set from seeded uniforms in sorted-name order, one fixed
float32 input; stores the outputs, the first final state of each cell and the sorted parameter names.
tests/gluon/test_rnn.py rebuilds the same blocks with mixnet and compares.
"""
import os

import numpy as np
import mxnet as mx
from mxnet.gluon import rnn

HERE = os.path.dirname(os.path.abspath(__file__))
LAYERS = {"lstm": lambda: rnn.LSTM(3, 2, bidirectional=True), "gru": lambda: rnn.GRU(3, layout="NTC"),
          "rnn": lambda: rnn.RNN(3, activation="tanh")}
CELLS = {"lstmcell": lambda: rnn.LSTMCell(3), "grucell": lambda: rnn.GRUCell(3),
         "bicell": lambda: rnn.BidirectionalCell(rnn.LSTMCell(3), rnn.GRUCell(2)),
         "rescell": lambda: rnn.ResidualCell(rnn.GRUCell(2))}
VALID_LENGTH = [4, 2, 3]


def set_params(block):
    for i, (_, p) in enumerate(sorted(block.collect_params().items())):
        p.set_data(mx.nd.array(np.random.RandomState(i + 7).uniform(-0.5, 0.5, p.shape).astype("float32")))


def main():
    x = np.random.RandomState(0).uniform(-1, 1, (4, 3, 2)).astype("float32")      # TNC
    out = {"x": x, "valid_length": np.array(VALID_LENGTH, np.float32)}
    for tag, make in LAYERS.items():
        layer = make()
        layer.initialize()
        data = mx.nd.array(x if layer._layout == "TNC" else x.transpose(1, 0, 2))
        layer(data)
        set_params(layer)
        out[tag] = layer(data).asnumpy()
        out[tag + "_names"] = np.array(sorted(layer.collect_params().keys()))
    for tag, make in CELLS.items():
        cell = make()
        cell.initialize()
        data, valid = mx.nd.array(x.transpose(1, 0, 2)), mx.nd.array(VALID_LENGTH)
        cell.unroll(4, data, layout="NTC", merge_outputs=True, valid_length=valid)
        set_params(cell)
        outputs, states = cell.unroll(4, data, layout="NTC", merge_outputs=True, valid_length=valid)
        out[tag] = outputs.asnumpy()
        out[tag + "_state0"] = states[0].asnumpy()
        out[tag + "_names"] = np.array(sorted(cell.collect_params().keys()))
    np.savez(os.path.join(HERE, "gluon", "rnn_reference.npz"), **out)


if __name__ == "__main__":
    main()
