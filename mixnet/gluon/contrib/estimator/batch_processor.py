"""BatchProcessor: what the Estimator does with one batch (override fit_batch/evaluate_batch to change it)."""
from .... import autograd
from ...utils import split_and_load

__all__ = ["BatchProcessor"]


class BatchProcessor:
    """The default per-batch work of an Estimator.

    A batch is ``(data, label)``; both are split along `batch_axis` over `estimator.context`. Subclass and
    override `fit_batch` / `evaluate_batch` (same signatures and return values) for other batch layouts or
    training steps, and pass an instance as ``Estimator(..., batch_processor=...)``.
    """

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator, val_batch, batch_axis=0):
        """Forward `estimator.val_net` and `estimator.val_loss`; returns lists (data, label, pred, loss), one
        entry per context."""
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        """Forward `estimator.net` and `estimator.loss` under autograd and backward each loss (the trainer step
        is GradientUpdateHandler's); returns lists (data, label, pred, loss), one entry per context."""
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label)]
        for part in loss:
            part.backward()
        return data, label, pred, loss
