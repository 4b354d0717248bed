"""`mx.nd.CachedOp(sym, flags)`: a Symbol made callable on NDArrays, compiled once per input signature.

MXNet users build one from a Symbol and call it with every input of the symbol (arguments then auxiliary states,
in `sym.list_inputs()` order), like a fused op; calls inside `autograd.record()` are differentiable. It is a
`SymbolBlock` whose inputs are all the symbol's inputs (it owns no parameters), hybridized with the flags.
It sits above mx.nd (it runs Gluon), so mx.nd does not import it: mixnet's __init__ puts it in mx.nd."""
from ..base import MXNetError
from ..gluon.symbol_block import SymbolBlock
from ..symbol import var

# MXNet's CachedOp flags. static_alloc / static_shape are hybridize()'s; the rest only tune MXNet's scheduling
# and memory (which inputs are data or parameters, how many ops a bulk holds), nothing mixnet needs to know.
_HYBRIDIZE_FLAGS = ("static_alloc", "static_shape")
_SCHEDULING_FLAGS = ("data_indices", "param_indices", "forward_bulk_size", "backward_bulk_size", "inline_limit",
                     "is_dynamic")


def _flag_value(value):
    if isinstance(value, str):
        if value.lower() in ("true", "1"):
            return True
        if value.lower() in ("false", "0"):
            return False
    return value


class CachedOp:
    """Calls a Symbol on NDArrays: `CachedOp(sym)(*inputs, out=None)` -> NDArray, or a list for several outputs."""

    def __init__(self, sym, flags=()):
        options = {}
        for key, value in dict(flags).items():
            if key in _HYBRIDIZE_FLAGS:
                options[key] = bool(_flag_value(value))
            elif key not in _SCHEDULING_FLAGS:
                raise MXNetError(f"CachedOp: unknown flag {key!r} (known: {', '.join(_HYBRIDIZE_FLAGS + _SCHEDULING_FLAGS)})")
        self._input_names = sym.list_inputs()
        self._block = SymbolBlock(sym, [var(name) for name in self._input_names])
        self._block.hybridize(**options)
        self._num_outputs = len(sym.list_outputs())

    def __call__(self, *args, out=None, default_ctx=None):
        if len(args) != len(self._input_names):
            raise MXNetError(f"CachedOp: the symbol takes {len(self._input_names)} inputs "
                             f"{self._input_names}, got {len(args)}")
        result = self._block(*args)
        outputs = list(result) if isinstance(result, (list, tuple)) else [result]
        if out is not None:
            targets = list(out) if isinstance(out, (list, tuple)) else [out]
            if len(targets) != len(outputs):
                raise MXNetError(f"CachedOp: out= has {len(targets)} arrays for {len(outputs)} outputs")
            for target, value in zip(targets, outputs):
                target[:] = value
            outputs = targets
        return outputs[0] if self._num_outputs == 1 else outputs
