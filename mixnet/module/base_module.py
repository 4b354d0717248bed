"""`BaseModule`: what every module does on top of bind/forward/backward/update: `fit`, `score`, `predict`,
`iter_predict`, `forward_backward`, `save_params`/`load_params`.

A subclass provides the state machine itself (`bind`, `init_params`, `init_optimizer`, `forward`, `backward`,
`update`, `get_outputs`, `update_metric`, `get_params`/`set_params`, `data_names`, `symbol`, ...), as `Module`
and `BucketingModule` do.
"""
import logging
import time

import numpy as np

from .._source import warn
from .. import metric
from .. import ndarray as nd
from ..base import MXNetError, _as_list
from ..initializer import Uniform
from ..io import DataBatch, DataDesc, DataIter
from ..model import BatchEndParam, split_params

# The default `logger`: MXNet's is the `logging` module itself (the root logger, which its functions configure
# when nothing has); mixnet's records go to this child of the "mixnet" logger instead.
LOGGER = logging.getLogger("mixnet.module")

__all__ = ["BaseModule"]


def check_input_names(symbol, names, typename, throw):
    """Every name in `names` must be an argument of `symbol`: raises ValueError (throw) or warns."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = (f"You created Module with Module(..., {typename}_names={list(names)}) but input with name "
               f"{name!r} is not found in symbol.list_arguments(). Did you mean one of: {candidates}")
        if throw:
            raise ValueError(msg)
        warn(msg)


def _check_names_match(names, descs, kind, throw):
    actual = [d[0] for d in descs]
    if sorted(names) != sorted(actual):
        msg = (f"Data provided by {kind}_shapes don't match names specified by {kind}_names "
               f"({descs} vs. {list(names)})")
        if throw:
            raise ValueError(msg)
        warn(msg)


def parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """data_shapes/label_shapes ((name, shape) pairs or DataDescs) as lists of DataDesc, checked against the
    names: data must match exactly (ValueError), labels only warn (a module may have no loss reading them)."""
    data_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in data_shapes]
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in label_shapes]
        _check_names_match(label_names, label_shapes, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data_shapes, label_shapes


class BaseModule:
    """The training and inference loops shared by `Module` and `BucketingModule`."""

    def __init__(self, logger=LOGGER):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None

    def _require(self, binded=True, params=True, optimizer=False, what=""):
        """Raises MXNetError naming the missing step (bind / init_params / init_optimizer) before `what`."""
        if binded and not self.binded:
            raise MXNetError(f"{type(self).__name__}.{what}: call bind() first")
        if params and not self.params_initialized:
            raise MXNetError(f"{type(self).__name__}.{what}: call init_params() first")
        if optimizer and not self.optimizer_initialized:
            raise MXNetError(f"{type(self).__name__}.{what}: call init_optimizer() first")

    @property
    def symbol(self):
        return self._symbol

    def forward_backward(self, data_batch):
        """forward(is_train=True) then backward()."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Called before each batch (MXNet pulls row-sparse weights here); there is nothing to prepare for
        dense parameters without a distributed KVStore."""
        if sparse_row_id_fn is not None:
            warn("Parameters are not updated in the KVStore. No need to call sparse_row_id_fn.", UserWarning)

    # ------------------------------------------------------------------ evaluation
    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None, score_end_callback=None,
              reset=True, epoch=0, sparse_row_id_fn=None):
        """Runs inference over `eval_data` and returns `eval_metric.get_name_value()`."""
        self._require(what="score")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                for callback in _as_list(batch_end_callback):
                    callback(params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch, eval_metric=eval_metric,
                                   locals=locals())
            for callback in _as_list(score_end_callback):
                callback(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yields (outputs without the batch's padding, batch index, batch) for each batch of `eval_data`."""
        self._require(what="iter_predict")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True, always_output_list=False,
                sparse_row_id_fn=None):
        """The outputs over `eval_data` (a DataIter, an NDArray or a numpy array), padding removed.

        merge_batches=True: one array per output, the batches concatenated (a single output is returned bare
        unless always_output_list); False: a list per batch of its outputs."""
        self._require(what="predict")
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]), is_train=False)
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError(f"eval_data must be an NDArray, a numpy array or a DataIter, got "
                             f"{type(eval_data).__name__}")
        output_list = [[out.copy() for out in outputs]
                       for outputs, _, _ in self.iter_predict(eval_data, num_batch, reset, sparse_row_id_fn)]
        if not output_list or not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        if any(len(out) != num_outputs for out in output_list):
            raise MXNetError("predict: cannot merge batches, as the number of outputs differs between batches "
                             "(bucketing?); use merge_batches=False")
        merged = [nd.concat(*[out[i] for out in output_list], dim=0) for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    # ------------------------------------------------------------------ training
    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
            eval_end_callback=None, eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False, begin_epoch=0,
            num_epoch=None, validation_metric=None, monitor=None, sparse_row_id_fn=None):
        """Binds to `train_data`'s shapes, initializes parameters and optimizer, then trains for epochs
        begin_epoch .. num_epoch - 1, scoring `eval_data` (with validation_metric, default eval_metric) after
        each epoch. Callbacks as in `mx.callback`."""
        if num_epoch is None:
            raise MXNetError("fit: num_epoch is required")
        if monitor is not None:
            raise MXNetError("fit: monitor (mx.monitor.Monitor) is not supported by mixnet's Module")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label, for_training=True,
                  force_rebind=force_rebind)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            data_iter = iter(train_data)
            try:
                next_batch = next(data_iter)
            except StopIteration:
                raise MXNetError(f"fit: train_data gave no batch in epoch {epoch}") from None
            nbatch = 0
            end_of_batch = False
            while not end_of_batch:
                data_batch = next_batch
                self.forward_backward(data_batch)
                self.update()
                self.update_metric(eval_metric, data_batch.label)
                try:
                    next_batch = next(data_iter)     # fetched early, as MXNet does: callbacks see the last one
                    self.prepare(next_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(params)
                nbatch += 1
            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)

            arg_params, aux_params = self.get_params()
            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data is not None:
                res = self.score(eval_data, validation_metric, score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    # ------------------------------------------------------------------ parameters on disk
    def save_params(self, fname):
        """Saves the parameters as an `nd.save` dict with MXNet's 'arg:<name>' / 'aux:<name>' keys."""
        arg_params, aux_params = self.get_params()
        save_dict = {"arg:%s" % k: v for k, v in arg_params.items()}
        save_dict.update({"aux:%s" % k: v for k, v in aux_params.items()})
        nd.save(fname, save_dict)

    def load_params(self, fname):
        """Loads parameters saved by `save_params` (or `mx.model.save_checkpoint`) into the module."""
        arg_params, aux_params = split_params(nd.load(fname), fname)
        self.set_params(arg_params, aux_params)
