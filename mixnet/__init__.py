"""mixnet: an imperative-first tensor library with MXNet 1.x Gluon's API, on numpy (CPU) and cupy (GPU).

    import mixnet as mx
    x = mx.nd.array([[1, 2], [3, 4]]); x.attach_grad()
    with mx.autograd.record():
        y = (x * x).sum()
    y.backward(); x.grad   # 2 * x
"""
__version__ = "0.1.0"

from . import base  # noqa: F401
from . import _logging  # noqa: F401  (the "mixnet" logger's NullHandler, before any module logs)
from .base import MXNetError  # noqa: F401
from . import context  # noqa: F401
from .context import Context, cpu, gpu, cpu_pinned, current_context, num_gpus  # noqa: F401
from . import ops  # noqa: F401  (registers every operator)
from . import symbol  # noqa: F401  (before mx.nd, whose functions hand Symbol arguments to it)
from . import ndarray  # noqa: F401
from . import ndarray as nd  # noqa: F401
from . import autograd  # noqa: F401
from . import random  # noqa: F401
from . import name, attribute, util, runtime  # noqa: F401
from .util import (is_np_shape, set_np_shape, np_shape, use_np_shape, is_np_array, np_array,  # noqa: F401
                   use_np_array, use_np)  # top-level names, as MXNet's __init__ has them
from . import initializer  # noqa: F401
from . import initializer as init  # noqa: F401
from . import metric, lr_scheduler, optimizer, kvstore  # noqa: F401
from . import kvstore as kv  # noqa: F401
from . import kvstore_dist  # noqa: F401  (registers the 'dist*' store types with kv.create)
from . import io, recordio  # noqa: F401
from . import symbol as sym  # noqa: F401
from . import gluon  # noqa: F401
from . import numpy, numpy_extension  # noqa: F401  (mx.np / mx.npx: present, every name says it is missing)
from . import numpy as np, numpy_extension as npx  # noqa: F401
from . import operator  # noqa: F401  (Python custom ops: registers Custom, adds nd.Custom / sym.Custom)
from . import model, callback, module  # noqa: F401  (the legacy Module API: mx.mod, mx.model, mx.callback)
from . import rnn  # noqa: F401  (mx.rnn: the legacy symbolic RNN cells)
from . import module as mod  # noqa: F401
from . import image, image as img  # noqa: F401  (mx.image / mx.img)
from . import profiler  # noqa: F401  (mx.profiler: per-op timing, Chrome trace)
from . import contrib  # noqa: F401  (mx.contrib.autograd, mx.contrib.text, mx.contrib.nd / sym)
from . import visualization, visualization as viz  # noqa: F401  (mx.viz: print_summary, plot_network)

# Public names MXNet gives a lower module whose code sits above it: defined where they belong, exported here.
from .ndarray.cached_op import CachedOp as _CachedOp  # noqa: E402
from .symbol.recorded import get_symbol as _get_symbol  # noqa: E402
from .rnn.rnn_cell import FusedRNN as _FusedRNN  # noqa: E402
from .ndarray import random as _nd_random  # noqa: E402

ndarray.CachedOp = ndarray._namespace.CachedOp = ndarray.op.CachedOp = _CachedOp  # runs a Symbol through Gluon
autograd.get_symbol = _get_symbol                                # the recorded tape as a Symbol (the graph layer)
initializer.FusedRNN = _FusedRNN                                 # unpacks mx.rnn.FusedRNNCell's fused weights
vars(random).update({attr: value for attr, value in vars(_nd_random).items()       # mx.random.uniform & co.
                     if not attr.startswith("_") and callable(value) and not isinstance(value, type)})


def __getattr__(attr):
    # mx.test_utils sits above the whole package (it uses mx.nd, mx.sym, mx.gluon ...): it is loaded on first use
    if attr == "test_utils":
        import importlib
        return importlib.import_module(".test_utils", __name__)   # (while it loads, sys.modules has it)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
