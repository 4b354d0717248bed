"""What `mx.sym` holds, but for its `sparse` submodule, built below the package so that `mx.sym.sparse` can fall
back to it without importing the package that imports it."""
from . import graph, json_io, infer, executor  # noqa: F401
from .symbol import Symbol, var, Variable, Group, load, load_json, fromjson, build_functions as _build  # noqa: F401
from .executor import Executor  # noqa: F401

_build(globals())

from . import contrib, linalg, random  # noqa: E402,F401  (after the op functions they use)
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

from .._operator_table import functional as _functional  # noqa: E402

for _name in ("maximum", "minimum", "power", "hypot"):     # Symbols or numbers on either side
    globals()[_name] = _functional(_name, Symbol, globals())
pow = globals()["power"]  # MXNet's alias
from . import op, _internal  # noqa: E402,F401  (mxnet.symbol.op / symbol._internal: op functions by name)
