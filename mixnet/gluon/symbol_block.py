"""`SymbolBlock`: a Gluon block that runs a Symbol graph, e.g. a model exported by MXNet (`-symbol.json` +
`.params`). Every graph input that is not a data input becomes a Parameter (auxiliary states, such as BatchNorm's
running statistics, get grad_req 'null'). The forward runs the graph compiled, as a hybridized block's does
(gluon/cached_op.py: one plan per input signature, one tape node per call), so gradients with respect to inputs
and parameters work as for any block. hybridize() only sets the options (static_alloc...) its next plans are made
with, and inside a hybridized parent's trace the graph is composed into the parent's.

A variable's hidden attributes give its Parameter's declared shape, dtype and initializer. They come from a file,
so they are parsed strictly (never evaluated) and bounded: a declared shape of more than MAX_DECLARED_ELEMENTS
elements (MXNet 1.x's limit without its large-tensor build) is refused before anything is allocated."""
import math
import os
import re

import numpy as np

from ..base import MXNetError, dtype_np
from ..ndarray.ndarray import NDArray
from ..serialization import DTYPE_CODES
from .. import initializer as init_module
from .. import symbol as symbol_module
from ..symbol.graph import rewrite
from ..symbol.infer import known
from ..symbol.json_io import short_repr
from ..ops.attrs import parse_shape
from . import cached_graph
from .block import HybridBlock
from .parameter import DeferredInitializationError, ParameterDict

__all__ = ["SymbolBlock", "MAX_DECLARED_ELEMENTS"]

# MXNet 1.x's default build handles tensors of at most 2**31 - 1 elements.
MAX_DECLARED_ELEMENTS = 2 ** 31 - 1
_MAX_NDIM = 32          # numpy's limit is 64; MXNet's kernels take far fewer


def _declared(name, raw):
    """Parameter arguments from a variable's hidden attributes: `__shape__` (a 0 is an unknown dimension),
    `__dtype__` (MXNet's dtype code) and `__init__` (an initializer name or its dumps() form, see
    initializer.create), each checked as symbol/infer.py reads them."""
    def refuse(key, why):
        return MXNetError(f"SymbolBlock: variable {short_repr(name)}: attribute {key}={short_repr(raw[key])}: {why}")
    kwargs = {}
    if "__shape__" in raw:
        try:
            shape = parse_shape(raw["__shape__"])
        except ValueError as err:
            raise refuse("__shape__", err) from None
        if len(shape) > _MAX_NDIM or any(d < 0 for d in shape):
            raise refuse("__shape__", f"a shape has at most {_MAX_NDIM} dimensions, each >= 0 (0: unknown)")
        if math.prod(d for d in shape if d) > MAX_DECLARED_ELEMENTS:
            raise refuse("__shape__", f"more than {MAX_DECLARED_ELEMENTS} elements")
        kwargs["shape"] = shape
    if "__dtype__" in raw:
        text = raw["__dtype__"]
        code = int(text) if re.fullmatch(r"\s*[0-9]{1,2}\s*", text) else None
        try:
            kwargs["dtype"] = dtype_np(DTYPE_CODES[code])
        except (KeyError, MXNetError):
            raise refuse("__dtype__", f"not a dtype code mixnet supports (codes: "
                                      f"{', '.join(str(c) for c in DTYPE_CODES if c != 12)})") from None
    if "__init__" in raw:
        try:
            init_module.create(raw["__init__"])      # checked now; the Parameter keeps the text, as MXNet's does
        except MXNetError as err:
            raise refuse("__init__", err) from None
        kwargs["init"] = raw["__init__"]
    return kwargs


def _compose(symbol, entries):
    """The output entries of a copy of `symbol` whose variables named in `entries` ({name: (node, index)}) read
    those entries instead: how a SymbolBlock's graph joins a hybridized parent's trace (the parameters' variables
    are kept, so the parent reads them as this block's Parameters)."""
    def over_entries(node, inputs):
        if node.op is None:
            return [entries[node.name]] if node.name in entries else None
        return node.clone(inputs, raw=dict(node.raw))

    return rewrite(symbol._outputs, over_entries)


def _as_symbol_list(x, what):
    items = list(x) if isinstance(x, (list, tuple)) else [x]
    for s in items:
        if not isinstance(s, symbol_module.Symbol):
            raise MXNetError(f"SymbolBlock: {what} must be Symbols, got {type(s).__name__}")
    return items


class RowSparseParameterError(MXNetError, AssertionError):
    """A graph variable declared row_sparse: MXNet asserts (AssertionError), mixnet's loaders raise MXNetError;
    this is both."""


class SymbolBlock(HybridBlock):
    """SymbolBlock(outputs, inputs, params=None): wraps the graph `outputs` whose data inputs are the variables
    `inputs` (Symbols or names); every other variable becomes a Parameter named like the variable."""

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix="", params=None)
        self._params = ParameterDict("", params)
        outs = _as_symbol_list(outputs, "outputs")
        self._symbol = symbol_module.Group(outs) if len(outs) > 1 else outs[0]
        names = []
        for x in (inputs if isinstance(inputs, (list, tuple)) else [inputs]):
            if isinstance(x, str):
                names.append(x)
            elif isinstance(x, symbol_module.Symbol) and len(x) == 1 and x._outputs[0][0].op is None:
                names.append(x.name)
            else:
                raise MXNetError("SymbolBlock: inputs must be variables (mx.sym.var) or their names")
        graph_inputs = self._symbol.list_inputs()
        unknown = [n for n in names if n not in graph_inputs]
        if unknown:
            raise MXNetError(f"SymbolBlock: inputs {unknown} are not variables of the graph (its variables: "
                             f"{graph_inputs})")
        self._input_names = names
        aux = set(self._symbol.list_auxiliary_states())
        nodes = {n.name: n for n in self._symbol._nodes() if n.op is None}
        for name, node in nodes.items():
            # MXNet asserts this: a SymbolBlock's parameters are read with data(), which a row_sparse one lacks
            if node.raw.get("__storage_type__") == "1":
                raise RowSparseParameterError(f"SymbolBlock doesn't support Parameter {name!r} because its storage type is "
                                     "'row_sparse'.")
        for name in graph_inputs:
            if name in names:
                continue
            kwargs = {"grad_req": "null" if name in aux else "write", "allow_deferred_init": True,
                      **_declared(name, nodes[name].raw)}
            param = self._params.get(name, **kwargs)
            self._reg_params[name] = param

    def _collect_params_with_prefix(self, prefix=""):
        """Structural names as MXNet 1.x gives a SymbolBlock's parameters: their names less the common
        (character-wise) prefix of all of them, e.g. 'conv0_weight' for 'resnetv10_conv0_weight'."""
        if prefix:
            prefix += "."
        strip = len(os.path.commonprefix(list(self._reg_params)))
        return {prefix + name[strip:]: param for name, param in self._reg_params.items()}

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False, ignore_extra=False):
        """Loads an exported model: `symbol_file` (-symbol.json) and optionally `param_file` (.params with
        arg:/aux: keys, loaded with cast_dtype=True, dtype_source='saved')."""
        sym = symbol_module.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        try:
            block = SymbolBlock(sym, list(input_names))
        except MXNetError as err:
            raise MXNetError(f"SymbolBlock.imports: {symbol_file!r}: {err}") from None
        if param_file is not None:
            block.collect_params().load(param_file, ctx, allow_missing, ignore_extra, "", cast_dtype=True,
                                        dtype_source="saved")
        return block

    # ------------------------------------------------------------------ running
    def _finish_shapes(self, args):
        pending = [p for p in self._reg_params.values() if p._data is None]
        if not pending:
            return
        shapes = {n: tuple(a.shape) for n, a in zip(self._input_names, args)}
        arg_shapes, _, aux_shapes = self._symbol.infer_shape_partial(**shapes)
        by_name = dict(zip(self._symbol.list_arguments() + self._symbol.list_auxiliary_states(),
                           arg_shapes + aux_shapes))
        for p in pending:
            shape = by_name.get(p.name)
            if known(shape):
                p.shape = shape
            if p._deferred_init is not None:
                try:
                    p._finish_deferred_init()
                except DeferredInitializationError:
                    raise DeferredInitializationError(
                        f"SymbolBlock: cannot infer the shape of parameter {p.name!r} from inputs "
                        f"{shapes}; load its value or give the variable a __shape__") from None

    def _run_forward(self, args, kwargs):
        # The graph always runs compiled, hybridized or not (as MXNet's SymbolBlock runs its CachedOp), so there
        # is no trace of forward to make: hybridize() only chose the options of the plans made from now on.
        if kwargs:
            raise MXNetError(f"SymbolBlock takes its inputs ({', '.join(self._input_names)}) by position, got "
                             f"keyword arguments {sorted(kwargs)}")
        if not cached_graph.TRACING.get() and "Symbol" in cached_graph.input_kinds(args, kwargs):
            return cached_graph.call_symbolic(self, args, kwargs)      # the graph composed on the given Symbols
        return self.forward(*args)

    def forward(self, *args):
        if len(args) != len(self._input_names):
            raise MXNetError(f"SymbolBlock takes {len(self._input_names)} input(s) ({', '.join(self._input_names)})"
                             f", got {len(args)}")
        if cached_graph.TRACING.get() and all(isinstance(a, symbol_module.Symbol) and len(a) == 1 for a in args):
            outs = _compose(self._symbol, {n: a._outputs[0] for n, a in zip(self._input_names, args)})
            return symbol_module.Symbol(outs) if len(outs) == 1 else [symbol_module.Symbol([e]) for e in outs]
        for name, a in zip(self._input_names, args):
            if not isinstance(a, NDArray):
                raise MXNetError(f"SymbolBlock input {name!r} must be an NDArray, got {type(a).__name__}")
        self._finish_shapes(args)
        key = cached_graph.signature(list(args), None)
        graph = self._cached_graphs.get(key)
        if graph is None:
            graph = self._cached_graphs[key] = cached_graph.CachedGraph.from_symbol(
                self._symbol, self._input_names, self._reg_params, args, self._flags)
        self._last_graph = graph          # what export() writes
        outs = graph.run(self, args)
        return outs[0] if len(outs) == 1 else outs

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise MXNetError("SymbolBlock runs its graph directly; call the block")

    def infer_shape(self, *args):
        self._finish_shapes(args)

    # ------------------------------------------------------------------ text
    def __repr__(self):
        """MXNet 1.x's form: 'SymbolBlock(\n<Symbol name> : n_inputs -> n_outputs\n)' (describe() lists more)."""
        sym = self._symbol
        return f"{type(self).__name__}(\n{sym!r} : {len(self._input_names)} -> {len(sym.list_outputs())}\n)"

    def describe(self):
        """The graph's size, inputs, outputs and every parameter with its shape, dtype and kind."""
        sym = self._symbol
        n_ops = sum(1 for n in sym._nodes() if n.op is not None)
        lines = [f"SymbolBlock({n_ops} ops)", f"  inputs: {', '.join(self._input_names) or '-'}",
                 f"  outputs: {', '.join(sym.list_outputs())}"]
        aux = set(sym.list_auxiliary_states())
        total = 0
        lines.append("  params:")
        for name, p in self._reg_params.items():
            shape = p.shape
            size = int(np.prod(shape)) if shape is not None and all(shape) else None
            total += size or 0
            shape_text = "(" + ", ".join("?" if d == 0 else str(d) for d in shape) + \
                ("," if len(shape) == 1 else "") + ")" if shape is not None else "?"
            kind = "aux" if name in aux else ("" if p.grad_req != "null" else "frozen")
            lines.append(f"    {name} {shape_text} {np.dtype(p.dtype).name}" + (f" [{kind}]" if kind else ""))
        lines.append(f"  parameter count: {total}")
        return "\n".join(lines)
