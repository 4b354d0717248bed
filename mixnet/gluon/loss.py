"""gluon.loss: the MXNet 1.x loss functions, as HybridBlocks (named `l2loss0_`, `softmaxcrossentropyloss0_`...).

Every loss returns one value per sample: `hybrid_forward(F, pred, label, sample_weight=None)` computes the
elementwise loss, multiplies it by `sample_weight` (broadcast) and by the scalar `weight`, then averages over every
axis except `batch_axis`. Exceptions, as in MXNet: `CTCLoss` and `CosineEmbeddingLoss` return the per-sample loss
as the underlying computation gives it (no averaging; CosineEmbeddingLoss's is (N, 1)), `KLDivLoss` and
`TripletLoss` sum over the non-batch axes, `SDMLLoss` returns a KLDivLoss per row, and `PoissonNLLLoss` returns the
mean over *all* elements (shape (1,)).

Deliberate differences from MXNet 1.9.1 (see docs/compatibility.md):
* `L2Loss(weight=None)` means "no scalar weight" (MXNet raises a TypeError computing `None / 2`).
* `PoissonNLLLoss(compute_full=True)` adds the Stirling term only where target > 1, and gives 0 elsewhere;
  MXNet multiplies `0 * log(0)` by a mask and returns NaN for any zero target.
* Losses also accept their inputs as keyword arguments with sample_weight etc. (`loss(pred=p, label=l)`), which
  MXNet 1.x's `Block.__call__` rejects.
"""
import math
from numbers import Number

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from . import cached_graph
from .block import HybridBlock

__all__ = ["Loss", "L2Loss", "L1Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "KLDivLoss", "CTCLoss", "HuberLoss", "HingeLoss",
           "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "PoissonNLLLoss", "CosineEmbeddingLoss", "SDMLLoss"]


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    """loss * sample_weight (broadcast) * weight (a Python number)."""
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, Number):
            raise MXNetError(f"loss weight must be a number, got {type(weight).__name__}")
        loss = loss * weight
    return loss


def _reshape_like(F, x, y):
    """x with y's shape (same number of elements): labels given as (N,) for predictions (N, 1) etc. Traced
    values have no shape yet: the graph gets a reshape_like node."""
    if isinstance(x, NDArray) and isinstance(y, NDArray) and tuple(x.shape) == tuple(y.shape):
        return x
    return F.reshape_like(x, y)


def _batch_mean(F, loss, batch_axis):
    return F.mean(loss, axis=batch_axis, exclude=True)


def _softrelu(F, x):
    """log(1 + exp(x)); used on -|x| only, where it cannot overflow."""
    return F.log1p(F.exp(x))


def _log_softmax(F, x, axis):
    return F.log_softmax(x, axis=axis)


class Loss(HybridBlock):
    """Base class of the losses: a HybridBlock called as `loss(pred, label, ...)` that returns one value per sample.

    Parameters
    ----------
    weight : float, optional
        A global scalar weight multiplied into the loss.
    batch_axis : int, default 0
        The axis that indexes samples: the output keeps it and every other axis is averaged.
    **kwargs
        `prefix` and `params`, as every Block takes.
    """

    def __init__(self, weight, batch_axis, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def forward(self, *args, **kwargs):
        # losses have no parameters, but take keyword inputs (sample_weight), so they pick F themselves
        if cached_graph.TRACING.get():
            from .. import symbol as F  # local: F is symbol or ndarray, per call
        else:
            from .. import ndarray as F  # local: F is symbol or ndarray, per call
        return self.hybrid_forward(F, *args, **kwargs)

    def hybrid_forward(self, F, x, *args, **kwargs):
        # a subclass of Loss defines the loss (as Block.forward says for blocks): a clear error, not an abstract stub
        raise MXNetError(f"{type(self).__name__} must define hybrid_forward(self, F, pred, label, ...)")


class L2Loss(Loss):
    """Squared error: `0.5 * weight * (pred - label) ** 2`, averaged over the non-batch axes.

    Parameters
    ----------
    weight : float, default 1.0
        A global scalar weight multiplied into the loss.
    batch_axis : int, default 0
        The axis that indexes samples: the output keeps it and every other axis is averaged.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` of any shape, `label` of the same number of elements, `sample_weight` (optional) broadcastable to the per-element loss.
    Outputs: shape (batch,).

    Examples
    --------
    >>> import mixnet as mx
    >>> loss = mx.gluon.loss.L2Loss()
    >>> loss(mx.nd.array([[1.0, 2.0]]), mx.nd.array([[1.0, 0.0]])).asnumpy().tolist()
    [1.0]
    """

    def __init__(self, weight=1.0, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(label - pred)
        loss = _apply_weighting(F, loss, 0.5 if self._weight is None else self._weight / 2, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class L1Loss(Loss):
    """Absolute error: `weight * |pred - label|`, averaged over the non-batch axes.

    Parameters
    ----------
    weight : float, optional
        A global scalar weight multiplied into the loss.
    batch_axis : int, default 0
        The axis that indexes samples: the output keeps it and every other axis is averaged.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` of any shape, `label` of the same number of elements, `sample_weight` (optional) broadcastable to the per-element loss.
    Outputs: shape (batch,).
    """

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of independent labels in [0, 1].

    With from_sigmoid=False (default) `pred` are logits x and the numerically stable form
    `max(x, 0) - x * z + log(1 + exp(-|x|))` is used; with `pos_weight` (broadcast against the label) it is
    `x - x * z + (1 + (pos_weight - 1) * z) * (log(1 + exp(-|x|)) + max(-x, 0))`. With from_sigmoid=True
    `pred` are probabilities p: `-(z * log(p + 1e-12) * pos_weight + (1 - z) * log(1 - p + 1e-12))`.

    Parameters
    ----------
    from_sigmoid : bool, default False
        Whether `pred` already went through a sigmoid.
    weight : float, optional
        A global scalar weight multiplied into the loss.
    batch_axis : int, default 0
        The axis that indexes samples: the output keeps it and every other axis is averaged.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` of any shape, `label` of the same shape, `sample_weight` (optional) broadcastable to the per-element loss, `pos_weight` (optional) broadcastable to
    `pred`: the weight of positive examples.
    Outputs: shape (batch,).
    """

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + _softrelu(F, -F.abs(pred))
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (_softrelu(F, -F.abs(pred)) + F.relu(-pred))
        else:
            eps = 1e-12
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label + F.log(1.0 - pred + eps) * (1.0 - label))
            else:
                loss = -(F.broadcast_mul(F.log(pred + eps) * label, pos_weight)
                         + F.log(1.0 - pred + eps) * (1.0 - label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Softmax cross-entropy along `axis`: `-sum(label * log_softmax(pred))`, or `-log_softmax(pred)[label]` for
    class-index labels.

    Parameters
    ----------
    axis : int, default -1
        The class axis.
    sparse_label : bool, default True
        `label` holds class indices (pred's shape without `axis`, or with it as 1); False: a distribution
        shaped like pred.
    from_logits : bool, default False
        `pred` is already a log-softmax.
    weight : float, optional
        A global scalar weight multiplied into the loss.
    batch_axis : int, default 0
        The axis that indexes samples: the output keeps it and every other axis is averaged.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` of shape (batch, ..., classes) with classes on `axis`, `label` as sparse_label says, `sample_weight` (optional) broadcastable to the per-element loss.
    Outputs: shape (batch,).

    Examples
    --------
    >>> import mixnet as mx
    >>> loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    >>> pred = mx.nd.array([[0.0, 0.0], [10.0, -10.0]])
    >>> [round(v, 4) for v in loss(pred, mx.nd.array([0, 1])).asnumpy().tolist()]
    [0.6931, 20.0]
    """

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = _log_softmax(F, pred, self._axis)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """Kullback-Leibler divergence of `pred` from `label`: `label * (log(label + 1e-12) - pred)`, summed (not
    averaged, as in MXNet 1.9) over the non-batch axes.

    Parameters
    ----------
    from_logits : bool, default True
        True: `pred` holds log-probabilities; False: a log_softmax along `axis` is applied to it first.
    axis : int, default -1
        The axis of the log_softmax when from_logits is False.
    weight : float, optional
        A global scalar weight multiplied into the loss.
    batch_axis : int, default 0
        The axis that indexes samples: the output keeps it and every other axis is summed.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` of any shape, `label` (probabilities) of the same shape, `sample_weight` (optional)
    broadcastable to it. Outputs: shape (batch,).
    """

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = _log_softmax(F, pred, self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.sum(loss, axis=self._batch_axis, exclude=True)


class CTCLoss(Loss):
    """Connectionist Temporal Classification loss: the negative log-likelihood of each label sequence under
    every alignment of it to the (longer) prediction sequence.

    Parameters
    ----------
    layout : str, default 'NTC'
        The layout of `pred`: 'NTC' or 'TNC'.
    label_layout : str, default 'NT'
        The layout of `label`: 'NT' or 'TN' (its batch axis is the loss's batch axis).
    weight : float, optional
        A global scalar weight multiplied into the loss.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` (N, T, C) for 'NTC', unnormalized scores (a softmax over C is applied inside); `label`
    (N, L) for 'NT', class indices 0..C-2 (the blank is the last class, C-1, MXNet's blank_label='last'), padded
    with -1 unless `label_lengths` is given; `pred_lengths` (N,) and `label_lengths` (N,), optional, each
    sample's valid lengths; `sample_weight` (optional) broadcastable to (N,).
    Outputs: shape (N,), one loss per sample (no averaging).
    """

    def __init__(self, layout="NTC", label_layout="NT", weight=None, **kwargs):
        if layout not in ("NTC", "TNC"):
            raise MXNetError(f"CTCLoss: only 'TNC' and 'NTC' layouts for pred are supported, got {layout!r}")
        if label_layout not in ("NT", "TN"):
            raise MXNetError(f"CTCLoss: only 'NT' and 'TN' layouts for label are supported, got {label_layout!r}")
        self._layout = layout
        self._label_layout = label_layout
        batch_axis = label_layout.find("N")
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None, sample_weight=None):
        if self._layout == "NTC":
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        args = [pred, label]
        if pred_lengths is not None:
            args.append(pred_lengths)
        if label_lengths is not None:
            args.append(label_lengths)
        loss = F.CTCLoss(*args, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label="last")
        return _apply_weighting(F, loss, self._weight, sample_weight)


class HuberLoss(Loss):
    """Smoothed L1 loss: with `d = |pred - label|`, `0.5 / rho * d ** 2` where d <= rho and `d - 0.5 * rho`
    elsewhere, averaged over the non-batch axes. Quadratic near zero, linear (so robust to outliers) far away.

    Parameters
    ----------
    rho : float, default 1
        Where the loss turns from quadratic to linear.
    weight : float, optional
        A global scalar weight multiplied into the loss.
    batch_axis : int, default 0
        The axis that indexes samples: the output keeps it and every other axis is averaged.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` of any shape, `label` of the same number of elements, `sample_weight` (optional)
    broadcastable to the per-element loss.
    Outputs: shape (batch,).

    Examples
    --------
    >>> import mixnet as mx
    >>> loss = mx.gluon.loss.HuberLoss(rho=1)
    >>> pred, label = mx.nd.array([[0.5, 3.0], [1.0, 1.0]]), mx.nd.zeros((2, 2))
    >>> loss(pred, label).asnumpy().tolist()            # [(0.125 + 2.5) / 2, (0.5 + 0.5) / 2]
    [1.3125, 0.5]
    >>> loss(pred, label, mx.nd.array([[2.0], [0.0]])).asnumpy().tolist()    # sample_weight, broadcast
    [2.625, 0.0]
    """

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho, (0.5 / self._rho) * F.square(loss))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class HingeLoss(Loss):
    """Hinge loss of a binary classifier's scores: `max(0, margin - pred * label)`, labels in {-1, 1}, averaged
    over the non-batch axes.

    Parameters
    ----------
    margin : float, default 1
        The score margin below which a correctly signed prediction still costs.
    weight : float, optional
        A global scalar weight multiplied into the loss.
    batch_axis : int, default 0
        The axis that indexes samples: the output keeps it and every other axis is averaged.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` of any shape, `label` of the same number of elements, `sample_weight` (optional)
    broadcastable to the per-element loss.
    Outputs: shape (batch,).
    """

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class SquaredHingeLoss(Loss):
    """Squared hinge loss: `max(0, margin - pred * label) ** 2`, labels in {-1, 1}, averaged over the non-batch
    axes.

    Parameters
    ----------
    margin : float, default 1
        The score margin below which a correctly signed prediction still costs.
    weight : float, optional
        A global scalar weight multiplied into the loss.
    batch_axis : int, default 0
        The axis that indexes samples: the output keeps it and every other axis is averaged.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` of any shape, `label` of the same number of elements, `sample_weight` (optional)
    broadcastable to the per-element loss.
    Outputs: shape (batch,).
    """

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class LogisticLoss(Loss):
    """Logistic loss of a binary classifier's scores: `log(1 + exp(-pred * label))` (computed without
    overflow), averaged over the non-batch axes.

    Parameters
    ----------
    weight : float, optional
        A global scalar weight multiplied into the loss.
    batch_axis : int, default 0
        The axis that indexes samples: the output keeps it and every other axis is averaged.
    label_format : str, default 'signed'
        'signed': labels are -1 or 1; 'binary': labels are 0 or 1.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` of any shape, `label` of the same number of elements, `sample_weight` (optional)
    broadcastable to the per-element loss.
    Outputs: shape (batch,).
    """

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._label_format = label_format
        if self._label_format not in ("signed", "binary"):
            raise ValueError(f"label_format can only be signed or binary, recieved {label_format}.")

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        if self._label_format == "binary":
            label = 2 * label - 1
        # stable: max(-x*y, 0) + log(1 + exp(-|x*y|))
        loss = F.relu(-pred * label) + _softrelu(F, -F.abs(-pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return _batch_mean(F, loss, self._batch_axis)


class TripletLoss(Loss):
    """Triplet loss: `max(0, sum(|pred - positive|^2 - |pred - negative|^2) + margin)`, the sum over the
    non-batch axes: an anchor should be nearer its positive than its negative by at least `margin`.

    Parameters
    ----------
    margin : float, default 1
        The required gap between the squared distances.
    weight : float, optional
        A global scalar weight multiplied into the loss.
    batch_axis : int, default 0
        The axis that indexes samples: the output keeps it and every other axis is summed.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` (the anchors) of any shape, `positive` and `negative` of the same number of elements.
    Outputs: shape (batch,).
    """

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative):
        positive = _reshape_like(F, positive, pred)
        negative = _reshape_like(F, negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred), axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, None)


class PoissonNLLLoss(Loss):
    """Poisson negative log-likelihood of `target` counts, the mean over all elements (shape (1,), as in MXNet).

    Parameters
    ----------
    weight : float, optional
        A global scalar weight multiplied into the loss.
    from_logits : bool, default True
        True: `pred` is the log of the rate, loss `exp(pred) - target * pred`; False: `pred` is the rate, loss
        `pred - target * log(pred + epsilon)`.
    batch_axis : int, default 0
        Accepted for the Loss signature; the mean is over every axis.
    compute_full : bool, default False
        Add the Stirling approximation of log(target!), `target * log(target) - target + 0.5 * log(2 * pi *
        target)`, where target > 1 (0 elsewhere).
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` of any shape, `target` of the same number of elements, `sample_weight` (optional)
    broadcastable to it; `epsilon` (keyword, default 1e-08) keeps the log finite when from_logits is False.
    Outputs: shape (1,).
    """

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            big = target > 1
            safe = F.where(big, target, F.ones_like(target))      # log() only sees targets > 1
            stirling = safe * F.log(safe) - safe + 0.5 * F.log(2 * math.pi * safe)
            loss = loss + F.where(big, stirling, F.zeros_like(stirling))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    """Cosine embedding loss: `1 - cos(input1, input2)` for pairs labelled 1 (similar), and `max(0,
    cos(input1, input2) - margin)` for pairs labelled -1 (dissimilar); the cosine is along the last axis.

    Parameters
    ----------
    weight : float, optional
        A global scalar weight multiplied into the loss.
    batch_axis : int, default 0
        Accepted for the Loss signature; the output is (N, 1) either way.
    margin : float, default 0
        The cosine similarity that dissimilar pairs may have without cost.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `input1` and `input2` of shape (N, D), `label` (N,) of 1 or -1, `sample_weight` (optional)
    broadcastable to (N, 1). Outputs: shape (N, 1).
    """

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(F, input1, input2)
        label = label.reshape((-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        y_1 = label == 1
        y_minus_1 = label == -1
        cos_sim_a = (1 - cos_sim) * y_1
        cos_sim_b = F.relu(y_minus_1 * (cos_sim - self._margin))
        loss = cos_sim_a + cos_sim_b
        return _apply_weighting(F, loss, self._weight, sample_weight)

    def _cosine_similarity(self, F, x, y, axis=-1):
        x_norm = F.norm(x, axis=axis).reshape((-1, 1))
        y_norm = F.norm(y, axis=axis).reshape((-1, 1))
        x_dot_y = F.sum(x * y, axis=axis).reshape((-1, 1))
        return x_dot_y / F.maximum(x_norm * y_norm, 1e-12)


class SDMLLoss(Loss):
    """Smoothed Deep Metric Learning loss, over a batch of pairs: row i of `x1` should be closer to row i of
    `x2` than to any other row of `x2`. The distances `-||x1_i - x2_j||^2` go through a log_softmax over j and a
    KLDivLoss against smoothed identity labels (1 - smoothing_parameter on the diagonal).

    Parameters
    ----------
    smoothing_parameter : float, default 0.3
        The label mass spread evenly over the other rows (the wrong pairs).
    weight : float, default 1.0
        Accepted and ignored, as in MXNet.
    batch_axis : int, default 0
        Accepted and ignored, as in MXNet.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `x1` and `x2`, both (N, D); the other rows of the batch are the negatives, so N > 1.
    Outputs: shape (N,).
    """

    def __init__(self, smoothing_parameter=0.3, weight=1.0, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def _compute_distances(self, F, x1, x2):
        x1_ = F.expand_dims(x1, 1)
        x2_ = F.expand_dims(x2, 0)
        return F.sum(F.square(F.broadcast_sub(x1_, x2_)), axis=2)

    def _compute_labels(self, F, distances):
        """The smoothed identity (N, N), built from the (N, N) distances so that it also traces (no shapes
        needed): 1 - smoothing on the diagonal, smoothing / (N - 1) elsewhere."""
        ones = F.reshape(F.ones_like(F.slice_axis(distances, axis=1, begin=0, end=1)), shape=(-1,))
        gold = F.diag(ones)
        off = F.broadcast_div((1 - gold) * self.smoothing_parameter, F.sum(ones) - 1)
        return gold * (1 - self.smoothing_parameter) + off

    def hybrid_forward(self, F, x1, x2):
        if isinstance(x1, NDArray) and (tuple(x1.shape) != tuple(x2.shape) or len(x1.shape) != 2):
            raise MXNetError(f"SDMLLoss: x1 and x2 must both be (batch_size, dim), got {tuple(x1.shape)} and "
                             f"{tuple(x2.shape)}")
        distances = self._compute_distances(F, x1, x2)
        labels = self._compute_labels(F, distances)
        log_probabilities = _log_softmax(F, -distances, axis=1)
        # KLDivLoss sums over the candidates (MXNet 1.9 no longer multiplies by the batch size, PR 18423)
        return self.kl_loss(log_probabilities, labels)


class SequenceSoftmaxCELoss(Loss):
    """Softmax cross-entropy at every time step, averaged over each sequence's valid steps (a mixnet addition).

    Parameters
    ----------
    sparse_label : bool, default True
        True: `label` holds class indices; False: a distribution over the classes, shaped like `pred`.
    from_logits : bool, default False
        True: `pred` already holds log-probabilities; False: a log_softmax over the last axis is applied.
    weight : float, optional
        A global scalar weight multiplied into the loss.
    layout : str, default 'NTC'
        The layout of `pred`: 'NTC' (batch, time, classes) or 'TNC'.
    **kwargs
        `prefix` and `params`, as every Block takes.

    Notes
    -----
    Inputs: `pred` (B, T, C) for layout='NTC' or (T, B, C) for 'TNC'; `label` class indices shaped like pred without
    its last axis (sparse_label=True) or a distribution shaped like pred; `valid_length` (B,); optional
    `sample_weight`, broadcast against the per-step loss (B, T) / (T, B). Returns (B,):

        loss_b = weight * sum_{t < valid_length_b} sample_weight_bt * CE_bt / max(valid_length_b, 1)

    (0 for an empty sequence). Steps at or past a sequence's length are selected away before the softmax, so their
    values (even NaN) change neither the loss nor any gradient, and their gradient is exactly 0. GluonNLP's
    `MaskedSoftmaxCELoss` (`SoftmaxCEMaskedLoss`) differs: it zeroes padded steps' losses by a multiplication and
    then divides by the padded length T, so its value changes with the amount of padding and NaN padding leaks.
    """

    def __init__(self, sparse_label=True, from_logits=False, weight=None, layout="NTC", **kwargs):
        if layout not in ("NTC", "TNC"):
            raise MXNetError(f"SequenceSoftmaxCELoss: layout must be 'NTC' or 'TNC', got {layout!r}")
        super().__init__(weight, layout.index("N"), **kwargs)
        self._time_axis = layout.index("T")
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, valid_length, sample_weight=None):
        seq = {"sequence_length": valid_length, "use_sequence_length": True, "axis": self._time_axis}
        pred = F.SequenceMask(pred, **seq)
        if not self._from_logits:
            pred = _log_softmax(F, pred, -1)
        label = F.SequenceMask(label, **seq)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=-1)
        else:
            loss = -F.sum(pred * _reshape_like(F, label, pred), axis=-1)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.SequenceMean(loss, **seq)


__all__ += ["SequenceSoftmaxCELoss"]
