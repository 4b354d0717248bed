"""What Jupyter shows for a Block, a Parameter and a ParameterDict, read through IPython's display formatter: the
tree of children with output shapes and parameter counts, '?' before deferred initialization, the hybridized
badge, and HTML escaping of names users and files choose."""
import copy
import pickle

import pytest

import mixnet as mx
from mixnet import gluon, nd
from mixnet.gluon import nn, rnn

pytest.importorskip("IPython", reason="the reprs are read through IPython's display formatter")
from display_helpers import rich, rows, text  # noqa: E402

HEADER = ["layer", "name", "output shape", "parameters", "#"]


def _mlp():
    net = nn.HybridSequential(prefix="mlp_")
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu"), nn.Dense(3))
    return net


def test_block_html_before_initialization_shows_question_marks():
    page = rich(_mlp())
    assert rows(page) == [
        HEADER,
        ["HybridSequential", "mlp", "-", "-", ""],
        ["(0) Dense(None -> 8, Activation(relu))", "mlp_dense0", "-", "weight (8, ?), bias (8,)", "8?"],
        ["(act) Activation(relu)", "mlp_dense0_relu", "-", "-", ""],
        ["(1) Dense(None -> 3, linear)", "mlp_dense1", "-", "weight (3, ?), bias (3,)", "3?"],
    ]
    assert "not initialized: ? until the first call" in text(page) and "hybridized" not in page
    assert "parameters: 11? (trainable 11?, non-trainable 0?)" in text(page)


def test_block_html_after_an_eager_call_shows_output_shapes_and_counts():
    net = _mlp()
    net.initialize()
    net(nd.ones((4, 5)))
    page = rich(net)
    assert rows(page)[1:] == [
        ["HybridSequential", "mlp", "(4, 3)", "-", ""],
        ["(0) Dense(5 -> 8, Activation(relu))", "mlp_dense0", "(4, 8)", "weight (8, 5), bias (8,)", "48"],
        ["(act) Activation(relu)", "mlp_dense0_relu", "(4, 8)", "-", ""],
        ["(1) Dense(8 -> 3, linear)", "mlp_dense1", "(4, 3)", "weight (3, 8), bias (3,)", "27"],
    ]
    assert "parameters: 75 (trainable 75, non-trainable 0)" in text(page) and "not initialized" not in page


def test_hybridized_badge_counts_the_compiled_plans():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, in_units=3), nn.BatchNorm(in_channels=4), nn.Dense(2, in_units=4))
    net.initialize()
    net.hybridize()
    assert "hybridized: 0 plans" in rich(net)
    net(nd.ones((5, 3)))                                 # predict mode: one signature, its inference plan
    assert "hybridized: 1 plan<" in rich(net)
    with mx.autograd.record():                           # training mode: a new signature, a training plan
        net(nd.ones((5, 3))).backward()
    page = rich(net)
    assert "hybridized: 2 plans" in page and sum(r.compiles for r in net.compiled_plans()) == 2
    # the children ran only inside the compiled graph: their shapes come from the trace
    assert [r[2] for r in rows(page)[1:]] == ["(5, 2)", "(5, 4)", "(5, 4)", "(5, 2)"]
    assert [r[4] for r in rows(page)[1:]] == ["", "16", "16", "10"]
    assert "parameters: 42 (trainable 34, non-trainable 8)" in text(page)


def test_output_shapes_follow_the_last_call():
    net = _mlp()
    net.initialize()
    net.hybridize()
    net(nd.ones((2, 5)))
    net(nd.ones((6, 5)))                                 # a second signature traced: its shapes are shown
    assert [r[2] for r in rows(rich(net))[1:]] == ["(6, 3)", "(6, 8)", "(6, 8)", "(6, 3)"]
    net.hybridize(False)
    net(nd.ones((1, 5)))
    assert [r[2] for r in rows(rich(net))[1:]] == ["(1, 3)", "(1, 8)", "(1, 8)", "(1, 3)"]


def test_block_html_of_a_block_with_several_outputs():
    lstm = rnn.LSTM(5, input_size=4, layout="NTC")
    lstm.initialize()
    lstm(nd.ones((2, 3, 4)), lstm.begin_state(2))
    assert rows(rich(lstm))[1][2] == "(2, 3, 5), (1, 2, 5), (1, 2, 5)"


def test_hostile_block_and_parameter_names_are_escaped():
    hostile = "<script>alert(1)</script>"

    class Evil(gluon.HybridBlock):
        def __init__(self):
            super().__init__(prefix=hostile)
            self.w = self.params.get(hostile, shape=(2, 0), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return F.FullyConnected(x, w, no_bias=True, num_hidden=2)

    block = Evil()
    pages = [rich(block), rich(block.w), rich(block.collect_params())]
    for page in pages:
        assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert rows(pages[1])[1][:2] == [hostile + hostile, "(2, ?)"]


def test_parameter_html():
    dense = nn.Dense(3, in_units=2, prefix="d_")
    page = rich(dense.weight)
    assert repr(dense.weight) == "Parameter d_weight (shape=(3, 2), dtype=float32)"    # MXNet 1.9.1's text
    assert rows(page) == [["name", "shape", "dtype", "grad_req", "initialized", "stype"],
                          ["d_weight", "(3, 2)", "float32", "write", "no", "default"]]
    deferred = nn.Dense(3)
    deferred.initialize()
    assert rows(rich(deferred.weight))[1][1:5] == ["(3, ?)", "float32", "write", "deferred (at the first call)"]
    dense.initialize()
    dense.bias.grad_req = "null"
    assert rows(rich(dense.bias))[1][3:5] == ["null", f"yes ({mx.current_context()})"]     # the default device


def test_parameter_dict_html():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Embedding(10, 4, dtype="float16"), nn.Dense(2, flatten=False))
    net.initialize()
    page = rich(net.collect_params())
    assert "<b>ParameterDict</b> net_ 3 parameters, 42? values" in page
    assert [r[:4] for r in rows(page)[1:]] == [["net_embedding0_weight", "(10, 4)", "float16", "write"],
                                               ["net_dense0_weight", "(2, ?)", "float32", "write"],
                                               ["net_dense0_bias", "(2,)", "float32", "write"]]


def test_block_copies_and_pickles_leave_the_traced_symbols_behind():
    net = nn.HybridSequential()
    net.add(nn.Dense(2, in_units=3))
    net.initialize()
    net.hybridize()
    net(nd.ones((1, 3)))
    traced = net[0]._outputs_seen                        # what the child's call inside the trace returned
    assert len(traced.symbols) == 1
    assert pickle.loads(pickle.dumps(traced)).symbols == [] and copy.deepcopy(traced).symbols == []
