"""`mx.contrib`: MXNet 1.x's older home of the contrib operators, `mx.contrib.ndarray` / `mx.contrib.symbol`
(also `nd` / `sym`), which hold the same `_contrib_*` registry ops as `mx.nd.contrib` / `mx.sym.contrib`."""
from . import ndarray, symbol  # noqa: F401
from . import ndarray as nd, symbol as sym  # noqa: F401
