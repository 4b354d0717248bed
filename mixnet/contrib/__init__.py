"""`mx.contrib`: MXNet 1.x's experimental namespace, as far as user code still reaches it — `mx.contrib.autograd`
(the pre-1.0 autograd API), and `mx.contrib.ndarray` / `mx.contrib.symbol` (aliases of `mx.nd.contrib` /
`mx.sym.contrib`)."""
from . import autograd  # noqa: F401
from ..ndarray import contrib as ndarray  # noqa: F401
from ..symbol import contrib as symbol  # noqa: F401

nd = ndarray
sym = symbol
