"""`mxnet.symbol.op`: MXNet's module of generated symbol functions (`from mxnet.symbol.op import Convolution`):
every public (not underscore) op under its name and aliases, the same objects as `mx.sym.<name>`, looked up when
asked for (see mixnet/ndarray/op.py); `Custom` is set here by mixnet/operator.py."""
from ..ndarray.op import op_module_attributes
from .symbol import make_function as _make_function

__getattr__, __dir__ = op_module_attributes("mxnet.symbol.op", globals(), _make_function)
