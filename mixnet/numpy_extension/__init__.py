"""`mx.npx`: MXNet's NumPy-extension operators. Not implemented in mixnet yet: the module exists so that code
importing it loads, and every attribute raises `NumpyNotImplemented` (an MXNetError and AttributeError) naming
it. `mx.util.set_np` / `is_np_array` report NumPy semantics as off."""
from .._np_missing import NumpyNotImplemented, module_getattr  # noqa: F401

__all__ = []
__getattr__ = module_getattr("mx.npx", "use the mx.nd operators (MXNet 1.x NDArray semantics) instead")
