"""`gluon.Trainer`: applies an optimizer to a set of Parameters (MXNet 1.x semantics).

    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(batch_size)        # gradients are divided by batch_size here

Parameters with several contexts: `allreduce_grads` sums each gradient over the contexts (one process), and each
context keeps its own optimizer states (one Updater per context), as MXNet does with update_on_kvstore=False.
With update_on_kvstore=True (MXNet's default for a multi-device 'device'/'local' store) the KVStore keeps one
weight and one updater per parameter and the contexts pull the updated weight.

save_states/load_states use a safe format, never a pickle: one file in MXNet's NDArray-list format (loadable with
`nd.load`) holding every state array plus an entry `__mixnet_states__` (uint8) with a JSON document: the states'
structure, the optimizer class, its hyper-parameters, per-device update counts (so Adam's bias correction resumes
exactly) and the lr_scheduler's state. The file is written atomically. MXNet's pickled `.states` files are refused
with an explanation (unpickling can run arbitrary code). load_states checks the whole file against the trainer's
parameters and optimizer before it changes anything.
"""

import operator
from typing import NamedTuple

import numpy as np

from .. import _display
from .._traceback import hide_internals
from ..base import MXNetError
from .. import optimizer as opt
from .. import kvstore as kvs
from .parameter import Parameter, ParameterDict

_DATA = operator.attrgetter("_data")
_GRAD = operator.attrgetter("_grad")
_GRAD_REQ = operator.attrgetter("_grad_req")
_FRESH = operator.attrgetter("_fresh_grad")


class _Targets(NamedTuple):
    """Trainer._targets' cache: what it was built from (checked by identity each step) and what it built."""
    params: list          # the Trainer's parameters, their array lists and grad_reqs when built
    datas: list
    reqs: list
    arrays: list          # every per-device array of the targets, and their gradient buffers
    grads: list
    targets: list         # [(index, param, arrays, grads)]
    updaters: list        # the Trainer's updater list when built
    every: list           # per updater: (indices, grads, weights) of all the targets
    updated: list         # the arrays in `every`: their fresh flags are cleared by a step

__all__ = ["Trainer", "StaleGradientError"]


class StaleGradientError(MXNetError, UserWarning):
    """step()/update() found a parameter whose gradient no backward() wrote since the last step. Also a
    UserWarning, the class MXNet raises here (so `except UserWarning` keeps working)."""


class Trainer:
    """Applies an Optimizer to a set of Parameters: `step(batch_size)` after `backward()` updates them from their
    gradients.

    Parameters
    ----------
    params : ParameterDict, dict or list of Parameter
        The parameters to train (`net.collect_params()`); a parameter listed twice is trained once.
    optimizer : str or Optimizer
        An optimizer name ('sgd', 'adam', ...) or instance.
    optimizer_params : dict, optional
        The optimizer's keyword arguments when `optimizer` is a name, e.g. {'learning_rate': 0.1}.
    kvstore : str or KVStore, default 'device'
        How gradients are summed across devices and workers ('local', 'device', 'dist_sync', ... or None).
    compression_params : dict, optional
        Gradient compression settings for the KVStore.
    update_on_kvstore : bool, optional
        Run the update on the KVStore (None: decided from the KVStore type).

    Examples
    --------
    >>> import mixnet as mx
    >>> net = mx.gluon.nn.Dense(1, in_units=2)
    >>> net.initialize(mx.init.One())
    >>> trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    >>> with mx.autograd.record():
    ...     loss = net(mx.nd.array([[1.0, 2.0]])).sum()
    >>> loss.backward()
    >>> trainer.step(batch_size=1)
    >>> net.weight.data().asnumpy().tolist(), net.bias.data().asnumpy().tolist()
    ([[0.5, 0.0]], [-0.5])
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device", compression_params=None,
                 update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = list(params.values())
        if not isinstance(params, (list, tuple)):
            raise ValueError(f"First argument must be a list or dict of Parameters, got {type(params)}.")
        self._params = []
        self._param2idx = {}
        seen = set()
        for param in params:
            if not isinstance(param, Parameter):
                raise ValueError(f"First argument must be a list or dict of Parameters, got list of "
                                 f"{type(param)}.")
            if id(param) in seen:          # a shared parameter listed twice is trained once
                continue
            seen.add(id(param))
            self._param2idx[param.name] = len(self._params)
            self._params.append(param)
            param._set_trainer(self)   # sparse rows are pulled from it; new values reset its KVStore copies
        self._contains_sparse_weight = any(p._stype != "default" for p in self._params)
        self._contains_sparse_grad = any(p._grad_stype != "default" for p in self._params)
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        optimizer_params = optimizer_params if optimizer_params else {}
        self._init_optimizer(optimizer, optimizer_params)
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._params_to_init = []
        self._targets_cache = None       # see _targets
        self._reset_kvstore()
        if self._contexts is not None and "dist" in getattr(kvstore, "type", str(kvstore)):
            self._prepare()     # rank 0's initial values everywhere before the first forward (MXNet: first step)

    # ------------------------------------------------------------------ display
    def _facts(self):
        kv = self._kvstore_params["kvstore"]
        facts = [("optimizer", self._optimizer), ("parameters", len(self._params)),
                 ("kvstore", kv if kv is None or isinstance(kv, str) else _display.Name(type(kv).__name__))]
        if self._kv_initialized:     # decided at the first step (no store for one device: updated there)
            facts.append(("update_on_kvstore", bool(self._update_on_kvstore)))
        return facts

    def __repr__(self):
        """One line: 'Trainer(optimizer=SGD(learning_rate=0.1, ...), parameters=4, kvstore='device')'."""
        return _display.call_text("Trainer", self._facts())

    def _repr_html_(self):
        """Jupyter's view: the optimizer's hyper-parameters, how many parameters (and values), the kvstore."""
        known = [p for p in self._params if p.shape is not None and all(p.shape)]
        values = f"{sum(int(np.prod(p.shape)) for p in known)}{'?' if len(known) < len(self._params) else ''}"
        facts = [(k, v) for k, v in self._facts() if k != "optimizer"]
        return _display.box(_display.heading("Trainer", f"{len(self._params)} parameters, {values} values"),
                            _display.table([[k, v] for k, v in facts]), self._optimizer._repr_html_())

    # ------------------------------------------------------------------ setup
    def _check_contexts(self):
        contexts = None
        for param in self._params:
            try:
                ctx = param.list_ctx()
            except MXNetError:
                continue      # not initialized yet: checked again at the first step
            if contexts is not None and contexts != ctx:
                raise MXNetError(f"All Parameters must be initialized on the same set of contexts, but Parameter "
                                 f"{param.name} is initialized on {ctx} while previous Parameters are initialized "
                                 f"on {contexts}.")
            contexts = ctx
        return contexts

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = {i: param for i, param in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise AssertionError("optimizer_params must be None if optimizer is an instance of Optimizer "
                                     "instead of str")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters = [opt.get_updater(self._optimizer) for _ in (self._contexts or [None])]

    def _reset_kvstore(self):
        """Forgets the KVStore (and its copies of the weights); the next step creates and fills it again."""
        if self._kvstore is not None and "dist" in self._kvstore.type:
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self):
        """MXNet's choice: no KVStore for a single device (unless a KVStore object is given); otherwise a local
        store, updating on it by default. Sparse weights always live in a KVStore that updates them (their
        devices pull the rows they need: row_sparse_data); sparse gradients of dense weights are reduced there but
        applied on the devices unless update_on_kvstore=True."""
        self._contexts = self._check_contexts()
        if self._contexts is None:
            raise MXNetError("Trainer: no Parameter is initialized; initialize the Parameters (or run a forward "
                             "pass) before step()")
        if len(self._updaters) != len(self._contexts):
            self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]
        config = self._kvstore_params
        kvstore, update_on_kvstore = config["kvstore"], config["update_on_kvstore"]
        if self._contains_sparse_weight:
            if update_on_kvstore is False:
                raise ValueError("Cannot set update_on_kvstore=False when sparse weights are present.")
            if not isinstance(kvstore, (kvs.KVStore, str)):
                raise TypeError(f"Cannot create '{kvstore}' KVStore with row_sparse parameters. The type must be "
                                "KVStore or str.")
            kv = kvs.create(kvstore)
            self._finish_kvstore(kv, True, update_on_kvstore)
            return
        if isinstance(kvstore, kvs.KVStore):
            kv = kvstore
        elif kvstore is None or kvstore is False or len(self._contexts) == 1:
            kv = None
            if isinstance(kvstore, str) and kvstore.startswith("dist"):
                kv = kvs.create(kvstore)      # over MPI (a DistError outside an MPI launcher)
        else:
            kv = kvs.create(kvstore)
        default_update = not self._contains_sparse_grad    # sparse gradients: updated on the devices
        if kv is not None and "dist" in kv.type:
            # MXNet updates on its parameter servers; over MPI every worker holds the whole model, so the update
            # runs on the worker after an in-place allreduce of the gradients (the same values and states, with
            # two copies of the model fewer per step). update_on_kvstore=True still runs it in the store.
            default_update = False
        self._finish_kvstore(kv, default_update if update_on_kvstore is None else bool(update_on_kvstore),
                             update_on_kvstore)

    def _finish_kvstore(self, kv, update_on_kvstore, requested=None):
        """requested: the user's update_on_kvstore (None: not given), checked against what the store can do."""
        if kv is None:
            self._update_on_kvstore = None
        else:
            if self._compression_params:
                kv.set_gradient_compression(self._compression_params)
            self._update_on_kvstore = update_on_kvstore
            if update_on_kvstore and not kv.is_capable(kvs.KVStore.OPTIMIZER):
                if requested:
                    raise ValueError(f"Please set update_on_kvstore=False when training with {type(kv)}")
                self._update_on_kvstore = False
            if self._update_on_kvstore:
                kv.set_optimizer(self._optimizer)
        self._kvstore = kv
        self._kv_initialized = True

    def _init_params(self, only=None):
        if self._kvstore is None:
            self._params_to_init = []
            return
        if "dist" in self._kvstore.type:      # one init of every key (rank 0's values), then every device pulls
            ready = [p for p in self._params_to_init if p._data is not None]
            self._kvstore._key_names.update({self._param2idx[p.name]: p.name for p in ready})
            self._kvstore.init([self._param2idx[p.name] for p in ready], [p._all_data()[0] for p in ready])
            self._kvstore.pull([self._param2idx[p.name] for p in ready], out=[p._all_data() for p in ready])
            self._params_to_init = [p for p in self._params_to_init if p._data is None]
            return
        for param in list(self._params_to_init):
            if only is not None and param is not only:
                continue
            if param._deferred_init is not None and param._data is None:
                continue
            idx = self._param2idx[param.name]
            data = param._all_data()
            self._kvstore.init(idx, data[0])
            if self._update_on_kvstore and param._stype == "default":
                self._kvstore.pull(idx, out=data)
            self._params_to_init.remove(param)

    def _row_sparse_pull(self, parameter, out, row_id, full_idx=False):
        """Pulls the rows row_id of a sparse parameter's weight from the KVStore into out. Only this parameter
        is put into the KVStore now: this runs inside a forward pass, where writing the other parameters (as
        their KVStore initialization does) would change arrays already recorded (they are put there at step)."""
        if not self._kv_initialized:
            self._init_kvstore()
        self._init_params(only=parameter)
        idx = self._param2idx[parameter.name]
        if full_idx:
            self._kvstore.pull(idx, out=out, ignore_sparse=False)
        else:
            self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id)

    # ------------------------------------------------------------------ learning rate
    @property
    def learning_rate(self):
        """float: the optimizer's current learning rate (its lr_scheduler's value when it has one)."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning rate can be accessed.")
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        """Optimizer: the optimizer this trainer applies."""
        if isinstance(self._optimizer, opt.Optimizer):
            return self._optimizer
        raise UserWarning("Optimizer has not been initialized yet")

    def set_learning_rate(self, lr):
        """Sets the optimizer's learning rate for the next steps.

        Parameters
        ----------
        lr : float
            The new learning rate.
        """
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning rate is mutated.")
        self._optimizer.set_learning_rate(lr)

    # ------------------------------------------------------------------ steps
    def _prepare(self):
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    def step(self, batch_size, ignore_stale_grad=False):
        """One optimization step: sums the gradients across devices, then updates every parameter with
        rescale_grad = scale / batch_size.

        Parameters
        ----------
        batch_size : int
            The batch size the gradients were summed over (they are divided by it).
        ignore_stale_grad : bool, default False
            Skip parameters whose gradient was not written since the last step instead of raising
            `StaleGradientError`.
        """
        try:
            self._optimizer.rescale_grad = self._scale / batch_size
            self._prepare()
            self._allreduce_grads()
            self._update(ignore_stale_grad)
        except MXNetError as err:
            __tracebackhide__ = True    # noqa: F841 - IPython and pytest hide this frame
            raise hide_internals(err)   # mixnet's own frames are cut: MIXNET_FULL_TRACEBACK=1 shows them

    def allreduce_grads(self):
        """Sums each parameter's gradient over its contexts (and workers), the first half of `step`: call it,
        change the gradients (e.g. `gluon.utils.clip_global_norm`), then `update`.

        Raises `AssertionError` when the trainer updates on the KVStore (make it with update_on_kvstore=False).
        """
        try:
            self._prepare()
            if self._kvstore is not None and self._update_on_kvstore:
                raise AssertionError("allreduce_grads() when parameters are updated on kvstore is not supported. "
                                     "Try setting `update_on_kvstore` to False when creating trainer.")
            self._allreduce_grads()
        except MXNetError as err:
            __tracebackhide__ = True    # noqa: F841 - IPython and pytest hide this frame
            raise hide_internals(err)   # mixnet's own frames are cut: MIXNET_FULL_TRACEBACK=1 shows them

    def _allreduce_grads(self):
        if self._kvstore is None:
            return
        if "dist" in self._kvstore.type and not self._update_on_kvstore:    # one pushpull: bucketed over ranks
            live = [i for i, param in enumerate(self._params) if param.grad_req != "null"]
            grads = [self._params[i].list_grad() for i in live]
            find = getattr(self._kvstore, "_in_place_arrays", None)      # mixnet's DistKVStore
            in_place = find(list(zip(live, grads))) if find is not None else None
            if in_place is not None:        # one host context: summed where they lie, the store left alone
                self._kvstore.sum_in_place(live, in_place)
            else:
                self._kvstore.pushpull(live, grads)
            return
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            if self._update_on_kvstore:
                continue      # the push in _update merges and applies the update
            grads = param.list_grad()
            if len(grads) > 1:
                total = grads[0]._data.copy()
                for g in grads[1:]:
                    total += g._converted_for(grads[0])
                for g in grads:
                    g._data[...] = total if g._ctx == grads[0]._ctx else g._ctx.xp.asarray(
                        total if isinstance(total, np.ndarray) else total.get())
                    g._bump_version()

    def update(self, batch_size, ignore_stale_grad=False):
        """Updates every parameter from its gradient, the second half of `step` (after `allreduce_grads`).

        Parameters
        ----------
        batch_size : int
            The batch size the gradients were summed over (they are divided by it).
        ignore_stale_grad : bool, default False
            Skip parameters whose gradient was not written since the last step instead of raising
            `StaleGradientError`.
        """
        try:
            self._prepare()
            if self._kvstore is not None and self._update_on_kvstore:
                raise AssertionError("update() when parameters are updated on kvstore is not supported. Try "
                                     "setting `update_on_kvstore` to False when creating trainer.")
            self._optimizer.rescale_grad = self._scale / batch_size
            self._update(ignore_stale_grad)
        except MXNetError as err:
            __tracebackhide__ = True    # noqa: F841 - IPython and pytest hide this frame
            raise hide_internals(err)   # mixnet's own frames are cut: MIXNET_FULL_TRACEBACK=1 shows them

    def _targets(self):
        """[(index, param, arrays, grads)] for the parameters that take gradients (grad_req not 'null'): each
        one's per-device arrays and gradient buffers. Steps reuse it while every parameter keeps its grad_req, its
        arrays and its gradient buffers, which one pass of identity checks confirms (initialization, cast,
        reset_ctx, grad_req and attach_grad replace them); anything else rebuilds it as every step once did."""
        cached = self._targets_cache
        if cached is not None:      # identity checks mapped over C getters: no Python frame per parameter
            if all(map(operator.is_, map(_DATA, cached.params), cached.datas)) \
                    and list(map(_GRAD_REQ, cached.params)) == cached.reqs \
                    and all(map(operator.is_, map(_GRAD, cached.arrays), cached.grads)) \
                    and cached.updaters is self._updaters:
                return cached.targets
        targets = []
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            targets.append((i, param, param._all_data(), param.list_grad()))
        params = list(self._params)
        arrays = [a for _, _, datas, _ in targets for a in datas]
        # what each updater (one per device) gets when every gradient is fresh: built with the targets, reused
        every = [([], [], []) for _ in self._updaters]
        for i, _, datas, grads in targets:
            for (indices, upd_grads, weights), arr, grad in zip(every, datas, grads):
                indices.append(i)
                upd_grads.append(grad)
                weights.append(arr)
        self._targets_cache = _Targets(params, list(map(_DATA, params)), list(map(_GRAD_REQ, params)), arrays,
                                       list(map(_GRAD, arrays)), targets, self._updaters, every,
                                       [arr for _, _, weights in every for arr in weights])
        return targets

    def _stale_check(self, targets):
        if all(map(_FRESH, self._targets_cache.arrays)):     # every array of the targets (one C pass)
            return
        for _, param, arrays, _ in targets:
            for data in arrays:
                if not data._fresh_grad:
                    raise StaleGradientError(
                        f"Gradient of Parameter `{param.name}` on context {data.context} has not been updated by "
                        "backward since last `step`. This could mean a bug in your model that made it only use a "
                        "subset of the Parameters (Blocks) for this iteration. If you are intentionally only using "
                        "a subset, call step with ignore_stale_grad=True to suppress this warning and skip "
                        "updating of Parameters with stale gradient")

    def _update(self, ignore_stale_grad=False):
        # MXNet checks while it goes (so an error leaves earlier parameters' fresh flags cleared); mixnet checks
        # every parameter first, so a UserWarning leaves the trainer and the gradients untouched.
        targets = self._targets()
        if not ignore_stale_grad:
            self._stale_check(targets)
        if self._kvstore is not None and self._update_on_kvstore:
            # every key in one push and one pull (a dist store sums them in buckets)
            pushes = [(i, grads, datas, param._stype == "default") for i, param, datas, grads in targets
                      if not ignore_stale_grad or any(d._fresh_grad for d in datas)]
            if pushes:
                self._kvstore.push([i for i, *_ in pushes], [grads for _, grads, *_ in pushes])
                pulls = [(i, datas) for i, _, datas, dense in pushes if dense]    # sparse rows: row_sparse_data
                if pulls:
                    self._kvstore.pull([i for i, _ in pulls], out=[datas for _, datas in pulls])
                for _, _, datas, _ in pushes:
                    for d in datas:
                        d._fresh_grad = False
            return
        if not ignore_stale_grad:       # every gradient is fresh (checked above): each updater takes all of them
            cached = self._targets_cache
            for arr in cached.updated:
                arr._fresh_grad = False
            for updater, (indices, grads, weights) in zip(self._updaters, cached.every):
                if indices:
                    updater(indices, grads, weights)      # (the Updater copies the lists it is given)
            return
        updates = [[] for _ in self._updaters]          # ignore_stale_grad: the fresh ones only
        for i, _, datas, grads in targets:
            for upd, arr, grad in zip(updates, datas, grads):
                if arr._fresh_grad:
                    upd.append((i, grad, arr))
                    arr._fresh_grad = False
        for updater, upd in zip(self._updaters, updates):
            if upd:
                indices, grads, weights = zip(*upd)
                updater(list(indices), list(grads), list(weights))

    # ------------------------------------------------------------------ states
    def save_states(self, fname):
        """Saves the optimizer's states (momenta, update counts, ...) and settings to a file, atomically, in a
        safe format (NDArray-list, no pickle; see the module docstring).

        Parameters
        ----------
        fname : str
            The file to write.
        """
        if self._optimizer is None:
            raise AssertionError("Optimizer has not been initialized")
        self._prepare()
        if self._kvstore is not None and self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            opt.optimizer.write_atomic(fname, self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Loads what `save_states` wrote; the states go to every context. Pickled MXNet `.states` files are
        refused. The file is checked against this trainer's parameters and optimizer first: a corrupt, truncated
        or mismatched one raises MXNetError naming the file and what does not fit, and changes nothing.

        Parameters
        ----------
        fname : str
            The file to read.
        """
        self._prepare()
        data = _read(fname)
        names = {i: param.name for i, param in enumerate(self._params)}

        def weights(k):
            return {i: param._all_data()[k] for i, param in enumerate(self._params) if param._data is not None}
        if self._kvstore is not None and self._update_on_kvstore:
            self._kvstore._updater.set_states(data, repr(fname), weights(0), names)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            # Every updater gets the same checks against weights of the same shapes: if the first one accepts the
            # file, the others do too.
            for k, updater in enumerate(self._updaters):
                updater.set_states(data, repr(fname), weights(k), names)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = {i: param for i, param in enumerate(self._params)}


def _read(fname):
    try:
        with open(fname, "rb") as f:
            return f.read()
    except OSError as err:
        raise MXNetError(f"cannot read optimizer states from {fname!r}: {err}") from None
