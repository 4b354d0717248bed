"""Gluon event handlers for the Estimator (MXNet 1.9's `gluon.contrib.estimator.event_handler`).

Handlers run in ascending `priority` (0 when a handler has none); at equal priority the user's handlers run
before the defaults `fit` adds, in the order given. The defaults and their priorities::

    GradientUpdateHandler  -2000   trainer.step(batch size) at batch end
    MetricHandler          -1000   resets metrics at epoch begin, updates them at batch end
    ValidationHandler      -1000   runs estimator.evaluate at epoch end (when val_data is given)
    StoppingHandler            0   stops after `epochs` epochs or `batches` batches
    LoggingHandler           inf   logs (and draws progress) once every state is updated
"""
import warnings

import numpy as np

from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as LossMetric
from ._checkpoint import CheckpointHandler
from ._events import BatchBegin, BatchEnd, EpochBegin, EpochEnd, TrainBegin, TrainEnd
from ._events import EventHandler  # noqa: F401  (MXNet's module has event_handler.EventHandler)
from ._logging_handler import LoggingHandler
from .utils import EstimatorError, _check_metrics, _monitor_op

__all__ = ["TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd",
           "StoppingHandler", "MetricHandler", "ValidationHandler", "LoggingHandler", "CheckpointHandler",
           "EarlyStoppingHandler", "GradientUpdateHandler"]


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops training after `max_epoch` epochs or `max_batch` batches (fit's `epochs`/`batches`)."""

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets `metrics` at each epoch begin and updates them at each batch end (an `mx.metric.Loss` with the
    loss values, any other metric with labels and predictions).

    Parameters
    ----------
    metrics : list of EvalMetric
    priority : scalar, default -1000
        Runs before the handlers that read the metrics.
    """

    def __init__(self, metrics, priority=-1000):
        self.metrics = _check_metrics(metrics, "MetricHandler")
        self.priority = priority

    def epoch_begin(self, estimator, *args, **kwargs):
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator, *args, **kwargs):
        pred, label, loss = kwargs["pred"], kwargs["label"], kwargs["loss"]
        for metric in self.metrics:
            if isinstance(metric, LossMetric):
                metric.update(0, loss)
            else:
                metric.update(label, pred)


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Runs `eval_fn(val_data=..., batch_axis=..., event_handlers=...)` every `epoch_period` epochs and every
    `batch_period` batches.

    Parameters
    ----------
    val_data : DataLoader
    eval_fn : callable
        Usually `estimator.evaluate`.
    epoch_period : int or None, default 1
    batch_period : int or None, default None
    priority : scalar, default -1000
        Runs before the handlers that read validation metrics (logging, early stopping, checkpoints).
    event_handlers : EventHandler or list of EventHandler
        Handlers passed on to `eval_fn`.
    """

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None, priority=-1000,
                 event_handlers=None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator, *args, **kwargs):
        self.current_batch = 0
        self.current_epoch = 0

    def _validate(self, estimator):
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis, event_handlers=self.event_handlers)

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._validate(estimator)

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._validate(estimator)


class GradientUpdateHandler(BatchEnd):
    """Calls `estimator.trainer.step(batch_size)` at each batch end, the batch size summed over the loss
    shards. Priority -2000: the step comes before anything else reads the batch's results."""

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        loss = kwargs["loss"]
        losses = loss if isinstance(loss, (list, tuple)) else [loss]
        estimator.trainer.step(sum(part.shape[0] for part in losses))


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops training when `monitor` has not improved for `patience` epochs.

    Parameters
    ----------
    monitor : EvalMetric
        One of `estimator.train_metrics` or `estimator.val_metrics`.
    min_delta : float, default 0
        An improvement must beat the best value by more than this.
    patience : int, default 0
        Epochs without improvement tolerated; 0 stops at the first epoch that does not improve.
    mode : {'auto', 'min', 'max'}, default 'auto'
        'auto' is 'max' for accuracy and f1 metrics, 'min' otherwise (MXNet 1.9 used 'max' always).
    baseline : float, optional
        The value to beat at the start (instead of +-inf).
    """

    def __init__(self, monitor, min_delta=0, patience=0, mode="auto", baseline=None):
        super().__init__()
        if not isinstance(monitor, EvalMetric):
            raise EstimatorError("EarlyStoppingHandler: please provide one of the metric objects from "
                                 f"estimator.train_metrics and estimator.val_metrics as monitor, got {monitor!r}")
        if isinstance(monitor, CompositeEvalMetric):
            raise EstimatorError("CompositeEvalMetric is not supported for EarlyStoppingHandler, please specify "
                                 "a simple metric instead.")
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.monitor_op = _monitor_op(monitor, mode, "EarlyStoppingHandler")
        # the threshold is added to the value before comparing: positive when larger is better
        self.min_delta = abs(min_delta) if self.monitor_op is np.greater else -abs(min_delta)
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def epoch_end(self, estimator, *args, **kwargs):
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn(f"EarlyStoppingHandler: {name} is not updated, make sure you pass one of the metric "
                          "objects from estimator.train_metrics and estimator.val_metrics as monitor.",
                          RuntimeWarning, stacklevel=2)
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        if self.stop_training:
            estimator.logger.info("[Epoch %d] EarlyStoppingHandler: early stopping due to %s not improving",
                                  self.stopped_epoch, self.monitor.get()[0])
