"""The event handler base class and the six mixins that say which events a handler receives.

A handler inherits the mixins of the events it wants (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd,
TrainEnd) and overrides their methods; the Estimator calls only handlers that inherit the event's mixin. A
``batch_end`` or ``epoch_end`` that returns a true value stops training (after the current batch or epoch).
"""
from .utils import EstimatorError

__all__ = ["EventHandler", "TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd"]


class EventHandler:
    """Base class of all event handlers."""


def _check_event_handlers(handlers):
    """A new list of handlers from None, one handler or a list (never the caller's list: fit adds to it)."""
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    bad = [h for h in handlers if not isinstance(h, EventHandler)]
    if bad:
        raise EstimatorError("event_handlers must be an EventHandler or a list of EventHandler, got "
                             f"{', '.join(type(h).__name__ for h in bad)}")
    return handlers


class TrainBegin(EventHandler):
    def train_begin(self, estimator, *args, **kwargs):
        """Called once before the first epoch of `fit`."""


class TrainEnd(EventHandler):
    def train_end(self, estimator, *args, **kwargs):
        """Called once after the last epoch of `fit`."""


class EpochBegin(EventHandler):
    def epoch_begin(self, estimator, *args, **kwargs):
        """Called before each epoch (and once before `evaluate` walks the validation data)."""


class EpochEnd(EventHandler):
    def epoch_end(self, estimator, *args, **kwargs):
        """Called after each epoch; return True to stop training."""
        return False


class BatchBegin(EventHandler):
    def batch_begin(self, estimator, *args, **kwargs):
        """Called before each batch with ``batch=``."""


class BatchEnd(EventHandler):
    def batch_end(self, estimator, *args, **kwargs):
        """Called after each batch with ``batch=, pred=, label=, loss=``; return True to stop training."""
        return False
