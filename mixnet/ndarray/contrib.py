"""`mx.nd.contrib`: the registry ops named `_contrib_*`."""
from .register import build_functions as _build_functions

_build_functions(globals(), prefix="_contrib_")

from . import isnan, isinf, isfinite  # noqa: E402,F401  (MXNet spells these nd.contrib.isnan ...)
from .control_flow import foreach, while_loop, cond  # noqa: E402,F401
from ..optimizer.update_ops import adamw_update  # noqa: E402,F401
