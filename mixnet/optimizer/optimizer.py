"""`mx.optimizer`: the optimizers of MXNet 1.x, with MXNet 1.9.1's update formulas.

Updates run on the weights' buffers (`weight._data`) in place with numpy (cupy on a GPU), outside autograd: nothing
is recorded, and each updated weight's version is bumped so a graph recorded before the update is detected as
stale. The common optimizers (SGD with and without momentum, NAG, Adam, AdamW) also have a multi-tensor path:
`Updater` hands them all the parameters of a step at once, and parameters with the same device, dtype and
hyper-parameters are updated as one flat buffer (see `_multi_tensor.py`), a few array operations per group.

Formulas (g = the gradient, `clip` only when `clip_gradient` is set, `lr`/`wd` include the per-parameter
`lr_mult`/`wd_mult`):

* SGD: `g = clip(rescale_grad*grad) + wd*w`; `w -= lr*g`, or with momentum `m = momentum*m - lr*g; w += m`.
* NAG: `g = clip(rescale_grad*grad) + wd*w`; `m = momentum*m + g; w -= lr*(g + momentum*m)`.
* Adam: `g = clip(rescale_grad*grad + wd*w)`; `m, v` as usual; `w -= lr_t*m/(sqrt(v)+eps)` with the bias
  correction folded into `lr_t = lr*sqrt(1-beta2^t)/(1-beta1^t)` (so eps is not bias-corrected).
* AdamW (MXNet's `contrib.adamw_update` with `eta = lr`): `g = clip(rescale_grad*grad)`;
  `w -= lr*(c_t*m/(sqrt(v)+eps) + wd*w)` with `c_t = sqrt(1-beta2^t)/(1-beta1^t)` (1 if `correct_bias=False`).
* The others follow the MXNet 1.9.1 class of the same name (see each class).

Deliberate differences from MXNet 1.9.1: Nadam keeps its momentum schedule per parameter (MXNet multiplies one
shared schedule once per parameter per step); AdaDelta does not modify the caller's gradient in place;
`Signum(momentum=0, wd_lh=...)` works (MXNet raises); states are saved in a documented non-pickle format.
"""
import copy
import json
import math
import operator
import warnings
from itertools import repeat

import numpy as np

from .._source import warn
from ..base import MXNetError
from ..ndarray.ndarray import NDArray, _bump_versions, _wrap, array
from ..ops import _fastpath
from .. import _atomic, _display, serialization
from ._multi_tensor import FlatCache

__all__ = ["Optimizer", "register", "create", "get_updater", "Updater", "SGD", "ccSGD", "NAG", "Adam", "AdamW",
           "Adamax", "Nadam", "AdaGrad", "AdaDelta", "RMSProp", "Ftrl", "FTML", "Signum", "SignSGD", "LAMB", "LARS",
           "LBSGD", "Test"]


def _zeros_like(weight, dtype=None):
    xp = weight._ctx.xp
    return _wrap(xp.zeros(weight._data.shape, dtype=dtype or weight._data.dtype), weight._ctx)


_f32 = np.float32        # the type itself: a Python function around it was a call per use on every update


# The flat (multi-tensor) path runs element-wise kernels over chunks of this many elements on the CPU, so the
# temporaries stay in cache (one pass over a multi-megabyte buffer per operation is memory-bound and slower than
# per-parameter loops over small arrays). A GPU gets whole buffers.
FLAT_CHUNK = 1 << 16


def _chunked(xp, kernel, flats, *args):
    n = flats[0].shape[0]
    if xp is not np or n <= FLAT_CHUNK:
        kernel(xp, *flats, *args)
        return
    for start in range(0, n, FLAT_CHUNK):
        stop = start + FLAT_CHUNK
        kernel(xp, *[None if f is None else f[start:stop] for f in flats], *args)


def _clip_on(clip):
    return clip is not None and clip > 0


def _xp_of(arr):
    """numpy for numpy buffers, cupy for cupy ones."""
    if isinstance(arr, np.ndarray):
        return np
    import cupy
    return cupy


def _sparse_grad_rows(grad):
    """The stored rows of a row_sparse gradient (numpy int64), else None."""
    return grad._rows() if grad.stype == "row_sparse" else None


def _step_rows(optimizer, index, weight, grad, state, lr, wd, rows):
    """A lazy update: `optimizer._step` on the gathered rows of the weight, gradient and state arrays, then
    the rows written back (the other rows, and their states, stay as they were)."""
    xp = weight._ctx.xp
    idx = xp.asarray(rows)

    def gather(s):
        if isinstance(s, NDArray):
            return _wrap(s._data[idx], s._ctx)
        if isinstance(s, (tuple, list)):
            return type(s)(gather(x) for x in s)
        return s

    def scatter(sub, s):
        if isinstance(s, NDArray):
            s._data[idx] = sub._data
            s._bump_version()
        elif isinstance(s, (tuple, list)):
            for a, b in zip(sub, s):
                scatter(a, b)

    w_rows, sub_state = weight._data[idx], gather(state)
    optimizer._step(index, w_rows, grad._data[idx], sub_state, lr, wd)
    weight._data[idx] = w_rows
    scatter(sub_state, state)


def _ctx_key(ctx):
    return f"{ctx.device_type}({ctx.device_id})"


class Optimizer:
    """Base class. `learning_rate` defaults to 0.01; with an `lr_scheduler`, the rate is `lr_scheduler(num_update)`.

    `num_update` counts like MXNet: each parameter index has its own update count (starting at
    `begin_num_update`), kept per device, and `num_update` is the largest count seen.
    """
    opt_registry = {}
    # hyper-parameters a subclass adds (saved by save_states); the base ones are listed in _BASE_HPARAMS
    _hparams = ()
    _BASE_HPARAMS = ("rescale_grad", "wd", "clip_gradient", "lr", "begin_num_update", "num_update",
                     "multi_precision")

    def __init__(self, rescale_grad=1., param_idx2name=None, wd=0., clip_gradient=None, learning_rate=None,
                 lr_scheduler=None, sym=None, begin_num_update=0, multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None and lr_scheduler.base_lr != learning_rate:
            warn("learning rate from ``lr_scheduler`` has been overwritten by ``learning_rate`` in "
                 "optimizer.", UserWarning)
            lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {"cpu(0)": {}}
        self._index_update_count = self._all_index_update_counts["cpu(0)"]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise AssertionError("param_idx2name should be a dict of param indexes to names.")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self._flat_cache = FlatCache()
        self._last_groups = None          # (key, groups) of the last _grouped call
        self.set_lr_mult({})
        self.set_wd_mult({})

    # ------------------------------------------------------------------ display
    def _facts(self):
        """[(name, value)]: the learning rate and weight decay, the class's own hyper-parameters (those set),
        then the base ones that differ from their defaults (what the reprs show)."""
        facts = [("learning_rate", self.learning_rate), ("wd", self.wd)]
        facts += [(name, getattr(self, name)) for name in self._hparams if getattr(self, name, None) is not None]
        if self.lr_scheduler is not None:
            facts.append(("lr_scheduler", type(self.lr_scheduler).__name__))
        defaults = (("rescale_grad", 1.0), ("clip_gradient", None), ("multi_precision", False))
        facts += [(name, getattr(self, name)) for name, default in defaults if getattr(self, name) != default]
        return facts

    def __repr__(self):
        """One line: 'SGD(learning_rate=0.1, wd=0.0, momentum=0.9, lazy_update=True)'."""
        return _display.call_text(type(self).__name__, self._facts())

    def _repr_html_(self):
        return _display.facts_html(type(self).__name__, self._facts() + [("num_update", self.num_update)])

    # ------------------------------------------------------------------ registry
    @staticmethod
    def register(klass):
        """Registers a subclass under its lower-cased class name (for `create`)."""
        if not isinstance(klass, type):
            raise AssertionError("register expects a class")
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            warn(f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is overriding existing "
                 f"optimizer {Optimizer.opt_registry[name].__module__}."
                 f"{Optimizer.opt_registry[name].__name__}")
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        key = name.lower()
        if key in Optimizer.opt_registry:
            return Optimizer.opt_registry[key](**kwargs)
        raise ValueError(f"Cannot find optimizer {name}")

    # ------------------------------------------------------------------ learning rate and multipliers
    @property
    def learning_rate(self):
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note that set_learning_rate "
                              "can mutate the value of the learning rate of the optimizer only when the "
                              "LRScheduler of the optimizer is undefined.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale):
        raise DeprecationWarning

    def set_lr_mult(self, args_lr_mult):
        """Per-parameter learning-rate multipliers, keyed by name (with param_idx2name/sym) or index."""
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    self.lr_mult[name] = _sym_mult(name, "__lr_mult__", attr[name]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Per-parameter weight-decay multipliers. Names in param_idx2name that end neither in `_weight` nor in
        `_gamma` get 0 (MXNet's rule: no decay on biases)."""
        self.wd_mult = {}
        for name in self.idx2name.values():
            if not (name.endswith("_weight") or name.endswith("_gamma")):
                self.wd_mult[name] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = _sym_mult(name, "__wd_mult__", attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    _counts_of = (None, None)        # (the device last selected, its counts): the same device every step

    def _set_current_context(self, device_id):
        """Selects the update counts of one device (each device's updater counts its own updates)."""
        last, counts = self._counts_of
        if device_id is last and counts is self._index_update_count:
            return
        key = device_id if isinstance(device_id, str) else f"cpu({device_id})" if isinstance(device_id, int) \
            else _ctx_key(device_id)
        if key not in self._all_index_update_counts:
            self._all_index_update_counts[key] = {}
        self._index_update_count = self._all_index_update_counts[key]
        self._counts_of = (device_id, self._index_update_count)

    def _update_count(self, index):
        if not isinstance(index, (list, tuple)):
            index = [index]
        counts = self._index_update_count
        for idx in index:
            if idx not in counts:
                counts[idx] = self.begin_num_update
            counts[idx] += 1
            if counts[idx] > self.num_update:
                self.num_update = counts[idx]

    def _base_lr(self):
        return self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr

    def _get_lrs(self, indices):
        return self._scaled(self._base_lr(), indices, "lr_mult", self.lr_mult)

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        return self._scaled(self.wd, indices, "wd_mult", self.wd_mult)

    def _scaled(self, base, indices, attr, table):
        """base times each index's multiplier: the Parameter's own (param_dict), else set_lr/wd_mult's by index
        or by name."""
        param_dict, idx2name = self.param_dict, self.idx2name
        values = []
        for index in indices:
            param = param_dict.get(index)
            if param is not None:
                values.append(base * getattr(param, attr))
            elif index in table:
                values.append(base * table[index])
            elif index in idx2name:
                values.append(base * table.get(idx2name[index], 1.0))
            else:
                values.append(base)
        return values

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    # ------------------------------------------------------------------ states and updates
    def create_state(self, index, weight):
        """The optimizer state of one weight (None, an NDArray or a tuple of them). Called once per weight."""
        return None

    def _mp(self, weight):
        return self.multi_precision and weight.dtype == np.float16

    def create_state_multi_precision(self, index, weight):
        """Like create_state; with multi_precision and a float16 weight: `(float32 master copy, state)`."""
        if self._mp(weight):
            master = _wrap(weight._data.astype(np.float32), weight._ctx)
            return (master, self.create_state(index, master))
        if weight.dtype == np.float16:
            warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow convergence. "
                 "Consider using multi_precision=True option of the optimizer")
        return self.create_state(index, weight)

    def _split_mp_state(self, state):
        """(master float32 weight, inner state) of a multi-precision state."""
        return state[0], state[1]

    def update(self, index, weight, grad, state):
        """Updates `weight` in place from `grad` (one parameter; MXNet 1.x signature). A lazy update (see
        `_lazy_rows`) touches only the weight and state rows stored in a row_sparse gradient."""
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        rows = self._lazy_rows(weight, grad)
        if rows is None:
            self._step(index, weight._data, grad._data, state, lr, wd)
        else:
            _step_rows(self, index, weight, grad, state, lr, wd, rows)
        weight._bump_version()

    def _lazy_rows(self, weight, grad):
        """The rows a lazy update touches (a row_sparse gradient's stored rows), or None for a dense update.
        MXNet's optimizers without a sparse kernel update densely (storage fallback): the default. A plain
        (dense) NDArray gradient always updates densely: the multi-tensor Updater does not ask."""
        return None

    def _step(self, index, w, g, state, lr, wd):
        """The update rule on backend buffers `w` (in place) and `g`; `state` holds NDArrays."""
        raise NotImplementedError(f"{type(self).__name__} must implement _step()")

    def update_multi_precision(self, index, weight, grad, state):
        """As update (with the float32 master copy of multi_precision); lists of indices, weights, grads and
        states update several parameters in one call, as MXNet's multi-tensor optimizers take them."""
        if isinstance(index, (list, tuple)):
            self._update_many(index, weight, grad, state)
            return
        if self._mp(weight):
            master, inner = self._split_mp_state(state)
            grad32 = grad.astype(np.float32) if grad.stype != "default" else _wrap(grad._data.astype(np.float32),
                                                                                   grad._ctx)
            self.update(index, master, grad32, inner)
            weight._data[...] = master._data          # the cast on assignment: astype's rounding, no copy
            weight._bump_version()
        else:
            self.update(index, weight, grad, state)

    def _update_many(self, indices, weights, grads, states):
        """Updates several parameters (the Updater's batched call). Optimizers with a multi-tensor path override
        this; the default updates them one by one."""
        for index, weight, grad, state in zip(indices, weights, grads, states):
            self.update_multi_precision(index, weight, grad, state)

    # ------------------------------------------------------------------ multi-tensor helper
    def _grouped(self, indices, weights, grads, states, extra_key=None):
        """Counts the updates, then yields (positions, lr, wd) for groups of parameters that share device,
        dtype, lr, wd (and `extra_key(index)`), plus a list of positions to update one by one."""
        self._update_count(indices)
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)
        extras = None if extra_key is None else tuple(map(extra_key, indices))
        # the same parameters with the same rates as the last call (every step, without a scheduler or
        # changed multipliers): the same groups (an NDArray's device never changes; a group whose dtypes
        # differ is updated one by one all the same: FlatCache.flats)
        key = (tuple(indices), tuple(map(id, weights)), tuple(lrs), tuple(wds), extras)
        if self._last_groups is not None and self._last_groups[0] == key:
            return self._last_groups[1]
        groups = {}
        for pos, (index, weight) in enumerate(zip(indices, weights)):
            group = (weight._ctx, weight._data.dtype, lrs[pos], wds[pos], None if extras is None else extras[pos])
            groups.setdefault(group, []).append(pos)
        result = [(positions, lrs[positions[0]], wds[positions[0]]) for positions in groups.values()]
        self._last_groups = (key, result)
        return result

    def _flats(self, *lists):
        """The flat buffers of a group's lists of arrays (weights, gradients, states), or None: update one by
        one (_multi_tensor.FlatCache.flats)."""
        return self._flat_cache.flats(*lists)

    # ------------------------------------------------------------------ (de)serialization of hyper-parameters
    def _hyperparams(self):
        """The JSON-able settings and counters save_states records."""
        out = {}
        for name in self._BASE_HPARAMS + tuple(self._hparams):
            out[name] = getattr(self, name)
        out["lr_mult"] = [[k, v] for k, v in self.lr_mult.items()]
        out["wd_mult"] = [[k, v] for k, v in self.wd_mult.items()]
        out["idx2name"] = [[k, v] for k, v in self.idx2name.items()]
        out["update_counts"] = {dev: [[k, v] for k, v in counts.items()]
                                for dev, counts in self._all_index_update_counts.items()}
        extra = self._extra_state()
        if extra:
            out["extra"] = extra
        if self.lr_scheduler is not None:
            out["lr_scheduler"] = _scheduler_state(self.lr_scheduler)
        return out

    def _extra_state(self):
        return None

    def _load_extra_state(self, extra):
        pass

    def _set_hyperparams(self, hp):
        """Restores what _hyperparams() recorded. `hp` comes from a file: every value is checked against the kind
        of the attribute it replaces (MXNetError naming it otherwise). Updater.set_states calls this on a copy of
        the optimizer, so a refused file changes nothing."""
        if not isinstance(hp, dict):
            raise MXNetError(f"'hyperparams' must be an object, got {hp!r:.80}")
        for name in self._BASE_HPARAMS + tuple(self._hparams):
            if name in hp:
                optional = name in _OPTIONAL_HPARAMS and (name != "lr" or self.lr_scheduler is not None)
                value = _checked_value(f"hyper-parameter {name!r}", getattr(self, name), hp[name],
                                       integer=name in ("num_update", "begin_num_update"), optional=optional)
                if name in ("beta1", "beta2") and not 0 <= value < 1:    # decay rates: 1 - beta**t > 0
                    raise MXNetError(f"hyper-parameter {name!r}: {value!r} is not in [0, 1)")
                setattr(self, name, value)
        self.lr_mult = _pairs(hp.get("lr_mult", []), "lr_mult", _number)
        self.wd_mult = _pairs(hp.get("wd_mult", []), "wd_mult", _number)
        self.idx2name = _pairs(hp.get("idx2name", []), "idx2name", lambda v: isinstance(v, str))
        counts = hp.get("update_counts", {})
        if not isinstance(counts, dict):
            raise MXNetError(f"'update_counts' must be an object, got {counts!r:.80}")
        self._all_index_update_counts = {dev: _pairs(c, f"update_counts[{dev!r:.40}]", _count)
                                         for dev, c in counts.items()}
        if not self._all_index_update_counts:
            self._all_index_update_counts = {"cpu(0)": {}}
        self._index_update_count = next(iter(self._all_index_update_counts.values()))
        self._load_extra_state(hp.get("extra"))
        if "lr_scheduler" in hp and self.lr_scheduler is not None:
            _restore_scheduler(self.lr_scheduler, hp["lr_scheduler"])


# Settings that may be None (off); the others are numbers or flags. lr is None only under an lr_scheduler.
_OPTIONAL_HPARAMS = frozenset(("lr", "clip_gradient", "clip_weights", "lower_bound", "upper_bound", "last_lr",
                               "cur_lr"))


def _key(k):
    return tuple(k) if isinstance(k, list) else k


def _sym_mult(name, key, text):
    try:
        return float(text)
    except (TypeError, ValueError):
        raise MXNetError(f"Optimizer: variable {name!r}: attribute {key}={text!r:.80} is not a number") from None


# ---------------------------------------------------------------------- checks of values read from a states file
def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _state_key(key):
    """A parameter index as saved: an int, a str (KVStore keys) or a list of them (a tuple key)."""
    if isinstance(key, list):
        return all(_state_key(k) and not isinstance(k, list) for k in key)
    return isinstance(key, str) or (isinstance(key, int) and not isinstance(key, bool))


def _pairs(items, what, check):
    """{key: value} from a saved list of [key, value] pairs, each checked."""
    if not isinstance(items, list) or not all(isinstance(p, list) and len(p) == 2 and _state_key(p[0]) and
                                              check(p[1]) for p in items):
        raise MXNetError(f"{what!r} must be a list of [parameter index, value] pairs of the right kind, got "
                         f"{items!r:.80}")
    return {_key(k): v for k, v in items}


def _checked_value(what, current, value, integer=False, optional=False):
    """A saved setting, of the kind of the `current` one: a bool for a bool, text for text, otherwise a finite
    number (an int >= 0 for counters) or, where `optional`, None."""
    if isinstance(current, bool):
        ok = isinstance(value, bool)
    elif isinstance(current, str):
        ok = isinstance(value, str)
    elif integer:
        ok = _count(value)
    else:
        ok = _number(value) or (optional and value is None)
    if not ok:
        raise MXNetError(f"{what}: {value!r:.80} does not fit the current value {current!r:.80}")
    return value


def _jsonable(value):
    try:
        json.dumps(value, allow_nan=True)
        return True
    except (TypeError, ValueError):
        return False


def _scheduler_state(sched):
    """A scheduler's JSON-able attributes (schedulers are stateful: FactorScheduler lowers base_lr as it goes)."""
    return {"class": type(sched).__name__,
            "attrs": {k: v for k, v in vars(sched).items() if _jsonable(v)}}


# What a scheduler changes as training goes (FactorScheduler lowers base_lr and moves count, MultiFactorScheduler
# moves cur_step_ind); its other attributes are the settings the user built it with.
_SCHEDULER_STATE = ("base_lr", "count", "cur_step_ind")


def _restore_scheduler(sched, saved):
    """Restores a scheduler's progress from a file: base_lr (a finite number), count (an int >= 0) and
    cur_step_ind (an index into MultiFactorScheduler's steps). The scheduler's settings stay the user's (a saved
    setting that differs is reported in a warning), so no file can set a step of 0 or a schedule that never ends."""
    if not isinstance(saved, dict) or not isinstance(saved.get("attrs", {}), dict):
        raise MXNetError(f"'lr_scheduler' must be an object with 'class' and 'attrs', got {saved!r:.80}")
    name = type(sched).__name__
    if saved.get("class") != name:
        warn(f"load_states: the saved lr_scheduler was a {saved.get('class')!r:.80}, the optimizer has a "
             f"{name}; its state is not restored")
        return
    current = vars(sched)
    values, differ = {}, []
    for k, v in saved.get("attrs", {}).items():
        if k not in current:
            raise MXNetError(f"lr_scheduler: {name} has no attribute {k!r:.80}")
        if k not in _SCHEDULER_STATE:
            if v != current[k]:
                differ.append(f"{k}={v!r:.40}")
            continue
        if k == "base_lr":
            ok = _number(v)
        elif k == "count":
            ok = _count(v)
        else:
            ok = _count(v) and v <= len(getattr(sched, "step", ()))
        if not ok:
            raise MXNetError(f"lr_scheduler: {name}'s saved {k}={v!r:.80} is out of range")
        values[k] = v
    if differ:
        warn(f"load_states: the saved {name} had {', '.join(differ)}; this one's settings are kept")
    current.update(values)


register = Optimizer.register
create = Optimizer.create_optimizer


# ====================================================================== SGD family
def _sgd_kernel(xp, w, g, mom, lr, wd, rescale, clip, momentum):
    """MXNet's sgd_update / sgd_mom_update on buffers (any shape, flat or not)."""
    if _clip_on(clip) or not _sgd_numba(xp, w, g, mom, _f32(lr), _f32(wd), rescale, momentum):
        _sgd_numpy(xp, w, g, mom, lr, wd, rescale, clip, momentum)


def _sgd_flat(xp, flats, *args):
    """_sgd_kernel on the flat buffers of a parameter group: one Numba pass over the whole buffers, or numpy ops
    over cache-sized chunks."""
    w, g, mom = flats
    lr, wd, rescale, clip, momentum = args
    if _clip_on(clip) or not _sgd_numba(xp, w, g, mom, _f32(lr), _f32(wd), rescale, momentum):
        _chunked(xp, _sgd_numpy, flats, *args)


def _sgd_numpy(xp, w, g, mom, lr, wd, rescale, clip, momentum):
    """MXNet 1.9.1's float operations: the step is (lr * rescale) * g, or lr * clip(rescale * g) when clipping
    (checked bit for bit against MXNet's sgd_update / sgd_mom_update)."""
    lr, wd = _f32(lr), _f32(wd)
    if _clip_on(clip):
        step = xp.multiply(g, _f32(rescale), dtype=w.dtype)
        xp.clip(step, -_f32(clip), _f32(clip), out=step)
        step *= lr
    else:
        step = xp.multiply(g, lr * _f32(rescale), dtype=w.dtype)
    if mom is None:
        if wd:
            w *= _f32(1) - lr * wd
        w -= step
    else:
        mom *= _f32(momentum)
        if wd:
            mom -= (lr * wd) * w
        mom -= step
        w += mom


def _sgd_numba(xp, w, g, mom, lr, wd, rescale, momentum):
    """The update (without clipping) as one Numba pass over contiguous float buffers of one dtype (no temporaries;
    the numpy path makes two or three passes and a temporary): the same float operations in the same order, so
    the same result. False where it does not apply (another device or dtype, strided buffers, Numba not loaded by
    a kernel that pays for it); the caller then runs numpy."""
    arrays = (w, g) if mom is None else (w, g, mom)
    nk = _fastpath.numba_kernels(xp, *arrays, load=False)     # not worth Numba's start-up on its own
    if nk is None:
        return False
    for a in arrays:                 # a loop, no generator frame: this runs on every step
        if not a.flags.c_contiguous:
            return False
    lr_rescale = lr * _f32(rescale)
    if mom is None:
        decay = _f32(1) - lr * wd if wd else _f32(1)     # w * 1 is w exactly, as skipping the multiply
        nk.sgd_update(w.reshape(-1), g.reshape(-1), lr_rescale, decay)
    else:
        nk.sgd_mom_update(w.reshape(-1), g.reshape(-1), mom.reshape(-1), bool(wd), lr * wd, lr_rescale,
                          _f32(momentum))
    return True


class _MomentumState:
    """Optimizers whose state is one momentum buffer (or None without momentum) and, for float16 weights under
    multi_precision, MXNet's (momentum, float32 master) order: SGD, NAG, LARS."""

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def create_state_multi_precision(self, index, weight):
        if self._mp(weight):
            master = _wrap(weight._data.astype(np.float32), weight._ctx)
            return (self.create_state(index, master), master)
        return super().create_state_multi_precision(index, weight)

    def _split_mp_state(self, state):
        return state[1], state[0]


@register
class SGD(_MomentumState, Optimizer):
    """SGD with optional momentum (MXNet's sgd_update / sgd_mom_update). With a row_sparse gradient and
    `lazy_update` (the default) only the gradient's stored rows of the weight and momentum are updated. With `multi_precision=True`, float16
    weights are updated through a float32 master copy (state `(momentum, master)`, MXNet's order for SGD)."""
    _hparams = ("momentum", "lazy_update")

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = 4

    def _lazy_rows(self, weight, grad):
        # MXNet's sgd_update / sgd_mom_update: lazy for a row_sparse gradient unless lazy_update=False
        return _sparse_grad_rows(grad) if self.lazy_update else None

    def _step(self, index, w, g, state, lr, wd):
        _sgd_kernel(_xp_of(w), w, g, None if state is None else state._data, lr, wd, self.rescale_grad,
                    self.clip_gradient, self.momentum)

    def _update_many(self, indices, weights, grads, states):
        if len(indices) < 2:
            return super()._update_many(indices, weights, grads, states)
        mp = [pos for pos, w in enumerate(weights) if self._mp(w)] if self.multi_precision else None
        if mp:
            for pos in mp:
                self.update_multi_precision(indices[pos], weights[pos], grads[pos], states[pos])
            keep = [pos for pos in range(len(indices)) if pos not in set(mp)]
            indices, weights, grads, states = ([seq[p] for p in keep] for seq in (indices, weights, grads, states))
            if not indices:
                return
        for positions, lr, wd in self._grouped(indices, weights, grads, states):
            ws = list(map(weights.__getitem__, positions))
            gs = list(map(grads.__getitem__, positions))
            ms = list(map(states.__getitem__, positions)) if self.momentum != 0.0 else None
            flats = self._flats(ws, gs, *([] if ms is None else [ms])) if len(positions) > 1 else None
            if flats is not None:
                _sgd_flat(ws[0]._ctx.xp, flats if ms is not None else flats + [None], lr, wd, self.rescale_grad,
                          self.clip_gradient, self.momentum)
            else:
                for p in positions:
                    self._step(indices[p], weights[p]._data, grads[p]._data, states[p], lr, wd)
            _bump_versions(ws)


@register
class ccSGD(SGD):  # noqa: N801 (MXNet's name)
    """Deprecated alias of SGD (MXNet keeps it registered)."""


def _nag_kernel(xp, w, g, mom, lr, wd, rescale, clip, momentum, out_is_weight=True):
    """MXNet 1.9.1's nag_mom_update as Optimizer.update runs it (out=weight, so the kernel's second read of the
    weight sees the updated value): `g' = clip(rescale*grad)`, `m' = momentum*m - lr*(g' + wd*w)`,
    `w += momentum*m' - lr*(g' + wd*w)`, then `m = momentum*m - lr*(g' + wd*w_new)`. out_is_weight=False (the
    op writing another array): the weight is not changed under the kernel, so `m = m'`."""
    lr, wd, mo = _f32(lr), _f32(wd), _f32(momentum)
    tmp = xp.multiply(g, _f32(rescale), dtype=w.dtype)
    if _clip_on(clip):
        xp.clip(tmp, -_f32(clip), _f32(clip), out=tmp)
    if mom is None:
        if wd:
            w *= _f32(1) - lr * wd
        w -= lr * tmp
        return
    grad = tmp + wd * w if wd else tmp
    mom *= mo
    step = mom - lr * grad
    w += mo * step - lr * grad
    if wd and out_is_weight:
        mom -= lr * (tmp + wd * w)
    else:
        mom[...] = step


@register
class NAG(SGD):
    """Nesterov momentum, MXNet 1.9.1's update: with `g = clip(rescale_grad*grad) + wd*w`, `m' = momentum*m -
    lr*g`, `w += momentum*m' - lr*g`, and the stored momentum is `momentum*m - lr*(clip(rescale_grad*grad) +
    wd*w_new)` (MXNet's kernel reads the weight again after writing it; reproduced). Plain SGD without momentum."""

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(momentum=momentum, **kwargs)
        self.aggregate_num = 0

    def _lazy_rows(self, weight, grad):
        return None     # MXNet's nag_mom_update has no sparse kernel: a dense update

    def _step(self, index, w, g, state, lr, wd):
        _nag_kernel(_xp_of(w), w, g, None if state is None else state._data, lr, wd, self.rescale_grad,
                    self.clip_gradient, self.momentum)

    def _update_many(self, indices, weights, grads, states):
        return Optimizer._update_many(self, indices, weights, grads, states)


# ====================================================================== Adam family
def _adam_kernel(xp, w, g, m, v, lr, wd, rescale, clip, beta1, beta2, eps, decoupled_wd=None):
    """MXNet's adam_update (wd inside the gradient, before clipping); with `decoupled_wd=(eta, wd)` MXNet's
    contrib.adamw_update instead (`w -= eta*(lr*m/(sqrt(v)+eps) + wd*w)`, the gradient without wd)."""
    b1, b2 = _f32(beta1), _f32(beta2)
    tmp = xp.multiply(g, _f32(rescale), dtype=w.dtype)
    if decoupled_wd is None and wd:
        tmp += _f32(wd) * w
    if _clip_on(clip):
        xp.clip(tmp, -_f32(clip), _f32(clip), out=tmp)
    m *= b1
    m += (_f32(1) - b1) * tmp
    v *= b2
    tmp *= tmp
    tmp *= _f32(1) - b2
    v += tmp
    denom = xp.sqrt(v)
    denom += _f32(eps)
    if decoupled_wd is None:
        tmp = xp.multiply(m, _f32(lr), out=tmp)
        tmp /= denom
        w -= tmp
    else:
        eta, dwd = decoupled_wd
        tmp = xp.multiply(m, _f32(lr), out=tmp)
        tmp /= denom
        if dwd:
            tmp += _f32(dwd) * w
        tmp *= _f32(eta)
        w -= tmp


@register
class Adam(Optimizer):
    """Adam (MXNet's adam_update): `g = clip(rescale_grad*grad + wd*w)`, bias correction folded into the rate,
    `lr_t = lr*sqrt(1-beta2^t)/(1-beta1^t)`, `w -= lr_t*m/(sqrt(v)+epsilon)`."""
    _hparams = ("beta1", "beta2", "epsilon", "lazy_update")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update
        self.aggregate_num = 4

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _lazy_rows(self, weight, grad):
        # MXNet's adam_update: lazy for a row_sparse gradient unless lazy_update=False
        return _sparse_grad_rows(grad) if self.lazy_update else None

    def _coef(self, t):
        return math.sqrt(1. - self.beta2 ** t) / (1. - self.beta1 ** t)

    def _kernel(self, xp, w, g, m, v, lr, wd, t):
        _adam_kernel(xp, w, g, m, v, lr * self._coef(t), wd, self.rescale_grad, self.clip_gradient, self.beta1,
                     self.beta2, self.epsilon)

    def _chunk_kernel(self, lr, wd, t):
        return lambda xp, w, g, m, v: self._kernel(xp, w, g, m, v, lr, wd, t)

    def _step(self, index, w, g, state, lr, wd):
        t = self._index_update_count[index]
        self._kernel(_xp_of(w), w, g, state[0]._data, state[1]._data, lr, wd, t)

    def _update_many(self, indices, weights, grads, states):
        if len(indices) < 2 or any(self._mp(w) for w in weights):
            return super()._update_many(indices, weights, grads, states)
        counts = self._index_update_count
        groups = self._grouped(indices, weights, grads, states, extra_key=lambda i: counts[i])
        for positions, lr, wd in groups:
            ws = [weights[p] for p in positions]
            gs = [grads[p] for p in positions]
            ms = [states[p][0] for p in positions]
            vs = [states[p][1] for p in positions]
            t = counts[indices[positions[0]]]
            flats = self._flats(ws, gs, ms, vs) if len(positions) > 1 else None
            if flats is not None:
                _chunked(ws[0]._ctx.xp, self._chunk_kernel(lr, wd, t), flats)
            else:
                for p in positions:
                    self._kernel(_xp_of(weights[p]._data), weights[p]._data, grads[p]._data, states[p][0]._data,
                                 states[p][1]._data, lr, wd, t)
            _bump_versions(ws)


@register
class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), MXNet's `contrib.adamw_update` semantics with
    `eta` = the (scheduled) learning rate: `g = clip(rescale_grad*grad)` (no wd in the gradient),
    `w -= lr*(c_t*m/(sqrt(v)+epsilon) + wd*w)`, `c_t = sqrt(1-beta2^t)/(1-beta1^t)` (1 if `correct_bias=False`).
    Not registered in MXNet 1.9.1 (only the contrib op is); gluonnlp's AdamW is the same update."""
    _hparams = Adam._hparams + ("correct_bias",)

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, correct_bias=True, **kwargs):
        super().__init__(learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon, **kwargs)
        self.correct_bias = correct_bias

    def _kernel(self, xp, w, g, m, v, lr, wd, t):
        coef = self._coef(t) if self.correct_bias else 1.0
        _adam_kernel(xp, w, g, m, v, coef, wd, self.rescale_grad, self.clip_gradient, self.beta1, self.beta2,
                     self.epsilon, decoupled_wd=(lr, wd))


def _rescaled(xp, g, w, rescale, wd, clip, wd_first=True):
    """`clip(rescale*g + wd*w)` (wd_first) or `clip(rescale*g)` as a new buffer of w's dtype."""
    tmp = xp.multiply(g, _f32(rescale), dtype=w.dtype)
    if wd_first and wd:
        tmp += _f32(wd) * w
    if _clip_on(clip):
        xp.clip(tmp, -_f32(clip), _f32(clip), out=tmp)
    return tmp


@register
class Adamax(Optimizer):
    """AdaMax: `g = clip(rescale_grad*grad + wd*w)`, `m = beta1*m + (1-beta1)*g`, `u = max(beta2*u, |g|)`,
    `w -= lr/(1-beta1^t) * m/u`."""
    _hparams = ("beta1", "beta2")

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp_of(w)
        t = self._index_update_count[index]
        lr = lr / (1. - self.beta1 ** t)
        grad = _rescaled(xp, g, w, self.rescale_grad, wd, self.clip_gradient)
        m, u = state[0]._data, state[1]._data
        m *= _f32(self.beta1)
        m += _f32(1. - self.beta1) * grad
        xp.maximum(_f32(self.beta2) * u, xp.abs(grad), out=u)
        w -= _f32(lr) * m / u


@register
class Nadam(Optimizer):
    """Nesterov Adam with MXNet's momentum schedule (`schedule_decay`). The schedule product is kept per
    parameter (MXNet 1.9.1 keeps one for the whole optimizer, which is only right for a single parameter)."""
    _hparams = ("beta1", "beta2", "epsilon", "schedule_decay")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = {}

    def _extra_state(self):
        return {"m_schedule": [[k, v] for k, v in self.m_schedule.items()]}

    def _load_extra_state(self, extra):
        if not isinstance(extra or {}, dict):
            raise MXNetError(f"Nadam: 'extra' must be an object, got {extra!r:.80}")
        self.m_schedule = _pairs((extra or {}).get("m_schedule", []), "m_schedule", _number)

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp_of(w)
        t = self._index_update_count[index]
        grad = _rescaled(xp, g, w, self.rescale_grad, wd, self.clip_gradient)
        momentum_t = self.beta1 * (1. - 0.5 * (pow(0.96, t * self.schedule_decay)))
        momentum_t_1 = self.beta1 * (1. - 0.5 * (pow(0.96, (t + 1) * self.schedule_decay)))
        schedule = self.m_schedule.get(index, 1.) * momentum_t
        self.m_schedule[index] = schedule
        schedule_next = schedule * momentum_t_1
        m, v = state[0]._data, state[1]._data
        m *= _f32(self.beta1)
        m += _f32(1. - self.beta1) * grad
        v *= _f32(self.beta2)
        v += _f32(1. - self.beta2) * grad * grad
        grad_prime = grad / _f32(1. - schedule)
        m_prime = m / _f32(1. - schedule_next)
        v_prime = v / _f32(1. - pow(self.beta2, t))
        m_bar = _f32(1. - momentum_t) * grad_prime + _f32(momentum_t_1) * m_prime
        w -= _f32(lr) * m_bar / (xp.sqrt(v_prime) + _f32(self.epsilon))


@register
class AdaGrad(Optimizer):
    """AdaGrad: `g = clip(rescale_grad*grad)`, `h += g^2`, `w -= lr*(g/sqrt(h + eps) + wd*w)`."""
    _hparams = ("float_stable_eps",)

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return _zeros_like(weight)

    def _lazy_rows(self, weight, grad):
        return _sparse_grad_rows(grad)      # MXNet's sparse.adagrad_update for a row_sparse gradient

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp_of(w)
        grad = _rescaled(xp, g, w, self.rescale_grad, 0, self.clip_gradient, wd_first=False)
        h = state._data
        h += grad * grad
        div = grad / xp.sqrt(h + _f32(self.float_stable_eps))
        w += (div + w * _f32(wd)) * _f32(-lr)


@register
class AdaDelta(Optimizer):
    """AdaDelta (no learning rate, as in MXNet 1.x): `g = clip(rescale_grad*grad)`,
    `acc_g = rho*acc_g + (1-rho)*g^2`, `d = sqrt(acc_d + eps)/sqrt(acc_g + eps)*g`,
    `acc_d = rho*acc_d + (1-rho)*d^2`, `w -= d + wd*w`."""
    _hparams = ("rho", "epsilon")

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp_of(w)
        grad = _rescaled(xp, g, w, self.rescale_grad, 0, self.clip_gradient, wd_first=False)
        acc_g, acc_d = state[0]._data, state[1]._data
        rho, eps = _f32(self.rho), _f32(self.epsilon)
        acc_g *= rho
        acc_g += (_f32(1) - rho) * grad * grad
        delta = xp.sqrt(acc_d + eps) / xp.sqrt(acc_g + eps) * grad
        acc_d *= rho
        acc_d += (_f32(1) - rho) * delta * delta
        w -= delta + _f32(wd) * w


@register
class RMSProp(Optimizer):
    """RMSProp (Tieleman & Hinton) or, with `centered=True`, Graves' version (MXNet's rmsprop_update /
    rmspropalex_update): `g = clip(rescale_grad*grad + wd*w)`, `n = (1-gamma1)*g^2 + gamma1*n`;
    plain: `w -= lr*g/sqrt(n + epsilon)`; centered: `gm = (1-gamma1)*g + gamma1*gm`,
    `delta = gamma2*delta - lr*g/sqrt(n - gm^2 + epsilon)`, `w += delta`. `clip_weights` clips w afterwards."""
    _hparams = ("gamma1", "gamma2", "centered", "epsilon", "clip_weights")

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=False, clip_weights=None,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        if self.centered:
            return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))
        return (_zeros_like(weight),)

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp_of(w)
        grad = _rescaled(xp, g, w, self.rescale_grad, wd, self.clip_gradient)
        g1 = _f32(self.gamma1)
        n = state[0]._data
        n *= g1
        n += (_f32(1) - g1) * grad * grad
        if not self.centered:
            w -= _f32(lr) * grad / xp.sqrt(n + _f32(self.epsilon))
        else:
            gm, delta = state[1]._data, state[2]._data
            gm *= g1
            gm += (_f32(1) - g1) * grad
            delta *= _f32(self.gamma2)
            delta -= _f32(lr) * grad / xp.sqrt(n - gm * gm + _f32(self.epsilon))
            w += delta
        if _clip_on(self.clip_weights):
            xp.clip(w, -_f32(self.clip_weights), _f32(self.clip_weights), out=w)


@register
class Ftrl(Optimizer):
    """FTRL-proximal (MXNet's ftrl_update): `g = clip(rescale_grad*grad)`,
    `z += g - (sqrt(n + g^2) - sqrt(n))*w/lr`, `n += g^2`,
    `w = (sign(z)*lamda1 - z)/((beta + sqrt(n))/lr + wd) * (|z| > lamda1)`."""
    _hparams = ("lamda1", "beta")

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _lazy_rows(self, weight, grad):
        # MXNet's ftrl_update has a sparse kernel only for a row_sparse weight (and states) with a row_sparse
        # gradient; any other mix falls back to the dense update
        return _sparse_grad_rows(grad) if weight.stype == "row_sparse" else None

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp_of(w)
        grad = _rescaled(xp, g, w, self.rescale_grad, 0, self.clip_gradient, wd_first=False)
        z, n = state[0]._data, state[1]._data
        lr, l1 = _f32(lr), _f32(self.lamda1)
        z += grad - (xp.sqrt(n + grad * grad) - xp.sqrt(n)) * w / lr
        n += grad * grad
        w[...] = (xp.sign(z) * l1 - z) / ((_f32(self.beta) + xp.sqrt(n)) / lr + _f32(wd)) * (xp.abs(z) > l1)


@register
class FTML(Optimizer):
    """FTML (MXNet's ftml_update): `g = clip(rescale_grad*grad + wd*w)`, `v = beta2*v + (1-beta2)*g^2`,
    `d_t = (1-beta1^t)/lr*(sqrt(v/(1-beta2^t)) + eps)`, `z = beta1*z + (1-beta1)*g - (d_t - beta1*d_{t-1})*w`,
    `w = -z/d_t`."""
    _hparams = ("beta1", "beta2", "epsilon")

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp_of(w)
        t = self._index_update_count[index]
        grad = _rescaled(xp, g, w, self.rescale_grad, wd, self.clip_gradient)
        d, v, z = state[0]._data, state[1]._data, state[2]._data
        b1, b2 = _f32(self.beta1), _f32(self.beta2)
        v *= b2
        v += (_f32(1) - b2) * grad * grad
        # a numpy division: lr = 0 gives inf, as MXNet's kernel does, not Python's ZeroDivisionError
        d_t = _f32(np.float64(1. - self.beta1 ** t) / lr) * (xp.sqrt(v / _f32(1. - self.beta2 ** t)) +
                                                             _f32(self.epsilon))
        z *= b1
        z += (_f32(1) - b1) * grad - (d_t - b1 * d) * w
        d[...] = d_t
        w[...] = -z / d_t


@register
class Signum(Optimizer):
    """Signum / signSGD (MXNet's signum_update / signsgd_update). With momentum:
    `m = momentum*m - (1-momentum)*(clip(rescale_grad*grad) + wd*w)`, `w = (1 - lr*wd_lh)*w + lr*sign(m)`;
    with momentum 0 (MXNet's signsgd_update): `w = (1 - lr*(wd + wd_lh))*w - lr*sign(clip(rescale_grad*grad))`
    (MXNet 1.9.1 rejects wd_lh there)."""
    _hparams = ("momentum", "wd_lh")

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp_of(w)
        grad = _rescaled(xp, g, w, self.rescale_grad, 0, self.clip_gradient, wd_first=False)
        lr = _f32(lr)
        if state is not None:
            if wd:
                grad += _f32(wd) * w
            m = state._data
            mom = _f32(self.momentum)
            m *= mom
            m -= (_f32(1) - mom) * grad
            if self.wd_lh:
                w *= _f32(1) - lr * _f32(self.wd_lh)
            w += lr * xp.sign(m)
        else:
            # MXNet's signsgd_update: w = (1 - lr*wd)*w - lr*sign(clip(rescale*grad)); wd_lh adds to the decay
            decay = _f32(wd) + _f32(self.wd_lh)
            if decay:
                w *= _f32(1) - lr * decay
            w -= lr * xp.sign(grad)


@register
class SignSGD(Signum):
    """signSGD: Signum without momentum (`w = (1 - lr*wd)*w - lr*sign(clip(rescale_grad*grad))`)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, momentum=momentum, wd_lh=wd_lh, **kwargs)


def _norm32(xp, x):
    """||x||_2 in float32, as a dot product (no squared copy of x; LAMB computes it for every layer)."""
    flat = (x if x.dtype == np.float32 else x.astype(np.float32)).reshape(-1)
    return xp.sqrt(xp.dot(flat, flat))


@register
class LAMB(Optimizer):
    """LAMB (MXNet's lamb_update_phase1/phase2): `g = clip(rescale_grad*grad)`, Adam moments, with
    `bias_correction` `m/(1-beta1^t)`, `v/(1-beta2^t)`; `u = m/(sqrt(v)+eps) + wd*w`; `r1 = ||w||` (clamped to
    [lower_bound, upper_bound] when set), `r2 = ||u||`; `w -= lr * (r1/r2 if both > 0 else 1) * u`."""
    _hparams = ("beta1", "beta2", "epsilon", "lower_bound", "upper_bound", "bias_correction")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, lower_bound=None,
                 upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _step(self, index, w, g, state, lr, wd):
        xp = _xp_of(w)
        t = self._index_update_count[index]
        m, v = state[0]._data, state[1]._data
        # the element-wise work runs over cache-sized blocks (LAMB runs over whole models: one numpy pass per
        # operation over a multi-megabyte layer is memory-bound); only the direction `upd` is kept whole, for its
        # norm. Each element sees the same operations as on whole arrays, so the results are the same.
        upd = self._direction_numba(xp, w, g, m, v, t, wd)
        for bw, bg, bm, bv, part in ([] if upd is not None else _blocks(xp, w, g, m, v)):
            u = self._direction(xp, bw, bg, bm, bv, t, wd)
            if part is None:
                upd = u
            else:
                if upd is None:
                    upd = xp.empty(w.size, dtype=u.dtype)
                upd[part] = u
        upd = upd.reshape(w.shape)
        r1, r2 = _norm32(xp, w), _norm32(xp, upd)
        if self.lower_bound:
            r1 = xp.maximum(r1, _f32(self.lower_bound))
        if self.upper_bound:
            r1 = xp.minimum(r1, _f32(self.upper_bound))
        ratio = r1 / r2 if (float(r1) != 0.0 and float(r2) != 0.0) else _f32(1)
        step = (_f32(lr) * ratio).astype(w.dtype)
        for bw, bu, _ in _blocks(xp, w, upd):
            bw -= step * bu

    def _direction_numba(self, xp, w, g, m, v, t, wd):
        """_direction over whole contiguous float32/float64 buffers in one Numba pass (the same operations, so the
        same bits), or None where it does not apply."""
        arrays = (w, g, m, v)
        nk = _fastpath.numba_kernels(xp, *arrays)
        if nk is None or not all(a.flags.c_contiguous for a in arrays):
            return None
        d = w.dtype.type
        upd = np.empty_like(w)
        clip = _f32(self.clip_gradient) if _clip_on(self.clip_gradient) else _f32(0)
        b1, b2 = _f32(self.beta1), _f32(self.beta2)
        nk.lamb_direction(w.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1), upd.reshape(-1),
                          d(_f32(self.rescale_grad)), d(clip), _clip_on(self.clip_gradient), d(_f32(1) - b1), d(b1),
                          d(_f32(1) - b2), d(b2), d(_f32(1. - self.beta1 ** t)), d(_f32(1. - self.beta2 ** t)),
                          bool(self.bias_correction), d(_f32(self.epsilon)), bool(wd), d(_f32(wd)))
        return upd

    def _direction(self, xp, w, g, m, v, t, wd):
        """Updates the moments m, v in place and returns `m_hat/(sqrt(v_hat)+eps) + wd*w` (a new buffer)."""
        grad = _rescaled(xp, g, w, self.rescale_grad, 0, self.clip_gradient, wd_first=False)
        b1, b2 = _f32(self.beta1), _f32(self.beta2)
        # in place where the buffers allow: each temporary is one more pass
        m *= b1
        m += (_f32(1) - b1) * grad
        v *= b2
        grad *= grad                      # grad is _rescaled's fresh buffer
        grad *= _f32(1) - b2
        v += grad
        upd = xp.sqrt(v / _f32(1. - self.beta2 ** t)) if self.bias_correction else xp.sqrt(v)
        upd += _f32(self.epsilon)
        xp.divide(m / _f32(1. - self.beta1 ** t) if self.bias_correction else m, upd, out=upd)
        if wd:
            upd += _f32(wd) * w
        return upd


def _blocks(xp, *arrays):
    """(block of each array..., slice) over FLAT_CHUNK-element blocks of equal-shaped C-contiguous numpy arrays,
    else one (whole arrays..., None)."""
    n = arrays[0].size
    if xp is not np or n <= FLAT_CHUNK or not all(a.flags.c_contiguous for a in arrays):
        return [(*arrays, None)]
    flats = [a.reshape(-1) for a in arrays]
    return [(*[f[start:start + FLAT_CHUNK] for f in flats], slice(start, start + FLAT_CHUNK))
            for start in range(0, n, FLAT_CHUNK)]


@register
class LARS(_MomentumState, Optimizer):
    """LARS (MXNet's multi_lars + sgd(_mom)_update): per layer `lr *= eta*||w||/(||g||*rescale_grad + wd*||w|| +
    eps)` when both norms are > 0, except parameters whose name (param_idx2name) ends in gamma, beta or bias; then
    SGD with momentum (momentum scaled by lr_now/lr_before when `momentum_correction`)."""
    _hparams = ("momentum", "lazy_update", "eta", "eps", "momentum_correction", "last_lr", "cur_lr")

    def __init__(self, momentum=0.0, lazy_update=True, eta=0.001, eps=0, momentum_correction=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.eta = eta
        self.eps = eps
        self.last_lr = None
        self.cur_lr = None

    def set_wd_mult(self, args_wd_mult):
        self.wd_mult = {}
        for name in self.idx2name.values():
            if not name.endswith("_weight"):
                self.wd_mult[name] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = _sym_mult(name, "__wd_mult__", attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _get_lrs(self, indices):
        if self.cur_lr is not None:
            self.last_lr = self.cur_lr
        lr = self._base_lr()
        if self.cur_lr is None:
            self.last_lr = lr
        self.cur_lr = lr
        return super()._get_lrs(indices)


    def _momentum(self):
        if self.momentum > 0 and self.momentum_correction and self.last_lr:
            return self.momentum * (self.cur_lr / self.last_lr)
        return self.momentum

    def _lars_lr(self, index, w, g, lr, wd):
        name = self.idx2name.get(index, str(index))
        if name.endswith("gamma") or name.endswith("beta") or name.endswith("bias"):
            return lr
        xp = _xp_of(w)
        w_norm = float(xp.sqrt(xp.sum(w.astype(np.float32) ** 2)))
        g_norm = float(xp.sqrt(xp.sum(g.astype(np.float32) ** 2))) * self.rescale_grad
        if w_norm > 0.0 and g_norm > 0.0:
            return float(_f32(lr) * _f32(self.eta * w_norm / (g_norm + wd * w_norm + self.eps)))
        return lr

    def _step(self, index, w, g, state, lr, wd):
        lr = self._lars_lr(index, w, g, lr, wd)
        _sgd_kernel(_xp_of(w), w, g, None if state is None else state._data, lr, wd, self.rescale_grad,
                    self.clip_gradient, self._momentum())


@register
class LBSGD(Optimizer):
    """Large-batch SGD (MXNet 1.9.1): gradients of `batch_scale` consecutive updates of a parameter are summed and
    every `batch_scale`-th update applies their mean with SGD (momentum, wd, clipping as SGD) at `lr * mult`;
    the updates in between leave the weight as it is. `mult` warms up over `warmup_epochs * updates_per_epoch`
    macro-updates from 1 to `batch_scale`: 'linear' `1 + (s-1)*n/N`, 'power2' `1 + (s-1)*(n/N)^2`, 'sqrt'
    `1 + (s-1)*sqrt(n/N)`, where n counts updates from `begin_epoch * updates_per_epoch`; 'lars' uses the layer's
    `sqrt(|w|^2 / (|g|^2 + wd*|w|^2 + 1e-18))` clipped to [0.01, 100] instead.

    Differences from MXNet 1.9.1: the first gradient of a macro-batch is copied (MXNet keeps a reference to the
    gradient buffer, which the next backward overwrites); an unknown warmup_strategy is an error (MXNet then
    uses mult 1); save_states keeps the update counts but not a half-summed macro-batch."""
    _hparams = ("momentum", "warmup_strategy", "warmup_epochs", "batch_scale", "updates_per_epoch",
                "init_updates", "num_epochs")
    _STRATEGIES = ("linear", "power2", "sqrt", "lars")

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy="linear", warmup_epochs=5,
                 batch_scale=1, updates_per_epoch=32, begin_epoch=0, num_epochs=60, **kwargs):
        super().__init__(multi_precision=multi_precision, **kwargs)
        if warmup_strategy not in self._STRATEGIES:
            raise MXNetError(f"LBSGD: warmup_strategy must be one of {list(self._STRATEGIES)}, got "
                             f"{warmup_strategy!r}")
        if not isinstance(batch_scale, int) or batch_scale < 1:
            raise MXNetError(f"LBSGD: batch_scale must be a positive integer, got {batch_scale!r}")
        self.momentum = momentum
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.cumgrads = {}       # index -> {"cum_grad": summed gradient buffer or None, "num_cums": count}

    def create_state(self, index, weight):
        return _zeros_like(weight) if self.momentum != 0.0 else None

    def _extra_state(self):
        return {"num_cums": [[k, c["num_cums"]] for k, c in self.cumgrads.items()]}

    def _load_extra_state(self, extra):
        if not isinstance(extra or {}, dict):
            raise MXNetError(f"LBSGD: 'extra' must be an object, got {extra!r:.80}")
        counts = _pairs((extra or {}).get("num_cums", []), "num_cums", _count)
        self.cumgrads = {k: {"cum_grad": None, "num_cums": n} for k, n in counts.items()}

    def _get_lbmult(self, nup):
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        if self.warmup_strategy == "linear":
            return 1.0 + (maxmult - 1) * nup / nwup
        if self.warmup_strategy == "power2":
            return 1.0 + (maxmult - 1) * (nup * nup) / (nwup * nwup)
        if self.warmup_strategy == "sqrt":
            return 1.0 + (maxmult - 1) * math.sqrt(float(nup) / nwup)
        return 1.0

    @staticmethod
    def _get_lars(xp, w, g, wd):
        # float32 sums of squares, then float64 arithmetic (NumPy 1.x promotion, as MXNet 1.9.1 computes it)
        weight2 = float(xp.sum(w * w))
        grad2 = float(xp.sum(g * g))
        return min(max(math.sqrt(weight2 / (grad2 + wd * weight2 + 1e-18)), 0.01), 100.0)

    def _cumulate(self, index, g):
        entry = self.cumgrads.get(index)
        if entry and entry["num_cums"] > 0:     # None: the macro-batch starts afresh after an update
            entry["cum_grad"] = g.copy() if entry["cum_grad"] is None else entry["cum_grad"] + g
            entry["num_cums"] += 1
        else:
            entry = self.cumgrads[index] = {"cum_grad": g.copy(), "num_cums": self.init_updates + 1}
        return entry

    def update(self, index, weight, grad, state):
        lr = self._get_lr(index)            # MXNet's LBSGD reads lr before counting the update
        wd = self._get_wd(index)
        self._update_count(index)
        w, xp = weight._data, _xp_of(weight._data)
        entry = self._cumulate(index, grad._data)
        if entry["num_cums"] % self.batch_scale == 0:
            g = entry["cum_grad"] / w.dtype.type(self.batch_scale)
            if self.warmup_strategy == "lars":
                lr = lr * self._get_lars(xp, w, g, wd)
            else:
                lr = lr * self._get_lbmult(entry["num_cums"])
            _sgd_kernel(xp, w, g, None if state is None else state._data, lr, wd, self.rescale_grad,
                        self.clip_gradient, self.momentum if self.momentum > 0 else 0.0)
            entry["cum_grad"] = None
        else:       # MXNet runs sgd_update with lr 0: the weight stays (NaN/inf gradients still spread)
            _sgd_kernel(xp, w, grad._data, None, 0.0, wd, 1.0, None, 0.0)
        weight._bump_version()


@register
class Test(Optimizer):
    """MXNet's test optimizer: `w += rescale_grad*grad` (state: zeros)."""

    def create_state(self, index, weight):
        return _zeros_like(weight)

    def _step(self, index, w, g, state, lr, wd):
        w += _f32(self.rescale_grad) * g
        state._data[...] = w


# ====================================================================== Updater
class Updater:
    """`updater(index, grad, weight)` (or lists of each): creates states on first sight, then updates. Lists go
    to the optimizer's multi-tensor path. `states` maps index -> state."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        self.unchecked = set()       # loaded states not yet compared with their weight (see set_states)
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index, grad, weight):
        if not isinstance(index, (list, tuple)):
            indices, grads, weights = [index], [grad], [weight]
        else:
            indices, grads, weights = list(index), list(grad), list(weight)
        if not indices:
            return
        synced = self.states_synced
        for i, w in ([] if all(map(synced.get, indices)) else zip(indices, weights)):   # every step: all synced
            if synced.get(i):
                continue
            if i not in self.states:
                self.states[i] = self.optimizer.create_state_multi_precision(i, w)
                self.states_synced[i] = True
            elif not self.states_synced[i]:          # loaded by set_states: first use
                problem = _misfit(self.optimizer, i, w, self.states[i]) if i in self.unchecked else None
                if problem:
                    raise MXNetError(f"the optimizer state loaded for parameter {i!r:.80} does not fit it: {problem}")
                self.unchecked.discard(i)
                self.states[i] = self.sync_state_context(self.states[i], w.context)
                self.states_synced[i] = True
        optimizer = self.optimizer
        optimizer._set_current_context(weights[0]._ctx)
        states = list(map(self.states.__getitem__, indices))
        lazy = []                    # every step: dense gradients only, found in one C pass
        if not all(map(operator.is_, map(type, grads), repeat(NDArray, len(grads)))):
            for p, g in enumerate(grads):
                if type(g) is not NDArray and optimizer._lazy_rows(weights[p], g) is not None:
                    lazy.append(p)
        if len(indices) == 1 or len(lazy) == len(indices):
            for p in range(len(indices)):
                self.optimizer.update_multi_precision(indices[p], weights[p], grads[p], states[p])
            return
        for p in lazy:      # lazy (row_sparse) updates one by one; the multi-tensor path is dense
            self.optimizer.update_multi_precision(indices[p], weights[p], grads[p], states[p])
        if not lazy:                 # every step of a dense model
            optimizer._update_many(indices, weights, grads, states)
            return
        dense = [p for p in range(len(indices)) if p not in set(lazy)]
        optimizer._update_many(*([seq[p] for p in dense] for seq in (indices, weights, grads, states)))

    def sync_state_context(self, state, context):
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    # ------------------------------------------------------------------ states <-> bytes (no pickle)
    def get_states(self, dump_optimizer=False):
        """The states as bytes: MXNet's NDArray-list format (`nd.load`-able) holding every state array, plus one
        uint8 array named `__mixnet_states__` with a JSON document (the states' structure and, with
        `dump_optimizer`, the optimizer's class, hyper-parameters, update counts and lr_scheduler state)."""
        arrays, names = [], []
        layout = []
        for index, state in self.states.items():
            layout.append([_encode_key(index), _encode_state(state, f"s{len(layout)}", arrays, names)])
        doc = {"format": "mixnet-optimizer-states", "version": 1, "states": layout}
        if dump_optimizer:
            doc["optimizer"] = {"class": type(self.optimizer).__name__,
                                "hyperparams": self.optimizer._hyperparams()}
        blob = np.frombuffer(json.dumps(doc, allow_nan=True).encode("utf-8"), dtype=np.uint8).copy()
        arrays.append(blob)
        names.append(STATES_JSON_KEY)
        version = 3 if any(a.ndim == 0 for a in arrays) else 2
        return serialization.encode(arrays, names, version=version)

    def set_states(self, states, source=None, weights=None, names=None):
        """Restores from get_states bytes. MXNet's pickled states are refused (unpickling runs arbitrary code).

        The bytes may come from any file, so all of it is checked before anything changes: the format, every
        value, and with `weights` ({index: weight NDArray}, as Trainer and KVStore pass) that each state has the
        structure, shapes and dtypes the (restored) optimizer makes for that weight. `names` ({index: name}) lists
        every parameter, initialized or not (default: the indices of `weights`); a state for a parameter not
        initialized yet is checked when first used. A corrupt, truncated or mismatched file raises MXNetError
        naming `source` (the file) and what does not fit, and leaves the updater and its optimizer as they were."""
        try:
            optimizer, loaded = self._read_states(states, weights, names or {})
        except MXNetError as err:
            raise MXNetError(f"cannot load optimizer states{f' from {source}' if source else ''}: {err}") from None
        if type(optimizer) is type(self.optimizer) and optimizer is not self.optimizer:
            # The same class: the optimizer (and its lr_scheduler) keep their identity and take the checked copy's
            # values, so every reference to them (the Trainer's, the user's) sees the restored settings.
            sched = self.optimizer.lr_scheduler
            vars(self.optimizer).update(vars(optimizer))
            if sched is not None:
                vars(sched).update(vars(optimizer.lr_scheduler))
                self.optimizer.lr_scheduler = sched
        else:
            self.optimizer = optimizer
        self.states = loaded
        self.states_synced = dict.fromkeys(loaded, False)
        self.unchecked = set(loaded) - set(weights or ())

    def _read_states(self, data, weights, names):
        """(optimizer, {index: state}) from get_states bytes, every part checked; changes nothing. The optimizer
        is this updater's, a checked copy of it with the saved settings, or a new one of the saved class."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise MXNetError(f"expected the bytes of a states file, got {type(data).__name__}")
        data = bytes(data)
        if data[:1] == b"\x80":
            raise MXNetError("This optimizer-state file is a Python pickle (MXNet's Trainer.save_states format). "
                             "mixnet never unpickles (it can run arbitrary code); re-save the states with mixnet.")
        arrays, array_names = serialization.decode(data)
        if array_names is None or STATES_JSON_KEY not in array_names:
            raise MXNetError("not a mixnet optimizer-state file (no __mixnet_states__ entry)")
        by_name = dict(zip(array_names, arrays))
        blob = by_name.pop(STATES_JSON_KEY)
        if blob.dtype != np.uint8 or blob.ndim != 1:
            raise MXNetError(f"the __mixnet_states__ entry must be uint8 text, got {blob.dtype} {blob.shape}")
        try:
            doc = json.loads(blob.tobytes().decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as err:
            raise MXNetError(f"the __mixnet_states__ entry is not a JSON document ({type(err).__name__})") from None
        if not isinstance(doc, dict) or doc.get("format") != "mixnet-optimizer-states":
            found = doc.get("format") if isinstance(doc, dict) else doc
            raise MXNetError(f"unknown optimizer-state format {found!r:.80}")
        if doc.get("version") != 1:
            raise MXNetError(f"unsupported optimizer-state version {doc.get('version')!r:.80} (this mixnet reads 1)")
        optimizer = self._saved_optimizer(doc["optimizer"]) if "optimizer" in doc else self.optimizer
        layout = doc.get("states")
        if not isinstance(layout, list) or not all(isinstance(p, list) and len(p) == 2 for p in layout):
            raise MXNetError("'states' must be a list of [parameter index, state] pairs")
        loaded = {}
        for key, spec in layout:
            index = _decode_key(key)
            if index in loaded:
                raise MXNetError(f"two states for parameter {index!r:.80}")
            loaded[index] = _decode_state(spec, by_name, _MAX_STATE_DEPTH)
        if weights is not None:
            known = names or weights
            for index, state in loaded.items():
                label = f"parameter {index!r:.80}" + (f" ({names[index]!r})" if index in names else "")
                if index not in known:
                    raise MXNetError(f"it holds a state for {label}, which is not among the {len(known)} "
                                     "parameters it is loaded for")
                if index not in weights:        # not initialized yet: checked when first used (__call__)
                    continue
                problem = _misfit(optimizer, index, weights[index], state)
                if problem:
                    raise MXNetError(f"the state of {label} does not fit {type(optimizer).__name__}'s for its "
                                     f"weight {tuple(weights[index].shape)} {np.dtype(weights[index].dtype).name}: "
                                     f"{problem}")
        return optimizer, loaded

    def _saved_optimizer(self, saved):
        """A copy of this updater's optimizer (or a new one of the saved class) with the saved settings."""
        if not isinstance(saved, dict) or not isinstance(saved.get("class"), str):
            raise MXNetError(f"'optimizer' must be an object with 'class' and 'hyperparams', got {saved!r:.80}")
        if type(self.optimizer).__name__ == saved["class"]:
            optimizer = copy.copy(self.optimizer)
            if optimizer.lr_scheduler is not None:
                optimizer.lr_scheduler = copy.copy(optimizer.lr_scheduler)
        else:
            klass = Optimizer.opt_registry.get(saved["class"].lower())
            if klass is None:
                raise MXNetError(f"the states were saved with optimizer {saved['class']!r:.80}, which is not "
                                 "registered")
            try:
                optimizer = klass()
            except TypeError as err:
                raise MXNetError(f"the states were saved with optimizer {saved['class']!r}, which cannot be made "
                                 f"without arguments ({err})") from None
        optimizer._set_hyperparams(saved.get("hyperparams", {}))
        if optimizer.lr_scheduler is not None:       # a restored schedule must still give learning rates
            for step in (optimizer.num_update, optimizer.num_update + 1):
                try:
                    lr = float(copy.copy(optimizer.lr_scheduler)(step))
                except (ArithmeticError, ValueError, TypeError, AssertionError, IndexError) as err:
                    raise MXNetError(f"the restored lr_scheduler fails at update {step}: {type(err).__name__}: "
                                     f"{err}") from None
                if not math.isfinite(lr):
                    raise MXNetError(f"the restored lr_scheduler gives the learning rate {lr} at update {step}")
        return optimizer


STATES_JSON_KEY = "__mixnet_states__"
_MAX_STATE_DEPTH = 8          # a multi-precision state nests 3 levels: (master weight, (mean, var))


def _encode_key(index):
    return ["t", list(index)] if isinstance(index, tuple) else index


def _decode_key(key):
    if isinstance(key, list) and len(key) == 2 and key[0] == "t" and isinstance(key[1], list) and all(
            _state_key(k) and not isinstance(k, list) for k in key[1]):
        return tuple(key[1])
    if isinstance(key, str) or (isinstance(key, int) and not isinstance(key, bool)):
        return key
    raise MXNetError(f"bad parameter index {key!r:.80} (an int, a str or [\"t\", [...]])")


def _encode_state(state, prefix, arrays, names):
    if state is None:
        return None
    if isinstance(state, NDArray):
        names.append(prefix)
        arrays.append(state.asnumpy())
        return {"nd": prefix, "ctx": str(state.context)}
    if isinstance(state, (tuple, list)):
        return {"tuple" if isinstance(state, tuple) else "list":
                [_encode_state(s, f"{prefix}_{k}", arrays, names) for k, s in enumerate(state)]}
    if isinstance(state, (int, float, str, bool)):
        return {"value": state}
    raise MXNetError(f"Cannot save optimizer state of type {type(state).__name__} (only NDArrays, tuples, lists "
                     "and numbers)")


def _describe(state):
    if state is None:
        return "no state"
    if isinstance(state, NDArray):
        return f"an array {tuple(state.shape)} {np.dtype(state.dtype).name}"
    if isinstance(state, (tuple, list)):
        return f"a {type(state).__name__} of {len(state)}"
    return f"the value {state!r:.40}"


def _misfit(optimizer, index, weight, state):
    """Why `state` is not what `optimizer` makes for `weight` (structure, shapes, dtypes), or None if it fits."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # create_state's float16 advice is not for this check
        expected = optimizer.create_state_multi_precision(index, weight)

    def compare(want, got, where):
        if isinstance(want, NDArray) and isinstance(got, NDArray):
            same = tuple(want.shape) == tuple(got.shape) and np.dtype(want.dtype) == np.dtype(got.dtype)
        elif isinstance(want, (tuple, list)) and type(got) is type(want) and len(got) == len(want):
            return next((p for p in (compare(w, g, f"{where}[{k}]") for k, (w, g) in enumerate(zip(want, got)))
                         if p), None)
        else:
            same = (want is None and got is None) or (
                not isinstance(want, (NDArray, tuple, list, type(None))) and type(want) is type(got))
        return None if same else f"{f'state{where}: ' if where else ''}expected {_describe(want)}, found {_describe(got)}"
    return compare(expected, state, "")


def _decode_state(spec, by_name, depth):
    """A state from its saved description (None, {"nd": array name}, {"tuple"/"list": [...]}, {"value": x})."""
    if spec is None:
        return None
    if not isinstance(spec, dict) or len(spec.keys() & {"nd", "tuple", "list", "value"}) != 1:
        raise MXNetError(f"bad state description {spec!r:.80}")
    if "nd" in spec:
        data = by_name.get(spec["nd"]) if isinstance(spec["nd"], str) else None
        if data is None:
            raise MXNetError(f"state array {spec['nd']!r:.80} is not in the file")
        return array(data, dtype=data.dtype)
    if "value" in spec:
        value = spec["value"]
        if not (isinstance(value, (str, bool)) or _number(value)):
            raise MXNetError(f"bad state value {value!r:.80}")
        return value
    kind = "tuple" if "tuple" in spec else "list"
    if not isinstance(spec[kind], list) or depth <= 0:
        raise MXNetError(f"bad or too deeply nested state {kind} {spec[kind]!r:.80}")
    items = [_decode_state(s, by_name, depth - 1) for s in spec[kind]]
    return tuple(items) if kind == "tuple" else items


def write_atomic(fname, data):
    """Writes a states file's bytes to fname atomically and durably (mixnet/_atomic.py)."""
    _atomic.write_atomic(fname, data, durable=True)


def get_updater(optimizer):
    """An Updater for `optimizer` (what KVStore.set_optimizer and gluon.Trainer use)."""
    return Updater(optimizer)
