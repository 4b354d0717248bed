"""`mx.sym._internal`: the registry's ops whose MXNet names start with an underscore (`_plus_scalar`, `_zeros`,
...) as symbol functions, under those full names (the same objects as `mx.sym.<name>`)."""
from .. import symbol as _sym
from ..ops import registry as _registry

globals().update({name: vars(_sym)[name] for op in _registry.all_ops() for name in (op.name,) + tuple(op.aliases)
                  if name.startswith("_") and not name.startswith("__") and name in vars(_sym)})
