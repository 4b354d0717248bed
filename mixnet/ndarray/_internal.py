"""`mx.nd._internal`: the registry's ops whose MXNet names start with an underscore (`_plus_scalar`,
`_crop_assign`, `_onehot_encode`, ...), under those full names, as MXNet scripts call them."""
from ..ops import registry as _registry
from .register import make_function as _make_function


def _build():
    names = {}
    for op in _registry.all_ops():
        function = None
        for name in (op.name,) + tuple(op.aliases):
            if name.startswith("_") and not name.startswith("__"):
                function = function or _make_function(op)
                names[name] = function
    return names


globals().update(_build())
