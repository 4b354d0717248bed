"""`mx.sym` / `mx.symbol`: graphs of registry ops, MXNet's `-symbol.json` format, and an executor.

One function per registry op (`mx.sym.FullyConnected`, `mx.sym.softmax`, ...), generated from the registry as
`mx.nd`'s are; `var`/`Variable`, `Group`, `load`, `load_json`. Symbol arithmetic broadcasts (unlike MXNet's).
"""
from . import graph, json_io, infer, executor  # noqa: F401
from .symbol import Symbol, var, Variable, Group, load, load_json, fromjson, build_functions as _build  # noqa: F401
from .executor import Executor  # noqa: F401
from .recorded import symbol_of as _symbol_of
from .. import autograd as _autograd

_autograd.GET_SYMBOL = _symbol_of

_build(globals())

from . import contrib, linalg, random  # noqa: E402,F401  (after the op functions they use)
from . import sparse  # noqa: E402,F401
from . import image  # noqa: E402,F401


def zeros(shape, dtype=None, **kwargs):
    return globals()["_zeros"](shape=shape, dtype=dtype, **kwargs)


def ones(shape, dtype=None, **kwargs):
    return globals()["_ones"](shape=shape, dtype=dtype, **kwargs)


def full(shape, val, dtype=None, **kwargs):
    return globals()["_full"](shape=shape, value=val, dtype=dtype, **kwargs)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    return globals()["_arange"](start=start, stop=stop, step=step, repeat=repeat, infer_range=infer_range,
                                name=name, dtype=dtype)


from ..ops.histogram import histogram_function as _histogram_function  # noqa: E402

histogram = _histogram_function(Symbol, globals()["_histogram"])

import builtins as _builtins  # noqa: E402  (the op functions above shadow max/min/pow)


def _symbol_or_scalar(array_op, scalar_op, rscalar_op, python_fn):
    """MXNet's mx.sym.maximum / minimum / power / hypot: Symbols or Python numbers on either side."""
    def function(left, right):
        left_sym, right_sym = isinstance(left, Symbol), isinstance(right, Symbol)
        if left_sym and right_sym:
            return globals()[array_op](left, right)
        if left_sym:
            return globals()[scalar_op](left, scalar=float(right))
        if right_sym:
            return globals()[rscalar_op](right, scalar=float(left))
        return python_fn(left, right)
    function.__name__ = array_op.replace("broadcast_", "")
    return function


maximum = _symbol_or_scalar("broadcast_maximum", "_maximum_scalar", "_maximum_scalar", _builtins.max)
minimum = _symbol_or_scalar("broadcast_minimum", "_minimum_scalar", "_minimum_scalar", _builtins.min)
power = pow = _symbol_or_scalar("broadcast_power", "_power_scalar", "_rpower_scalar", lambda a, b: a ** b)
hypot = _symbol_or_scalar("broadcast_hypot", "_hypot_scalar", "_hypot_scalar", lambda a, b: (a * a + b * b) ** .5)
from . import op, _internal  # noqa: E402,F401  (mxnet.symbol.op / symbol._internal: op functions by name)
