"""`mx.sym.contrib`: the registry ops named `_contrib_*`, and control flow (`foreach`, `while_loop`, `cond`),
which build single graph nodes holding subgraphs (see control_flow.py), in mx.sym and while hybridize traces."""
from ..ndarray.contrib import zipfian_candidates as _zipfian_candidates
from . import op as _op, random as _random
from .control_flow import TRACE_SHAPES, cond, foreach, while_loop  # noqa: F401
from .symbol import build_functions as _build_functions

_build_functions(globals(), prefix="_contrib_")


def rand_zipfian(true_classes, num_sampled, range_max):
    """Symbolic form of mx.nd.contrib.rand_zipfian: a list of three Symbols (sampled classes, expected counts
    of the true classes, expected counts of the sampled classes)."""
    return list(_zipfian_candidates(_op, _random.uniform, true_classes, num_sampled, range_max))
