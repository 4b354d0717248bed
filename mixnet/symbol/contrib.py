"""`mx.sym.contrib`: the registry ops named `_contrib_*`, and control flow (`foreach`, `while_loop`, `cond`),
which build single graph nodes holding subgraphs (see control_flow.py), in mx.sym and while hybridize traces."""
from .control_flow import TRACE_SHAPES, cond, foreach, while_loop  # noqa: F401
from .symbol import build_functions as _build_functions

_build_functions(globals(), prefix="_contrib_")
