"""mixnet's Estimator against real MXNet 1.9.1 on the same tiny scenarios (estimator_scenarios.py).

estimator_reference.json holds MXNet's answers (make_estimator_reference.py writes it): handler order and what
each handler observes, stopping by epochs/batches/handlers, evaluate's events, early stopping epochs,
checkpoint files (periods, max_checkpoints, best, symbol, resume), LoggingHandler's lines, and the numbers.
"""
import json
import os
import warnings

import numpy as np
import pytest

import mixnet as mx

from . import estimator_scenarios as scenarios

with open(os.path.join(os.path.dirname(__file__), "estimator_reference.json")) as _f:
    REF = json.load(_f)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_handler_order_and_observations():
    assert scenarios.handler_order(mx) == REF["handler_order"]


def test_stopping_by_epochs_batches_and_handlers():
    assert scenarios.stopping(mx) == REF["stopping"]


def test_evaluate_events_and_metrics():
    got = scenarios.evaluate_events(mx)
    assert got["events"] == REF["evaluate"]["events"]
    assert [n for n, _ in got["metrics"]] == [n for n, _ in REF["evaluate"]["metrics"]]
    np.testing.assert_allclose([v for _, v in got["metrics"]], [v for _, v in REF["evaluate"]["metrics"]],
                               atol=2e-5)


def test_early_stopping_matches():
    got = scenarios.early_stopping(mx)
    for case, expected in REF["early_stopping"].items():
        assert got[case] == expected, case


def test_checkpoint_files_and_resume(tmp_path):
    assert scenarios.checkpoints(mx, str(tmp_path)) == REF["checkpoints"]


def test_logging_lines():
    assert scenarios.logging_lines(mx) == REF["logging"]


def test_numbers_match_mxnet():
    got, ref = scenarios.numbers(mx), REF["numbers"]
    for key in ("train", "val"):
        assert [n for n, _ in got[key]] == [n for n, _ in ref[key]]
        np.testing.assert_allclose([v for _, v in got[key]], [v for _, v in ref[key]], rtol=1e-5)
    for key in ("w1", "w2", "b2"):
        np.testing.assert_allclose(got[key], ref[key], rtol=1e-5, atol=1e-6)
