"""gluon.contrib.estimator: the numbers, the handlers' contracts, errors, the logger, and mixnet's documented
fixes of MXNet 1.9 bugs. (Comparisons with real MXNet live in test_estimator_reference.py.)"""
import io
import logging
import os
import warnings

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon
from mixnet.base import MXNetError
from mixnet.gluon.contrib.estimator import (BatchProcessor, CheckpointHandler, ContextError, EarlyStoppingHandler,
                                            Estimator, EstimatorError, LoggingHandler, MetricHandler,
                                            ValidationHandler)

from .estimator_scenarios import X, Y, _loader


@pytest.fixture(autouse=True)
def _no_warnings_noise():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _net(seed):
    mx.random.seed(seed)
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(5, activation="tanh"), gluon.nn.Dense(2))
    net.initialize(mx.init.Xavier())
    net(mx.nd.array(X[:1]))
    return net


def _est(net=None, **kwargs):
    net = net or _net(0)
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})
    est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer, **kwargs)
    est.logger.handlers = []
    return est


def test_fit_equals_a_hand_written_loop():
    est = _est(_net(7))
    est.fit(_loader(mx), epochs=3)

    net = _net(7)
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(3):
        total, count = 0.0, 0
        for data, label in _loader(mx):
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
            total, count = total + float(loss.sum().asscalar()), count + loss.shape[0]
    for mine, theirs in zip(est.net.collect_params().values(), net.collect_params().values()):
        np.testing.assert_array_equal(mine.data().asnumpy(), theirs.data().asnumpy())
    assert [m.name for m in est.train_metrics] == ["training accuracy", "training softmaxcrossentropyloss"]
    assert est.train_metrics[1].get()[1] == pytest.approx(total / count, rel=1e-6)


def test_evaluate_uses_val_net_val_loss_and_val_metrics():
    est = _est(val_loss=gluon.loss.SoftmaxCrossEntropyLoss(from_logits=True), val_metrics=mx.metric.Loss("vl"))
    assert est.val_net is est.net
    est.evaluate(_loader(mx, n=8))
    (name, value), = [m.get() for m in est.val_metrics]
    pred = est.net(mx.nd.array(X[:8])).asnumpy()
    assert name == "validation vl"
    assert value == pytest.approx(-pred[np.arange(8), Y[:8].astype(int)].mean(), rel=1e-5)


def test_batch_processor_is_pluggable_and_checked():
    calls = []

    class Doubling(BatchProcessor):
        def fit_batch(self, estimator, batch, batch_axis=0):
            calls.append(batch[0].shape)
            return super().fit_batch(estimator, (batch[0] * 2, batch[1]), batch_axis)
    est = _est(batch_processor=Doubling())
    est.fit(_loader(mx), batches=2)
    assert calls == [(4, 3), (4, 3)]
    with pytest.raises(EstimatorError, match="fit_batch"):
        _est(batch_processor=object())


def test_errors_name_the_bad_argument():
    with pytest.raises(EstimatorError, match="loss must be a gluon.loss.Loss"):
        Estimator(_net(0), loss="mse")
    with pytest.raises(EstimatorError, match="'acc'"):
        _est(train_metrics="acc")
    with pytest.raises(ValueError, match="Trainer"):
        Estimator(_net(0), loss=gluon.loss.L2Loss(), trainer="sgd")
    with pytest.raises(EstimatorError, match="context must be a Context"):
        _est(context="cpu")
    with pytest.raises(ContextError, match="gpu") as info:
        _est(context=[mx.cpu(), mx.gpu(100)])
    assert isinstance(info.value, AssertionError) and isinstance(info.value, MXNetError)
    est = _est()
    with pytest.raises(EstimatorError, match="DataLoader, got NDArrayIter"):
        est.fit(mx.io.NDArrayIter(X, Y, batch_size=4), epochs=1)
    with pytest.raises(EstimatorError, match="exactly one type of iteration"):
        est.fit(_loader(mx), epochs=1, batches=2)
    with pytest.raises(EstimatorError, match="exactly one type of iteration"):
        est.fit(_loader(mx))
    empty = gluon.data.DataLoader(gluon.data.SimpleDataset([]), batch_size=2)
    with pytest.raises(EstimatorError, match="no batch"):
        est.fit(empty, batches=3)
    with pytest.raises(EstimatorError, match="log_interval"):
        LoggingHandler(log_interval=0)
    with pytest.raises(EstimatorError, match="event_handlers must be an EventHandler"):
        est.fit(_loader(mx), epochs=1, event_handlers=[print])
    with pytest.raises(EstimatorError, match="monitor"):
        CheckpointHandler("unused-dir-never-created-" + str(os.getpid()), save_best=True)
    os.rmdir("unused-dir-never-created-" + str(os.getpid()))
    with pytest.raises(EstimatorError, match="Composite"):
        EarlyStoppingHandler(monitor=mx.metric.CompositeEvalMetric([mx.metric.Accuracy()]))


def test_default_handlers_added_only_when_missing_and_list_not_mutated():
    est = _est()
    mine = [LoggingHandler(metrics=est.train_metrics)]
    handlers = est._prepare_default_handlers(val_data=_loader(mx), event_handlers=mine)
    assert [type(h).__name__ for h in handlers] == [
        "GradientUpdateHandler", "MetricHandler", "ValidationHandler", "StoppingHandler", "LoggingHandler"]
    assert handlers[-1] is mine[0] and len(mine) == 1
    with pytest.raises(EstimatorError, match="outside of the known training and validation metrics"):
        est.fit(_loader(mx), epochs=1, event_handlers=[LoggingHandler(metrics=[mx.metric.RMSE("foreign")])])
    # the Estimator's own metric objects are fine in user handlers
    acc = est.train_metrics[0]
    est.fit(_loader(mx), batches=1, event_handlers=[MetricHandler([acc]), LoggingHandler(metrics=[acc])])


def test_metric_prefix_not_doubled_when_a_metric_is_reused():
    acc = mx.metric.Accuracy()
    _est(train_metrics=acc)
    est = _est(train_metrics=acc)
    assert acc.name == "training accuracy"
    assert [m.name for m in est.val_metrics] == ["validation accuracy"]


def test_validation_by_batch_period():
    est = _est()
    seen = []
    handler = ValidationHandler(_loader(mx, n=8), eval_fn=lambda **kw: seen.append(sorted(kw)), epoch_period=None,
                                batch_period=2)
    est.fit(_loader(mx), epochs=2, event_handlers=[handler])
    assert seen == [["batch_axis", "event_handlers", "val_data"]] * 3     # 6 batches, every 2nd


def test_early_stopping_auto_mode_minimises_losses():
    # MXNet 1.9's 'auto' used `greater` for every metric (a bug); a loss must go down
    loss_metric = mx.metric.Loss("loss")
    assert EarlyStoppingHandler(monitor=loss_metric).monitor_op is np.less
    assert EarlyStoppingHandler(monitor=mx.metric.Accuracy()).monitor_op is np.greater
    assert EarlyStoppingHandler(monitor=mx.metric.F1()).monitor_op is np.greater
    with pytest.warns(RuntimeWarning, match="unknown"):
        warnings.simplefilter("always")
        assert EarlyStoppingHandler(monitor=loss_metric, mode="lowest").monitor_op is np.less
    est = _est()
    stop = EarlyStoppingHandler(monitor=est.train_metrics[1], patience=1)
    est.fit(_loader(mx), epochs=4, event_handlers=[stop])
    assert not stop.stop_training and stop.current_epoch == 4        # the loss keeps falling


def test_early_stopping_logs_even_at_epoch_zero():
    est = _est()
    stream = io.StringIO()
    est.logger.addHandler(logging.StreamHandler(stream))
    stop = EarlyStoppingHandler(monitor=est.train_metrics[1], mode="min", baseline=-1.0)
    est.fit(_loader(mx), epochs=3, event_handlers=[stop])
    assert stop.stopped_epoch == 0 and stop.current_epoch == 1
    assert "[Epoch 0] EarlyStoppingHandler: early stopping due to training softmaxcrossentropyloss not improving" \
        in stream.getvalue()


def test_max_checkpoints_deletes_only_the_retired_files(tmp_path):
    # MXNet removed every file starting with the retired prefix: 'm-epoch0batch3' took 'm-epoch0batch30' along
    foreign = tmp_path / "m-epoch0batch30.params"
    foreign.write_bytes(b"not ours")
    est = _est()
    est.fit(_loader(mx), epochs=3, event_handlers=[CheckpointHandler(str(tmp_path), "m", max_checkpoints=1)])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "m-epoch0batch30.params", "m-epoch2batch9.params", "m-epoch2batch9.states"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".mixnet-tmp")]


def test_resume_counts_found_checkpoints_and_restores_state(tmp_path):
    est = _est(_net(3))
    est.fit(_loader(mx), epochs=2, event_handlers=[CheckpointHandler(str(tmp_path), "r")])
    est2 = _est(_net(4))
    handler = CheckpointHandler(str(tmp_path), "r", max_checkpoints=2, resume_from_checkpoint=True)
    est2.fit(_loader(mx), epochs=3, event_handlers=[handler])
    assert est2.max_epoch == 1 and (handler.trained_epoch, handler.trained_batch) == (1, 6)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "r-epoch1batch6.params", "r-epoch1batch6.states", "r-epoch2batch9.params", "r-epoch2batch9.states"]
    # resuming 2 epochs + 1 more equals training 3 epochs straight (params and Adam states were restored)
    straight = _est(_net(3))
    straight.fit(_loader(mx), epochs=3)
    for a, b in zip(est2.net.collect_params().values(), straight.net.collect_params().values()):
        np.testing.assert_allclose(a.data().asnumpy(), b.data().asnumpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(EstimatorError, match="maximum number of epoch"):
        _est().fit(_loader(mx), epochs=2, event_handlers=[
            CheckpointHandler(str(tmp_path), "r", resume_from_checkpoint=True)])
    with pytest.raises(EstimatorError, match="same kind of period"):
        _est().fit(_loader(mx), batches=2, event_handlers=[
            CheckpointHandler(str(tmp_path), "r", resume_from_checkpoint=True)])


def test_resume_by_batches_counts_what_is_left_and_refuses_a_spent_budget(tmp_path):
    def handler():
        return CheckpointHandler(str(tmp_path), "b", batch_period=2, epoch_period=None, resume_from_checkpoint=True)
    _est().fit(_loader(mx), batches=5, event_handlers=[CheckpointHandler(str(tmp_path), "b", batch_period=2,
                                                                         epoch_period=None)])
    with pytest.raises(EstimatorError, match="maximum number of batch 3 reached"):     # the last one: batch 3
        _est().fit(_loader(mx), batches=4, event_handlers=[handler()])
    est, resumed = _est(), handler()
    est.fit(_loader(mx), batches=7, event_handlers=[resumed])
    assert resumed.trained_batch == 3 and est.max_batch == 3


def test_checkpoint_without_hybridize_logs_why_no_symbol(tmp_path):
    est = _est()
    stream = io.StringIO()
    est.logger.addHandler(logging.StreamHandler(stream))
    est.fit(_loader(mx), batches=1, event_handlers=[CheckpointHandler(str(tmp_path), "n", epoch_period=None,
                                                                      batch_period=1)])
    assert "Model architecture(symbol file) is not saved" in stream.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n-epoch0batch0.params", "n-epoch0batch0.states"]


def test_logger_prints_to_stdout_and_obeys_the_mixnet_estimator_level(capsys, caplog):
    caplog.set_level(logging.INFO)
    est = Estimator(_net(0), loss=gluon.loss.SoftmaxCrossEntropyLoss())
    assert est.logger.name == "mixnet.estimator" and not est.logger.propagate
    est.fit(_loader(mx), batches=1)
    out = capsys.readouterr().out
    assert out.startswith("Training begin: using optimizer SGD with current learning rate 0.0010 \n")
    assert caplog.records == []            # no second copy through the root logger
    parent = logging.getLogger("mixnet.estimator")
    old = parent.level
    try:
        parent.setLevel(logging.WARNING)   # after the logger has already logged: no stale cache
        est.fit(_loader(mx), batches=1)
        assert capsys.readouterr().out == ""
    finally:
        parent.setLevel(old)
    other = Estimator(_net(0), loss=gluon.loss.L2Loss())
    assert other.logger is not est.logger and len(other.logger.handlers) == 1
