"""`mxnet.symbol.op`: MXNet's module of generated symbol functions (`from mxnet.symbol.op import Convolution`):
every public (not underscore) op under its name and aliases, the same objects as `mx.sym.<name>`, looked up when
asked for (see mixnet/ndarray/op.py)."""
from .. import symbol as _sym
from ..ndarray.op import _op_names


def __getattr__(name):
    if name in _op_names(vars(_sym)):
        return getattr(_sym, name)
    raise AttributeError(f"module 'mxnet.symbol.op' has no operator {name!r}")


def __dir__():
    return _op_names(vars(_sym))
