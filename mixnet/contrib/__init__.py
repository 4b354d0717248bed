"""`mx.contrib`: MXNet 1.x's experimental namespace, as far as user code still reaches it: `autograd` (the
pre-1.0 autograd API), `text` (token counting and vocabularies), and `ndarray`/`nd`, `symbol`/`sym` (MXNet's
older paths of `mx.nd.contrib` / `mx.sym.contrib`: the same modules)."""
from . import autograd, text  # noqa: F401
from . import ndarray, symbol  # noqa: F401
from . import ndarray as nd, symbol as sym  # noqa: F401
