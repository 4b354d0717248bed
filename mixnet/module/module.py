"""`Module`: a Symbol trained with MXNet 1.x's legacy API (bind, init_params, init_optimizer, forward, backward,
update; or all of it in `fit`).

Built on the Symbol executor (`Symbol.bind`, mixnet/symbol/executor.py), `mx.optimizer`'s updaters,
`mx.metric` and `mx.init`. As in MXNet, the module keeps its own copies of the parameters (`get_params`
returns them, synchronised from the executor after `update`), every argument that is not data, label or state
is a parameter, and the optimizer's gradients are rescaled by 1/batch_size.

Differences from MXNet 1.9.1: one context per module (MXNet splits a batch over a list of devices; a list of
more than one context raises MXNetError), no `mx.monitor` (install_monitor raises), and a KVStore object given to
`init_optimizer` updates the weights in the store (a string kvstore such as 'local' or 'device' means no store,
as MXNet does for a single device; a 'dist_*' string creates the MPI store, see docs/distributed.md).
"""

import numpy as np

from .._source import warn
from .. import optimizer as opt
from .. import ndarray as nd
from ..base import MXNetError
from ..context import Context, cpu
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from .. import kvstore as kvs
from ..kvstore import KVStore
from ..model import load_checkpoint
from .base_module import LOGGER, BaseModule, check_input_names, parse_data_desc

__all__ = ["Module"]


def _single_context(context):
    if isinstance(context, Context):
        return context
    contexts = list(context)
    if len(contexts) != 1 or not isinstance(contexts[0], Context):
        raise MXNetError(f"Module: mixnet binds a module to one context, got {contexts}; data-parallel training "
                         "over several devices is not supported")
    return contexts[0]


class Module(BaseModule):
    """A module over one Symbol.

    symbol: the network (its outputs are the module's outputs; a loss such as SoftmaxOutput or make_loss gives
    the gradient). data_names / label_names / state_names: the arguments fed from data batches / labels / kept
    between batches (set_states); every other argument is a parameter. fixed_param_names: parameters that
    get no gradient and are never updated. context: a Context (or a list holding one).
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",), logger=LOGGER,
                 context=cpu(), work_load_list=None, fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        self._context = _single_context(context)
        self._symbol = symbol
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        check_input_names(symbol, data_names, "data", True)
        check_input_names(symbol, label_names, "label", False)
        check_input_names(symbol, state_names, "state", True)
        check_input_names(symbol, fixed_param_names, "fixed_param", True)

        inputs = set(data_names + label_names + state_names)
        self._param_names = [n for n in symbol.list_arguments() if n not in inputs]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()
        self._compression_params = compression_params

        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = False
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec = None
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

    # ------------------------------------------------------------------ checkpoints
    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module over the checkpoint ``prefix-symbol.json`` / ``prefix-%04d.params`` % epoch (its parameters
        are used at bind); `load_optimizer_states` also restores ``prefix-%04d.states`` at init_optimizer.
        kwargs go to Module()."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Writes ``prefix-symbol.json``, ``prefix-%04d.params`` and (optionally) ``prefix-%04d.states``."""
        self._symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
        param_name = "%s-%04d.params" % (prefix, epoch)
        self.save_params(param_name)
        self.logger.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = "%s-%04d.states" % (prefix, epoch)
            self.save_optimizer_states(state_name)
            self.logger.info('Saved optimizer state to "%s"', state_name)

    # ------------------------------------------------------------------ names and shapes
    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        self._require(params=False, what="data_shapes")
        return self._data_shapes

    @property
    def label_shapes(self):
        self._require(params=False, what="label_shapes")
        return self._label_shapes

    @property
    def output_shapes(self):
        self._require(params=False, what="output_shapes")
        return self._output_shapes

    # ------------------------------------------------------------------ parameters
    def get_params(self):
        """(arg_params, aux_params): the module's copies, brought up to date with the executor."""
        self._require(binded=False, what="get_params")
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        """Fills each parameter from arg_params/aux_params when given there, else with `initializer` (which
        also sees the variable's attributes, e.g. an `__init__` set by mx.sym.var(init=...))."""
        if self.params_initialized and not force_init:
            warn("Parameters already initialized and force_init=False. init_params call ignored.")
            return
        self._require(params=False, what="init_params")
        attrs = self._symbol.attr_dict()

        def _impl(desc, arr, given):
            if given is None:
                initializer(desc, arr)
            elif str(desc) in given:
                if given[str(desc)] is not arr:
                    given[str(desc)].copyto(arr)
            elif not allow_missing:
                raise MXNetError(f"init_params: {str(desc)!r} is not in the given parameters "
                                 "(pass allow_missing=True to initialize it)")
            elif initializer is not None:
                initializer(desc, arr)

        for name, arr in sorted(self._arg_params.items()):
            _impl(InitDesc(name, attrs.get(name)), arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            _impl(InitDesc(name, attrs.get(name)), arr, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        self._exec.copy_params_from(self._arg_params, self._aux_params, allow_extra_params=allow_extra)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False):
        """Assigns parameter values (every parameter must be given unless allow_missing)."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warn("Parameters already initialized and force_init=False. set_params call ignored.")
            return
        self._exec.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)
        self._params_dirty = True        # the module's own copies are behind the executor's now
        self.params_initialized = True

    def _sync_params_from_devices(self):
        for name, arr in self._arg_params.items():
            self._exec.arg_dict[name].copyto(arr)
        for name, arr in self._aux_params.items():
            self._exec.aux_dict[name].copyto(arr)
        self._params_dirty = False

    # ------------------------------------------------------------------ binding
    def _grad_reqs(self, grad_req):
        """MXNet's rule: parameters get grad_req (fixed ones 'null'), data gets it only with
        inputs_need_grad, labels and states 'null'; a list/dict gives them explicitly."""
        names = self._symbol.list_arguments()
        data_names = {d.name for d in self._data_shapes}
        if not self.for_training:
            grad_req = "null"
        if isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(names):
                raise MXNetError(f"bind: grad_req has {len(grad_req)} entries for {len(names)} arguments {names}")
            return dict(zip(names, grad_req))
        if not isinstance(grad_req, (str, dict)):
            raise ValueError("grad_req must be one of str, list, tuple, or dict.")
        default = grad_req if isinstance(grad_req, str) else "write"
        reqs = {}
        for name in names:
            if name in self._param_names:
                reqs[name] = "null" if name in self._fixed_param_names else default
            elif name in data_names:
                reqs[name] = default if self.inputs_need_grad else "null"
            else:
                reqs[name] = "null"
        if isinstance(grad_req, dict):
            reqs.update(grad_req)
        return reqs

    def _make_executor(self, shared=None):
        """An executor for the current data/label shapes. `shared`: an executor whose parameter, aux and
        gradient arrays are reused (reshape, buckets): the module's parameters are the same arrays."""
        symbol = self._symbol
        inputs = set(symbol.list_inputs())
        descs = [d for d in self._data_shapes + (self._label_shapes or []) if d.name in inputs]
        shapes = {d.name: tuple(d.shape) for d in descs}
        arg_shapes, out_shapes, aux_shapes = symbol.infer_shape_partial(**shapes)
        arg_names, aux_names = symbol.list_arguments(), symbol.list_auxiliary_states()
        unknown = [n for n, s in zip(arg_names + aux_names, arg_shapes + aux_shapes) if not s or 0 in s]
        if unknown:
            raise MXNetError(f"Module.bind: cannot infer the shapes of {unknown} from data/label shapes {shapes}; "
                             "give them as data or label")
        dtypes = {d.name: np.dtype(d.dtype) for d in descs}
        arg_types, _, aux_types = symbol.infer_type(**dtypes)
        arg_types = arg_types or [dtypes.get(n, np.float32) for n in arg_names]
        aux_types = aux_types or [np.float32] * len(aux_names)

        def array(name, shape, dtype, pool):
            if shared is not None and name in pool:
                arr = pool[name]
                if tuple(arr.shape) != tuple(shape):
                    raise MXNetError(f"Module.bind: shared parameter {name!r} has shape {tuple(arr.shape)}, this "
                                     f"symbol needs {tuple(shape)}")
                return arr
            return nd.zeros(shape, ctx=self._context, dtype=dtype)

        params = set(self._param_names)
        if shared is not None:
            missing = [n for n in arg_names + aux_names if (n in params or n in aux_names)
                       and n not in shared.arg_dict and n not in shared.aux_dict]
            if missing:
                raise MXNetError(f"Module.bind: parameters {missing} are not in the shared module (a bucketing "
                                 "module's default bucket must hold every parameter)")
        shared_args = {n: a for n, a in shared.arg_dict.items() if n in params} if shared else {}
        shared_grads = {n: a for n, a in shared.grad_dict.items() if n in params and a is not None} if shared else {}
        args = {n: array(n, s, t, shared_args) for n, s, t in zip(arg_names, arg_shapes, arg_types)}
        aux = {n: array(n, s, t, shared.aux_dict if shared else {}) for n, s, t in zip(aux_names, aux_shapes,
                                                                                       aux_types)}
        reqs = self._grad_reqs(self._grad_req)
        grads = {n: array(n, args[n].shape, args[n].dtype, shared_grads) for n in arg_names if reqs[n] != "null"}
        self._exec = symbol.bind(self._context, args, args_grad=grads, grad_req=reqs, aux_states=aux)
        self._output_shapes = list(zip(self._output_names, [tuple(s) for s in out_shapes]))

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False, force_rebind=False,
             shared_module=None, grad_req="write"):
        """Allocates the executor for data_shapes/label_shapes ((name, shape) pairs or DataDescs, typically
        an iterator's provide_data/provide_label). shared_module: a bound, initialized Module whose parameters
        this one uses (the same arrays; BucketingModule's buckets)."""
        if force_rebind:
            self._exec = None
            self.binded = False
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if not for_training and inputs_need_grad:
            raise MXNetError("Module.bind: inputs_need_grad=True needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = parse_data_desc(self._data_names, self._label_names,
                                                                data_shapes, label_shapes)
        shared = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded
                    and shared_module.params_initialized):
                raise MXNetError("Module.bind: shared_module must be a bound Module with initialized parameters")
            shared = shared_module._exec
        self._make_executor(shared)

        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            # re-binding (or Module.load): the known parameter values go into the new executor
            self._exec.copy_params_from(self._arg_params, self._aux_params)
        else:
            self._arg_params = {n: nd.zeros(self._exec.arg_dict[n].shape, dtype=self._exec.arg_dict[n].dtype)
                                for n in self._param_names}
            self._aux_params = {n: nd.zeros(a.shape, dtype=a.dtype) for n, a in self._exec.aux_dict.items()}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes, label_shapes=None):
        """Re-binds for new input shapes (e.g. another batch size), keeping the parameter arrays."""
        self._require(params=False, what="reshape")
        self._data_shapes, self._label_shapes = parse_data_desc(self._data_names, self._label_names,
                                                                data_shapes, label_shapes)
        self._make_executor(self._exec)

    # ------------------------------------------------------------------ optimizer
    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        """Installs the optimizer (a name for mx.optimizer.create, with sym=this symbol for lr_mult/wd_mult
        attributes and rescale_grad=1/batch_size unless given; or an Optimizer object)."""
        self._require(what="init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        if isinstance(kvstore, KVStore):
            store = kvstore
        elif isinstance(kvstore, str) and kvstore.lower().startswith("dist"):
            store = kvs.create(kvstore)      # over MPI: every worker runs the same update on its own copy
        elif kvstore is None or isinstance(kvstore, str):
            store = None      # one device: MXNet updates in the module, without a store
        else:
            raise MXNetError(f"Module.init_optimizer: kvstore must be a type string or a KVStore, got "
                             f"{type(kvstore).__name__}")

        first = self._data_shapes[0]
        batch_size = first.shape[DataDesc.get_batch_axis(getattr(first, "layout", None))]
        if store is not None and "dist" in store.type and "_sync" in store.type:
            batch_size *= store.num_workers      # MXNet's Module: the gradient is averaged over the global batch
        rescale_grad = 1.0 / batch_size
        idx2name = dict(enumerate(self._param_names))
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name, **optimizer_params)
        elif isinstance(optimizer, opt.Optimizer):
            if optimizer.rescale_grad != rescale_grad:
                warn("Optimizer created manually outside Module but rescale_grad is not normalized to "
                     f"1.0/batch_size/num_workers ({optimizer.rescale_grad} vs. {rescale_grad}). "
                     "Is this intended?")
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        else:
            raise MXNetError(f"Module.init_optimizer: optimizer must be a name or an mx.optimizer.Optimizer, got "
                             f"{type(optimizer).__name__}")

        self._optimizer = optimizer
        self._kvstore = store
        self._update_on_kvstore = store is not None
        self._updater = None
        if store is not None:
            if self._compression_params:
                store.set_gradient_compression(self._compression_params)
            store.set_optimizer(optimizer)
            store.init(list(self._param_names), [self._arg_params[n] for n in self._param_names])
            if "dist" in store.type:     # every worker starts from rank 0's parameters
                store.pull(list(self._param_names), out=[self._exec.arg_dict[n] for n in self._param_names])
                self._params_dirty = True
        else:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module):
        """Uses `shared_module`'s optimizer, updater and store (the buckets of a BucketingModule)."""
        if not shared_module.optimizer_initialized:
            raise MXNetError("borrow_optimizer: the shared module has no optimizer yet")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname):
        self._require(optimizer=True, what="save_optimizer_states")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            opt.optimizer.write_atomic(fname, self._updater.get_states())

    def load_optimizer_states(self, fname):
        """Restores states written by save_optimizer_states; they are checked against the parameters first."""
        self._require(optimizer=True, what="load_optimizer_states")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            return
        try:
            with open(fname, "rb") as f:
                data = f.read()
        except OSError as err:
            raise MXNetError(f"cannot read optimizer states from {fname!r}: {err}") from None
        weights = {i: self._exec.arg_dict[n] for i, n in enumerate(self._param_names)}
        self._updater.set_states(data, repr(fname), weights, dict(enumerate(self._param_names)))

    # ------------------------------------------------------------------ computation
    def forward(self, data_batch, is_train=None):
        """Runs the network on data_batch (is_train: default for_training). A batch whose data shapes differ
        from the bound ones re-binds first (reshape)."""
        self._require(what="forward")
        if is_train is None:
            is_train = self.for_training
        new_shapes = tuple(tuple(d.shape) for d in data_batch.data)
        if new_shapes != tuple(tuple(d.shape) for d in self._data_shapes):
            if getattr(data_batch, "provide_data", None):
                new_dshape = data_batch.provide_data
            else:
                new_dshape = [DataDesc(d.name, s, d.dtype, d.layout) for d, s in zip(self._data_shapes, new_shapes)]
            if getattr(data_batch, "provide_label", None):
                new_lshape = data_batch.provide_label
            elif getattr(data_batch, "label", None) and self._label_shapes:
                new_lshape = [DataDesc(d.name, l.shape, d.dtype, d.layout)
                              for d, l in zip(self._label_shapes, data_batch.label)]
            else:
                new_lshape = None
            self.reshape(new_dshape, new_lshape)
        if len(data_batch.data) != len(self._data_shapes):
            raise MXNetError(f"Module.forward: the batch has {len(data_batch.data)} data arrays, the module "
                             f"reads {[d.name for d in self._data_shapes]}")
        feed = dict(zip([d.name for d in self._data_shapes], data_batch.data))
        if self._label_shapes and getattr(data_batch, "label", None):
            feed.update((d.name, l) for d, l in zip(self._label_shapes, data_batch.label)
                        if d.name in self._exec.arg_dict)
        self._exec.forward(is_train=is_train, **feed)

    def backward(self, out_grads=None):
        """Back-propagates from the outputs (out_grads: head gradients, needed unless the outputs are losses)."""
        self._require(what="backward")
        if not self.for_training:
            raise MXNetError("Module.backward: the module was bound with for_training=False; re-bind for training")
        self._exec.backward(out_grads=out_grads)

    def update(self):
        """Applies the optimizer to every parameter with a gradient (fixed parameters have none)."""
        self._require(optimizer=True, what="update")
        self._params_dirty = True
        grads = self._exec.grad_dict
        # grad_dict lists every argument, with None where grad_req is 'null' (fixed parameters), as MXNet's does
        pending = [(i, n) for i, n in enumerate(self._param_names) if grads.get(n) is not None]
        if self._update_on_kvstore:
            if pending:      # every key in one push and one pull (a dist store sums them in buckets)
                names = [n for _, n in pending]
                self._kvstore.push(names, [grads[n] for n in names])
                self._kvstore.pull(names, out=[self._exec.arg_dict[n] for n in names])
        elif pending:
            self._updater([i for i, _ in pending], [grads[n] for _, n in pending],
                          [self._exec.arg_dict[n] for _, n in pending])

    def get_outputs(self, merge_multi_context=True):
        self._require(what="get_outputs")
        return list(self._exec.outputs)

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the data inputs (bind with inputs_need_grad=True)."""
        self._require(what="get_input_grads")
        if not self.inputs_need_grad:
            raise MXNetError("Module.get_input_grads: bind with inputs_need_grad=True")
        return [self._exec.grad_dict[d.name] for d in self._data_shapes]

    def get_states(self, merge_multi_context=True):
        self._require(what="get_states")
        return [self._exec.arg_dict[n] for n in self._state_names]

    def set_states(self, states=None, value=None):
        """Sets the state inputs from `states` (one array, or a one-device list, per state) or to `value`."""
        self._require(what="set_states")
        if (states is None) == (value is None):
            raise MXNetError("Module.set_states: give exactly one of states and value")
        for i, name in enumerate(self._state_names):
            target = self._exec.arg_dict[name]
            if value is not None:
                target[:] = value
            else:
                src = states[i][0] if isinstance(states[i], (list, tuple)) else states[i]
                src.copyto(target)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """eval_metric.update_dict({label name: label}, {output name: output}) for the last forward."""
        if pre_sliced:
            labels = labels[0]
        names = [d.name for d in self._label_shapes] if self._label_shapes else []
        eval_metric.update_dict(dict(zip(names, labels or [])), dict(zip(self._output_names, self._exec.outputs)))

    def install_monitor(self, mon):
        raise MXNetError("Module.install_monitor: mx.monitor is not supported by mixnet")
