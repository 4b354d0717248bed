"""`mx.nd.linalg`: the registry ops named `_linalg_*`."""
from .register import build_functions as _build_functions

_build_functions(globals(), prefix="_linalg_")
