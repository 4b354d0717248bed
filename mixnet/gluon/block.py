"""Gluon `Block` and `HybridBlock` with MXNet 1.x naming (prefixes, name_scope, `dense0_` counters), structural
save/load, hooks and summaries. `HybridBlock.hybridize()` traces and compiles the block (cached_graph.py,
cached_op.py); results are the eager ones. Called on `mx.sym` Symbols, a HybridBlock returns its graph, made by
the same trace (parameters as their `Parameter.var()` variables), as MXNet 1.x's symbolic composition does."""
import contextlib
import inspect
import json
import threading
from collections import OrderedDict, defaultdict

import numpy as np

from .. import config
from .. import initializer as init_module
from .. import name as name_module
from .._atomic import write_atomic
from .._source import warn
from .._traceback import hide_internals
from ..base import InputDtypeWarning, MXNetError, MXNetWarning
from ..ndarray import load as nd_load, save as nd_save
from ..ndarray.ndarray import NDArray
from . import _block_display, cached_graph
from .parameter import DeferredInitializationError, Parameter, ParameterDict, _load_into, select_params
from .. import symbol
from .utils import InvalidArgument

__all__ = ["Block", "HybridBlock"]

_STATE = threading.local()     # per-thread: the innermost name scope


def _global_name(hint):
    """Outside any name_scope: the thread's NameManager counter, shared with symbol names as in MXNet."""
    return name_module.NameManager.current().get(None, hint)


class _BlockScope:
    """The `with block.name_scope():` context: children created inside get the block's prefix."""

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old = None
        self._name_prefix = None

    @staticmethod
    def create(prefix, params, hint):
        current = getattr(_STATE, "scope", None)
        if current is None:
            if prefix is None:
                prefix = _global_name(hint) + "_"
            params = ParameterDict(prefix) if params is None else ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old = getattr(_STATE, "scope", None)
        _STATE.scope = self
        self._name_prefix = name_module.Prefix(self._block.prefix)   # symbols made inside get the prefix too
        self._name_prefix.__enter__()
        return self

    def __exit__(self, *exc):
        if not self._block._empty_prefix:
            self._name_prefix.__exit__(*exc)
            self._name_prefix = None
            _STATE.scope = self._old
        return False


class HookHandle:
    """Returned by register_forward_hook / register_forward_pre_hook; `detach()` removes the hook."""
    _next_id = 0

    def __init__(self, hooks):
        self._hooks = hooks
        self._id = HookHandle._next_id
        HookHandle._next_id += 1

    def detach(self):
        self._hooks.pop(self._id, None)
        cached_graph.blocks_changed()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()


def _shape_text(shape):
    return "(" + ", ".join("?" if d == 0 else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


_FLOAT64 = np.dtype(np.float64)


def _warn_float64_input(block, args):
    """A float64 NDArray into a block whose parameters are all float32 runs silently in float64 (its ops promote;
    MXNet raises "Incompatible attr" instead): say so once per block, naming the fix. The block and its children
    (which an eager forward calls with the promoted values) are marked checked either way."""
    block.apply(lambda b: b.__dict__.__setitem__("_float64_checked", True))
    dtypes = {np.dtype(p.dtype).name for p in block.collect_params().values()}
    if "float32" not in dtypes or "float64" in dtypes:
        return
    position = next(i for i, a in enumerate(args) if type(a) is NDArray and a._data.dtype is _FLOAT64)
    warn(f"{type(block).__name__} {block.name!r}: input {position} is float64 but the block's parameters are "
         "float32, so it computes in float64 (slower, and not the float32 results). Cast the input "
         "(x.astype('float32'); mx.nd.array(numpy_array) gives float32), or the block to float64 "
         "(net.cast('float64')).", InputDtypeWarning)


class Block:
    """Base class of all layers and models. Subclass it and define `forward`.

    Blocks pickle and deepcopy (parameters, structure, hybridize flags and hooks; a hybridized block's compiled
    graphs are dropped and traced again at the next call).

    Parameters
    ----------
    prefix : str, optional
        The prefix of this block's name and of its parameters' names (default: the class name, lowercased, with
        a counter: 'dense0_').
    params : ParameterDict, optional
        Parameters to share with another block (`other.collect_params()`); default: new ones.

    Examples
    --------
    >>> import os, tempfile
    >>> import mixnet as mx
    >>> net = mx.gluon.nn.HybridSequential(prefix="model_")
    >>> with net.name_scope():
    ...     net.add(mx.gluon.nn.Dense(3, in_units=2), mx.gluon.nn.Dense(1, in_units=3))
    >>> net.initialize(mx.init.Constant(0.5))
    >>> sorted(net.collect_params())
    ['model_dense0_bias', 'model_dense0_weight', 'model_dense1_bias', 'model_dense1_weight']
    >>> list(net.collect_params(".*weight"))
    ['model_dense0_weight', 'model_dense1_weight']
    >>> path = os.path.join(tempfile.mkdtemp(), "model.params")
    >>> net.save_parameters(path)                        # structural names: '0.weight', '1.bias', ...
    >>> sorted(mx.nd.load(path))
    ['0.bias', '0.weight', '1.bias', '1.weight']
    >>> net[0].weight.set_data(mx.nd.zeros((3, 2)))
    >>> net.load_parameters(path)
    >>> net[0].weight.data().asnumpy().tolist()
    [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = OrderedDict()
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def _alias(self):
        return type(self).__name__.lower()

    def __setattr__(self, name, value):
        if hasattr(self, "_children"):
            existing = self.__dict__.get(name)
            if existing is not None and isinstance(existing, (Block, Parameter)) \
                    and not isinstance(value, type(existing)):
                raise TypeError(f"Changing attribute type for {name} from {type(existing).__name__} to "
                                f"{type(value).__name__} is not allowed")
            if isinstance(value, Block):
                self.register_child(value, name)
            elif isinstance(value, Parameter):
                self._reg_params[name] = value
        super().__setattr__(name, value)

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        for key, child in self._children.items():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({key}): {body}")
        if not self._children:
            lines.append("")       # MXNet 1.x prints a childless block as 'Name(\n\n)'
        return "\n".join(lines) + "\n)"

    def _repr_html_(self):
        """Jupyter's view: the tree of children with their output shapes from the last call, parameter shapes
        and counts ('?' before deferred initialization), and 'hybridized: N plans' for a hybridized block."""
        return _block_display.block_html(self)

    # ------------------------------------------------------------------ naming
    @property
    def prefix(self):
        """str: the prefix of this block's parameters' names, e.g. 'dense0_'."""
        return self._prefix

    @property
    def name(self):
        """str: this block's name, the prefix without its trailing '_'."""
        return self._name

    @property
    def params(self):
        """This block's own ParameterDict (children's parameters are in collect_params())."""
        return self._params

    def name_scope(self):
        """A context manager: blocks created inside it get this block's prefix in front of theirs
        (`with self.name_scope(): self.dense = nn.Dense(3)` names it 'mynet0_dense0_')."""
        return self._scope

    def register_child(self, block, name=None):
        """Makes `block` a child: its parameters join `collect_params()`, and `hybridize`, `cast`, `apply`,
        `initialize` and `save_parameters` reach it. Assigning a Block to an attribute does this.

        Parameters
        ----------
        block : Block
            The child.
        name : str, optional
            Its key among the children (and in save_parameters' names); default: the next number.
        """
        if name is None:
            name = str(len(self._children))
        self._children[name] = block
        cached_graph.blocks_changed()

    # ------------------------------------------------------------------ parameters
    def collect_params(self, select=None):
        """All parameters of this block and its children, by full name (what `Trainer` and `initialize` take).

        Parameters
        ----------
        select : str, optional
            A regular expression the full names must match (e.g. '.*weight|.*bias'); None: all.

        Returns
        -------
        ParameterDict
        """
        self._warn_unregistered_blocks()
        result = ParameterDict(self._params.prefix)
        result.update(self._params)
        for param in self._reg_params.values():
            if param.name not in result:
                result._params[param.name] = param
        for child in self._children.values():
            result.update(child.collect_params())
        return select_params(result, select)

    def _warn_unregistered_blocks(self):
        """Blocks kept in a plain list/tuple/dict attribute are not children: their parameters are missed by
        collect_params (and so by initialize, Trainer and save). MXNet warns about it here; so do we."""
        children = set(map(id, self._children.values()))

        def hides_block(value):
            if isinstance(value, Block):
                return id(value) not in children
            if isinstance(value, dict):
                value = list(value.values())
            return isinstance(value, (list, tuple)) and any(hides_block(v) for v in value)

        for key, value in self.__dict__.items():
            if key != "_children" and isinstance(value, (list, tuple, dict)) and hides_block(value):
                warn(f'"{type(self).__name__}.{key}" is an unregistered container with Blocks: Blocks '
                     "inside a list, tuple or dict are not registered automatically. Register them with "
                     "register_child() or use nn.Sequential/nn.HybridSequential instead.", MXNetWarning)

    def _collect_params_with_prefix(self, prefix=""):
        """Structural names: attribute paths joined by '.', as save_parameters writes them."""
        if prefix:
            prefix += "."
        result = {prefix + key: param for key, param in self._reg_params.items()}
        for name, child in self._children.items():
            result.update(child._collect_params_with_prefix(prefix + name))
        return result

    def initialize(self, init=init_module.Uniform(), ctx=None, verbose=False, force_reinit=False):
        """Initializes every parameter of this block and its children (`collect_params().initialize(...)`).
        Parameters with unknown dimensions are initialized at the first forward call, from the input's shape.

        Parameters
        ----------
        init : Initializer, default Uniform()
            The initializer of parameters that have none of their own.
        ctx : Context or list of Context, optional
            Where the values live (several: one copy per device); default: the current context.
        verbose : bool, default False
            Log which initializer each parameter gets.
        force_reinit : bool, default False
            Initialize again parameters that already have values (otherwise they are left, with a warning).
        """
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def save_parameters(self, filename, deduplicate=False):
        """Saves the parameters' values under structural names (attribute paths such as '0.weight' or
        'encoder.dense.bias', independent of prefixes) in MXNet's NDArray file format.

        Parameters
        ----------
        filename : str
            The file to write.
        deduplicate : bool, default False
            Save a parameter shared by several blocks once, under its last name, instead of under each name.
        """
        params = self._collect_params_with_prefix()
        if deduplicate:
            last_name = {}
            for name, param in params.items():
                last_name[id(param)] = name
            params = {name: param for name, param in params.items() if last_name[id(param)] == name}
        arrays = {}
        for name, param in params.items():
            param._check_initialized()
            arrays[name] = param.list_data()[0]
        nd_save(filename, arrays)

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False, cast_dtype=False,
                        dtype_source="current"):
        """Loads values written by `save_parameters` (or, by its global names, by the legacy `save_params`).

        Parameters
        ----------
        filename : str
            The file to read.
        ctx : Context or list of Context, optional
            Where to put the values; default: where the parameters already are, else the current context.
        allow_missing : bool, default False
            Leave parameters absent from the file as they are instead of raising MXNetError.
        ignore_extra : bool, default False
            Skip values in the file that match no parameter instead of raising MXNetError.
        cast_dtype : bool, default False
            Cast values whose dtype differs from the parameter's (otherwise a mismatch raises).
        dtype_source : {'current', 'saved'}, default 'current'
            With cast_dtype: keep the parameter's dtype ('current') or take the file's ('saved').
        """
        loaded = nd_load(filename)
        if isinstance(loaded, list):
            raise MXNetError(f"{filename!r} holds an unnamed list of arrays, not parameters")
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if loaded and not any("." in key for key in loaded):
            # A legacy file (old save_params / export): global names with this block's prefix stripped.
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix, cast_dtype,
                                       dtype_source)
            return
        if not allow_missing:
            names_of = defaultdict(list)
            for name, param in params.items():
                names_of[id(param)].append(name)
            for name, param in params.items():
                if not any(n in loaded for n in names_of[id(param)]):
                    raise MXNetError(f"Parameter {name!r} is missing in file {filename!r}, which contains "
                                     f"parameters {_abbrev(loaded)}. Set allow_missing=True to ignore missing "
                                     "parameters.")
        for name, value in loaded.items():
            if name not in params:
                if ignore_extra:
                    continue
                raise MXNetError(f"Parameter {name!r} loaded from file {filename!r} is not present in this block, "
                                 f"which contains parameters {_abbrev(params)}. Set ignore_extra=True to ignore.")
            _load_into(params[name], value, ctx, cast_dtype, dtype_source)

    def save_params(self, filename):
        """MXNet 1.x's deprecated form: a legacy file, the parameters' global names with this block's prefix
        stripped (what a SymbolBlock of the same graph, or load_params, reads back)."""
        warn("save_params is deprecated. Please use save_parameters. Note that if you want to load from "
             "SymbolBlock later, please use export instead.", MXNetWarning)
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """MXNet 1.x's deprecated form of load_parameters (which reads legacy files too)."""
        warn("load_params is deprecated. Please use load_parameters.", MXNetWarning)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def save(self, prefix):
        """MXNet 1.9's `Block.save`: `prefix-model.json` (the block tree; hybridized blocks carry their traced
        graph and argument formats) and `prefix-model.params` (structural names)."""
        counter = iter(range(1 << 30))

        def describe(block):
            graph = getattr(block, "_last_graph", None) if getattr(block, "_active", False) else None
            entry = {"orig_name": block.name, "hybridized": graph is not None}    # children traced inline: False
            if graph is not None:
                entry["in_format"] = cached_graph.mxnet_format(graph.in_structure)
                entry["out_format"] = cached_graph.mxnet_format(graph.out_structure)
                entry["inputs"] = [symbol.var(name).tojson() for name in graph.input_names]
                entry["symbol"] = graph.symbol.tojson()
            entry["children"] = {child.name: key for key, child in block._children.items()}
            for child in block._children.values():
                key = f"{type(child).__name__.lower()}{next(counter)}"     # numbered before its own children
                entry[key] = describe(child)
            return entry

        top = f"{type(self).__name__.lower()}{next(counter)}"
        doc = {top: describe(self)}
        write_atomic(f"{prefix}-model.json", json.dumps(doc, indent=2))
        self.save_parameters(f"{prefix}-model.params")

    def load(self, prefix):
        """Loads what `save(prefix)` wrote (by mixnet or MXNet 1.9): checks the block tree matches this block,
        then loads the parameters. Saved graphs are not reused: hybridized blocks re-trace on their first call,
        which gives the same graph for the same code."""
        try:
            with open(f"{prefix}-model.json") as f:
                doc = json.load(f)
        except (OSError, ValueError) as err:
            raise MXNetError(f"Block.load: cannot read {prefix}-model.json: {err}") from None
        if not isinstance(doc, dict) or len(doc) != 1:
            raise MXNetError(f"Block.load: {prefix}-model.json must hold one top-level block")
        entry = next(iter(doc.values()))
        if not isinstance(entry, dict) or entry.get("orig_name") != self.name:
            raise MXNetError(f"Block.load: {prefix}-model.json was saved from block "
                             f"{entry.get('orig_name') if isinstance(entry, dict) else entry!r}, not {self.name!r}")
        _check_children(self, entry, f"{prefix}-model.json")
        self.load_parameters(f"{prefix}-model.params")

    # ------------------------------------------------------------------ running
    def register_forward_pre_hook(self, hook):
        """Registers `hook(block, inputs)` to run before every forward call.

        Parameters
        ----------
        hook : callable
            Called with the block and the tuple of positional inputs.

        Returns
        -------
        HookHandle
            `handle.detach()` removes the hook.
        """
        handle = HookHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle._id] = hook
        cached_graph.blocks_changed()
        return handle

    def register_forward_hook(self, hook):
        """Registers `hook(block, inputs, outputs)` to run after every forward call.

        Parameters
        ----------
        hook : callable
            Called with the block, the tuple of positional inputs and the output(s).

        Returns
        -------
        HookHandle
            `handle.detach()` removes the hook.
        """
        handle = HookHandle(self._forward_hooks)
        self._forward_hooks[handle._id] = hook
        cached_graph.blocks_changed()
        return handle

    def apply(self, fn):
        """Calls `fn(block)` on every descendant (children first) and then on this block; returns this block.

        Parameters
        ----------
        fn : callable
            The function, e.g. `lambda b: b.collect_params().setattr('lr_mult', 0.1)`.
        """
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def cast(self, dtype):
        """Casts every parameter of this block and its children (values, gradients) to `dtype`; feed the
        block inputs of that dtype afterwards.

        Parameters
        ----------
        dtype : str or numpy.dtype
            The new dtype, e.g. 'float16' or 'float64'.
        """
        for child in self._children.values():
            child.cast(dtype)
        for param in self.params.values():
            param.cast(dtype)

    def hybridize(self, active=True, **kwargs):
        """Hybridizes (or, with active=False, un-hybridizes) the HybridBlock children; a plain Block itself
        keeps running its Python `forward`. See `HybridBlock.hybridize` for the options.

        Parameters
        ----------
        active : bool, default True
            True compiles the HybridBlock children; False returns them to eager execution.
        **kwargs
            Passed to each child's `hybridize` (`static_alloc=`, `check=`, ...).
        """
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    _float64_checked = False     # the float64-input check ran for this block (it warns once per block)

    def __call__(self, *args, **kwargs):
        if not self._float64_checked:
            for a in args:
                if type(a) is NDArray and a._data.dtype is _FLOAT64:
                    _warn_float64_input(self, args)
                    break
        try:
            for hook in list(self._forward_pre_hooks.values()):
                hook(self, args)
            out = self._run_forward(args, kwargs)
            _block_display.record_outputs(self, out)        # their shapes, for _repr_html_
            for hook in list(self._forward_hooks.values()):
                hook(self, args, out)
        except MXNetError as err:
            __tracebackhide__ = True    # noqa: F841 - IPython and pytest hide this frame
            raise hide_internals(err)   # mixnet's own frames are cut: MIXNET_FULL_TRACEBACK=1 shows them
        return out

    def _run_forward(self, args, kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args):
        raise MXNetError(f"{type(self).__name__} must define forward(self, ...)")

    # ------------------------------------------------------------------ summary
    def summary(self, *inputs):
        """Prints each layer with its output shape and parameter count, then the totals. Without inputs (or
        before the parameters are initialized) it lists the declared parameter shapes, with ? for dimensions not
        yet known. With inputs, a hybridized block (or child) raises AssertionError, as in MXNet.

        Parameters
        ----------
        *inputs : NDArray
            Inputs for one eager forward call that records each layer's output shapes (optional).
        """
        rows, handles = [], []
        if inputs:
            # As MXNet: per-layer output shapes are only reported for a block run eagerly.
            active = []
            self.apply(lambda b: active.append(b) if getattr(b, "_active", False) else None)
            assert not active, f'"{active[0].name}" must not be hybridized to print summary.'

            def record(block, args, out):
                outs = out if isinstance(out, (list, tuple)) else [out]
                shapes = [tuple(o.shape) for o in outs if isinstance(o, NDArray)]
                rows.append((block, shapes))

            self.apply(lambda b: handles.append(b.register_forward_hook(record)))
            token = cached_graph.EAGER.set(True)      # per-layer hooks need the eager path
            try:
                self(*inputs)
            finally:
                cached_graph.EAGER.reset(token)
                for h in handles:
                    h.detach()
        else:
            self.apply(lambda b: rows.append((b, None)))
        print(_summary_table(rows, self))


def _takes_anything(fn):
    """forward(self, *args, **kwargs): a generic forward that hands everything to hybrid_forward."""
    try:
        kinds = [p.kind for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        return False
    return kinds == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]


def _check_children(block, entry, source):
    saved = entry.get("children", {})
    mine = {child.name: key for key, child in block._children.items()}
    if saved != mine:
        raise MXNetError(f"Block.load: {source} describes children {saved} under {block.name!r}, but the block has "
                         f"{mine}; build the same architecture (with the same prefixes) before loading")
    described = [v for k, v in entry.items() if isinstance(v, dict) and k != "children"]
    for child, child_entry in zip(block._children.values(), described):
        _check_children(child, child_entry, source)


def _abbrev(names, limit=10):
    names = list(names)
    return str(names) if len(names) <= limit else str(names[:limit])[:-1] + f", ... ({len(names)} in all)]"


def _summary_table(rows, root):
    def own_params(block):
        return list(block._reg_params.values())

    def count(params):
        return sum(int(np.prod(p.shape)) for p in params if p.shape is not None and all(p.shape))

    lines = ["-" * 78, f"{'Layer (type)':<34}{'Output Shape / Parameters':<32}{'Param #':>12}", "=" * 78]
    seen, total, trainable, partial = set(), 0, 0, ""
    for block, shapes in rows:
        params = [p for p in own_params(block) if id(p) not in seen]
        n = count(params)
        seen.update(id(p) for p in params)
        total += n
        trainable += count([p for p in params if p.grad_req != "null"])
        desc = ", ".join(_shape_text(s) for s in shapes) if shapes else \
            ", ".join(_shape_text(p.shape) if p.shape is not None else "?" for p in params) or "-"
        known = "" if all(p.shape is not None and all(p.shape) for p in params) else "?"
        partial = partial or known      # totals get a '?' too while some shapes are unknown
        label = f"{block.name} ({type(block).__name__})"
        lines.append(f"{label:<33} {desc:<31} {(str(n) + known):>12}")
    lines += ["=" * 78, f"Parameters in total: {total}{partial}", f"Trainable parameters: {trainable}{partial}",
              f"Non-trainable parameters: {total - trainable}{partial}", "-" * 78]
    return "\n".join(lines)


class HybridBlock(Block):
    """A Block that can be hybridized. Write either `hybrid_forward(self, F, x, *args, **params)` (MXNet 1.x: F
    is mx.nd, parameters arrive as keyword arguments) or `forward(self, x, *args)` (2.0 style)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix, params)
        self._active = False
        self._flags = {}
        self._op_hook = None                # (callback, monitor_all) from register_op_hook
        self._cached_graphs = {}
        self._trace_lock = threading.RLock()     # one trace per new signature when threads call at once
        self._last_graph = None
        self._checks_left = 0

    def __getstate__(self):
        # the compiled graphs hold generated code and modules, and a lock cannot be pickled: all are rebuilt
        state = dict(self.__dict__)
        for key in ("_cached_graphs", "_last_graph", "_trace_lock", "_in_structure"):
            state.pop(key, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._cached_graphs, self._last_graph, self._trace_lock = {}, None, threading.RLock()

    def register_child(self, block, name=None):
        super().register_child(block, name)
        # a new or replaced child changes the graph: the next call re-traces (and export needs that call first)
        self._cached_graphs, self._last_graph, self._call_index = {}, None, None

    def hybridize(self, active=True, backend=None, clear=True, static_alloc=False, static_shape=False,
                  inline_limit=2, forward_bulk_size=None, backward_bulk_size=None, check=None, **kwargs):
        """Compiles the block: each new input signature is traced once into a graph (see cached_graph.py),
        later calls run the cached graph, compiled. Results are identical to eager ones.

        static_alloc=True: values computed inside a call by ops that can write into given buffers (fused kernels,
        GEMMs, convolutions, activations...) get planned buffers, allocated once and reused by every call
        (co-shared when their lifetimes do not overlap); outputs are always fresh arrays. A plan's memory_report() compares planned and naive bytes. mirror=True (or
        MXNET_BACKWARD_DO_MIRROR=1): elementwise results are recomputed in the backward pass instead of kept
        from the forward (less training memory). static_shape, inline_limit and the bulk sizes are accepted
        for MXNet compatibility (every signature is already planned once).

        check=True (or an int n; env MIXNET_HYBRIDIZE_CHECK=1): the first n calls (default 2) also run eagerly
        and compare op by op, forward and gradients, raising HybridizeCheckError at the first divergence.

        Threads: a hybridized block may be called from several threads at once (each call of a static_alloc
        plan gets a planned buffer set of its own; a new signature is traced once). Concurrent backward passes
        into the same parameters' gradients are not supported (gluon/cached_op.py, "Threads").

        Examples
        --------
        >>> import mixnet as mx
        >>> net = mx.gluon.nn.HybridSequential()
        >>> net.add(mx.gluon.nn.Dense(4, activation="relu", in_units=3), mx.gluon.nn.Dense(2, in_units=4))
        >>> net.initialize(mx.init.Constant(0.25))
        >>> net.hybridize()
        >>> net(mx.nd.ones((1, 3))).asnumpy().tolist()      # traced and compiled on this first call
        [[0.75, 0.75]]
        """
        if check is None:
            check = config.HYBRIDIZE_CHECK
        self._checks_left = (2 if check is True else int(check)) if check else 0
        self._active = active
        self._flags = dict(backend=backend, static_alloc=static_alloc, static_shape=static_shape,
                           inline_limit=inline_limit, **kwargs)
        if clear:
            self._cached_graphs, self._call_index = {}, None     # (the index would hold the old graphs)
        super().hybridize(active, backend=backend, clear=clear, static_alloc=static_alloc,
                          static_shape=static_shape, inline_limit=inline_limit, **kwargs)

    _call_index = None      # cached_graph.CallIndex: made at the first hybridized call

    def _run_forward(self, args, kwargs):
        index_as = None
        if self._active and not kwargs:
            out, index_as = cached_graph.fast_call(self, args)
            if out is not cached_graph.MISS:
                return out
        if not cached_graph.TRACING.get():
            kinds = cached_graph.input_kinds(args, kwargs)
            if "Symbol" in kinds:
                return cached_graph.call_symbolic(self, args, kwargs)
            if not kinds and type(self).forward is HybridBlock.forward:
                # hybrid_forward needs an array to take its device from (or Symbols to compose on)
                raise InvalidArgument(f"{type(self).__name__} {self.name!r}: a HybridBlock needs at least one "
                                      "NDArray or Symbol input; got "
                                      f"({', '.join(type(a).__name__ for a in args)})")
        if self._active and not cached_graph.TRACING.get() and not cached_graph.EAGER.get():
            if kwargs:
                bound = self._keywords_as_positions(args, kwargs)
                if bound is not None:
                    args, kwargs = bound, {}
            if not kwargs and args:
                bad = [a for a in args if not (a is None or isinstance(a, (NDArray, list, tuple)))]
                if bad:
                    raise InvalidArgument(f"When hybridized, the input of HybridBlock {self.name!r} must be (nested) "
                                          f"lists of NDArrays (or None), but got {bad[0]!r} of type "
                                          f"{type(bad[0]).__name__} (as in MXNet; call it unhybridized instead)")
                return cached_graph.call_hybridized(self, args, index_as)
        return self._run_eager(args, kwargs)

    def _keywords_as_positions(self, args, kwargs):
        """Keyword arguments moved to their positions in the forward's signature (`loss(pred, label,
        sample_weight=w)`), so keyword calls run hybridized too. Skipped arguments in between take their
        default when it is None; otherwise (or for unknown names) None: the call runs eagerly."""
        fn = self.hybrid_forward if type(self).forward in (HybridBlock.forward,) or _takes_anything(self.forward) \
            else self.forward
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            return None
        if fn == self.hybrid_forward:
            params = params[1:]                            # F
        kwargs, positional = dict(kwargs), list(args)
        for p in params[len(args):]:
            if not kwargs:
                break
            if p.kind != p.POSITIONAL_OR_KEYWORD or p.name in self._reg_params:
                return None
            if p.name in kwargs:
                positional.append(kwargs.pop(p.name))
            elif p.default is None:
                positional.append(None)
            else:
                return None
        return positional if not kwargs else None

    def _run_eager(self, args, kwargs):
        try:
            return self.forward(*args, **kwargs)
        except DeferredInitializationError:
            self._infer_and_initialize(args)
            return self.forward(*args, **kwargs)

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Writes the traced graph and the parameters in MXNet's deployment format, `path-symbol.json` and
        `path-%04d.params` (names 'arg:...'/'aux:...'), which `SymbolBlock.imports` (mixnet's or MXNet's) loads.
        Needs `hybridize()` and one forward call first (that call traced the graph).

        Parameters
        ----------
        path : str
            The path prefix of both files.
        epoch : int, default 0
            The number in the params file's name.
        remove_amp_cast : bool, default True
            Accepted for MXNet compatibility (mixnet's graphs hold no AMP casts to remove).

        Returns
        -------
        tuple of str
            The symbol file's and the params file's paths.
        """
        graph = getattr(self, "_last_graph", None)
        if graph is None:
            raise MXNetError("Please first call block.hybridize() and then run forward with this block at least "
                             "once before calling export.")
        symbol_file, params_file = f"{path}-symbol.json", f"{path}-{epoch:04d}.params"
        graph.symbol.save(symbol_file)
        params = self.collect_params()
        args = set(graph.symbol.list_arguments())
        aux = set(graph.symbol.list_auxiliary_states())
        arrays = {}
        for name, param in params.items():
            if name in args:
                arrays["arg:" + name] = param.list_data()[0]
            elif name in aux:
                arrays["aux:" + name] = param.list_data()[0]
        for name, value in graph.constants.items():       # arrays made inside forward: plain arguments
            arrays["arg:" + name] = value
        nd_save(params_file, arrays)
        return symbol_file, params_file

    def _infer_and_initialize(self, args):
        pending = [p for p in self._reg_params.values() if p._data is None and p._deferred_init is not None]
        if not pending:
            raise      # the unknown shape belongs to a child that could not infer it: re-raise its error
        self.infer_shape(*args)
        for param in pending:
            try:
                param._finish_deferred_init()
            except DeferredInitializationError:
                raise DeferredInitializationError(
                    f"{type(self).__name__} {self.name!r}: could not infer the shape of parameter {param.name!r} "
                    f"(still {param.shape}) from inputs of shapes "
                    f"{[tuple(a.shape) for a in args if isinstance(a, NDArray)]}") from None

    def infer_shape(self, *args):
        """Fills unknown (0) parameter dimensions from the inputs, as MXNet does: hybrid_forward runs once on
        symbol variables and graph shape inference from the inputs' shapes gives the parameters' shapes (a
        custom block's `shape=(10, 0)` weight used by `F.FullyConnected`, say). Layers with their own rule
        override this."""
        shapes, why = self._graph_param_shapes(args)
        unknown = []
        for p in self._reg_params.values():
            if p._data is None:
                shape = shapes.get(p.name)
                if shape and all(shape):
                    p.shape = shape
                else:
                    unknown.append(f"{p.name} {p.shape}")
        if unknown:
            raise DeferredInitializationError(
                f"{type(self).__name__} {self.name!r} cannot infer the shapes of {', '.join(unknown)} from its "
                f"inputs{why}: give the parameters full shapes, or define infer_shape(self, *inputs) on the block")

    def _graph_param_shapes(self, args):
        """({parameter name: shape inferred from the graph of hybrid_forward}, why not, as text)."""
        if type(self).forward is not HybridBlock.forward or not all(isinstance(a, NDArray) for a in args):
            return {}, ""
        names = [f"_infer_shape_input{k}" for k in range(len(args))]
        params = {name: p.var() for name, p in self._reg_params.items()}
        try:
            with name_module.Prefix(self.prefix):
                out = self.hybrid_forward(symbol, *[symbol.var(n) for n in names], **params)
            if isinstance(out, (list, tuple)):
                out = symbol.Group(list(out))
            arg_shapes, _, aux_shapes = out.infer_shape_partial(**{n: a.shape for n, a in zip(names, args)})
        except Exception as err:       # noqa: BLE001 - any failure of the symbolic run: say why, keep the error
            return {}, f" (running hybrid_forward on symbols failed: {type(err).__name__}: {err})"
        return dict(zip(out.list_arguments() + out.list_auxiliary_states(), arg_shapes + aux_shapes)), ""

    def forward(self, x, *args):
        if cached_graph.TRACING.get():
            from .. import symbol as F  # local: F is symbol or ndarray, per call
            params = {name: p.var() for name, p in self._reg_params.items()}
            with self._op_names():
                return self.hybrid_forward(F, x, *args, **params)
        ctx = x.context if isinstance(x, NDArray) else None
        params = {name: p.data(ctx) for name, p in self._reg_params.items()}
        from .. import ndarray as F  # local: F is symbol or ndarray, per call
        return self.hybrid_forward(F, x, *args, **params)

    def compiled_plans(self):
        """What hybridize() has compiled: one PlanRecord per traced input signature (input shapes and dtypes,
        training mode, which plans are built — 'inference', one 'training' per set of differentiated inputs —,
        compiles, fused kernels, calls, seconds, and why it was traced: 'first call', 'new shapes or dtypes
        (...)', 'new training mode (...)'), in trace order; also those of children called hybridized on their
        own. Printing the list gives a table. With bucketed batches (FixedBucketSampler + Pad(bucket_keys=...))
        there is one signature per bucket shape used, and every plan shares this block's parameters.
        See docs/bucketing.md."""
        from .compiled_plans import compiled_plans  # lazy: only for this inspection call
        return compiled_plans(self)

    def graph(self, shapes=None):
        """The graph hybridize() traced, as a Symbol (tojson, list_arguments, infer_shape... work) that prints one
        line per node with its output shape and dtype and your source line, then the fused kernels of the plan
        that runs; in a notebook it is drawn (mx.viz.plot_network), fused kernels as groups.
        shapes: which signature: the input shape (one input) or list of shapes; default: the most recent call's.
        Raises GraphNotTraced (an MXNetError) before hybridize() and a first call.

        Parameters
        ----------
        shapes : tuple or list of tuple, optional
            Which traced signature: the input shape (one input) or a list of shapes; default: the most recent
            call's.
        """
        from .explain import traced_graph  # lazy: only for this inspection call
        return traced_graph(self, shapes)

    def explain(self, code=False):
        """A report of what hybridize() made (print it; HTML in a notebook): each traced signature and why it
        was traced, what makes a call re-trace, the plans built (inference, training forward/backward), their
        fused kernels with your source lines, the ops left unfused and why. code=True adds the generated code:
        each plan's compiled graph and fused kernels. Raises GraphNotTraced (an MXNetError) before hybridize()
        and a first call.

        Parameters
        ----------
        code : bool, default False
            Also show each plan's generated code.
        """
        from .explain import explain  # lazy: only for this inspection call
        return explain(self, code)

    def precompile(self, inputs, dtype="float32", train=True, progress=True, ctx=None):
        """Traces and compiles ahead of time the plans that calls on `inputs` will use, so the first epoch
        compiles nothing: one entry per call signature, each a shape (one input), a tuple with one shape (or
        NDArray, or None) per argument, or actual NDArrays: ``net.precompile([(32, k) for k in keys])`` or
        ``net.precompile([((32, k), (32,)) for k in keys], dtype=['int32', 'int32'])``.

        dtype: of the arrays made from shapes, one for all or one per input in order; shapes AND dtypes must be
        those of the real calls (compiled_plans() shows them). train: True builds the training plans a call
        under autograd.record() uses, False the inference plans of calls in predict mode, 'both' both.
        progress: a tqdm progress bar (False: silent). ctx: the device (default: the current context).
        Returns the PlanRecords of these signatures.

        Nothing runs compiled and nothing is recorded on the autograd tape; parameters, running statistics,
        optimizer states and the random generators are left as they are. Parameters with deferred shapes are
        initialized first by one eager call in predict mode on arrays of ones (as the first real call would
        initialize them, without updating BatchNorm's running statistics).

        Parameters
        ----------
        inputs : list
            One entry per call signature: a shape, a tuple of shapes (or NDArrays, or None) per argument, or
            NDArrays.
        dtype : str or list of str, default 'float32'
            The dtype of the arrays made from shapes, for all inputs or one per input.
        train : bool or str, default True
            True: training plans; False: inference plans; 'both'.
        progress : bool, default True
            Show a tqdm progress bar.
        ctx : Context, optional
            The device; default: the current context.

        Returns
        -------
        list of PlanRecord
        """
        from .compiled_plans import precompile  # lazy: only for ahead-of-time compiling
        return precompile(self, inputs, dtype=dtype, train=train, progress=progress, ctx=ctx)

    def register_op_hook(self, callback, monitor_all=False):
        """callback(output name, op name, NDArray) for every op output of this block's hybridized runs (and,
        with monitor_all, every op input first), named as MXNet names them ('dense0_fwd_output',
        'dense0_fwd_data'); the graph then runs op by op. Registered on the children too, as in MXNet.

        Parameters
        ----------
        callback : callable
            Called as `callback(name, op_name, array)`.
        monitor_all : bool, default False
            Also call it on every op's inputs.
        """
        for child in self._children.values():
            if isinstance(child, HybridBlock):
                child.register_op_hook(callback, monitor_all)
        self._op_hook = (callback, monitor_all)

    def _op_names(self):
        """While tracing: the name scope of the ops this block records, as MXNet's trace makes them (the
        block's prefix, counters fresh per call). A block made with prefix='' opens none: its ops are counted
        in the enclosing block's scope, so two such blocks in one stage get activation0 and activation1."""
        return contextlib.nullcontext() if self._empty_prefix else name_module.Prefix(self.prefix)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise MXNetError(f"{type(self).__name__} must define hybrid_forward(self, F, x, ...) or forward(self, x, ...)")
