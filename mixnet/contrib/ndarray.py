"""`mx.contrib.ndarray`: the `_contrib_*` ops on NDArrays, as in `mx.nd.contrib`."""
from ..ndarray.register import build_functions as _build_functions

_build_functions(globals(), prefix="_contrib_")
