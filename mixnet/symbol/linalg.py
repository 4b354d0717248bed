"""`mx.sym.linalg`: the registry ops named `_linalg_*`, as Symbol functions."""
from .symbol import build_functions as _build_functions

_build_functions(globals(), prefix="_linalg_")
