"""mx.metric: evaluation metrics with MXNet 1.x's API and values.

    acc = mx.metric.Accuracy()
    acc.update(labels=[label], preds=[out])    # NDArrays (or numpy arrays), or lists of them
    acc.get()                                  # ('accuracy', 0.75)

Each metric keeps a local and a global running (sum_metric, num_inst) pair; ``get()`` returns
``sum_metric / num_inst`` (nan before any update), ``reset_local()`` clears only the local pair.
Everything is vectorized numpy on the host; inputs are converted once per batch.

Differences from MXNet 1.9 (MXNet's behaviour is a bug there):
* ``CompositeEvalMetric.get_metric`` raises ``ValueError`` on a bad index (MXNet returns the exception).
* ``TopKAccuracy`` with ``top_k`` larger than the number of classes counts every class (MXNet's argpartition
  raises).
* ``PearsonCorrelation(average='micro').get_global()`` returns the pooled correlation (MXNet returns 0).
* numpy arrays are accepted wherever NDArrays are.
"""
import json
import math
from collections import OrderedDict

import numpy

from . import _display
from .base import MXNetError, numeric_types, string_types

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC", "PCC", "Perplexity",
           "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood", "PearsonCorrelation", "Loss", "Torch",
           "Caffe", "CustomMetric", "np", "create", "register", "alias", "check_label_shapes"]

_REGISTRY = {}


def register(klass):
    """Register a metric class under its lower-cased class name (what ``create`` looks up)."""
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise MXNetError(f"can only register subclasses of EvalMetric, got {klass!r}")
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases):
    """Decorator: register a metric class under extra names as well."""
    def reg(klass):
        for name in aliases:
            _REGISTRY[name.lower()] = klass
        return klass
    return reg


def _is_array(x):
    return hasattr(x, "asnumpy") or isinstance(x, numpy.ndarray)


def _np(x):
    """NDArray / numpy array / scalar / nested list -> numpy array (one device->host copy)."""
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    return numpy.asarray(x)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Check that labels and preds agree in length (or in shape with ``shape=True``).

    With ``wrap=True`` a single array is wrapped into a one-element list; returns ``(labels, preds)``.
    """
    if not shape:
        label_shape, pred_shape = len(labels), len(preds)
    else:
        label_shape, pred_shape = labels.shape, preds.shape
    if label_shape != pred_shape:
        raise ValueError("Shape of labels {} does not match shape of predictions {}".format(label_shape, pred_shape))
    if wrap:
        if _is_array(labels):
            labels = [labels]
        if _is_array(preds):
            preds = [preds]
    return labels, preds


class EvalMetric:
    """Base class of all metrics.

    Subclasses implement ``update(labels, preds)`` and add to ``sum_metric``/``num_inst`` (and their
    ``global_`` twins when ``has_global_stats``).
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return "EvalMetric: {}".format(dict(self.get_name_value()))

    def _facts(self):
        """[(name, value)]: the current value(s) (nan before any update), then what they average over."""
        facts = list(self.get_name_value())
        if not isinstance(self, CompositeEvalMetric):      # its children count for themselves
            facts.append(("num_inst", self.num_inst))
        if self._has_global_stats:           # since the last reset(), where reset_local() made them differ
            local = dict(facts)
            facts += [(f"global {name}", value) for name, value in self.get_global_name_value()
                      if not _same(value, local.get(name))]
        return facts

    def __repr__(self):
        """One line: 'Accuracy(accuracy=0.75, num_inst=40)' (str() keeps MXNet's 'EvalMetric: {...}')."""
        return _display.call_text(type(self).__name__, [f for f in self._facts() if not f[0].startswith("global ")])

    def _repr_html_(self):
        return _display.facts_html(type(self).__name__, self._facts())

    def get_config(self):
        """A dict that ``create(config)`` turns back into an equal metric."""
        config = self._kwargs.copy()
        config.update({"metric": self.__class__.__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label, pred):
        """Update from dicts name -> array, picking ``output_names``/``label_names`` when set (else all values)."""
        if self.output_names is not None:
            pred = [pred[name] for name in self.output_names]
        else:
            pred = list(pred.values())
        if self.label_names is not None:
            label = [label[name] for name in self.label_names]
        else:
            label = list(label.values())
        self.update(label, pred)

    def update(self, labels, preds):
        raise NotImplementedError(f"{type(self).__name__} must implement update()")

    def reset(self):
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self):
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.global_sum_metric / self.global_num_inst)

    @staticmethod
    def _pairs(name, value):
        if not isinstance(name, list):
            name = [name]
        if not isinstance(value, list):
            value = [value]
        return list(zip(name, value))

    def get_name_value(self):
        return self._pairs(*self.get())

    def get_global_name_value(self):
        if not self._has_global_stats:
            return self.get_name_value()
        return self._pairs(*self.get_global())

    def _add(self, value, count):
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count


def _same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def create(metric, *args, **kwargs):
    """Make a metric from a registered name, a callable (-> CustomMetric), a list (-> CompositeEvalMetric),
    a config dict (from ``get_config``), a JSON string, or an existing metric (returned as is)."""
    if callable(metric) and not isinstance(metric, (EvalMetric, type)):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise MXNetError("metric is already an instance; additional arguments are invalid")
        return metric
    if isinstance(metric, dict):
        config = dict(metric)
        config.update(kwargs)
        return create(config.pop("metric"), *args, **config)
    if isinstance(metric, type) and issubclass(metric, EvalMetric):
        return metric(*args, **kwargs)
    if not isinstance(metric, string_types):
        raise MXNetError(f"metric must be a name, a callable, a list, a dict or an EvalMetric, got {metric!r}")
    if metric.startswith("[") or metric.startswith("{"):
        if args or kwargs:
            raise MXNetError("a JSON metric spec takes no additional arguments")
        spec = json.loads(metric)
        if isinstance(spec, list):
            return create(spec[0], **spec[1])
        return create(spec)
    key = metric.lower()
    if key not in _REGISTRY:
        raise MXNetError("metric {!r} is not registered; registered metrics: {}".format(
            metric, ", ".join(sorted(_REGISTRY))))
    return _REGISTRY[key](*args, **kwargs)


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns ``([names], [values])``."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        self.metrics.append(create(metric))

    def get_metric(self, index):
        try:
            return self.metrics[index]
        except IndexError:
            raise ValueError("Metric index {} is out of range 0 and {}".format(index, len(self.metrics))) from None

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict([i for i in labels.items() if i[0] in self.label_names])
        if self.output_names is not None:
            preds = OrderedDict([i for i in preds.items() if i[0] in self.output_names])
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self):
        for metric in getattr(self, "metrics", []):
            metric.reset_local()

    def _collect(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            names.extend([name] if isinstance(name, string_types) else name)
            values.extend([value] if isinstance(value, numeric_types) else value)
        return (names, values)

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())

    def get_config(self):
        config = super().get_config()
        config.update({"metrics": [m.get_config() for m in self.metrics]})
        return config


def _class_labels(label, pred, axis):
    """(label, pred) as flat int32 class ids; pred is argmax'ed along ``axis`` when its shape differs."""
    pred = _np(pred)
    label = _np(label)
    if pred.shape != label.shape:
        pred = pred.argmax(axis=axis)
    return label.astype("int32").ravel(), pred.astype("int32").ravel()


@register
@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of predictions equal to the label; predictions are argmax'ed along ``axis`` when their shape
    differs from the label's."""

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _class_labels(label, pred, self.axis)
            check_label_shapes(label, pred)
            self._add(int((pred == label).sum()), len(pred))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest-scored classes."""

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        self.top_k = top_k
        if not top_k > 1:
            raise AssertionError("Please use Accuracy if top_k is no more than 1")
        name += "_%d" % self.top_k
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            pred = _np(pred).astype("float32")
            if pred.ndim > 2:
                raise AssertionError("Predictions should be no more than 2 dims")
            label = _np(label).astype("int32")
            num_samples = pred.shape[0]
            if pred.ndim == 1:
                # MXNet's behaviour: the argpartition of a 1-D score vector compared with the labels.
                top = numpy.argpartition(pred, -min(self.top_k, pred.shape[0]))
                check_label_shapes(label, top)
                correct = int((top.ravel() == label.ravel()).sum())
            else:
                check_label_shapes(label, pred)
                k = min(pred.shape[1], self.top_k)
                top = numpy.argpartition(pred, -k, axis=1)[:, -k:]
                correct = int((top == label.reshape(-1, 1)).sum())
            self._add(correct, num_samples)


class _BinaryClassificationMetrics:
    """Confusion counts (local and global) of a binary classifier, for F1 and MCC."""

    _FIELDS = ("true_positives", "false_negatives", "false_positives", "true_negatives")

    def __init__(self):
        self.reset_stats()

    def update_binary_stats(self, label, pred):
        pred = _np(pred)
        label = _np(label).astype("int32")
        pred_label = numpy.argmax(pred, axis=1)
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise ValueError("%s currently only supports binary classification." % self.__class__.__name__)
        label = label.ravel()
        pred_true = pred_label == 1
        label_true = label == 1
        counts = (int((pred_true & label_true).sum()), int((~pred_true & label_true).sum()),
                  int((pred_true & ~label_true).sum()), int((~pred_true & ~label_true).sum()))
        for field, count in zip(self._FIELDS, counts):
            setattr(self, field, getattr(self, field) + count)
            setattr(self, "global_" + field, getattr(self, "global_" + field) + count)

    @staticmethod
    def _fscore(tp, fn, fp):
        precision = tp / (tp + fp) if tp + fp > 0 else 0.0
        recall = tp / (tp + fn) if tp + fn > 0 else 0.0
        if precision + recall > 0:
            return 2 * precision * recall / (precision + recall)
        return 0.0

    @property
    def precision(self):
        tp, fp = self.true_positives, self.false_positives
        return tp / (tp + fp) if tp + fp > 0 else 0.0

    @property
    def recall(self):
        tp, fn = self.true_positives, self.false_negatives
        return tp / (tp + fn) if tp + fn > 0 else 0.0

    @property
    def fscore(self):
        return self._fscore(self.true_positives, self.false_negatives, self.false_positives)

    @property
    def global_fscore(self):
        return self._fscore(self.global_true_positives, self.global_false_negatives, self.global_false_positives)

    def matthewscc(self, use_global=False):
        prefix = "global_" if use_global else ""
        tp, fn, fp, tn = (getattr(self, prefix + f) for f in self._FIELDS)
        if tp + fn + fp + tn == 0:
            return 0.0
        denom = 1.0
        for term in (tp + fp, tp + fn, tn + fp, tn + fn):
            if term != 0:
                denom *= term
        return ((tp * tn) - (fp * fn)) / math.sqrt(denom)

    @property
    def total_examples(self):
        return sum(getattr(self, f) for f in self._FIELDS)

    @property
    def global_total_examples(self):
        return sum(getattr(self, "global_" + f) for f in self._FIELDS)

    def local_reset_stats(self):
        for field in self._FIELDS:
            setattr(self, field, 0)

    def reset_stats(self):
        for field in self._FIELDS:
            setattr(self, field, 0)
            setattr(self, "global_" + field, 0)


class _BinaryMetric(EvalMetric):
    """Shared update/reset of F1 and MCC: 'macro' averages per-batch scores, 'micro' scores pooled counts."""

    def __init__(self, name, output_names, label_names, average):
        self.average = average
        self.metrics = _BinaryClassificationMetrics()
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def _score(self, use_global):
        raise NotImplementedError(f"{type(self).__name__} must implement _score()")

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        stats = self.metrics
        for label, pred in zip(labels, preds):
            stats.update_binary_stats(label, pred)
        if self.average == "macro":
            # As in MXNet, one update() call (all its label/pred pairs) is one instance of the average, and
            # the counts restart every call, so the global score is also per call.
            self.sum_metric += self._score(False)
            self.global_sum_metric += self._score(True)
            self.num_inst += 1
            self.global_num_inst += 1
            stats.reset_stats()
        else:
            self.sum_metric = self._score(False) * stats.total_examples
            self.global_sum_metric = self._score(True) * stats.global_total_examples
            self.num_inst = stats.total_examples
            self.global_num_inst = stats.global_total_examples

    def reset(self):
        super().reset()
        self.metrics.reset_stats()

    def reset_local(self):
        super().reset_local()
        self.metrics.local_reset_stats()


@register
class F1(_BinaryMetric):
    """F1 score of a binary classifier (class 1 positive); preds are (N, 2) scores."""

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)

    def _score(self, use_global):
        return self.metrics.global_fscore if use_global else self.metrics.fscore


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classifier; preds are (N, 2) scores."""

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)

    def _score(self, use_global):
        return self.metrics.matthewscc(use_global)


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation (Gorodkin's R_K) from a confusion matrix that grows with the classes seen."""

    def __init__(self, name="pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, inc):
        self.lcm = numpy.pad(self.lcm, ((0, inc), (0, inc)), "constant")
        self.gcm = numpy.pad(self.gcm, ((0, inc), (0, inc)), "constant")
        self.k += inc

    @staticmethod
    def _calc_mcc(cmat):
        n = cmat.sum()
        x = cmat.sum(axis=1)
        y = cmat.sum(axis=0)
        cov_xx = numpy.sum(x * (n - x))
        cov_yy = numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        cov_xy = numpy.sum(cmat.diagonal() * n - x * y)
        return float(cov_xy / (cov_xx * cov_yy) ** 0.5)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _np(label).astype("int32")
            pred = _np(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred.astype("int32")
            pred, label = pred.ravel(), label.ravel()
            n = int(max(pred.max(), label.max()))
            if n >= self.k:
                self._grow(n + 1 - self.k)
            bcm = numpy.zeros((self.k, self.k))
            numpy.add.at(bcm, (pred, label), 1)
            self.lcm += bcm
            self.gcm += bcm
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        return self._calc_mcc(self.lcm) * self.num_inst

    @sum_metric.setter
    def sum_metric(self, value):
        pass

    @property
    def global_sum_metric(self):
        return self._calc_mcc(self.gcm) * self.global_num_inst

    @global_sum_metric.setter
    def global_sum_metric(self, value):
        pass

    def reset(self):
        self.global_num_inst = 0.0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0.0
        self.lcm = numpy.zeros((self.k, self.k))


@register
class Perplexity(EvalMetric):
    """exp(mean negative log-likelihood of the label class); ``ignore_label`` entries do not count."""

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None, label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        if len(labels) != len(preds):
            raise AssertionError("Perplexity: got {} labels but {} predictions".format(len(labels), len(preds)))
        labels, preds = check_label_shapes(labels, preds, True)
        loss = 0.0
        num = 0
        for label, pred in zip(labels, preds):
            label = _np(label)
            pred = _np(pred)
            if label.size != pred.size / pred.shape[-1]:
                raise AssertionError("shape mismatch: %s vs. %s" % (label.shape, pred.shape))
            axis = self.axis % pred.ndim
            index = label.reshape(pred.shape[:axis] + pred.shape[axis + 1:]).astype("int64")
            index = numpy.clip(index, 0, pred.shape[axis] - 1)
            picked = numpy.take_along_axis(pred, numpy.expand_dims(index, axis), axis=axis).squeeze(axis)
            picked = picked.ravel()
            label = label.ravel()
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(picked.dtype)
                num -= int(ignore.sum())
                picked = picked * (1 - ignore) + ignore
            loss -= float(numpy.sum(numpy.log(numpy.maximum(picked.dtype.type(1e-10), picked))))
            num += picked.size
        self._add(loss, num)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


class _RegressionMetric(EvalMetric):
    """MAE/MSE/RMSE: the per-batch mean (1-D inputs viewed as (N, 1)), averaged over batches."""

    def __init__(self, name, output_names, label_names):
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    @staticmethod
    def _batch(diff):
        raise NotImplementedError("a subclass must implement _batch()")

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _np(label)
            pred = _np(pred)
            if label.ndim == 1:
                label = label.reshape(label.shape[0], 1)
            if pred.ndim == 1:
                pred = pred.reshape(pred.shape[0], 1)
            self._add(float(self._batch(label - pred)), 1)


@register
class MAE(_RegressionMetric):
    """Mean absolute error."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _batch(diff):
        return numpy.abs(diff).mean()


@register
class MSE(_RegressionMetric):
    """Mean squared error."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _batch(diff):
        return (diff ** 2.0).mean()


@register
class RMSE(_RegressionMetric):
    """Root mean squared error (per batch, then averaged over batches, like MXNet)."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _batch(diff):
        return numpy.sqrt((diff ** 2.0).mean())


class _LikelihoodMetric(EvalMetric):
    def __init__(self, eps, name, output_names, label_names):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _np(label).ravel()
            pred = _np(pred)
            num = pred.shape[0]
            if label.shape[0] != num:
                raise AssertionError("{}: {} labels for {} predictions".format(
                    self.__class__.__name__, label.shape[0], num))
            prob = pred[numpy.arange(num, dtype=numpy.int64), numpy.int64(label)]
            self._add(float((-numpy.log(prob + self.eps)).sum()), num)


@register
@alias("ce")
class CrossEntropy(_LikelihoodMetric):
    """Mean of -log(pred[label] + eps); preds are probabilities (N, C)."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("nll_loss")
class NegativeLogLikelihood(_LikelihoodMetric):
    """Mean of -log(pred[label] + eps); preds are probabilities (N, C)."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of preds and labels: 'macro' averages per-batch coefficients, 'micro' is the
    coefficient of everything seen (streamed, exact)."""

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def reset_micro(self):
        self._count = 0
        self._mean_l = 0.0
        self._mean_p = 0.0
        self._m2_l = 0.0
        self._m2_p = 0.0
        self._cov = 0.0

    def reset(self):
        super().reset()
        if self.average == "micro":
            self.reset_micro()

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _np(label)
            pred = _np(pred)
            check_label_shapes(label, pred, False, True)
            label = label.ravel().astype(numpy.float64)
            pred = pred.ravel().astype(numpy.float64)
            if self.average == "macro":
                self._add(float(numpy.corrcoef(pred, label)[0, 1]), 1)
            else:
                self.num_inst += 1
                self.global_num_inst += 1
                # Chan et al.'s pairwise update of means, second moments and co-moment.
                n_b = label.size
                n = self._count + n_b
                d_l = label - self._mean_l
                d_p = pred - self._mean_p
                new_mean_l = self._mean_l + d_l.sum() / n
                new_mean_p = self._mean_p + d_p.sum() / n
                self._m2_l += float(numpy.sum(d_l * (label - new_mean_l)))
                self._m2_p += float(numpy.sum(d_p * (pred - new_mean_p)))
                self._cov += float(numpy.sum(d_p * (label - new_mean_l)))
                self._count, self._mean_l, self._mean_p = n, new_mean_l, new_mean_p

    def _micro(self):
        n = self._count
        return float(self._cov / ((n - 1) * numpy.sqrt(self._m2_p / (n - 1)) * numpy.sqrt(self._m2_l / (n - 1))))

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        if self.average == "macro":
            return (self.name, self.sum_metric / self.num_inst)
        return (self.name, self._micro())

    def get_global(self):
        if self.average == "macro":
            return super().get_global()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self._micro())


@register
class Loss(EvalMetric):
    """Mean of the loss values passed as ``preds`` (labels are ignored)."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def update(self, _, preds):
        if _is_array(preds):
            preds = [preds]
        for pred in preds:
            pred = _np(pred)
            self._add(float(pred.sum()), pred.size)


@register
class Torch(Loss):
    """Dummy metric for torch criterions."""

    def __init__(self, name="torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Dummy metric for caffe criterions."""

    def __init__(self, name="caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
@alias("custom")
class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred)`` on numpy arrays, returning a value or ``(sum, count)``."""

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None, label_names=None):
        if name is None:
            name = feval.__name__
            if name.find("<") != -1:
                name = "custom(%s)" % name
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            reval = self._feval(_np(label), _np(pred))
            if isinstance(reval, tuple):
                self._add(*reval)
            else:
                self._add(reval, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """Wrap ``numpy_feval(label, pred) -> value`` (numpy arrays) as a CustomMetric."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
