"""Makes the reference files for tests/symbol/ with real MXNet 1.9.1 (never run by the tests themselves).

    MXNET_MKLDNN_ENABLED=0 ~/.venvs/mxref/bin/python tests/data/make_symbol_models.py

Writes into tests/data/symbol/:
* <name>-symbol.json, <name>-0000.params: HybridBlock.export() of three small Gluon models
  (mlp: Dense/Activation/Dropout/Flatten; cnn: Convolution/BatchNorm/Pooling/LeakyReLU/Concat/Reshape/SwapAxis/
  softmax; lstm: Embedding/LSTM (fused RNN op, _rnn_param_concat, _zeros begin states)/SequenceMask/
  SequenceLast/Dense);
* <name>-io.json: fixed inputs, a fixed head gradient, MXNet's outputs and the input and parameter gradients
  (recorded with train_mode=False, so Dropout is the identity and BatchNorm uses its running statistics);
* built-symbol.json: a graph built with the mx.sym API (tests rebuild it with mixnet and compare bytes).
"""
import json
import os
import subprocess
import sys

import logging

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon
from mxnet.gluon import nn

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "symbol")


class MLP(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.flat = nn.Flatten()
            self.d1 = nn.Dense(8, activation="relu")
            self.drop = nn.Dropout(0.5)
            self.d2 = nn.Dense(6)
            self.act = nn.Activation("tanh")
            self.d3 = nn.Dense(3, flatten=False)

    def hybrid_forward(self, F, x):
        return self.d3(self.act(self.d2(self.drop(self.d1(self.flat(x))))))


class CNN(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.conv = nn.Conv2D(4, 3, padding=1)
            self.bn = nn.BatchNorm()
            self.lrelu = nn.LeakyReLU(0.1)
            self.maxp = nn.MaxPool2D(2)
            self.avgp = nn.AvgPool2D(2)
            self.gap = nn.GlobalAvgPool2D()
            self.out = nn.Dense(5)

    def hybrid_forward(self, F, x):
        h = self.lrelu(self.bn(self.conv(x)))
        h = F.concat(self.maxp(h), self.avgp(h), dim=1)           # (N, 8, 4, 4)
        g = self.gap(h).reshape((0, -1))                             # (N, 8)
        s = F.swapaxes(h.reshape((0, 0, -1)), 1, 2)                  # (N, 16, 8)
        s = F.softmax(s, axis=-1).sum(axis=1)                        # (N, 8)
        return self.out(g * s)


class SeqModel(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.emb = nn.Embedding(11, 4)
            self.lstm = gluon.rnn.LSTM(5, num_layers=2)
            self.out = nn.Dense(3)

    def hybrid_forward(self, F, tokens, lengths):
        h = self.lstm(self.emb(tokens))                              # (T, N, 5), TNC
        masked = F.SequenceMask(h, lengths, use_sequence_length=True)
        last = F.SequenceLast(masked, lengths, use_sequence_length=True)
        return self.out(last) + F.slice_axis(masked.mean(axis=0), axis=1, begin=0, end=3)


def randomize(net, rng):
    for name, p in net.collect_params().items():
        value = rng.uniform(-0.6, 0.6, p.shape)
        if name.endswith("running_var"):
            value = rng.uniform(0.5, 1.5, p.shape)
        p.set_data(mx.nd.array(value, dtype=p.dtype))


def export(net, name, inputs, grad_inputs, rng, train_mode=False):
    net.initialize()
    with autograd.record(train_mode=train_mode):
        net(*[mx.nd.array(x, dtype=x.dtype) for x in inputs])      # eager: infers the deferred shapes
    randomize(net, rng)
    arrays = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
    for i in grad_inputs:
        arrays[i].attach_grad()
    # Reference numbers come from the eager (not hybridized) model: MXNet 1.9.1 with MXNET_MKLDNN_ENABLED=0
    # cannot run the fused LSTM on CPU outside training mode ("in_data.size() == num_inputs (4 vs. 3)").
    with autograd.record(train_mode=train_mode):
        out = net(*arrays)
    head = rng.uniform(-1, 1, out.shape).astype(np.float32)
    # backward in the forward's mode: MXNet's default backward(train_mode=True) after a predict-mode forward
    # mixes batch statistics into BatchNorm's gradient (a quirk mixnet does not copy).
    out.backward(mx.nd.array(head), train_mode=train_mode)
    prefix = os.path.join(HERE, name)
    record = {
        "inputs": [{"shape": list(x.shape), "dtype": str(x.dtype), "data": x.ravel().tolist()} for x in inputs],
        "head_grad": head.ravel().tolist(),
        "output": {"shape": list(out.shape), "data": out.asnumpy().ravel().tolist()},
        "input_grads": {str(i): arrays[i].grad.asnumpy().ravel().tolist() for i in grad_inputs},
        "param_grads": {k: p.grad().asnumpy().ravel().tolist() for k, p in net.collect_params().items()
                        if p.grad_req != "null"},
    }
    with open(prefix + "-io.json", "w") as f:
        json.dump(record, f)
    net.hybridize()
    net._build_cache(*[mx.nd.array(x, dtype=x.dtype) for x in inputs])   # the graph export() writes, unrun
    net.export(prefix)


def built_symbol():
    a = mx.sym.var("a", shape=(2, 3), lr_mult=2.0)
    b = mx.sym.var("b", dtype="float16", init=mx.init.Xavier())
    c = mx.sym.elemwise_add(a, b) * 2
    c = 3 - c / 4
    f = mx.sym.FullyConnected(c, num_hidden=4, name="fc1")
    g = mx.sym.Activation(f, act_type="relu")
    h = mx.sym.BatchNorm(g, fix_gamma=False, eps=1e-5)
    i = mx.sym.Dropout(h, p=0.3)
    j = mx.sym.swapaxes(i, dim1=0, dim2=1)
    k = mx.sym.Reshape(j, shape=(-1,))
    s = mx.sym.split(mx.sym.reshape(k, shape=(2, -1)), num_outputs=2, axis=0)
    xs = [mx.sym.var("x%d" % n) for n in range(11)]
    cat = mx.sym.concat(*xs, dim=0)
    conv = mx.sym.Convolution(mx.sym.var("img"), kernel=(3, 3), num_filter=4, pad=(1, 1), no_bias=True)
    pool = mx.sym.Pooling(conv, kernel=(2, 2), pool_type="avg", stride=(2, 2))
    sm = mx.sym.softmax(mx.sym.sum(pool, axis=(2, 3), keepdims=False), axis=-1)
    return mx.sym.Group([s[0], s[1], cat, sm, mx.sym.broadcast_mul(a, a, name="sq") ** 2])


def main():
    logging.disable(logging.WARNING)
    os.makedirs(HERE, exist_ok=True)
    if sys.argv[1:] == ["lstm"]:
        rng = np.random.RandomState(11)
        mx.random.seed(11)
        tokens = rng.randint(0, 11, (6, 3)).astype(np.float32)
        lengths = np.array([6, 3, 1], dtype=np.float32)
        export(SeqModel(prefix="seq_"), "lstm", [tokens, lengths], [], rng, train_mode=True)
        return
    rng = np.random.RandomState(7)
    mx.random.seed(7)
    x = rng.uniform(-1, 1, (4, 2, 5)).astype(np.float32)
    export(MLP(prefix="mlp_"), "mlp", [x], [0], rng)
    x = rng.uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32)
    export(CNN(prefix="cnn_"), "cnn", [x], [0], rng)
    with open(os.path.join(HERE, "built-symbol.json"), "w") as f:
        f.write(built_symbol().tojson())
    # MXNet 1.9.1's fused RNN op fails on CPU with MXNET_MKLDNN_ENABLED=0 ("in_data.size() == num_inputs
    # (4 vs. 3)"), so the LSTM model is made in a second process with oneDNN on, in training mode (the model has
    # no dropout or batch norm, so that changes nothing).
    subprocess.run([sys.executable, os.path.abspath(__file__), "lstm"], check=True,
                   env=dict(os.environ, MXNET_MKLDNN_ENABLED="1"))


if __name__ == "__main__":
    main()
