"""mx.callback: messages, counters and logger of the Module-era callbacks, as MXNet 1.9.1 prints them.

The expected lines were printed by real MXNet 1.9.1 for the same sequence of calls (speed masked).
"""
import logging
import re
from collections import namedtuple

import pytest

import mixnet as mx

Param = namedtuple("Param", "epoch nbatch eval_metric locals")


def _accuracy(labels, scores):
    acc = mx.metric.Accuracy()
    acc.update([mx.nd.array(labels)], [mx.nd.array(scores)])
    return acc


@pytest.fixture
def lines(caplog):
    caplog.set_level(logging.INFO)

    def read():
        return [(r.name, re.sub(r"Speed: [\d.inf]+", "Speed: S", r.getMessage())) for r in caplog.records]
    return read


def test_speedometer_auto_reset_reports_each_interval(lines):
    acc = _accuracy([0, 1, 1, 0], [[1, 0], [0, 1], [1, 0], [1, 0]])
    speedometer = mx.callback.Speedometer(4, frequent=2)
    for epoch in range(2):
        for nbatch in range(5):
            speedometer(Param(epoch, nbatch, acc, None))
        acc.update([mx.nd.array([0, 1])], [mx.nd.array([[1, 0], [0, 1]])])
    assert lines() == [("mixnet.callback", m) for m in (
        "Epoch[0] Batch [0-2]\tSpeed: S samples/sec\taccuracy=0.750000",
        "Epoch[0] Batch [2-4]\tSpeed: S samples/sec\taccuracy=nan",
        "Epoch[1] Batch [0-2]\tSpeed: S samples/sec\taccuracy=1.000000",
        "Epoch[1] Batch [2-4]\tSpeed: S samples/sec\taccuracy=nan")]
    assert (acc.num_inst, acc.global_num_inst) == (2, 8)      # auto_reset clears only the local part


def test_speedometer_running_value_and_no_metric(lines):
    acc = _accuracy([0, 1], [[1, 0], [0, 1]])
    running = mx.callback.Speedometer(4, frequent=2, auto_reset=False)
    bare = mx.callback.Speedometer(4, frequent=2)
    for nbatch in range(3):
        running(Param(0, nbatch, acc, None))
    for nbatch in range(3):
        bare(Param(0, nbatch, None, None))
    assert [m for _, m in lines()] == ["Epoch[0] Batch [0-2]\tSpeed: S samples/sec\taccuracy=1.000000",
                                       "Iter[0] Batch [2]\tSpeed: S samples/sec"]
    assert acc.num_inst == 2


def test_log_train_metric_progress_bar_and_validation(lines):
    acc = _accuracy([0, 1], [[1, 0], [0, 1]])
    log_metric = mx.callback.log_train_metric(2, auto_reset=True)
    for nbatch in range(3):
        log_metric(Param(1, nbatch, acc, None))
    bar = mx.callback.ProgressBar(total=4, length=8)
    for nbatch in range(5):
        bar(Param(0, nbatch, acc, None))
    mx.callback.LogValidationMetricsCallback()(Param(3, 0, acc, None))
    mx.callback.LogValidationMetricsCallback()(Param(3, 0, None, None))
    assert [m for _, m in lines()] == [
        "Iter[1] Batch[0] Train-accuracy=1.000000", "Iter[1] Batch[2] Train-accuracy=nan",
        "[--------] 0%\r", "[==------] 25%\r", "[====----] 50%\r", "[======--] 75%\r", "[========] 100%\r",
        "Epoch[3] Validation-accuracy=nan"]


def test_callbacks_quiet_without_logging_config(caplog):
    # the mixnet.callback logger has no level of its own: the root's WARNING keeps INFO reports out
    caplog.set_level(logging.WARNING)
    mx.callback.LogValidationMetricsCallback()(Param(0, 0, _accuracy([1], [[0, 1]]), None))
    assert caplog.records == []
    assert logging.getLogger("mixnet.callback").level == logging.NOTSET


def test_do_checkpoint_and_module_checkpoint_periods(tmp_path):
    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    args = {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros((2,))}
    prefix = str(tmp_path / "cp")
    callback = mx.callback.do_checkpoint(prefix, period=2)
    for epoch in range(4):
        callback(epoch, sym, args, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cp-0002.params", "cp-0004.params", "cp-symbol.json"]
    _, loaded, _ = mx.model.load_checkpoint(prefix, 4)
    assert loaded["fc_weight"].asnumpy().tolist() == [[1.0] * 3] * 2

    saved = []

    class FakeModule:
        def save_checkpoint(self, prefix, epoch, save_optimizer_states):
            saved.append((prefix, epoch, save_optimizer_states))
    callback = mx.callback.module_checkpoint(FakeModule(), "m", period=0, save_optimizer_states=True)
    for epoch in range(2):
        callback(epoch)
    assert saved == [("m", 1, True), ("m", 2, True)]       # a period below 1 means every epoch
