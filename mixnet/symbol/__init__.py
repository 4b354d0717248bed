"""`mx.sym` / `mx.symbol`: graphs of registry ops, MXNet's `-symbol.json` format, and an executor.

One function per registry op (`mx.sym.FullyConnected`, `mx.sym.softmax`, ...), generated from the registry as
`mx.nd`'s are; `var`/`Variable`, `Group`, `load`, `load_json`. Symbol arithmetic broadcasts (unlike MXNet's).
"""
from . import _namespace

globals().update({name: value for name, value in vars(_namespace).items() if not name.startswith("__")})

from . import sparse  # noqa: E402,F401  (its fallback is _namespace: the package holds the same objects)
