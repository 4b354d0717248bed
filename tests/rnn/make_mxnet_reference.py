"""Writes mxnet_rnn_reference.json, what real MXNet 1.9.1's `mx.rnn` gives, for test_rnn_cell.py.

Run with MXNet 1.9.1 installed (not mixnet): python tests/rnn/make_mxnet_reference.py
Weights and inputs are deterministic (sines of aranges), so the test rebuilds them without the file."""
import json
import os

import mxnet as mx
import numpy as np

N, T, I, H = 2, 3, 3, 4


def values(shape, phase):
    return np.sin(np.arange(int(np.prod(shape)), dtype=np.float64) * 0.37 + phase).reshape(shape).astype(np.float32)


def make_cell(kind):
    if kind == "lstm":
        return mx.rnn.LSTMCell(H, prefix="rnn_")
    if kind == "gru":
        return mx.rnn.GRUCell(H, prefix="rnn_")
    return mx.rnn.RNNCell(H, activation=kind, prefix="rnn_")


def run(sym, shapes):
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    args = {name: mx.nd.array(values(shape, k)) for k, (name, shape) in
            enumerate(zip(sym.list_arguments(), arg_shapes))}
    exe = sym.bind(mx.cpu(), args)
    return [o.asnumpy().tolist() for o in exe.forward()]


def cells():
    out = {}
    for kind in ("tanh", "relu", "lstm", "gru"):
        cell = make_cell(kind)
        outputs, states = cell.unroll(T, mx.sym.var("data"), layout="NTC", merge_outputs=True)
        group = mx.sym.Group([outputs] + states)
        out[kind] = {"arguments": group.list_arguments(), "outputs": group.list_outputs(),
                     "internals": outputs.get_internals().list_outputs(),
                     "values": run(group, {"data": (N, T, I)})}
    return out


def bidirectional():
    cell = mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(H, prefix="l_"), mx.rnn.GRUCell(H, prefix="r_"),
                                    output_prefix="bi_")
    outputs, _ = cell.unroll(T, mx.sym.var("data"), layout="NTC", merge_outputs=False)
    group = mx.sym.Group(outputs)
    return {"arguments": group.list_arguments(), "outputs": group.list_outputs(),
            "values": run(group, {"data": (N, T, I)})}


def fused():
    out = {}
    for mode, layers, bi in (("lstm", 2, True), ("gru", 1, False), ("rnn_tanh", 2, False)):
        cell = mx.rnn.FusedRNNCell(H, num_layers=layers, mode=mode, bidirectional=bi, prefix="f_")
        size = mx.sym.RNN(mx.sym.var("x"), state_size=H, num_layers=layers, mode=mode, bidirectional=bi,
                          name="r").infer_shape(x=(T, N, I))[0][1][0]
        unpacked = cell.unpack_weights({"f_parameters": mx.nd.arange(size)})
        out[f"{mode}-{layers}-{bi}"] = {k: v.asnumpy().tolist() for k, v in unpacked.items()}
    return out


def encode():
    res, vocab = mx.rnn.encode_sentences([["a", "b", "c"], ["b", "x", "c"]], invalid_label=1, start_label=0)
    return {"codes": res, "vocab": vocab}


if __name__ == "__main__":
    doc = {"sizes": [N, T, I, H], "cells": cells(), "bidirectional": bidirectional(), "fused": fused(),
           "encode": encode()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mxnet_rnn_reference.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print("wrote", path)
