"""`mx.contrib`: MXNet 1.x's experimental namespace, as far as user code still reaches it: `autograd` (the
pre-1.0 autograd API), `text` (token counting and vocabularies), and `ndarray`/`nd`, `symbol`/`sym` (aliases of
`mx.nd.contrib` / `mx.sym.contrib`)."""
from . import autograd, text  # noqa: F401
from ..ndarray import contrib as ndarray, contrib as nd  # noqa: F401
from ..symbol import contrib as symbol, contrib as sym  # noqa: F401
