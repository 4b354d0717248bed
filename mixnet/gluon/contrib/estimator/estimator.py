"""Estimator: `fit` and `evaluate` loops for a Gluon net, driven by event handlers (MXNet 1.9's API).

    est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer)
    est.fit(train_loader, val_data=val_loader, epochs=3)

Differences from MXNet 1.9 (bugs there): `fit` copies the `event_handlers` list instead of appending its
default handlers to the caller's list; a metric that already carries the 'training ' prefix (one passed to a
second Estimator) is not prefixed twice; a `train_data` that yields no batch raises instead of looping
forever; an early-stopping or checkpoint 'auto' mode means 'min' for losses (see event_handler).
"""
import copy
import warnings

from ....context import Context, cpu, gpu, num_gpus
from ....metric import Loss as LossMetric
from ...data import DataLoader
from ...loss import Loss
from ...trainer import Trainer
from ._events import BatchBegin, BatchEnd, EpochBegin, EpochEnd, TrainBegin, TrainEnd, _check_event_handlers
from ._logging_handler import EstimatorLogger
from .batch_processor import BatchProcessor
from .event_handler import (GradientUpdateHandler, LoggingHandler, MetricHandler, StoppingHandler,
                            ValidationHandler)
from .utils import (ContextError, EstimatorError, _check_handler_metric_ref, _check_metrics,
                    _suggest_metric_for_loss)

__all__ = ["Estimator"]


class Estimator:
    """Trains and evaluates a Gluon network.

    Parameters
    ----------
    net : gluon.Block
        The model to train.
    loss : gluon.loss.Loss
        The training objective.
    train_metrics : EvalMetric or list of EvalMetric, optional
        Default: accuracy (for softmax cross-entropy) and the mean loss. Names get a 'training ' prefix.
    val_metrics : EvalMetric or list of EvalMetric, optional
        Default: copies of the training metrics. Names get a 'validation ' prefix.
    initializer : Initializer, optional
        Used when `net` is not initialized yet (an initialized net is left alone, with a warning).
    trainer : gluon.Trainer, optional
        Default: SGD with learning rate 0.001 (with a warning).
    context : Context or list of Context, optional
        Default: gpu(0) when there is a GPU, else cpu().
    val_net : gluon.Block, optional
        The model for validation (sharing `net`'s parameters); default `net`.
    val_loss : gluon.loss.Loss, optional
        Default `loss`.
    batch_processor : BatchProcessor, optional
        Supplies `fit_batch` and `evaluate_batch`.

    Notes
    -----
    `est.logger` is this Estimator's own `logging.Logger` (named 'mixnet.estimator'): it prints INFO lines to
    stdout, and takes handlers (``est.logger.addHandler(logging.FileHandler(...))``) and levels as usual;
    ``logging.getLogger('mixnet.estimator').setLevel(logging.WARNING)`` quiets every Estimator.
    """

    logger = None

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None, trainer=None,
                 context=None, val_net=None, val_loss=None, batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self.loss if val_loss is None else self._check_loss(val_loss)
        self.val_net = self.net if val_net is None else val_net
        self.logger = EstimatorLogger()
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch = None
        self.max_batch = None
        self.batch_axis = 0
        self._epoch_batches = None     # batches in the pass now starting (for progress bars), None if unknown

    # ------------------------------------------------------------------ checks
    @staticmethod
    def _check_loss(loss):
        if not isinstance(loss, Loss):
            raise EstimatorError(f"loss must be a gluon.loss.Loss, got {loss!r} ({type(loss).__name__})")
        return loss

    def _check_context(self, context):
        available = [gpu(i) for i in range(num_gpus())]
        if not context:
            initialized_on = self._initialized_on()
            if initialized_on:
                return initialized_on
            if len(available) > 1:
                warnings.warn("You have multiple GPUs, gpu(0) will be used by default. To utilize all your GPUs, "
                              "specify context as a list of gpus, e.g. context=[mx.gpu(0), mx.gpu(1)] ",
                              stacklevel=3)
            return [available[0]] if available else [cpu()]
        if isinstance(context, Context):
            context = [context]
        if not (isinstance(context, list) and all(isinstance(c, Context) for c in context)):
            raise EstimatorError("context must be a Context or a list of Context, for example mx.cpu() or "
                                 f"[mx.gpu(0), mx.gpu(1)], got {context!r}")
        for ctx in context:
            if not str(ctx).startswith("cpu") and ctx not in available:
                raise ContextError(f"{ctx} is not available, please make sure your context is in one of: "
                                   + ", ".join(["mx.cpu()"] + [str(c) for c in available]))
        return context

    def _initialized_on(self):
        """The devices every initialized parameter of the net is on (deferred initialization included), or None
        (nothing initialized yet, or not all on the same devices). With no context given, a net already initialized
        trains where it is: MXNet 1.9 picks gpu(0) whenever there is a GPU, and a net initialized on the CPU then
        fails at its first batch."""
        placements = {tuple(p.list_ctx()) for p in self.net.collect_params().values()
                      if p._data is not None or p._deferred_init is not None}
        return list(placements.pop()) if len(placements) == 1 else None

    @staticmethod
    def _check_batch_processor(batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        if not (callable(getattr(batch_processor, "fit_batch", None))
                and callable(getattr(batch_processor, "evaluate_batch", None))):
            raise EstimatorError("Customized Batch Processor must contain fit_batch() and evaluate_batch() methods, "
                                 f"got {type(batch_processor).__name__}")
        return batch_processor

    def _check_trainer(self, trainer):
        if trainer is None:
            warnings.warn("No trainer specified, default SGD optimizer with learning rate 0.001 is used.",
                          stacklevel=3)
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise EstimatorError(f"Trainer must be a Gluon Trainer instance, refer to gluon.Trainer, got {trainer!r}")
        return trainer

    def _is_initialized(self):
        params = self.net.collect_params()
        for name in params:
            param = params[name]
            if param._data is None and param._deferred_init is None:
                return False
        return True

    def _initialize(self, initializer):
        if not self._is_initialized():
            # initializes only what is not initialized yet: a pretrained body keeps its weights
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn("Network already fully initialized, skipping initialization. You don't need to pass "
                          "initializer if you already initialized your net. You can use "
                          "net.initialize(init=your_initializer, force_reinit=True) to force re-initialize.",
                          stacklevel=3)

    # ------------------------------------------------------------------ metrics
    def _add_default_training_metrics(self):
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            if suggested:
                self._train_metrics = [suggested]
            self._train_metrics.append(LossMetric(self.loss.name.rstrip("1234567890")))
        for metric in self._train_metrics:
            # the prefix tells handlers (logging) training metrics from validation ones
            if not metric.name.startswith("training "):
                metric.name = "training " + metric.name

    def _add_validation_metrics(self):
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(metric) for metric in self._train_metrics]
        for metric in self._val_metrics:
            if "training" in metric.name:
                metric.name = metric.name.replace("training", "validation")
            elif not metric.name.startswith("validation "):
                metric.name = "validation " + metric.name

    @property
    def train_metrics(self):
        return self._train_metrics

    @property
    def val_metrics(self):
        return self._val_metrics

    # ------------------------------------------------------------------ loops
    @staticmethod
    def _check_loader(data, what):
        if not isinstance(data, DataLoader):
            raise EstimatorError(f"Estimator only support input as Gluon DataLoader, got {type(data).__name__} for "
                                 f"{what}. Alternatively, you can transform your DataIter or any NDArray into "
                                 "Gluon DataLoader. Refer to gluon.data.DataLoader")

    @staticmethod
    def _length(data):
        try:
            return len(data)
        except TypeError:
            return None

    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """Runs `val_net` and `val_loss` over `val_data` (through `batch_processor.evaluate_batch`), updating
        `val_metrics`. Besides `event_handlers`, a MetricHandler and a LoggingHandler for `val_metrics` are added
        unless given."""
        self._check_loader(val_data, "val_data")
        for metric in self.val_metrics:
            metric.reset()
        self.batch_axis = batch_axis
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = self._categorize_handlers(handlers)
        self._epoch_batches = self._length(val_data)
        try:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            for batch in val_data:
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
                for handler in batch_end:
                    handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
            for handler in epoch_end:
                handler.epoch_end(self)
        finally:
            _close_progress(handlers)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None, batch_axis=0):
        """Trains for `epochs` epochs or `batches` batches (exactly one of them) over `train_data`.

        Each batch goes through `batch_processor.fit_batch`; the event handlers do the rest. Besides
        `event_handlers`, fit adds a StoppingHandler, and a GradientUpdateHandler, MetricHandler, LoggingHandler
        (and ValidationHandler when `val_data` is given) unless one of that kind is given.
        """
        self._check_loader(train_data, "train_data")
        if (not epochs) == (not batches):
            raise EstimatorError("Fit only support exactly one type of iteration, train by number of epochs or "
                                 "number of batches. Please specify one and only one of: epochs or batches.")
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = self._categorize_handlers(handlers)
        epoch_batches = self._length(train_data)
        try:
            for handler in train_begin:
                handler.train_begin(self)
            while True:
                self._epoch_batches = epoch_batches
                for handler in epoch_begin:
                    handler.epoch_begin(self)
                seen = 0
                for batch in train_data:
                    seen += 1
                    for handler in batch_begin:
                        handler.batch_begin(self, batch=batch)
                    _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                    # every handler sees the batch, even after one has asked to stop
                    results = [handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                               for handler in batch_end]
                    if any(results):
                        break
                if not seen:
                    raise EstimatorError("fit: train_data yielded no batch (an empty dataset?)")
                results = [handler.epoch_end(self) for handler in epoch_end]
                if any(results):   # a stop asked at a batch end still ends the epoch first, as in MXNet
                    break
            for handler in train_end:
                handler.train_end(self)
        finally:
            _close_progress(handlers)

    # ------------------------------------------------------------------ handlers
    def _mixed_check(self, user_given, added, handlers, known):
        # user handlers next to default ones must use the Estimator's metric objects (the defaults update those)
        if user_given and added:
            for handler in handlers:
                _check_handler_metric_ref(handler, known)

    def _prepare_default_handlers(self, val_data, event_handlers):
        handlers = _check_event_handlers(event_handlers)
        user_given = bool(handlers)

        def missing(kind):
            return not any(isinstance(handler, kind) for handler in handlers)

        added = [StoppingHandler(self.max_epoch, self.max_batch)]
        if missing(GradientUpdateHandler):
            added.append(GradientUpdateHandler())
        if missing(MetricHandler):
            added.append(MetricHandler(metrics=self.train_metrics))
        if missing(ValidationHandler) and val_data:
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if missing(LoggingHandler):
            added.append(LoggingHandler(metrics=self.train_metrics))
        handlers.extend(added)
        self._mixed_check(user_given, added, handlers, self.train_metrics + self.val_metrics)
        handlers.sort(key=lambda handler: getattr(handler, "priority", 0))   # stable: ties keep list order
        return handlers

    def _prepare_default_validation_handlers(self, event_handlers):
        handlers = _check_event_handlers(event_handlers)
        user_given = bool(handlers)
        added = []
        if not any(isinstance(handler, MetricHandler) for handler in handlers):
            added.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(handler, LoggingHandler) for handler in handlers):
            added.append(LoggingHandler(metrics=self.val_metrics))
        handlers.extend(added)
        self._mixed_check(user_given, added, handlers, self.val_metrics)
        handlers.sort(key=lambda handler: getattr(handler, "priority", 0))
        return handlers

    @staticmethod
    def _categorize_handlers(event_handlers):
        """Six lists (train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end): each event calls
        only the handlers that inherit its mixin."""
        kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([handler for handler in event_handlers if isinstance(handler, kind)] for kind in kinds)


def _close_progress(handlers):
    for handler in handlers:
        if isinstance(handler, LoggingHandler):
            handler.close_progress()
