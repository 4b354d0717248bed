"""Horovod's training helpers for Gluon: DistributedOptimizer, DistributedTrainer and broadcast_parameters.

Both averaging wrappers make every rank apply the same update from gradients averaged over the ranks (Horovod's
semantics): N ranks that each call `step(b)` on their own b examples make the update of one process calling
`step(N * b)` on all N * b examples (the gradient of the mean loss). MXNet's dist_sync KVStore sums instead (the
update of one process calling `step(b)` on all N * b examples); see docs/distributed.md.
"""

import numpy as np

from .._source import warn
from ..distributed import buckets
from ..distributed.comm import DistError
from ..gluon.parameter import DeferredInitializationError, Parameter, ParameterDict
from ..gluon.trainer import Trainer
from ..ndarray.ndarray import NDArray
from ..optimizer import Optimizer
from .compression import Compression
from .mpi_ops import Average, Sum, _allreduce_many_, _check_process_set, _comm, broadcast_, global_process_set, size

__all__ = ["DistributedOptimizer", "DistributedTrainer", "broadcast_parameters"]


def _scales(gradient_predivide_factor):
    """(prescale, postscale) of Horovod's gradient_predivide_factor f: gradients are divided by f before the sum and
    multiplied by f / size after it (Average supplies the 1 / size), which averages them whatever f is."""
    if not gradient_predivide_factor > 0:
        raise ValueError(f"gradient_predivide_factor must be positive, got {gradient_predivide_factor!r}")
    return 1.0 / gradient_predivide_factor, float(gradient_predivide_factor)


class DistributedOptimizer(Optimizer):
    """Wraps an Optimizer so that every update first averages the gradients over all ranks (in place, in flat
    buckets when the updater hands over several parameters at once), then runs the wrapped optimizer's update.
    Everything else (learning rate, rescale_grad set by Trainer.step, states, multipliers) is the wrapped
    optimizer's: attributes are read from and written to it.

        opt = hvd.DistributedOptimizer(mx.optimizer.SGD(learning_rate=0.1))
        trainer = gluon.Trainer(net.collect_params(), opt, kvstore=None)

    num_groups is accepted for Horovod's signature; mixnet groups gradients by size (buckets) instead.
    """
    _OWN = frozenset(("_optimizer", "_prescale", "_postscale", "update", "update_multi_precision",
                      "_update_many", "_allreduce"))

    def __init__(self, optimizer, gradient_predivide_factor=1.0, num_groups=0, process_set=global_process_set):
        _check_process_set(process_set, "DistributedOptimizer")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"DistributedOptimizer wraps an mx.optimizer.Optimizer, got {type(optimizer).__name__}")
        prescale, postscale = _scales(gradient_predivide_factor)
        object.__setattr__(self, "_optimizer", optimizer)
        object.__setattr__(self, "_prescale", prescale)
        object.__setattr__(self, "_postscale", postscale)

    # Forwarding: the wrapper's own names above, Python's dunders; the rest is the wrapped optimizer's (a plain
    # __getattr__ would miss the methods and properties Optimizer defines, which would then act on the wrapper).
    def __getattribute__(self, name):
        if name in DistributedOptimizer._OWN or (name.startswith("__") and name.endswith("__")):
            return object.__getattribute__(self, name)
        return getattr(object.__getattribute__(self, "_optimizer"), name)

    def __setattr__(self, name, value):
        if name in DistributedOptimizer._OWN:
            raise AttributeError(f"DistributedOptimizer.{name} cannot be set")
        setattr(self._optimizer, name, value)

    def __repr__(self):
        return f"DistributedOptimizer({self._optimizer!r})"

    def _allreduce(self, index, grad):
        grads = list(grad) if isinstance(index, (list, tuple)) else [grad]
        if size() > 1:
            _allreduce_many_(grads, Average, self._prescale, self._postscale, f"DistributedOptimizer (index {index})")

    def update(self, index, weight, grad, state):
        self._allreduce(index, grad)
        self._optimizer.update(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        self._allreduce(index, grad)
        self._optimizer.update_multi_precision(index, weight, grad, state)

    def _update_many(self, indices, weights, grads, states):
        self._allreduce(list(indices), grads)
        self._optimizer._update_many(indices, weights, grads, states)


class DistributedTrainer(Trainer):
    """A gluon.Trainer (no KVStore) whose step() averages every gradient over all ranks before the update, as
    Horovod's does: the gradients are summed over the ranks in place, in flat buckets (so after step() a
    parameter's .grad holds that sum), and the 1 / size is part of the rescale factor. Gradients of a parameter on
    several contexts of one process are summed over them first.

        trainer = hvd.DistributedTrainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
        ...
        trainer.step(local_batch_size)

    compression: hvd.Compression.none or .fp16 (gradients travel as float16). prefix and num_groups are
    accepted for Horovod's signature (mixnet matches tensors by order and groups them by size).
    """

    def __init__(self, params, optimizer, optimizer_params=None, compression=Compression.none,
                 gradient_predivide_factor=1.0, prefix=None, num_groups=0, process_set=global_process_set):
        _check_process_set(process_set, "DistributedTrainer")
        if isinstance(optimizer, DistributedOptimizer):
            optimizer = optimizer._optimizer
            warn("DistributedTrainer does not take DistributedOptimizer as its optimizer. We have "
                 "unwrapped it for you.")
        if prefix is not None and not isinstance(prefix, str):
            raise TypeError(f"prefix must be a string, got {type(prefix).__name__}")
        super().__init__(params, optimizer, optimizer_params=optimizer_params, kvstore=None)
        # Horovod's way to average: the gradients are summed over the ranks and the 1 / size goes into the scale
        # step() divides by the batch size (one pass over the gradients fewer than averaging them in the allreduce)
        self._scale /= size()
        self._compression = compression
        self._prescale, self._postscale = _scales(gradient_predivide_factor)

    def _allreduce_grads(self):
        params = [p for p in self._params if p.grad_req != "null"]
        grads = [p.list_grad() for p in params]
        for per_ctx in grads:           # several contexts in this process: their sum goes to every rank
            for g in per_ctx[1:]:
                per_ctx[0]._data += g._converted_for(per_ctx[0])
                per_ctx[0]._bump_version()
        if size() > 1:
            packed = [self._compression.compress(per_ctx[0]) for per_ctx in grads]
            _allreduce_many_([t for t, _ in packed], Sum, self._prescale, self._postscale,
                             "DistributedTrainer gradients")
            if self._compression is not Compression.none:
                for per_ctx, (t, ctx) in zip(grads, packed):
                    per_ctx[0]._data[...] = self._compression.decompress(t, ctx)._converted_for(per_ctx[0])
                    per_ctx[0]._bump_version()
        for per_ctx in grads:
            if len(per_ctx) > 1:
                host = per_ctx[0].asnumpy()
                for g in per_ctx[1:]:
                    buckets.write_back(g, host)


def _broadcast_after_init(param, root_rank, name):
    """Makes a deferred-init Parameter broadcast its value from root_rank as soon as it is initialized (during
    the first forward pass, which every rank runs), once."""
    init_impl = param._init_impl

    def init_then_broadcast(data, ctx_list):
        init_impl(data, ctx_list)
        del param._init_impl             # back to the class's method: later re-initializations are local
        _broadcast_param(param, root_rank, name)
    param._init_impl = init_then_broadcast


def _broadcast_param(param, root_rank, name):
    arrays = param.list_data()
    broadcast_(arrays[0], root_rank, name=name)
    if len(arrays) > 1:
        host = arrays[0].asnumpy()
        for arr in arrays[1:]:
            buckets.write_back(arr, host)


def broadcast_parameters(params, root_rank=0, prefix=None):
    """Copies root_rank's parameters to every rank: `params` is a ParameterDict (Block.collect_params()) or a
    dict of Parameters or NDArrays (Module.get_params()'s dicts), visited in sorted key order, the same on every
    rank. Parameters whose initialization is deferred are broadcast right after it (at the first forward)."""
    if prefix is not None and not isinstance(prefix, str):
        raise TypeError(f"prefix must be a string, got {type(prefix).__name__}")
    if not isinstance(params, (dict, ParameterDict)):
        raise ValueError(f"invalid params of type: {type(params)}")
    if size() == 1:
        return
    prefix = prefix or ""
    now, deferred = [], []
    for key, value in sorted(params.items(), key=lambda kv: str(kv[0])):
        name = prefix + str(key)
        if isinstance(value, Parameter):
            try:
                now.append((name, value.list_data()[0], value))
            except DeferredInitializationError:
                deferred.append((name, value))
        elif isinstance(value, NDArray):
            now.append((name, value, None))
        else:
            raise ValueError(f"broadcast_parameters: {name!r} is a {type(value).__name__}, not a Parameter or "
                             "NDArray")
    _check_same_layout(now, deferred)
    for name, arr, param in now:
        if param is None:
            broadcast_(arr, root_rank, name=name)
        else:
            _broadcast_param(param, root_rank, name)
    for name, param in deferred:
        _broadcast_after_init(param, root_rank, name)


def _check_same_layout(now, deferred):
    """Every rank must broadcast the same names, shapes and dtypes (else MPI would mix up or overrun buffers): one
    small allgather, and a DistError naming the first difference and the ranks."""
    mine = [[name, list(arr.shape), np.dtype(arr.dtype).str] for name, arr, _ in now] + \
        [[name, None, None] for name, _ in deferred]
    layouts = _comm().allgather_json(mine, "broadcast_parameters (layout check)")
    for r, theirs in enumerate(layouts):
        if theirs == mine:
            continue
        for k in range(max(len(mine), len(theirs))):
            a = mine[k] if k < len(mine) else None
            b = theirs[k] if k < len(theirs) else None
            if a != b:
                raise DistError(f"broadcast_parameters: rank {_comm().rank} and rank {r} differ at entry {k}: "
                                f"{_describe(a)} vs {_describe(b)} (every rank must build the same model)")


def _describe(entry):
    if entry is None:
        return "nothing"
    name, shape, dtype = entry
    return f"{name!r} (deferred initialization)" if shape is None else f"{name!r} {tuple(shape)} {np.dtype(dtype)}"
