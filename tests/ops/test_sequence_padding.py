"""Padding invariance of every sequence-aware op, layer, loss and attention block: outputs on the valid region and
gradients (parameters whole, inputs on valid steps, exactly 0 on padded steps) do not change when the padding is
zeros, NaN or 1e30, eager and hybridized (mx.test_utils.check_padding_invariance)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import gluon, nd
from mixnet.gluon.contrib.nn import DotProductAttention
from mixnet.test_utils import check_padding_invariance


class OpNet(gluon.HybridBlock):
    """A block that applies fn(F, *inputs): one op under test, hybridizable."""

    def __init__(self, fn):
        super().__init__()
        self._fn = fn

    def hybrid_forward(self, F, *args):
        return self._fn(F, *args)


def _data(layout, shape_tail=(3,), seed=0, b=3, t=5):
    rng = np.random.default_rng(seed)
    shape = (b, t) + shape_tail if layout == "NTC" else (t, b) + shape_tail
    return nd.array(rng.normal(size=shape))


LENGTH = [5, 2, 0]          # a full, a short and an empty sequence


def _seq(op, **attrs):
    return lambda F, x, length: getattr(F, op)(x, length, use_sequence_length=True, **attrs)


SEQ_OPS = [("SequenceMask", {}), ("SequenceMask", {"value": -1.0}), ("SequenceLast", {}), ("SequenceReverse", {}),
           ("SequenceSum", {}), ("SequenceMean", {})]


@pytest.mark.parametrize("op,attrs,layout", [(op, a, layout) for op, a in SEQ_OPS for layout in ("NTC", "TNC")
                                             if not (op == "SequenceReverse" and layout == "NTC")])  # axis 0 only
def test_sequence_ops(op, attrs, layout):
    axis = layout.index("T")
    length = nd.array([5, 2, 1] if op == "SequenceLast" else LENGTH)
    check_padding_invariance(OpNet(_seq(op, axis=axis, **attrs)), [_data(layout), length], length, axis=axis)


@pytest.mark.parametrize("kind", ["softmax", "log_softmax"])
@pytest.mark.parametrize("layout", ["NTC", "TNC"])
def test_softmax_with_length(kind, layout):
    axis = layout.index("T")
    length = nd.array(LENGTH, dtype="int32")
    net = OpNet(lambda F, x, n: getattr(F, kind)(x, n, axis=axis, use_length=True))
    check_padding_invariance(net, [_data(layout, shape_tail=()), length], length, axis=axis)


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
@pytest.mark.parametrize("sparse", [True, False], ids=["sparse", "dense"])
def test_sequence_softmax_ce_loss(layout, sparse):
    rng = np.random.default_rng(1)
    axis = layout.index("T")
    pred = _data(layout, shape_tail=(4,))
    classes = rng.integers(0, 4, pred.shape[:2])
    label = nd.array(classes) if sparse else nd.array(np.eye(4)[classes])
    length = nd.array(LENGTH)
    loss = gluon.loss.SequenceSoftmaxCELoss(sparse_label=sparse, layout=layout)
    check_padding_invariance(loss, [pred, label, length], length, axis=axis)


def test_dot_product_attention():
    rng = np.random.default_rng(2)
    q, k, v = (nd.array(rng.normal(size=s)) for s in ((3, 4, 2), (3, 5, 2), (3, 5, 3)))
    qlen, klen = nd.array([4, 1, 3]), nd.array([5, 2, 0])
    check_padding_invariance(DotProductAttention(), [q, k, v, klen, qlen], {0: qlen, 1: klen, 2: klen})


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("cell", [gluon.rnn.RNN, gluon.rnn.LSTM, gluon.rnn.GRU], ids=["RNN", "LSTM", "GRU"])
def test_rnn_layers(cell, bidirectional, layout):
    layer = cell(4, num_layers=2, layout=layout, bidirectional=bidirectional, use_sequence_length=True)
    net = OpNet(lambda F, x, n: layer(x, None, n))
    net.register_child(layer, "rnn")
    net.initialize(mx.init.Xavier())
    length = nd.array([5, 2, 1])
    axis = layout.index("T")
    check_padding_invariance(net, [_data(layout, shape_tail=(2,)), length], length, axis=axis)
