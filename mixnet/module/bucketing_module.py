"""`BucketingModule`: one `Module` per bucket key (e.g. a sequence length), all sharing one set of parameters.

`sym_gen(bucket_key)` returns ``(symbol, data_names, label_names)``. The default bucket is bound first and owns
the parameters (it must hold every parameter any bucket uses); another bucket's Module is bound on first use
with the default one as `shared_module`, so its executor reads and the optimizer updates the very same arrays.
Batches choose their bucket through `DataBatch.bucket_key` (with provide_data/provide_label for its shapes).
"""

import numpy as np

from .._source import warn
from .. import ndarray as nd
from .. import symbol as sym
from ..base import MXNetError
from ..context import cpu
from ..initializer import Uniform
from ..model import load_params
from ..name import NameManager
from .base_module import LOGGER, BaseModule, check_input_names
from .module import Module

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """Modules over the symbols `sym_gen(key)` makes, sharing parameters; `default_bucket_key` is bound first."""

    def __init__(self, sym_gen, default_bucket_key=None, logger=LOGGER, context=cpu(), work_load_list=None,
                 fixed_param_names=None, state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise MXNetError("BucketingModule: default_bucket_key is required")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        self._fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        self._state_names = list(state_names) if state_names is not None else []
        check_input_names(symbol, list(data_names or []), "data", True)
        check_input_names(symbol, list(label_names or []), "label", False)
        check_input_names(symbol, self._state_names, "state", True)
        check_input_names(symbol, self._fixed_param_names, "fixed_param", True)
        self._module_kwargs = dict(logger=logger, context=context, work_load_list=work_load_list,
                                   fixed_param_names=self._fixed_param_names, state_names=self._state_names,
                                   group2ctxs=group2ctxs, compression_params=compression_params)
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._grad_req = None

    def _call_sym_gen(self, bucket_key):
        with NameManager():             # each bucket's symbol gets the same automatic names
            return self._sym_gen(bucket_key)

    def _new_module(self, bucket_key):
        symbol, data_names, label_names = self._call_sym_gen(bucket_key)
        return Module(symbol, data_names, label_names, **self._module_kwargs)

    # ------------------------------------------------------------------ the current bucket's view
    @property
    def default_bucket_key(self):
        return self._default_bucket_key

    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        self._require(params=False, what="data_shapes")
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        self._require(params=False, what="label_shapes")
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        self._require(params=False, what="output_shapes")
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        self._require(params=False, what="symbol")
        return self._curr_module.symbol

    # ------------------------------------------------------------------ parameters
    def get_params(self):
        self._require(binded=False, what="get_params")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False):
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warn("Parameters already initialized and force_init=False. set_params call ignored.")
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing, force_init=force_init,
                                     allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        self._require(params=False, what="init_params")
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                                      allow_missing=allow_missing, force_init=force_init,
                                      allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        self._require(what="get_states")
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._require(what="set_states")
        self._curr_module.set_states(states, value)

    # ------------------------------------------------------------------ binding and buckets
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False, force_rebind=False,
             shared_module=None, grad_req="write"):
        """Binds the default bucket (data_shapes are its shapes); other buckets bind in switch_bucket."""
        saved = self.get_params() if self.params_initialized else None   # kept across a re-bind
        if force_rebind:
            self.binded = False
            self._buckets = {}
            self._curr_module = None
            self._curr_bucket_key = None
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise MXNetError("BucketingModule.bind: shared_module is not supported")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        module = self._buckets.get(self._default_bucket_key) or self._new_module(self._default_bucket_key)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind=False,
                    shared_module=None, grad_req=grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        self.binded = True
        if saved is not None:
            self.set_params(*saved)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Makes `bucket_key`'s module current, creating and binding it (sharing the default bucket's
        parameters and optimizer) on first use."""
        self._require(params=False, what="switch_bucket")
        module = self._buckets.get(bucket_key)
        if module is None:
            module = self._new_module(bucket_key)
            self._buckets[bucket_key] = module
        if not module.binded:
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key], grad_req=self._grad_req)
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        self._require(what="init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    # ------------------------------------------------------------------ computation
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Binds the batch's bucket ahead of its forward (the current bucket stays current)."""
        self._require(what="prepare")
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch, is_train=None):
        self._require(what="forward")
        key = data_batch.bucket_key if data_batch.bucket_key is not None else self._default_bucket_key
        self.switch_bucket(key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        self._require(what="backward")
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        self._require(optimizer=True, what="update")
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        self._require(what="get_outputs")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._require(what="get_input_grads")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._require(what="update_metric")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        raise MXNetError("BucketingModule.install_monitor: mx.monitor is not supported by mixnet")

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Writes ``prefix-%04d.params``, one ``prefix-<key>-symbol.json`` per bucket and ``prefix.buckets``
        (the integer bucket keys, as MXNet writes them)."""
        if not self._buckets:
            raise MXNetError("BucketingModule.save_checkpoint: no bucket is bound yet")
        keys = list(self._buckets)
        if not all(isinstance(k, (int, np.integer)) for k in keys):
            raise MXNetError(f"BucketingModule.save_checkpoint: bucket keys must be integers, got {keys}")
        self.save_params("%s-%04d.params" % (prefix, epoch))
        for key in keys:
            self._call_sym_gen(key)[0].save("%s-%s-symbol.json" % (prefix, key), remove_amp_cast=remove_amp_cast)
        nd.save("%s.buckets" % prefix, nd.array(keys, dtype=np.int32))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule from save_checkpoint's files; its parameters are used at bind."""
        if sym_gen is None or default_bucket_key is None:
            raise MXNetError("BucketingModule.load: sym_gen and default_bucket_key are required")
        buckets = nd.load("%s.buckets" % prefix)
        keys = [int(k) for k in (buckets[0] if isinstance(buckets, list) else buckets).asnumpy()]
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for key in keys:
            _, data_names, label_names = sym_gen(key)
            symbol = sym.load("%s-%s-symbol.json" % (prefix, key))
            mod._buckets[key] = Module(symbol, data_names, label_names, **mod._module_kwargs)
        if default_bucket_key not in mod._buckets:
            raise MXNetError(f"BucketingModule.load: {prefix}.buckets does not list the default bucket "
                             f"{default_bucket_key!r} (it lists {keys})")
        mod._curr_module = mod._buckets[default_bucket_key]
        mod._curr_module._arg_params, mod._curr_module._aux_params = load_params(prefix, epoch)
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod
