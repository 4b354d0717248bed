"""`mx.sym._internal`: the registry's ops whose MXNet names start with an underscore (`_plus_scalar`, `_zeros`,
...) as symbol functions, under those full names (the same objects as `mx.sym.<name>`)."""
from ..ops import registry as _registry
from .symbol import make_function as _make_function

globals().update({name: _make_function(op, name) for op in _registry.all_ops() for name in (op.name,) + tuple(op.aliases)
                  if name.startswith("_") and not name.startswith("__")})
