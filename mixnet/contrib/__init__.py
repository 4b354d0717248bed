"""`mx.contrib`: the parts of MXNet 1.x's contributed APIs that mixnet has: `text` (token counting and
vocabularies), and `ndarray`/`nd`, `symbol`/`sym` (the contrib ops, as `mx.nd.contrib` / `mx.sym.contrib`)."""
from ..ndarray import contrib as ndarray, contrib as nd  # noqa: F401
from ..symbol import contrib as symbol, contrib as sym  # noqa: F401
from . import text  # noqa: F401
