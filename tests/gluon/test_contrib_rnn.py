"""gluon.contrib.rnn: LSTMPCell against a numpy reference of its equations and against numbers made by MXNet
1.9.1 (tests/data/make_contrib_rnn_reference.py), with MXNet's parameter names and shapes; VariationalDropoutCell:
one mask per sequence, the identity in predict mode, valid_length padding irrelevant; both hybridized == eager."""
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd
from mixnet.base import MXNetError
from mixnet.gluon import rnn
from mixnet.gluon.contrib.rnn import LSTMPCell, VariationalDropoutCell

from .hybrid_equivalence import assert_hybrid_equals_eager, rand

REF = os.path.join(os.path.dirname(__file__), "..", "data", "gluon", "contrib_rnn_reference.npz")


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _lstmp_numpy(x_ntc, r, c, p):
    """The LSTMP equations step by step: gates [i, f, g, o] from x and r, h = o*tanh(c'), r' = W_hr h."""
    outs = []
    for t in range(x_ntc.shape[1]):
        gates = x_ntc[:, t] @ p["i2h_weight"].T + p["i2h_bias"] + r @ p["h2h_weight"].T + p["h2h_bias"]
        i, f, g, o = np.split(gates, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        r = (_sigmoid(o) * np.tanh(c)) @ p["h2r_weight"].T
        outs.append(r)
    return np.stack(outs, axis=1), r, c


def _set_params(cell, seed=7, dtype="float64"):
    values = {}
    for i, (name, p) in enumerate(sorted(cell.collect_params().items())):
        values[name[len(cell.prefix):]] = v = np.random.RandomState(seed + i).uniform(-0.5, 0.5, p.shape)
        p.set_data(mx.nd.array(v, dtype=dtype))
    return values


def test_lstmp_parameters_states_and_equations():
    cell = LSTMPCell(5, 3, prefix="p_")
    cell.initialize()
    cell.cast("float64")
    x = rand((2, 4, 6), 1)
    cell.unroll(4, mx.nd.array(x, dtype="float64"), merge_outputs=True)      # deferred input size
    assert {k: p.shape for k, p in cell.collect_params().items()} == {
        "p_i2h_weight": (20, 6), "p_h2h_weight": (20, 3), "p_h2r_weight": (3, 5), "p_i2h_bias": (20,),
        "p_h2h_bias": (20,)}
    assert [s["shape"] for s in cell.state_info(2)] == [(2, 3), (2, 5)]
    assert repr(cell) == "LSTMPCell(6 -> 20 -> 3)"
    params = _set_params(cell)
    r0, c0 = rand((2, 3), 2), rand((2, 5), 3)
    out, (r, c) = cell.unroll(4, mx.nd.array(x, dtype="float64"), layout="NTC", merge_outputs=True,
                              begin_state=[mx.nd.array(r0, dtype="float64"), mx.nd.array(c0, dtype="float64")])
    want_out, want_r, want_c = _lstmp_numpy(x, r0, c0, params)
    np.testing.assert_allclose(out.asnumpy(), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(r.asnumpy(), want_r, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(c.asnumpy(), want_c, rtol=1e-10, atol=1e-12)


def test_lstmp_matches_mxnet_reference():
    ref = np.load(REF)
    cell = LSTMPCell(5, 3, input_size=2, prefix="lstmp0_")
    cell.initialize()
    names = sorted(cell.collect_params().keys())
    assert names == list(ref["names"])
    assert [str(cell.collect_params()[k].shape) for k in names] == list(ref["shapes"])
    _set_params(cell, dtype="float32")
    begin = [mx.nd.array(ref["r0"]), mx.nd.array(ref["c0"])]
    for tag, valid in (("full", None), ("valid", mx.nd.array(ref["valid_length"]))):
        out, (r, c) = cell.unroll(4, mx.nd.array(ref["x"]), begin_state=begin, layout="NTC", merge_outputs=True,
                                  valid_length=valid)
        for got, key in ((out, "_out"), (r, "_r"), (c, "_c")):
            np.testing.assert_allclose(got.asnumpy(), ref[tag + key], rtol=1e-5, atol=1e-6, err_msg=tag + key)


def test_lstmp_on_symbols_names_its_nodes_like_mxnet():
    outs, states = LSTMPCell(5, 3, prefix="lstmp0_").unroll(3, mx.sym.var("data"), merge_outputs=False)
    assert [o.name for o in outs] == ["lstmp0_t0_out", "lstmp0_t1_out", "lstmp0_t2_out"]
    assert states[1].list_outputs() == ["lstmp0_t2_state_output"]
    assert sorted(outs[-1].list_arguments()) == ["data", "lstmp0_h2h_bias", "lstmp0_h2h_weight",
                                                 "lstmp0_h2r_weight", "lstmp0_i2h_bias", "lstmp0_i2h_weight"]


def _vardrop(**rates):
    cell = VariationalDropoutCell(rnn.RNNCell(4, prefix="r_"), **rates)
    cell.initialize(mx.init.Uniform(0.5))
    return cell


def test_variational_masks_are_equal_across_steps():
    # constant inputs and h2h zero: every step computes the same thing, so equal outputs mean equal masks
    cell = _vardrop(drop_inputs=0.5, drop_outputs=0.5)
    cell.base_cell.h2h_weight.set_data(mx.nd.zeros((4, 4)))
    x = mx.nd.ones((3, 5, 8))
    mx.random.seed(3)
    with autograd.record(train_mode=True):
        out, _ = cell.unroll(5, x, merge_outputs=True)
    out = out.asnumpy()
    for t in range(1, 5):           # same input mask and same output mask every step: identical outputs
        np.testing.assert_array_equal(out[:, t], out[:, 0])
    assert (out == 0).any() and (out != 0).any()
    # stepping by hand keeps the masks until reset()
    cell.reset()
    with autograd.record(train_mode=True):
        steps = [cell(x[:, 0], [mx.nd.zeros((3, 4))])[0].asnumpy() for _ in range(3)]
    np.testing.assert_array_equal(steps[1], steps[0])
    np.testing.assert_array_equal(steps[2], steps[0])


def test_variational_state_mask_is_fixed_and_only_on_h():
    cell = VariationalDropoutCell(rnn.LSTMCell(4), drop_states=0.5)
    cell.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(rand((3, 6, 2), 4))
    mx.random.seed(5)
    with autograd.record(train_mode=True):
        cell(x[:, 0], cell.begin_state(batch_size=3))
    mask = cell.drop_states_mask.asnumpy()
    assert set(np.unique(mask)) <= {0.0, 2.0} and (mask == 0).any()
    with autograd.record(train_mode=True):
        cell(x[:, 1], cell.begin_state(batch_size=3))
    np.testing.assert_array_equal(cell.drop_states_mask.asnumpy(), mask)


@pytest.mark.parametrize("rates", [dict(drop_inputs=0.5, drop_outputs=0.3), dict(drop_states=0.4)])
def test_variational_is_the_base_cell_in_predict_mode(rates):
    cell = _vardrop(**rates)
    x = mx.nd.array(rand((2, 5, 3), 6))
    got, got_states = cell.unroll(5, x, merge_outputs=True)
    cell.base_cell._modified = False
    want, want_states = cell.base_cell.unroll(5, x, merge_outputs=True)
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    np.testing.assert_array_equal(got_states[0].asnumpy(), want_states[0].asnumpy())


@pytest.mark.parametrize("rates", [dict(drop_inputs=0.5, drop_outputs=0.3), dict(drop_states=0.4)])
@pytest.mark.parametrize("layout", ["NTC", "TNC"])
def test_variational_valid_length_padding_does_not_change_results(rates, layout):
    cell = VariationalDropoutCell(rnn.LSTMCell(4), **rates)
    cell.initialize(mx.init.Uniform(0.5))
    t, lengths = 6, [6, 2, 4]
    x = rand((3, t, 2) if layout == "NTC" else (t, 3, 2), 8)
    padded = x.copy()
    for n, length in enumerate(lengths):        # garbage past each sequence's end
        if layout == "NTC":
            padded[n, length:] = 7.0
        else:
            padded[length:, n] = 7.0
    valid = mx.nd.array(lengths)
    cell.unroll(t, mx.nd.array(x), layout=layout)     # deferred initialization draws random numbers: first
    results = []
    for data in (x, padded):
        mx.random.seed(9)
        with autograd.record(train_mode=True):
            out, states = cell.unroll(t, mx.nd.array(data), layout=layout, merge_outputs=True, valid_length=valid)
        results.append((out.asnumpy(), [s.asnumpy() for s in states]))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(a, b)
    steps = results[0][0] if layout == "TNC" else np.swapaxes(results[0][0], 0, 1)
    for n, length in enumerate(lengths):
        assert not steps[length:, n].any()


def test_variational_refuses_state_dropout_on_bidirectional():
    with pytest.raises(MXNetError, match="BidirectionalCell"):
        VariationalDropoutCell(rnn.BidirectionalCell(rnn.GRUCell(2), rnn.GRUCell(2)), drop_states=0.1)
    VariationalDropoutCell(rnn.BidirectionalCell(rnn.GRUCell(2), rnn.GRUCell(2)), drop_inputs=0.1)


class _Unroll(mx.gluon.HybridBlock):
    def __init__(self, make_cell, valid, **kwargs):
        super().__init__(**kwargs)
        self._valid = valid
        with self.name_scope():
            self.cell = make_cell()

    def hybrid_forward(self, F, x, *rest):
        return self.cell.unroll(4, x, layout="NTC", merge_outputs=True, valid_length=rest[0] if rest else None)


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("name, make, valid", [
    ("lstmp", lambda: LSTMPCell(4, 3), True),
    ("vardrop_in_out", lambda: VariationalDropoutCell(rnn.LSTMCell(3), drop_inputs=0.5, drop_outputs=0.3), True),
    ("vardrop_states", lambda: VariationalDropoutCell(LSTMPCell(4, 3), drop_states=0.4, drop_inputs=0.2), False),
])
def test_contrib_cells_hybridized_equal_eager(name, make, valid, train):
    block = _Unroll(make, valid)

    def args(n, seed):
        return [rand((n, 4, 2), seed)] + ([np.array([4, 1, 3][:n], dtype=np.float64)] if valid else [])

    sigs = [args(3, 1), args(2, 40)]
    block.initialize(mx.init.Uniform(0.5))
    block.cast("float64")
    block(*[mx.nd.array(a, dtype="float64") for a in sigs[0]])
    assert_hybrid_equals_eager(block, sigs, train)


@pytest.mark.parametrize("rates", [dict(drop_inputs=0.5, drop_outputs=0.3), dict(drop_states=0.4)])
def test_variational_on_symbols_runs_as_the_base_cell_in_predict_mode(rates):
    cell = VariationalDropoutCell(LSTMPCell(4, 3, input_size=5, prefix="p_"), **rates)
    outs, states = cell.unroll(3, mx.sym.var("data"), layout="NTC", merge_outputs=True,
                               valid_length=mx.sym.var("len"))
    net = mx.sym.Group([outs] + states)
    cell.initialize(mx.init.Uniform(0.5))
    x, lengths = mx.nd.array(rand((2, 3, 5), 3)), mx.nd.array([3, 1])
    args = {"data": x, "len": lengths, **{k: p.data() for k, p in cell.collect_params().items()}}
    got = net.eval(ctx=mx.cpu(), **args)
    cell.base_cell._modified = False
    want_out, want_states = cell.base_cell.unroll(3, x, layout="NTC", merge_outputs=True, valid_length=lengths)
    for a, b in zip(got, [want_out] + want_states):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6, atol=1e-7)
