"""`mxnet.symbol.op`: MXNet's module of generated symbol functions (`from mxnet.symbol.op import Convolution`):
every public (not underscore) op under its name and aliases, the same objects as `mx.sym.<name>`, looked up when
asked for (see mixnet/ndarray/op.py)."""
from .. import symbol as _sym
from ..ndarray.op import _op_module_attributes

__getattr__, __dir__ = _op_module_attributes(_sym, "mxnet.symbol.op")
