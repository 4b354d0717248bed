"""What `mx.np` and `mx.npx` say until mixnet has NumPy-semantics arrays: every name is missing, clearly.

The modules exist (MXNet code imports them at module level, e.g. `import mxnet.numpy as _mx_np`), but any
attribute raises `NumpyNotImplemented`, an MXNetError that is also an AttributeError (so `hasattr` is False).
"""
from .base import MXNetError


class NumpyNotImplemented(MXNetError, AttributeError):
    """A name of mx.np / mx.npx (NumPy-semantics arrays), which mixnet does not implement yet."""


def module_getattr(module, hint):
    def __getattr__(name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")   # tools probing dunders
        raise NumpyNotImplemented(
            f"{module}.{name} is not implemented: mixnet does not implement {module} (MXNet's NumPy-semantics "
            f"arrays) yet; {hint}")
    return __getattr__
