"""Makes the control-flow reference files for tests/symbol/test_import_mxnet_control_flow.py with real MXNet 1.9.1
(never run by the tests themselves).

    MXNET_MKLDNN_ENABLED=0 ~/.venvs/mxref/bin/python tests/data/make_control_flow_models.py

Writes into tests/data/symbol/, for three small hybridized Gluon blocks:
* cf_foreach: Dense, then F.contrib.foreach over an RNN-like cell whose body uses the parameters `w` and `b`
  (they become extra inputs of the `_foreach` node); outputs the stacked outputs and the final state;
* cf_while: F.contrib.while_loop whose iteration count depends on the data, func using the parameter `s`;
  outputs the (padded) step outputs and the final loop variables;
* cf_cond: F.contrib.cond on the sign of a sum, both branches using the parameter `s`, called on two inputs so
  both branches are recorded.
Each gets <name>-symbol.json / <name>-0000.params from HybridBlock.export() and <name>-io.json: per call, the
inputs, head gradients, MXNet's outputs (rows of while_loop padding, which MXNet leaves uninitialized, are
only the first "valid_rows" rows are recorded meaningfully), input gradients and parameter gradients, recorded
eagerly (the hybridized forward is checked to agree).
"""
import json
import logging
import os

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon
from mxnet.gluon import nn

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "symbol")


class ForeachRNN(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.proj = nn.Dense(4, flatten=False)
            self.w = self.params.get("w", shape=(4, 4))
            self.b = self.params.get("b", shape=(4,))

    def hybrid_forward(self, F, x, h0, w, b):
        xs = self.proj(x)                                   # (T, N, 4)

        def body(xt, states):
            h = F.tanh(F.broadcast_add(F.dot(states[0], w) + xt, b))
            return h * 2, [h]
        outs, states = F.contrib.foreach(body, xs, [h0])
        return outs, states[0]


class WhileDoubling(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.s = self.params.get("s", shape=(3,))

    def hybrid_forward(self, F, i, x, s):
        # grows x while its sum stays small: the number of steps depends on the data
        outs, (i_end, x_end) = F.contrib.while_loop(
            lambda i, x: F.broadcast_logical_and(i < 5, x.sum() < 2.5),
            lambda i, x: (F.broadcast_mul(x, s), [i + 1, x + F.abs(F.broadcast_mul(x, s)) + 0.3]),
            [i, x], max_iterations=5)
        return outs, i_end, x_end


class CondBranch(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.s = self.params.get("s", shape=(3,))

    def hybrid_forward(self, F, x, s):
        return F.contrib.cond(x.sum() > 0, lambda: F.broadcast_mul(x, s) * 2,
                              lambda: F.sin(F.broadcast_sub(x, s)))


def randomize(net, rng):
    for p in net.collect_params().values():
        p.set_data(mx.nd.array(rng.uniform(-0.8, 0.8, p.shape)))


def as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def record(net, inputs, rng, counted):
    arrays = [mx.nd.array(x) for x in inputs]
    for a in arrays:
        a.attach_grad()
    with autograd.record(train_mode=False):
        outs = as_list(net(*arrays))
    heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outs]
    steps = int(outs[1].asscalar() - inputs[0][0]) if counted else None    # while_loop: steps from the counter
    if counted:                                   # no gradient from the padding rows
        heads[0][steps:] = 0
    autograd.backward(outs, [mx.nd.array(h) for h in heads], train_mode=False)
    return {
        "inputs": [{"shape": list(x.shape), "data": x.ravel().tolist()} for x in inputs],
        "head_grads": [h.ravel().tolist() for h in heads],
        "outputs": [{"shape": list(o.shape), "data": o.asnumpy().ravel().tolist()} for o in outs],
        "valid_rows": steps,
        "input_grads": [a.grad.asnumpy().ravel().tolist() for a in arrays],
        "param_grads": {k: p.grad().asnumpy().ravel().tolist() for k, p in net.collect_params().items()},
    }


def export(net, name, calls, rng):
    net.initialize()
    net(*[mx.nd.array(x) for x in calls[0][0]])              # eager: infers the deferred shapes
    randomize(net, rng)
    # Recorded eagerly: MXNet 1.9.1's hybridized _while_loop fails under autograd.record ("Assigning to NDArrays
    # that are already in a computational graph"). The hybridized forward must agree (checked here).
    records = [record(net, inputs, rng, counted) for inputs, counted in calls]
    net.hybridize()
    for (inputs, _), rec in zip(calls, records):
        outs = as_list(net(*[mx.nd.array(x) for x in inputs]))
        for o, ref in zip(outs, rec["outputs"]):
            got, want = o.asnumpy(), np.array(ref["data"], np.float32).reshape(ref["shape"])
            rows = rec["valid_rows"] if o is outs[0] and rec["valid_rows"] is not None else len(got)
            np.testing.assert_allclose(got[:rows], want[:rows], rtol=1e-5, atol=1e-6)
    with open(os.path.join(HERE, name + "-io.json"), "w") as f:
        json.dump(records, f)
    net.export(os.path.join(HERE, name))


def main():
    logging.disable(logging.WARNING)
    os.makedirs(HERE, exist_ok=True)
    rng = np.random.RandomState(3)
    mx.random.seed(3)
    f32 = np.float32
    export(ForeachRNN(prefix="rnn_"), "cf_foreach",
           [([rng.uniform(-1, 1, (5, 2, 3)).astype(f32), rng.uniform(-1, 1, (2, 4)).astype(f32)], False)], rng)
    export(WhileDoubling(prefix="loop_"), "cf_while",
           [([np.zeros((1,), f32), np.array([0.1, 0.2, 0.05], f32)], True)], rng)
    export(CondBranch(prefix="branch_"), "cf_cond",
           [([np.array([0.5, -0.2, 0.9], f32)], False), ([np.array([-0.5, 0.2, -0.9], f32)], False)], rng)


if __name__ == "__main__":
    main()
