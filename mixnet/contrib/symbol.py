"""`mx.contrib.symbol`: the `_contrib_*` ops on Symbols, as in `mx.sym.contrib`."""
from ..symbol.symbol import build_functions as _build_functions

_build_functions(globals(), prefix="_contrib_")
