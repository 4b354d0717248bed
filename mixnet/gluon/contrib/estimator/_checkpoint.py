"""CheckpointHandler: parameters and trainer states every few epochs or batches, the best model, resuming.

Files in `model_dir` (MXNet 1.9's names)::

    {prefix}-symbol.json              the graph, after the first batch, when the net is hybridized
    {prefix}-epoch{E}batch{B}.params  net.save_parameters (E: epochs finished before, B: batches before + 1
    {prefix}-epoch{E}batch{B}.states  trainer.save_states          at epoch end, or the batch's index)
    {prefix}-best.params / .states    the best value of `monitor` so far (save_best=True)

Every file is written atomically (a temporary file renamed over the target), so a run killed while saving
leaves the previous checkpoint whole. Differences from MXNet 1.9 (bugs there): only the two files of the
checkpoint being retired are deleted (MXNet deleted every file whose name started with its prefix, so
retiring `...batch8` also removed `...batch80`), and checkpoints found on resume count towards
`max_checkpoints` (MXNet meant to, but never did).
"""
import os
import re
import warnings

import numpy as np

from ....metric import EvalMetric
from ._events import BatchEnd, EpochEnd, TrainBegin
from .utils import EstimatorError, _monitor_op

__all__ = ["CheckpointHandler"]


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Saves the model every `epoch_period` epochs or `batch_period` batches.

    Parameters
    ----------
    model_dir : str
        Folder for all checkpoint files (created if missing).
    model_prefix : str, default 'model'
        Prefix of every file name.
    monitor : EvalMetric, optional
        The metric that decides which model is best (needed for save_best).
    verbose : int, default 0
        1: log every save.
    save_best : bool, default False
        Also keep `{prefix}-best.params/.states` for the best `monitor` value.
    mode : {'auto', 'min', 'max'}, default 'auto'
        How `monitor` improves; 'auto' is 'max' for accuracy and f1, 'min' otherwise.
    epoch_period : int or None, default 1
    batch_period : int or None, default None
    max_checkpoints : int, default 5
        Epoch/batch checkpoints kept; older ones are deleted (the best one is not counted).
    resume_from_checkpoint : bool, default False
        Load the latest checkpoint in `model_dir` at train begin and train only the remaining epochs or batches
        (the periods must match the kind of training: epoch_period for `epochs`, batch_period for `batches`).
    """

    def __init__(self, model_dir, model_prefix="model", monitor=None, verbose=0, save_best=False, mode="auto",
                 epoch_period=1, batch_period=None, max_checkpoints=5, resume_from_checkpoint=False):
        self.monitor = monitor
        self.verbose = verbose
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        if save_best and not isinstance(monitor, EvalMetric):
            raise EstimatorError("To save best model only, please provide one of the metric objects from "
                                 "estimator.train_metrics and estimator.val_metrics as monitor.")
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints = []
        self.trained_epoch = -1
        self.trained_batch = -1
        if save_best:
            self.monitor_op = _monitor_op(monitor, mode, "CheckpointHandler")
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def train_begin(self, estimator, *args, **kwargs):
        self.current_epoch = 0
        self.current_batch = 0
        self.saved_checkpoints = []
        if self.save_best:
            self.best = np.inf if self.monitor_op is np.less else -np.inf
        if self.resume_from_checkpoint:
            by_batches = bool(estimator.max_batch)
            if by_batches != bool(self.batch_period) or by_batches == bool(self.epoch_period):
                raise EstimatorError(
                    "CheckpointHandler: to resume from a checkpoint, save with the same kind of period you train "
                    "with: batch_period (and epoch_period=None) when fit(batches=...), epoch_period (and "
                    f"batch_period=None) when fit(epochs=...); got epoch_period={self.epoch_period!r}, "
                    f"batch_period={self.batch_period!r}")
            self._resume_from_checkpoint(estimator)

    def batch_end(self, estimator, *args, **kwargs):
        if self.current_batch == 0:
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1

    def epoch_end(self, estimator, *args, **kwargs):
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1

    def _numbers(self, estimator):
        """(epoch, batch) in the checkpoint's name, counting the epochs and batches of a resumed run."""
        if not self.resume_from_checkpoint:
            return self.current_epoch, self.current_batch
        epoch = self.current_epoch + self.trained_epoch + 1
        # at epoch end the batch counter has already moved past the last batch
        batch = self.current_batch + self.trained_batch + (0 if estimator.max_epoch else 1)
        return epoch, batch

    def _save_checkpoint(self, estimator):
        prefix = "%s-epoch%dbatch%d" % ((self.model_prefix,) + self._numbers(estimator))
        self._save_params_and_trainer(estimator, prefix)
        self.saved_checkpoints.append(prefix)
        while len(self.saved_checkpoints) > self.max_checkpoints:
            self._remove(self.saved_checkpoints.pop(0))
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: trained total %d batches, saving model at %s with "
                                  "prefix: %s", self.current_epoch, self.current_batch + 1, self.model_dir, prefix)
        if self.save_best:
            self._save_best(estimator)

    def _save_best(self, estimator):
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn(f"CheckpointHandler: skipping save best because {name} is not updated, make sure you pass "
                          "one of the metric objects estimator.train_metrics and estimator.val_metrics as monitor",
                          RuntimeWarning, stacklevel=2)
            return
        if self.monitor_op(value, self.best):
            prefix = self.model_prefix + "-best"
            self._save_params_and_trainer(estimator, prefix)
            if self.verbose > 0:
                estimator.logger.info("[Epoch %d] CheckpointHandler: %s improved from %0.5f to %0.5f, updating best "
                                      "model at %s with prefix: %s", self.current_epoch, name, self.best, value,
                                      self.model_dir, prefix)
            self.best = value
        elif self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: %s did not improve from %0.5f, skipping updating "
                                  "best model", self.current_epoch, name, self.best)

    def _save_symbol(self, estimator):
        symbol_file = os.path.join(self.model_dir, self.model_prefix + "-symbol.json")
        net = estimator.net
        graph = getattr(net, "_last_graph", None) if getattr(net, "_active", False) else None
        if graph is not None:
            graph.symbol.save(symbol_file)
        else:
            estimator.logger.info("Model architecture(symbol file) is not saved, please use HybridBlock to construct "
                                  "your model, and call net.hybridize() before passing to Estimator in order to "
                                  "save model architecture as %s.", symbol_file)

    def _files(self, prefix):
        return [os.path.join(self.model_dir, prefix + ext) for ext in (".params", ".states")]

    def _save_params_and_trainer(self, estimator, prefix):
        param_file, trainer_file = self._files(prefix)
        estimator.net.save_parameters(param_file)
        estimator.trainer.save_states(trainer_file)

    def _remove(self, prefix):
        for path in self._files(prefix):
            if os.path.exists(path):
                os.remove(path)

    def _existing_checkpoints(self):
        """(epoch, batch, prefix) of the checkpoints in model_dir with this prefix, oldest first."""
        pattern = re.compile(re.escape(self.model_prefix) + r"-epoch(\d+)batch(\d+)\.params")
        found = []
        for name in os.listdir(self.model_dir):
            match = pattern.fullmatch(name)
            if match:
                found.append((int(match.group(1)), int(match.group(2)), name[:-len(".params")]))
        return sorted(found)

    def _resume_from_checkpoint(self, estimator):
        found = self._existing_checkpoints()
        self.saved_checkpoints = [prefix for _, _, prefix in found]
        if not found:
            self.trained_epoch = self.trained_batch = -1
            what = "%d batches" % estimator.max_batch if estimator.max_batch else "%d epochs" % estimator.max_epoch
            estimator.logger.info("CheckpointHandler: No checkpoint found, training from scratch for " + what)
            return
        self.trained_epoch, self.trained_batch, prefix = found[-1]
        msg = "CheckpointHandler: Checkpoint resumed from epoch %d batch %d, continue to train for " % (
            self.trained_epoch, self.trained_batch)
        if estimator.max_epoch:
            estimator.max_epoch = _left_after("epoch", estimator.max_epoch, self.trained_epoch, estimator.max_epoch)
            msg += "%d epochs " % estimator.max_epoch
        if estimator.max_batch:
            estimator.max_batch = _left_after("batch", estimator.max_batch, self.trained_batch, self.trained_batch)
            msg += "%d batches " % estimator.max_batch
        param_file, trainer_file = self._files(prefix)
        if not os.path.exists(trainer_file):
            raise EstimatorError(f"CheckpointHandler: failed to load checkpoint, {trainer_file} does not exist "
                                 "(every .params checkpoint needs its .states file)")
        estimator.net.load_parameters(param_file, ctx=estimator.context)
        estimator.trainer.load_states(trainer_file)
        estimator.logger.warning(msg)


def _left_after(unit, limit, trained, shown):
    """How many epochs or batches of `limit` are left after a checkpoint of the 0-based `trained` one; an error when
    none is. The message shows `shown`, as MXNet 1.9's does (the limit for epochs, the trained count for batches)."""
    if trained >= limit - 1:
        raise EstimatorError(
            "Found checkpoint with maximum number of %s %d reached, please specify "
            "resume_from_checkpoint=False (default value) if you want to train from scratch." % (unit, shown))
    return limit - trained - 1
