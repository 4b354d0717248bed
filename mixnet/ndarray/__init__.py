"""`mx.nd`: NDArray and one function per registry op, with MXNet 1.x names and semantics.

They are built in `_namespace.py`, which `sparse` falls back to; the package holds the same objects plus `sparse`."""
from . import _namespace

globals().update({name: value for name, value in vars(_namespace).items() if not name.startswith("__")})

from . import sparse  # noqa: E402,F401
