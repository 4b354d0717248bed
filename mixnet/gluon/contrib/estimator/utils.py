"""Argument checks shared by the Estimator and its event handlers, and their error types."""
import warnings

import numpy as np

from ....base import MXNetError
from ....metric import Accuracy, CompositeEvalMetric, EvalMetric
from ...loss import SoftmaxCrossEntropyLoss

__all__ = ["EstimatorError", "ContextError"]


class EstimatorError(MXNetError, ValueError):
    """Bad input to an Estimator or an event handler (a ValueError, as MXNet raised)."""


class ContextError(EstimatorError, AssertionError):
    """A context that does not exist on this machine (an AssertionError too: MXNet asserted)."""


def _check_metrics(metrics, who="Estimator"):
    """A flat list of EvalMetric from None, one metric, a CompositeEvalMetric or a list of metrics."""
    if isinstance(metrics, CompositeEvalMetric):
        return [leaf for metric in metrics.metrics for leaf in _check_metrics(metric, who)]
    if isinstance(metrics, EvalMetric):
        return [metrics]
    if metrics is None:
        return []
    if isinstance(metrics, (list, tuple)) and all(isinstance(m, EvalMetric) for m in metrics):
        return list(metrics)
    raise EstimatorError(f"{who}: metrics must be an mx.metric.EvalMetric or a list of them, got {metrics!r} "
                         f"({type(metrics).__name__}); e.g. mx.metric.Accuracy() instead of 'acc'")


def _metric_refs(handler):
    """The metrics a handler holds in attributes named like 'metric' or 'monitor' (MXNet's convention)."""
    for name, value in vars(handler).items():
        if "metric" not in name and "monitor" not in name:
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, EvalMetric):
                yield item


def _check_handler_metric_ref(handler, known_metrics):
    """A handler mixed with the Estimator's default handlers must use the Estimator's own metric objects:
    the default MetricHandler updates only those, so any other metric would stay at nan."""
    known = {id(metric) for metric in known_metrics}
    for metric in _metric_refs(handler):
        if id(metric) not in known:
            raise EstimatorError(
                f"Event handler {type(handler).__name__} refers to a metric instance {metric.name!r} outside of "
                "the known training and validation metrics. Please use the metrics from "
                "estimator.train_metrics and estimator.val_metrics instead.")


def _suggest_metric_for_loss(loss):
    """The metric MXNet adds by default for a loss: accuracy for softmax cross-entropy, none otherwise."""
    if isinstance(loss, SoftmaxCrossEntropyLoss):
        return Accuracy()
    return None


def _monitor_op(monitor, mode, who):
    """The comparison that says a monitored value improved: np.greater or np.less.

    'auto' picks greater for accuracy and F1 (names containing 'acc' or 'f1') and less for everything else.
    MXNet 1.9 meant the same but its test (`'acc' or 'f1' in name`) is always true, so it used greater for
    losses too; mixnet does what the documentation says."""
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{who}: mode {mode!r} is unknown, falling back to 'auto' (max for accuracy and f1 metrics, "
                      "min otherwise)", RuntimeWarning, stacklevel=3)
        mode = "auto"
    if mode == "min":
        return np.less
    if mode == "max":
        return np.greater
    name = monitor.get()[0]
    if "acc" in name.lower() or "f1" in name.lower():
        warnings.warn(f"{who}: `greater` operator will be used to determine if {name} has improved. Please "
                      "specify `mode='min'` to use the `less` operator. Specify `mode='max'` to disable this "
                      "warning.", stacklevel=3)
        return np.greater
    warnings.warn(f"{who}: `less` operator will be used to determine if {name} has improved. Please specify "
                  "`mode='max'` to use the `greater` operator. Specify `mode='min'` to disable this warning.",
                  stacklevel=3)
    return np.less
