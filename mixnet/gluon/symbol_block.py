"""`SymbolBlock`: a Gluon block that runs a Symbol graph, e.g. a model exported by MXNet (`-symbol.json` +
`.params`). Every graph input that is not a data input becomes a Parameter (auxiliary states, such as BatchNorm's
running statistics, get grad_req 'null'). The forward runs the graph compiled, as a hybridized block's does
(gluon/cached_op.py: one plan per input signature, one tape node per call), so gradients with respect to inputs
and parameters work as for any block."""
import numpy as np

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..serialization import DTYPE_CODES
from .. import symbol as symbol_module
from ..symbol.infer import known
from ..ops.attrs import parse_shape
from . import cached_graph
from .block import HybridBlock
from .parameter import DeferredInitializationError, ParameterDict

__all__ = ["SymbolBlock"]


def _as_symbol_list(x, what):
    items = list(x) if isinstance(x, (list, tuple)) else [x]
    for s in items:
        if not isinstance(s, symbol_module.Symbol):
            raise MXNetError(f"SymbolBlock: {what} must be Symbols, got {type(s).__name__}")
    return items


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
        for name in graph_inputs:
            if name in names:
                continue
            raw = nodes[name].raw
            kwargs = {"grad_req": "null" if name in aux else "write", "allow_deferred_init": True}
            if "__shape__" in raw:
                kwargs["shape"] = parse_shape(raw["__shape__"])
            if "__dtype__" in raw:
                kwargs["dtype"] = DTYPE_CODES[int(raw["__dtype__"])]
            if "__init__" in raw:
                kwargs["init"] = raw["__init__"]
            param = self._params.get(name, **kwargs)
            self._reg_params[name] = param

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False, ignore_extra=False):
        """Loads an exported model: `symbol_file` (-symbol.json) and optionally `param_file` (.params with
        arg:/aux: keys, loaded with cast_dtype=True, dtype_source='saved')."""
        sym = symbol_module.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        block = SymbolBlock(sym, list(input_names))
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

    def forward(self, *args):
        if len(args) != len(self._input_names):
            raise MXNetError(f"SymbolBlock takes {len(self._input_names)} input(s) ({', '.join(self._input_names)})"
                             f", got {len(args)}")
        for name, a in zip(self._input_names, args):
            if not isinstance(a, NDArray):
                raise MXNetError(f"SymbolBlock input {name!r} must be an NDArray, got {type(a).__name__}")
        self._finish_shapes(args)
        key = cached_graph.signature(list(args), None)
        graph = self._cached_graphs.get(key)
        if graph is None:
            graph = self._cached_graphs[key] = cached_graph.CachedGraph.from_symbol(
                self._symbol, self._input_names, self._reg_params, args, self._flags)
        outs = graph.run(self, args)
        return outs[0] if len(outs) == 1 else outs

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise MXNetError("SymbolBlock runs its graph directly; call the block")

    def infer_shape(self, *args):
        self._finish_shapes(args)

    # ------------------------------------------------------------------ text
    def __repr__(self):
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
