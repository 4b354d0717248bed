"""`mx.np`: MXNet's NumPy-compatible array API. Not implemented in mixnet yet: the module exists so that code
importing it loads, and every attribute raises `NumpyNotImplemented` (an MXNetError and AttributeError) naming
it. Use `mx.nd` (MXNet 1.x NDArray semantics) instead."""
from .._np_missing import NumpyNotImplemented, module_getattr  # noqa: F401

__all__ = []
__getattr__ = module_getattr("mx.np", "use mx.nd (MXNet 1.x NDArray semantics) instead")
