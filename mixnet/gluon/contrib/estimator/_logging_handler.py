"""LoggingHandler (MXNet's messages, word for word) with an optional progress bar, and the Estimator's logger."""
import logging
import sys
import time

import numpy as np

from . import _progress
from ._events import BatchBegin, BatchEnd, EpochBegin, EpochEnd, TrainBegin, TrainEnd
from .utils import EstimatorError, _check_metrics

__all__ = ["LoggingHandler"]

LOGGER_NAME = "mixnet.estimator"


class EstimatorLogger(logging.Logger):
    """The logger of one Estimator: its own handlers (stdout at first, as MXNet's), its level from the
    ``mixnet.estimator`` logger (INFO unless you set it), and no propagation to the root logger, so a
    ``logging.basicConfig()`` does not print every line twice.

    It is not registered with the logging manager (each Estimator gets a fresh one, as in MXNet, and none
    outlives its Estimator), so it asks its parent for the level on every call instead of caching it."""

    def __init__(self):
        super().__init__(LOGGER_NAME)
        self.parent = logging.getLogger(LOGGER_NAME)
        self.propagate = False
        self.addHandler(logging.StreamHandler(sys.stdout))

    def isEnabledFor(self, level):
        if self.disabled or self.manager.disable >= level:
            return False
        return level >= self.getEffectiveLevel()


_parent = logging.getLogger(LOGGER_NAME)
if _parent.level == logging.NOTSET:
    _parent.setLevel(logging.INFO)     # fit() reports progress at INFO, as MXNet's Estimator does


def _format_metrics(msg, metrics):
    for metric in metrics:
        name, value = metric.get()
        msg += "%s: %.4f, " % (name, value)
    return msg.rstrip(", ")


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs the optimizer, learning rate, time and metrics of training (and validation) to `estimator.logger`.

    Parameters
    ----------
    log_interval : int or 'epoch', default 'epoch'
        'epoch': a line at each epoch's begin and end; an integer k: also a line every k batches.
    metrics : list of EvalMetric
        Metrics to report (the Estimator's own metric objects).
    priority : scalar, default inf
        Handlers run in ascending priority; logging runs last so every metric is up to date.
    progress : bool or None, default None
        Draw a progress bar per epoch (tqdm.auto: a widget in Jupyter, a text bar in a terminal). None: only in
        Jupyter or when stderr is a terminal; True: always; False: never.
    """

    def __init__(self, log_interval="epoch", metrics=None, priority=np.inf, progress=None):
        super().__init__()
        if log_interval != "epoch" and (isinstance(log_interval, bool) or not isinstance(log_interval, int)
                                        or log_interval < 1):
            raise EstimatorError("LoggingHandler: log_interval must be either a positive integer or the string "
                                 f"'epoch', got {log_interval!r}")
        self.metrics = _check_metrics(metrics, "LoggingHandler")
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.priority = priority
        self.log_interval = log_interval
        self.log_interval_time = 0
        self.progress = progress
        self._bar = None
        self._batches_done = 0

    @property
    def _per_batch(self):
        return isinstance(self.log_interval, int)

    def _is_training(self):
        # the Estimator names its metrics 'training ...' and 'validation ...' (MXNet's convention)
        return any("training" in metric.name for metric in self.metrics)

    def _log(self, estimator, msg, *args):
        with _progress.write_mode():
            estimator.logger.info(msg, *args)

    def train_begin(self, estimator, *args, **kwargs):
        self.train_start = time.time()
        trainer = estimator.trainer
        self._log(estimator, "Training begin: using optimizer %s with current learning rate %.4f ",
                  type(trainer.optimizer).__name__, trainer.learning_rate)
        if estimator.max_epoch:
            self._log(estimator, "Train for %d epochs.", estimator.max_epoch)
        else:
            self._log(estimator, "Train for %d batches.", estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0
        self._batches_done = 0

    def train_end(self, estimator, *args, **kwargs):
        self.close_progress()
        train_time = time.time() - self.train_start
        msg = "Train finished using total %ds with %d epochs. " % (train_time, self.current_epoch)
        self._log(estimator, _format_metrics(msg, self.metrics))

    def batch_begin(self, estimator, *args, **kwargs):
        if self._per_batch:
            self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        if self._per_batch:
            batch_time = time.time() - self.batch_start
            msg = "[Epoch %d][Batch %d]" % (self.current_epoch, self.batch_index)
            self.processed_samples += kwargs["batch"][0].shape[getattr(estimator, "batch_axis", 0)]
            msg += "[Samples %s] " % self.processed_samples
            self.log_interval_time += batch_time
            if self.batch_index % self.log_interval == 0:
                msg += "time/interval: %.3fs " % self.log_interval_time
                self.log_interval_time = 0
                self._log(estimator, _format_metrics(msg, self.metrics))
        self.batch_index += 1
        self._batches_done += 1
        if self._bar is not None:
            self._bar.update()

    def epoch_begin(self, estimator, *args, **kwargs):
        self.epoch_start = time.time()
        training = self._is_training()
        if training:
            self._log(estimator, "[Epoch %d] Begin, current learning rate: %.4f",
                      self.current_epoch, estimator.trainer.learning_rate)
        else:
            self._log(estimator, "Validation Begin")
        if _progress.wanted(self.progress):
            self._open_progress(estimator, training)

    def epoch_end(self, estimator, *args, **kwargs):
        self.close_progress()
        epoch_time = time.time() - self.epoch_start
        msg = "[Epoch %d] Finished in %.3fs, " % (self.current_epoch, epoch_time)
        self._log(estimator, _format_metrics(msg, self.metrics))
        self.current_epoch += 1
        self.batch_index = 0

    def _open_progress(self, estimator, training):
        total = getattr(estimator, "_epoch_batches", None)
        max_batch = getattr(estimator, "max_batch", None)
        if training and max_batch:
            left = max(max_batch - self._batches_done, 0)
            total = left if total is None else min(total, left)
        desc = "[Epoch %d]" % self.current_epoch if training else "Validation"
        self._bar = _progress.Bar(total, desc, self.metrics, leave=training)

    def close_progress(self):
        """Take this handler's bar off the screen (also after an exception ends `fit`)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
