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


def test_padding_waste_counts_padded_steps():
    lengths = [3, 5, 5, 7]
    assert data.padding_waste(lengths, [np.array([0, 3]), np.array([1, 2])]) == pytest.approx(4 / 24)
    assert data.padding_waste(lengths, [np.array([1, 2])]) == 0.0
