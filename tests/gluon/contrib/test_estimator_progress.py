"""Progress bars of Estimator.fit/evaluate (LoggingHandler(progress=...)) through tqdm.auto."""
import logging
import sys
import types
import warnings

import pytest

import mixnet as mx
from mixnet import gluon
from mixnet.gluon.contrib.estimator import BatchProcessor, Estimator, LoggingHandler, _progress

from .estimator_scenarios import _loader, _net


class CountingAccuracy(mx.metric.Accuracy):
    gets = 0

    def get(self):
        CountingAccuracy.gets += 1
        return super().get()


def _est(**kwargs):
    net = _net(mx)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer, **kwargs)
    est.logger.handlers = []
    return est


def test_bar_per_epoch_with_metrics_when_asked(capsys):
    est = _est()
    est.fit(_loader(mx), val_data=_loader(mx, n=8), epochs=2,
            event_handlers=[LoggingHandler(metrics=est.train_metrics, progress=True)])
    err = capsys.readouterr().err
    assert "[Epoch 0]: 100%" in err and "[Epoch 1]: 100%" in err and "3/3" in err
    assert "accuracy=0.5000, softmaxcrossentropyloss=" in err
    assert _progress._open_bars == []


def test_batches_mode_bar_counts_the_remaining_batches(capsys):
    est = _est()
    est.fit(_loader(mx), batches=4, event_handlers=[LoggingHandler(metrics=est.train_metrics, progress=True)])
    err = capsys.readouterr().err
    assert "3/3" in err and "1/1" in err


def test_no_bar_where_nobody_watches(capsys, monkeypatch):
    monkeypatch.setattr(_progress, "in_notebook", lambda: False)
    est = _est()
    est.fit(_loader(mx), epochs=1)                               # default handler, progress=None
    est.fit(_loader(mx), epochs=1, event_handlers=[LoggingHandler(metrics=est.train_metrics, progress=False)])
    assert capsys.readouterr().err == ""


def test_wanted_follows_notebook_and_terminal(monkeypatch):
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(
        get_ipython=lambda: types.SimpleNamespace(config={"IPKernelApp": {}})))
    assert _progress.in_notebook() and _progress.wanted(None)
    assert not _progress.wanted(False)
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))
    monkeypatch.setattr(sys, "stderr", types.SimpleNamespace(isatty=lambda: True))
    assert not _progress.in_notebook() and _progress.wanted(None)
    monkeypatch.setattr(sys, "stderr", types.SimpleNamespace(isatty=lambda: False))
    assert not _progress.wanted(None) and _progress.wanted(True)


def test_metrics_are_read_only_when_the_bar_redraws(capsys):
    # per batch a bar costs a counter update and a clock read; metric values are formatted at most every
    # MININTERVAL seconds (plus once when the bar closes), not once per batch
    acc = CountingAccuracy()
    data = gluon.data.DataLoader(gluon.data.ArrayDataset(mx.nd.zeros((64, 3)), mx.nd.zeros((64,))), batch_size=1)
    est = _est(train_metrics=[acc])
    CountingAccuracy.gets = 0
    est.fit(data, epochs=1, event_handlers=[LoggingHandler(metrics=[acc], progress=True)])
    with_bar = CountingAccuracy.gets
    CountingAccuracy.gets = 0
    est.fit(data, epochs=1, event_handlers=[LoggingHandler(metrics=[acc], progress=False)])
    without_bar = CountingAccuracy.gets
    assert with_bar - without_bar < 64


def test_bars_closed_when_fit_raises(capsys):
    class Failing(BatchProcessor):
        def fit_batch(self, estimator, batch, batch_axis=0):
            if estimator.trainer._optimizer.num_update >= 1:
                raise RuntimeError("boom")
            return super().fit_batch(estimator, batch, batch_axis)
    est = _est(batch_processor=Failing())
    with pytest.raises(RuntimeError, match="boom"):
        est.fit(_loader(mx), epochs=1, event_handlers=[LoggingHandler(metrics=est.train_metrics, progress=True)])
    assert _progress._open_bars == []


class _Recording(logging.Handler):
    def __init__(self):
        super().__init__()
        self.seen = []

    def emit(self, record):
        self.seen.append((record.getMessage(), len(_progress._open_bars)))


def test_per_batch_log_lines_around_an_open_bar(capsys):
    est = _est()
    recording = _Recording()
    est.logger.addHandler(recording)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.fit(_loader(mx), epochs=1, event_handlers=[LoggingHandler(log_interval=1, metrics=est.train_metrics,
                                                                      progress=True)])
    # batch lines are written while the bar is up (tqdm lifts it out of the way); the epoch's lines are not
    assert [bars for msg, bars in recording.seen if msg.startswith("[Epoch 0][Batch")] == [1, 1, 1]
    assert [bars for msg, bars in recording.seen if msg.startswith("[Epoch 0] ")] == [0, 0]
    assert _progress._open_bars == []
