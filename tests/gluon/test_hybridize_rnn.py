"""hybridize() never changes results for gluon.rnn: the fused layers (RNN/LSTM/GRU, 1-2 layers, bidirectional,
with and without begin states, TNC/NTC, sequence lengths, dropout), the cells stepped and unrolled (merged or not,
valid_length, sequential / bidirectional / residual / zoneout / dropout cells), and a cell run by
F.contrib.foreach. Eager vs hybridized: outputs, input and parameter gradients, two signatures, train and
predict mode (dropout compared under the same seed), in float64."""

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd
from mixnet.gluon import nn, rnn

from .hybrid_equivalence import assert_hybrid_equals_eager, rand

F64 = np.float64
# Cases whose result depends on the mode (dropout, zoneout) run in train and in predict mode under
# autograd.record; every case also compares a predict-mode call outside record (the inference plan).
MODE_DEPENDENT = {"lstm_2l_dropout", "hybrid_sequential_cell", "sequential_dropout_valid", "zoneout",
                  "dropout_cell_merged", "dropout_cell_list", "sequential_with_dropout"}


def with_modes(cases):
    """pytest params: each case with train=True, and with train=False too where the mode matters."""
    return [pytest.param(*case, train, id=f"{case[0]}-{'train' if train else 'predict'}")
            for case in cases for train in ((True, False) if case[0] in MODE_DEPENDENT else (True,))]


def _init(block, *args):
    """Initializes in float64 and runs one eager call, so deferred shapes are known."""
    block.initialize(mx.init.Uniform(0.5))
    block.cast(F64)
    nd_args = [None if a is None else [mx.nd.array(s, dtype=s.dtype) for s in a] if isinstance(a, list)
               else mx.nd.array(a, dtype=a.dtype) for a in args]
    block(*nd_args)
    return block


def _lengths(n, t, seed):
    return np.random.RandomState(seed).randint(1, t + 1, size=n).astype(np.int32)


# --------------------------------------------------------------------------------------------------- layers
LAYERS = [
    # id, factory, gates-related state count, layout, with begin states, with sequence lengths
    ("rnn_relu", lambda: rnn.RNN(3, activation="relu"), 1, "TNC", False, False),
    ("rnn_tanh_2l_bi_ntc_states", lambda: rnn.RNN(3, 2, "tanh", layout="NTC", bidirectional=True), 1, "NTC",
     True, False),
    ("lstm_ntc", lambda: rnn.LSTM(3, layout="NTC"), 2, "NTC", False, False),
    ("lstm_2l_bi_states", lambda: rnn.LSTM(3, 2, bidirectional=True), 2, "TNC", True, False),
    ("lstm_proj_clip", lambda: rnn.LSTM(4, projection_size=2, state_clip_min=-0.3, state_clip_max=0.3), 2,
     "TNC", True, False),
    ("gru_2l_bi_ntc", lambda: rnn.GRU(3, 2, layout="NTC", bidirectional=True), 1, "NTC", False, False),
    ("gru_states", lambda: rnn.GRU(3), 1, "TNC", True, False),
    ("lstm_bi_seqlen", lambda: rnn.LSTM(3, bidirectional=True, use_sequence_length=True), 2, "TNC", True, True),
    ("gru_2l_seqlen_ntc", lambda: rnn.GRU(3, 2, layout="NTC", use_sequence_length=True), 1, "NTC", False,
     True),
    ("rnn_bi_seqlen", lambda: rnn.RNN(3, bidirectional=True, use_sequence_length=True), 1, "TNC", True, True),
    ("lstm_2l_dropout", lambda: rnn.LSTM(3, 2, dropout=0.4, bidirectional=True), 2, "TNC", False, False),
]


def _layer_args(layer, layout, states, seqlen, t, n, c, seed):
    shape = (t, n, c) if layout == "TNC" else (n, t, c)
    args = [rand(shape, seed)]
    if states:
        args.append([rand(info["shape"], seed + 1 + i) for i, info in enumerate(layer.state_info(n))])
    elif seqlen:
        args.append(None)
    if seqlen:
        args.append(_lengths(n, t, seed + 9))
    return args


class _LayerCall(mx.gluon.HybridBlock):
    """Calls a recurrent layer as users do: layer(x), layer(x, states), layer(x, states, sequence_length)."""

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        self.layer = layer

    def forward(self, x, states=None, lengths=None):
        if lengths is not None:
            return self.layer(x, states, lengths)
        return self.layer(x) if states is None else self.layer(x, states)


@pytest.mark.parametrize("name, make, n_states, layout, states, seqlen, train", with_modes(LAYERS))
def test_rnn_layer_hybridized_equals_eager(name, make, n_states, layout, states, seqlen, train):
    layer = make()
    sigs = [_layer_args(layer, layout, states, seqlen, 4, 3, 2, 1), _layer_args(layer, layout, states, seqlen,
                                                                                 3, 2, 2, 20)]
    _init(layer, *sigs[0])
    for i, p in enumerate(layer.collect_params().values()):      # biases too (their default init is zeros)
        p.set_data(mx.nd.array(rand(p.shape, 100 + i), dtype=F64))
    eager, _ = assert_hybrid_equals_eager(layer, sigs, train)
    n_out = 1 + (n_states if states else 0)
    assert all(len(outs) == n_out for outs, *_ in eager), "states come back exactly when they were passed"


def test_rnn_layer_in_a_hybridized_parent_with_and_without_states():
    """Inside a traced parent the layer builds its own zero begin states from the traced input; a parent
    that passes states sees them come back."""
    layer = rnn.LSTM(3, 2, layout="NTC")
    block = _LayerCall(layer)
    x = rand((2, 4, 3), 3)
    _init(block, x)
    assert_hybrid_equals_eager(block, [[x], [rand((3, 2, 3), 4)]], True)
    zeros = [np.zeros(info["shape"]) for info in layer.state_info(2)]
    block2 = _LayerCall(rnn.LSTM(3, 2, layout="NTC"))
    _init(block2, x, zeros)
    for p, q in zip(block2.collect_params().values(), block.collect_params().values()):
        p.set_data(q.data())
    out_default = block(mx.nd.array(x, dtype=F64)).asnumpy()
    out_zero_states, states = block2(mx.nd.array(x, dtype=F64), [mx.nd.array(z, dtype=F64) for z in zeros])
    np.testing.assert_allclose(out_zero_states.asnumpy(), out_default, rtol=1e-12)
    assert [tuple(s.shape) for s in states] == [(2, 2, 3), (2, 2, 3)]


def test_sequence_length_makes_padding_irrelevant_hybridized():
    """With sequence lengths, what lies past each length (even NaN) changes neither outputs nor gradients."""
    layer = rnn.GRU(3, bidirectional=True, use_sequence_length=True)
    x = rand((5, 3, 2), 1)
    lengths = np.array([5, 2, 3], np.int32)
    _init(layer, x, None, lengths)
    layer.hybridize()
    padded = x.copy()
    for n, length in enumerate(lengths):
        padded[length:, n] = np.nan
    results = []
    for data in (x, padded):
        arr = mx.nd.array(data, dtype=F64)
        arr.attach_grad()
        with autograd.record():
            out = layer(arr, None, mx.nd.array(lengths, dtype=np.int32))
        out.backward(mx.nd.array(rand(out.shape, 2), dtype=F64))
        grad = arr.grad.asnumpy()
        results.append((out.asnumpy(), np.where(np.isnan(padded), 0, grad)))
    np.testing.assert_array_equal(results[1][0], results[0][0])
    np.testing.assert_array_equal(results[1][1], results[0][1])
    assert not np.isnan(results[1][0]).any()


def test_sequence_length_requires_the_flag():
    layer = rnn.LSTM(3)
    layer.initialize()
    with pytest.raises(mx.base.MXNetError, match="use_sequence_length=False"):
        layer(mx.nd.ones((2, 1, 2)), None, mx.nd.array([1]))
    layer2 = rnn.GRU(3, use_sequence_length=True)
    layer2.initialize()
    with pytest.raises(mx.base.MXNetError, match="needs sequence_length"):
        layer2(mx.nd.ones((2, 1, 2)))


# --------------------------------------------------------------------------------------------------- cells
STEP_CELLS = [
    ("rnn_cell_relu", lambda: rnn.RNNCell(3, activation="relu")),
    ("lstm_cell", lambda: rnn.LSTMCell(3)),
    ("gru_cell", lambda: rnn.GRUCell(3)),
]


def _hybrid_sequential():
    cell = rnn.HybridSequentialRNNCell()
    with cell.name_scope():
        cell.add(rnn.LSTMCell(3))
        cell.add(rnn.DropoutCell(0.3))
        cell.add(rnn.GRUCell(2))
    return cell


STEP_CELLS.append(("hybrid_sequential_cell", _hybrid_sequential))
STEP_CELLS.append(("residual_cell", lambda: rnn.ResidualCell(rnn.GRUCell(2))))


@pytest.mark.parametrize("name, make, train", with_modes(STEP_CELLS))
def test_cell_step_hybridized_equals_eager(name, make, train):
    cell = make()
    sigs = [[rand((n, 2), seed), [rand(info["shape"], seed + 1 + i) for i, info in enumerate(cell.state_info(n))]]
            for n, seed in ((3, 1), (2, 30))]
    _init(cell, *sigs[0])
    assert_hybrid_equals_eager(cell, sigs, train)


class _Unroll(mx.gluon.HybridBlock):
    """Unrolls a cell over `length` steps inside hybrid_forward (what users hybridize)."""

    def __init__(self, make_cell, length, layout, merge_outputs, valid_length, begin_state, **kwargs):
        super().__init__(**kwargs)
        self._length, self._layout, self._merge = length, layout, merge_outputs
        self._valid, self._begin = valid_length, begin_state
        with self.name_scope():
            self.cell = make_cell()

    def hybrid_forward(self, F, x, *rest):
        rest = list(rest)
        valid = rest.pop() if self._valid else None
        begin = rest.pop() if self._begin else None
        return self.cell.unroll(self._length, x, begin_state=begin, layout=self._layout,
                                merge_outputs=self._merge, valid_length=valid)


def _seq(*cells):
    def make():
        seq = rnn.HybridSequentialRNNCell()
        with seq.name_scope():
            for c in cells:
                seq.add(c())
        return seq
    return make


UNROLLS = [
    # id, cell, layout, merge_outputs, valid_length, begin_state
    ("lstm_ntc_merged", lambda: rnn.LSTMCell(3), "NTC", True, False, False),
    ("gru_tnc_list", lambda: rnn.GRUCell(3), "TNC", False, False, True),
    ("rnn_valid_merged", lambda: rnn.RNNCell(3), "NTC", True, True, False),
    ("lstm_valid_list_states", lambda: rnn.LSTMCell(3), "TNC", False, True, True),
    ("sequential_dropout_valid", _seq(lambda: rnn.LSTMCell(3), lambda: rnn.DropoutCell(0.5),
                                      lambda: rnn.GRUCell(2)), "NTC", True, True, False),
    ("bidirectional", lambda: rnn.BidirectionalCell(rnn.LSTMCell(3), rnn.GRUCell(2)), "NTC", True, False,
     False),
    ("bidirectional_valid_list", lambda: rnn.BidirectionalCell(rnn.GRUCell(2), rnn.RNNCell(3)), "TNC", False,
     True, True),
    ("residual_valid", lambda: rnn.ResidualCell(rnn.GRUCell(2)), "NTC", True, True, False),
    ("zoneout", lambda: rnn.ZoneoutCell(rnn.LSTMCell(3), zoneout_outputs=0.3, zoneout_states=0.4), "NTC",
     True, False, False),
    ("dropout_cell_merged", lambda: rnn.DropoutCell(0.5), "TNC", True, False, False),
    ("dropout_cell_list", lambda: rnn.DropoutCell(0.5, axes=(1,)), "NTC", False, False, False),
]


@pytest.mark.parametrize("name, make, layout, merge, valid, begin, train", with_modes(UNROLLS))
def test_unroll_hybridized_equals_eager(name, make, layout, merge, valid, begin, train):
    t = 4
    block = _Unroll(make, t, layout, merge, valid, begin)

    def args(n, seed):
        a = [rand((n, t, 2) if layout == "NTC" else (t, n, 2), seed)]
        if begin:
            a.append([rand(info["shape"], seed + 1 + i) for i, info in enumerate(block.cell.state_info(n))])
        if valid:
            a.append(_lengths(n, t, seed + 7))
        return a

    sigs = [args(3, 1), args(2, 40)]
    _init(block, *sigs[0])
    eager, _ = assert_hybrid_equals_eager(block, sigs, train)
    if valid:     # outputs past each valid length are zero
        outs = eager[0][0]
        lengths = sigs[0][-1]
        steps = np.stack(outs[:t], axis=0) if not merge else \
            (outs[0] if layout == "TNC" else np.swapaxes(outs[0], 0, 1))
        for n, length in enumerate(lengths):
            assert not steps[length:, n].any()


def test_zoneout_keeps_some_previous_values_in_training():
    """The zoneout masks are drawn (some units keep the previous value) and the same draws are made when
    hybridized; in predict mode zoneout is off."""
    block = _Unroll(lambda: rnn.ZoneoutCell(rnn.GRUCell(4), zoneout_outputs=0.5), 5, "NTC", False, False, False)
    x = rand((3, 5, 2), 1)
    _init(block, x)
    plain = _Unroll(lambda: rnn.GRUCell(4), 5, "NTC", False, False, False)
    _init(plain, x)
    for (_, p), (_, q) in zip(sorted(plain.collect_params().items()), sorted(block.collect_params().items())):
        p.set_data(q.data())
    with autograd.train_mode():
        zoned = [o.asnumpy() for o in block(mx.nd.array(x, dtype=F64))[0]]
    reference = [o.asnumpy() for o in plain(mx.nd.array(x, dtype=F64))[0]]
    assert any(not np.allclose(a, b) for a, b in zip(zoned[1:], reference[1:]))
    predict = [o.asnumpy() for o in block(mx.nd.array(x, dtype=F64))[0]]
    for a, b in zip(predict, reference):
        np.testing.assert_allclose(a, b, rtol=1e-12)


class _ForeachCell(mx.gluon.HybridBlock):
    """A cell driven by F.contrib.foreach over the time axis (TNC), the way dynamic RNNs are written."""

    def __init__(self, make_cell, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.cell = make_cell()
            self.out = nn.Dense(2, flatten=False)

    def hybrid_forward(self, F, x, states):
        def step(x_t, states):
            return self.cell(x_t, states)
        outputs, states = F.contrib.foreach(step, x, states)
        return self.out(outputs), states


FOREACH = [("lstm", lambda: rnn.LSTMCell(3)), ("gru", lambda: rnn.GRUCell(3)),
           ("sequential_with_dropout", _hybrid_sequential)]


@pytest.mark.parametrize("name, make, train", with_modes(FOREACH))
def test_foreach_cell_hybridized_equals_eager(name, make, train):
    block = _ForeachCell(make)
    sigs = [[rand((t, n, 2), seed), [rand(info["shape"], seed + 1 + i)
                                     for i, info in enumerate(block.cell.state_info(n))]]
            for t, n, seed in ((4, 3, 1), (3, 2, 50))]
    _init(block, *sigs[0])
    assert_hybrid_equals_eager(block, sigs, train)


def test_fused_layer_equals_unrolled_cells():
    """The fused LSTM/GRU layers compute what stacked cells unrolled compute (MXNet's gate layouts), and so do
    their gradients; bidirectional layers match BidirectionalCell."""
    x = rand((4, 3, 2), 1)
    for fused, cells in ((rnn.LSTM(3, 2), lambda: _seq(lambda: rnn.LSTMCell(3), lambda: rnn.LSTMCell(3))()),
                         (rnn.GRU(3, bidirectional=True),
                          lambda: rnn.BidirectionalCell(rnn.GRUCell(3), rnn.GRUCell(3)))):
        _init(fused, x)
        stack = cells()
        stack.initialize()
        stack.cast(F64)
        stack.unroll(4, mx.nd.array(x, dtype=F64), layout="TNC", merge_outputs=True)
        values = {k[len(fused.prefix):]: p.data() for k, p in fused.collect_params().items()}
        cell_params = list(stack.collect_params().values())
        names = [k for k in values]
        assert len(names) == len(cell_params)
        by_position = {}
        for k, v in values.items():
            by_position[(int(k[1]), k[0], k[3:])] = v
        for p in cell_params:
            layer, direction = _cell_position(p.name, stack)
            kind = p.name.rsplit("_", 2)[-2] + "_" + p.name.rsplit("_", 1)[-1]
            p.set_data(by_position[(layer, direction, kind)])
        out_fused = fused(mx.nd.array(x, dtype=F64)).asnumpy()
        out_cells, _ = stack.unroll(4, mx.nd.array(x, dtype=F64), layout="TNC", merge_outputs=True)
        np.testing.assert_allclose(out_cells.asnumpy(), out_fused, rtol=1e-10, atol=1e-12)


def _cell_position(name, stack):
    """(layer, direction) of a cell parameter in a sequential stack or a bidirectional cell."""
    if isinstance(stack, rnn.BidirectionalCell):
        left = stack._children["l_cell"].prefix
        return 0, "l" if name.startswith(left) else "r"
    for i, cell in enumerate(stack._children.values()):
        if name.startswith(cell.prefix):
            return i, "l"
    raise AssertionError(name)
