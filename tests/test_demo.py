"""The README's first command runs the demo: its --quick mode must keep learning and keep its promises."""
import numpy as np
import pytest

from mixnet import _demo_data as data
from mixnet import demo


def test_quick_demo_reaches_its_stated_accuracy(capsys):
    result = demo.main(["--quick"])
    out = capsys.readouterr().out
    assert result["accuracy"] >= demo.QUICK_ACCURACY
    assert result["export_same"] and "same" in out and "SymbolBlock.imports" in out
    # One bucket per length, and one compiled graph per batch shape (training and validation).
    assert result["buckets"] == list(range(3, 6))
    assert result["graphs"] == result["batch_shapes"]
    assert result["waste_bucketed"] == 0.0 < result["waste_plain"]
    assert "validation:" in out and "->" in out


def test_problems_are_distinct_seeded_and_correct():
    texts, answers = data.make_problems(500, 3, seed=1)
    assert len(set(texts)) == 500 and (texts, answers) == data.make_problems(500, 3, seed=1)
    assert all(eval(t) == a for t, a in zip(texts, answers))          # the strings are Python expressions
    assert {len(t) for t in texts} == set(range(3, 8))


def test_answers_round_trip_through_their_classes():
    width = data.answer_width(3)
    answers = [0, 7, -999, 1998, 46, -5]
    classes = np.stack([data.encode_answer(a, width) for a in answers])
    assert data.decode_answers(classes) == answers
    assert data.decode_answers([[4, 10, 6, 11]]) == [None]        # "4-6 " spells no number


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")   # NaN-padded token ids
def test_the_demo_model_does_not_depend_on_padding():
    """Zeros, NaN and huge values past each problem's end change no output or gradient, eager and hybridized."""
    import mixnet as mx
    width = data.answer_width(2)
    net = demo.Calculator(hidden=16, layers=2, width=width)
    net.initialize(mx.init.Xavier())
    texts = ["4+3", "43+3", "9+12", "10+99"]
    chars = mx.nd.array([np.pad(data.encode(t), (0, 5 - len(t))) for t in texts])
    length = mx.nd.array([len(t) for t in texts])
    mx.test_utils.check_padding_invariance(net, [chars, length], length)
