"""Gluon parameters: `Parameter`, `Constant`, `ParameterDict`, with MXNet 1.x names and deferred initialization.

Unknown dimensions are 0 until the first forward fills them in. Gradient buffers are allocated lazily (at the
first backward or `grad()` call), so inference never pays for them.
"""
import re
from collections import OrderedDict

import numpy as np

from .._source import warn
from .. import autograd
from .. import initializer as init_module
from ..base import MXNetError, dtype_np
from ..context import Context, current_context
from ..ndarray import ndarray as nd_module
from ..ndarray import load as nd_load, save as nd_save, sparse
from ..ndarray.ndarray import NDArray
from . import _block_display
from .cached_graph import TRACING
from .. import symbol

__all__ = ["DeferredInitializationError", "Parameter", "Constant", "ParameterDict"]

_STYPES = ("default", "row_sparse", "csr")


class DeferredInitializationError(MXNetError):
    """A parameter was used before its shape was known (its initialization is deferred to the first forward)."""


def _shape_known(shape):
    return shape is not None and all(d > 0 for d in shape)


def _ctx_list(ctx):
    if ctx is None:
        return [current_context()]
    if isinstance(ctx, Context):
        return [ctx]
    return list(ctx)


class Parameter:
    """A weight of a Block: its data on one or more devices, its gradient, and how to initialize and update it."""

    def __init__(self, name, grad_req="write", shape=None, dtype=np.float32, lr_mult=1.0, wd_mult=1.0, init=None,
                 allow_deferred_init=False, differentiable=True, stype="default", grad_stype="default"):
        self.name = name
        self._shape = None if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
        self.dtype = dtype_np(dtype).type
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.init = init
        self.allow_deferred_init = allow_deferred_init
        self._differentiable = differentiable
        # MXNet checks these with assert: an AssertionError is what its users' code catches
        if grad_stype not in _STYPES:
            raise AssertionError(f"grad_stype for Parameter {name!r} must be one of 'default', 'row_sparse', or "
                                 f"'csr', but got {grad_stype!r}")
        if stype not in _STYPES:
            raise AssertionError(f"stype for Parameter {name!r} must be one of 'default', 'row_sparse', or 'csr', "
                                 f"but got {stype!r}")
        self._stype, self._grad_stype = stype, grad_stype
        self._trainer = None           # the Trainer a sparse parameter pulls its rows from
        self._grad_req = grad_req if differentiable else "null"
        self._check_req(self._grad_req)
        self._data = None              # list of NDArrays, one per context
        self._deferred_init = None     # (init, ctx_list, default_init, data) while the shape is unknown
        self._var, self._var_key = None, None      # the cached symbol variable (see var())
        self.attributes = {}

    def __repr__(self):
        return f"Parameter {self.name} (shape={self._shape}, dtype={np.dtype(self.dtype).name})"

    def _repr_html_(self):
        """Jupyter's view: name, shape ('?' for dimensions deferred to the first call), dtype, grad_req, whether
        (and where) it is initialized, storage type."""
        return _block_display.parameter_html(self)

    @staticmethod
    def _check_req(req):
        if req not in ("write", "add", "null"):
            raise MXNetError(f"grad_req must be one of 'write', 'add', 'null', got {req!r}")

    # ------------------------------------------------------------------ shape with 0 = unknown
    @property
    def shape(self):
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = tuple(new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        if len(self._shape) != len(new_shape) or any(
                old != 0 and new != 0 and old != new for old, new in zip(self._shape, new_shape)):
            raise MXNetError(f"Parameter {self.name!r}: expected shape {new_shape} is incompatible with its given "
                             f"shape {self._shape}")
        self._shape = tuple(new if old == 0 else old for old, new in zip(self._shape, new_shape))

    # ------------------------------------------------------------------ grad_req
    @property
    def grad_req(self):
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        self._check_req(req)
        if not self._differentiable:
            req = "null"
        self._grad_req = req
        if self._data is not None:
            for arr in self._data:
                self._mark(arr)

    def _mark(self, arr):
        """Makes arr a leaf whose gradient backward writes (lazily allocated, except a sparse one: allocated
        now in its storage type), or detaches it for 'null'."""
        if self._grad_req == "null":
            arr._node, arr._grad, arr._grad_req = None, None, "null"
        else:
            if self._grad_stype != "default" and arr._grad is None:
                arr._grad = self._new_grad(arr)
            autograd.mark_variables([arr], [arr._grad], self._grad_req)

    def _new_grad(self, arr):
        if self._grad_stype == "default":
            return nd_module.zeros_like_array(arr)
        return sparse.zeros(self._grad_stype, arr.shape, ctx=arr.context, dtype=arr.dtype)

    def __getstate__(self):
        # pickled (and deep-copied) with its values, not its Trainer nor its cached symbol variable; gradients
        # are allocated again by the next backward
        state = dict(self.__dict__)
        state["_trainer"], state["_var"], state["_var_key"] = None, None, None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        for arr in self._data or ():
            self._mark(arr)          # an unpickled NDArray is plain data: make it this parameter's leaf again

    def _set_trainer(self, trainer):
        """The Trainer of this parameter (a sparse parameter's rows live in its KVStore: only one Trainer)."""
        if self._stype != "default" and self._trainer is not None and trainer is not None \
                and self._trainer is not trainer:
            raise RuntimeError(f"Failed to set the trainer for Parameter {self.name!r} because it was already set. "
                               f"More than one trainers for a {self._stype} Parameter is not supported.")
        self._trainer = trainer

    # ------------------------------------------------------------------ initialization
    def initialize(self, init=None, ctx=None, default_init=init_module.Uniform(), force_reinit=False):
        """Allocates and initializes the data on ctx (a Context or list). Precedence of initializers: `init`
        given here, then the parameter's own `init`, then `default_init` (the Block-level argument)."""
        if self._data is not None and not force_reinit:
            warn(f"Parameter {self.name!r} is already initialized, ignoring. Set force_reinit=True to "
                 "re-initialize.")
            return
        self._data = None
        ctx_list = _ctx_list(ctx)
        if init is None:
            init = self.init if self.init is not None else default_init
        if not _shape_known(self._shape):
            if self.allow_deferred_init:
                self._deferred_init = (init, ctx_list, default_init, None)
                return
            raise MXNetError(f"Cannot initialize Parameter {self.name!r} because it has invalid shape "
                             f"{self._shape}. Give the layer its input size (e.g. in_units) or let it infer "
                             "the shape at the first forward.")
        self._deferred_init = (init, ctx_list, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self):
        if self._deferred_init is None:
            return
        init, ctx_list, default_init, data = self._deferred_init
        if not _shape_known(self._shape):
            raise DeferredInitializationError(
                f"Parameter {self.name!r} has not been initialized yet because initialization was deferred and "
                f"its shape {self._shape} is still unknown; run a forward pass first")
        self._deferred_init = None
        with autograd.pause():
            if data is None:
                data = nd_module.zeros_like_array(nd_module.empty(self._shape, ctx=ctx_list[0], dtype=self.dtype))
                chosen = init_module.create(init if init is not None else default_init)
                desc = init_module.InitDesc(self.name, {"__init__": chosen})
                init_module.create(default_init)(desc, data)
            elif tuple(data.shape) != tuple(self._shape):
                raise MXNetError(f"Parameter {self.name!r}: data of shape {data.shape} does not match {self._shape}")
            if data.stype != self._stype:
                data = data.tostype("default").tostype(self._stype)
            self._init_impl(data, ctx_list)

    def _init_impl(self, data, ctx_list):
        self._data = []
        for ctx in ctx_list:
            arr = data.copyto(ctx) if data.context != ctx or len(ctx_list) > 1 else data
            if arr.dtype is not self.dtype:
                arr = arr.astype(self.dtype)
            self._mark(arr)
            self._data.append(arr)

    # ------------------------------------------------------------------ access
    def _check_initialized(self):
        if self._data is not None:
            return
        if self._deferred_init is not None:
            raise DeferredInitializationError(
                f"Parameter {self.name!r} has not been initialized yet because initialization was deferred. "
                "Actual initialization happens during the first forward pass. Please pass one batch of data "
                "through the network before accessing Parameters.")
        raise MXNetError(f"Parameter {self.name!r} has not been initialized. Note that you should initialize "
                         "parameters and create Trainer with Block.collect_params() instead of Block.params "
                         "because the later does not include Parameters of nested child Blocks")

    def _select(self, arrays, ctx):
        if ctx is None:
            if len(arrays) == 1:
                return arrays[0]
            ctx = current_context()
        for arr in arrays:
            if arr.context == ctx:
                return arr
        raise MXNetError(f"Parameter {self.name!r} was not initialized on context {ctx}; it was only initialized "
                         f"on {self.list_ctx()}")

    def _check_dense(self, what, ctx=None):
        if self._stype != "default":
            where = f" on ctx {ctx}" if ctx is not None else ""
            raise RuntimeError(f"Cannot return a copy of Parameter {self.name!r}{where} via {what}() because its "
                               f"storage type is {self._stype}. Please use row_sparse_data() instead.")

    def data(self, ctx=None):
        """The value on ctx; while hybridize() traces a 2.0-style forward, the parameter's symbol variable.
        A sparse parameter has no data(): its rows come from row_sparse_data()."""
        self._check_dense("data", ctx)
        if TRACING.get():
            return self.var()
        self._check_initialized()
        return self._select(self._data, ctx)

    def list_data(self):
        self._check_dense("list_data")
        self._check_initialized()
        return list(self._data)

    def _all_data(self):
        """The per-device arrays whatever the storage type (what Trainer and KVStore work on)."""
        self._check_initialized()
        return list(self._data)

    def row_sparse_data(self, row_id):
        """A row_sparse parameter's copy on row_id's context holding the rows `row_id` (pulled from the
        Trainer's KVStore, which keeps the whole weight)."""
        if self._stype != "row_sparse":
            raise RuntimeError(f"Cannot return a copy of Parameter {self.name} via row_sparse_data() because its "
                               f"storage type is {self._stype}. Please use data() instead.")
        return self._get_row_sparse(row_id, row_id.context)

    def list_row_sparse_data(self, row_id):
        """As row_sparse_data, on every context (in list_ctx() order)."""
        if self._stype != "row_sparse":
            raise RuntimeError(f"Cannot return copies of Parameter {self.name!r} on all contexts via "
                               f"list_row_sparse_data() because its storage type is {self._stype}. Please use "
                               "data() instead.")
        return self._get_row_sparse(row_id, None)

    def _get_row_sparse(self, row_id, ctx):
        if not isinstance(row_id, NDArray):
            raise TypeError(f"row_id must have NDArray type, but {type(row_id)} is given")
        if self._trainer is None:
            raise RuntimeError(f"Cannot get row_sparse data for Parameter {self.name!r} when no Trainer is created "
                               "with it.")
        self._check_initialized()
        results = list(self._data) if ctx is None else self._select(self._data, ctx)
        self._trainer._row_sparse_pull(self, results, row_id)
        return results

    def _reduce(self):
        """The value to save: a dense parameter's first copy; a sparse one's whole weight (from the Trainer's
        KVStore when there is one)."""
        if self._stype == "default":
            return self.data(self.list_ctx()[0])
        if self._trainer is None:
            return self._all_data()[0]
        out = sparse.zeros(self._stype, self.shape, ctx=self.list_ctx()[0], dtype=self.dtype)
        self._trainer._row_sparse_pull(self, out, nd_module.array(np.arange(self.shape[0]), dtype="int64"),
                                       full_idx=True)
        return out

    def _grad_of(self, arr):
        if arr._grad is None:
            arr._grad = self._new_grad(arr)
        return arr._grad

    def grad(self, ctx=None):
        self._check_initialized()
        if self._grad_req == "null":
            raise MXNetError(f"Cannot get gradient array for Parameter {self.name!r} because grad_req='null'")
        return self._grad_of(self._select(self._data, ctx))

    def list_grad(self):
        self._check_initialized()
        if self._grad_req == "null":
            raise MXNetError(f"Cannot get gradient array for Parameter {self.name!r} because grad_req='null'")
        return [self._grad_of(arr) for arr in self._data]

    @property
    def _grad(self):
        """MXNet 1.x's `_grad`, which user code reads: the gradient buffers (one per device, allocated now if
        need be), or None before initialization and with grad_req 'null'."""
        if self._data is None or self._grad_req == "null":
            return None
        return [self._grad_of(arr) for arr in self._data]

    def list_ctx(self):
        if self._data is None:
            if self._deferred_init is not None:
                return list(self._deferred_init[1])
            raise MXNetError(f"Parameter {self.name!r} has not been initialized")
        return [arr.context for arr in self._data]

    def set_data(self, data):
        """Replaces the value on every device (a deferred parameter takes the shape of `data`)."""
        if not isinstance(data, NDArray):
            data = nd_module.array(data, dtype=self.dtype)
        self.shape = data.shape
        if self._data is None:
            if self._deferred_init is None:
                raise MXNetError(f"Parameter {self.name!r} has not been initialized")
            self._deferred_init = self._deferred_init[:3] + (data,)
            self._finish_deferred_init()
            return
        # a KVStore that updates the weights holds its own copy: MXNet drops the store, to refill it next step
        trainer = self._trainer
        if trainer is not None and trainer._kv_initialized and trainer._update_on_kvstore \
                and self not in trainer._params_to_init:
            trainer._reset_kvstore()
        for arr in self._data:
            with autograd.pause():
                arr[:] = data.as_in_context(arr.context).astype(arr.dtype, copy=False)

    def zero_grad(self):
        if self._data is None or self._grad_req == "null":
            return
        for arr in self._data:
            if arr._grad is not None:
                arr._grad._data.fill(0)
                arr._grad._bump_version()     # a sparse gradient now stores nothing

    def reset_ctx(self, ctx):
        ctx_list = _ctx_list(ctx)
        if self._data is not None:
            self._init_impl(self._data[0].copyto(ctx_list[0]), ctx_list)
        elif self._deferred_init is not None:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx_list, default_init, data)
        else:
            raise MXNetError(f"Cannot reset context for Parameter {self.name!r} because it has not been initialized")

    def cast(self, dtype):
        self.dtype = dtype_np(dtype).type
        if self._data is not None:
            with autograd.pause():
                self._data = [arr.astype(self.dtype) for arr in self._data]
            for arr in self._data:
                self._mark(arr)

    def var(self):
        """This parameter as a symbol variable (name, shape, dtype, multipliers and initializer attached).

        The same variable is returned until one of those attributes changes (as in MXNet), so a parameter used
        several times in one traced graph (a cell unrolled over time steps, `weight.data()` read twice) is ONE
        graph input whose gradient sums over its uses; separate variables of the same name would each get a
        share of the gradient and a subgraph would see non-unique input names."""
        key = (self.name, self._shape, np.dtype(self.dtype).name, self.lr_mult, self.wd_mult, id(self.init),
               self._stype)
        if self._var is None or self._var_key != key:
            self._var = symbol.var(self.name, shape=self._shape, dtype=self.dtype, lr_mult=self.lr_mult,
                                   wd_mult=self.wd_mult, init=self.init, stype=self._stype)
            self._var_key = key
        return self._var


class Constant(Parameter):
    """A parameter that never changes: grad_req 'null', initialized to `value`."""

    def __init__(self, name, value):
        if not isinstance(value, NDArray):
            value = nd_module.array(value)
        self.value = value
        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype,
                         init=init_module.Constant(value))

    @property
    def grad_req(self):
        return "null"

    @grad_req.setter
    def grad_req(self, req):
        if req != "null":
            warn(f"Constant parameter {self.name!r} does not support grad_req other than 'null'; "
                 f"ignoring {req!r}")
        self._grad_req = "null"


class ParameterDict:
    """An ordered name -> Parameter mapping (what Block.collect_params returns)."""

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        body = "\n".join(f"  {p!r}" for p in self._params.values())
        return f"{self._prefix} (\n{body}\n)" if self._prefix else f"(\n{body}\n)"

    def _repr_html_(self):
        """Jupyter's view: one row per parameter as Parameter shows it, and the number of values."""
        return _block_display.parameter_dict_html(self)

    @property
    def prefix(self):
        return self._prefix

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    def items(self):
        return self._params.items()

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name, **kwargs):
        """The parameter `prefix + name`, created with kwargs if new; an existing one must agree with kwargs."""
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for key, value in kwargs.items():
            if key == "shape" and value is not None:
                param.shape = value
                continue
            existing = getattr(param, key, None)
            if key == "dtype":
                value, existing = np.dtype(value), np.dtype(existing)
            if existing is not None and value is not None and existing != value and key not in ("init",):
                raise MXNetError(f"Cannot retrieve Parameter {name!r} because desired attribute does not match "
                                 f"with stored for attribute {key!r}: desired {value!r} vs stored {existing!r}")
            if existing is None:
                setattr(param, key, value)
        return param

    def get_constant(self, name, value=None):
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise MXNetError(f"No constant named {name!r}; give a value to create it")
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None and not isinstance(param, Constant):
            raise MXNetError(f"Parameter {name!r} exists and is not a Constant")
        return param

    def update(self, other):
        for key, value in other.items():
            if key in self._params and self._params[key] is not value:
                raise MXNetError(f"Cannot update self with other because they have different Parameters with the "
                                 f"same name {key!r}")
            self._params[key] = value

    def initialize(self, init=init_module.Uniform(), ctx=None, verbose=False, force_reinit=False):
        if verbose and hasattr(init, "set_verbosity"):
            init.set_verbosity(verbose=verbose)
        for param in self._params.values():
            param.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        """Zeroes every gradient buffer in place: one numpy fill per buffer, no op dispatch."""
        for param in self._params.values():
            param.zero_grad()

    def reset_ctx(self, ctx):
        for param in self._params.values():
            param.reset_ctx(ctx)

    def setattr(self, name, value):
        """Sets an attribute (grad_req, lr_mult, wd_mult, ...) on every parameter."""
        for param in self._params.values():
            setattr(param, name, value)

    def list_ctx(self):
        seen = []
        for param in self._params.values():
            for ctx in param.list_ctx():
                if ctx not in seen:
                    seen.append(ctx)
        return seen

    def save(self, filename, strip_prefix=""):
        arg_dict = {}
        for param in self._params.values():
            if not param.name.startswith(strip_prefix):
                raise MXNetError(f"Prefix {strip_prefix!r} is to be stripped before saving, but Parameter "
                                 f"{param.name!r} does not start with it")
            arg_dict[param.name[len(strip_prefix):]] = param._reduce()
        nd_save(filename, arg_dict)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False, restore_prefix="",
             cast_dtype=False, dtype_source="current"):
        loaded = nd_load(filename)
        if isinstance(loaded, list):
            raise MXNetError(f"{filename!r} holds an unnamed list of arrays; parameters need a name -> array file")
        arrays = {restore_prefix + (k[4:] if k.startswith(("arg:", "aux:")) else k): v for k, v in loaded.items()}
        self.load_dict(arrays, ctx, allow_missing, ignore_extra, cast_dtype, dtype_source, filename)

    def load_dict(self, arrays, ctx=None, allow_missing=False, ignore_extra=False, cast_dtype=False,
                  dtype_source="current", source="the given dict"):
        if not allow_missing:
            missing = [name for name in self._params if name not in arrays]
            if missing:
                raise MXNetError(f"Parameter(s) {missing} are missing in {source}, which has {sorted(arrays)}; "
                                 "set allow_missing=True to ignore missing parameters")
        for name, value in arrays.items():
            if name not in self._params:
                if ignore_extra:
                    continue
                raise MXNetError(f"Parameter {name!r} loaded from {source} is not present in this ParameterDict "
                                 f"(which has {list(self._params)}); set ignore_extra=True to ignore it")
            _load_into(self._params[name], value, ctx, cast_dtype, dtype_source)


def _load_into(param, value, ctx, cast_dtype, dtype_source):
    """Sets a parameter from a loaded array: fills unknown dims, checks the rest, handles dtype per MXNet."""
    if cast_dtype:
        if dtype_source == "saved":
            param.cast(value.dtype)       # MXNet's dtype setter casts the current value too
        else:
            value = value.astype(param.dtype, copy=False)
    elif np.dtype(value.dtype) != np.dtype(param.dtype):
        raise MXNetError(f"Failed loading Parameter {param.name!r}: dtype {np.dtype(value.dtype).name} in the file "
                         f"differs from {np.dtype(param.dtype).name}; set cast_dtype=True to cast")
    if param.shape is not None:
        known = tuple(param.shape)
        if len(known) != len(value.shape) or any(k not in (0, v) for k, v in zip(known, value.shape)):
            raise MXNetError(f"Failed loading Parameter {param.name!r}: shape {value.shape} in the file is "
                             f"incompatible with the parameter's shape {known}")
    param.shape = value.shape
    if param._data is None:
        if param._deferred_init is not None:
            init, ctx_list, default_init, _ = param._deferred_init
            param._deferred_init = (init, _ctx_list(ctx) if ctx is not None else ctx_list, default_init, value)
            param._finish_deferred_init()
        else:
            param._deferred_init = (None, _ctx_list(ctx), init_module.Zero(), value)
            param._finish_deferred_init()
    else:
        if ctx is not None:
            param.reset_ctx(ctx)
        param.set_data(value)


def select_params(params, select):
    """collect_params(select): a regex (or several joined by |) matched with re.match on full names."""
    if select is None:
        return params
    pattern = re.compile(select)
    out = ParameterDict(params.prefix)
    out._params.update((k, v) for k, v in params.items() if pattern.match(k))
    return out
