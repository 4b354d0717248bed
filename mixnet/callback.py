"""`mx.callback`: the callbacks `Module.fit` calls, as in MXNet 1.x.

Epoch-end callbacks are called as ``cb(epoch, symbol, arg_params, aux_params)``; batch-end callbacks as
``cb(param)`` with a `mx.model.BatchEndParam` (epoch, nbatch, eval_metric, locals). They report at INFO level
through the ``mixnet.callback`` logger, a child of ``mixnet`` that propagates to the root logger, so MXNet's
usual ``logging.basicConfig(level=logging.INFO)`` shows them, with MXNet's messages word for word::

    Epoch[0] Batch [0-50]  Speed: 1910.41 samples/sec  accuracy=0.200000      (tab-separated)
    Iter[0] Batch[50] Train-accuracy=0.200000
    [========--------] 50%
    Epoch[0] Validation-accuracy=0.300000

For Gluon training loops, `gluon.contrib.estimator` has the same reports (and a progress bar) as event handlers.
"""
import logging
import math
import time

from .model import save_checkpoint

_log = logging.getLogger("mixnet.callback")

__all__ = ["module_checkpoint", "do_checkpoint", "log_train_metric", "Speedometer", "ProgressBar",
           "LogValidationMetricsCallback"]


def _period(period):
    return int(max(1, period))


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """Epoch-end callback: `mod.save_checkpoint(prefix, epoch + 1, ...)` every `period` epochs."""
    period = _period(period)

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix, period=1):
    """Epoch-end callback: `mx.model.save_checkpoint(prefix, epoch + 1, ...)` every `period` epochs."""
    period = _period(period)

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period, auto_reset=False):
    """Batch-end callback: logs the training metric every `period` batches (and resets its local part)."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                _log.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Batch-end callback: logs samples/sec (and the metric) every `frequent` batches.

    The first batch of each epoch only starts the clock. With `auto_reset` the metric's local part is reset
    after each report, so each line shows the metric of the last `frequent` batches (``Batch [50-100]``);
    without it, the running value since the epoch began (``Batch [0-100]``).
    """

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param):
        count = param.nbatch
        if self.last_count > count:      # a new epoch started: the first batch only starts the clock
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        if param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()
            if self.auto_reset:
                param.eval_metric.reset_local()
                msg = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
                _log.info(msg, param.epoch, count - self.frequent, count, speed, *sum(name_value, ()))
            else:
                msg = "Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
                _log.info(msg, param.epoch, count, speed, *sum(name_value, ()))
        else:
            _log.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count, speed)
        self.tic = time.time()


class ProgressBar:
    """Batch-end callback: logs a text progress bar of `length` characters for `total` batches."""

    def __init__(self, total, length=80):
        self.bar_len = length
        self.total = total

    def __call__(self, param):
        count = param.nbatch
        filled_len = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        prog_bar = "=" * filled_len + "-" * (self.bar_len - filled_len)
        _log.info("[%s] %s%s\r", prog_bar, percents, "%")


class LogValidationMetricsCallback:
    """Eval-end callback: logs each validation metric."""

    def __call__(self, param):
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            _log.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
