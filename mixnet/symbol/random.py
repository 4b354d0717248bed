"""`mx.sym.random`: the registry ops named `_random_*`, as Symbol functions."""
from .symbol import build_functions as _build_functions

_build_functions(globals(), prefix="_random_")
