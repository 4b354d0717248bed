"""Devices. `mx.cpu()` computes with numpy, `mx.gpu(i)` with cupy; this module is the only place that knows."""
import contextvars
import functools

import numpy as np

from ._source import warn
from .base import MXNetError

__all__ = ["Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus", "array_module"]


class _ContextMeta(type):
    """Gives the class MXNet 1.x's deprecated `Context.default_ctx` property (get and set): the current default
    device of this thread (a context variable, like `with ctx:`)."""

    @property
    def default_ctx(cls):
        warn("Context.default_ctx is deprecated (as in MXNet); use mx.current_context()", DeprecationWarning)
        return _CURRENT.get()

    @default_ctx.setter
    def default_ctx(cls, ctx):
        warn("Context.default_ctx is deprecated (as in MXNet); use `with ctx:`", DeprecationWarning)
        if not isinstance(ctx, Context):
            raise MXNetError(f"Context.default_ctx must be a Context, got {type(ctx).__name__}")
        _CURRENT.set(ctx)


class Context(metaclass=_ContextMeta):
    """A device: type ('cpu' or 'gpu') and id. `with mx.cpu(1):` makes it the default for new arrays."""
    __slots__ = ("device_type", "device_id", "_token", "_xp")
    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {v: k for k, v in devtype2str.items()}

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if device_type not in self.devstr2type:
            raise MXNetError(f"unknown device type {device_type!r} (expected one of {list(self.devstr2type)})")
        self.device_type = device_type
        self.device_id = int(device_id)
        self._token = None
        self._xp = np if device_type != "gpu" else None

    @property
    def xp(self):
        """The array module computing on this device (numpy, or cupy once a GPU is confirmed)."""
        xp = self._xp
        if xp is None:
            xp = self._xp = array_module(self)
        return xp

    @property
    def device_typeid(self):
        return self.devstr2type[self.device_type]

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_type == other.device_type
                and self.device_id == other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    __str__ = __repr__

    def __enter__(self):
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc):
        _CURRENT.reset(self._token)
        self._token = None

    def __reduce__(self):
        # by device, not by state: the cached array module (_xp) cannot be pickled and is looked up again
        return (_context, (self.device_type, self.device_id))

    def empty_cache(self):
        """Frees cached device memory (cupy's pool on a GPU; nothing to do on the CPU)."""
        if self.device_type == "gpu":
            array_module(self).get_default_memory_pool().free_all_blocks()


_CPU0 = Context("cpu", 0)
_CURRENT = contextvars.ContextVar("mixnet_context", default=_CPU0)


def _context(device_type, device_id):
    """An unpickled Context: cpu(0) is the shared instance (identity makes the dispatcher's device check quick)."""
    return cpu() if (device_type, device_id) == ("cpu", 0) else Context(device_type, device_id)


def cpu(device_id=0):
    return _CPU0 if device_id == 0 else Context("cpu", device_id)


def cpu_pinned(device_id=0):
    return Context("cpu_pinned", device_id)


def gpu(device_id=0):
    return Context("gpu", device_id)


def current_context():
    return _CURRENT.get()


@functools.lru_cache(maxsize=None)
def _cupy():
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def num_gpus():
    cp = _cupy()
    if cp is None:
        return 0
    try:
        return cp.cuda.runtime.getDeviceCount()
    except Exception:  # a cupy without a driver behind it reports no devices
        return 0


def array_module(ctx):
    """numpy for CPU contexts, cupy for GPU ones; a clear error where no GPU is usable."""
    if ctx.device_type != "gpu":
        return np
    if num_gpus() <= ctx.device_id:
        raise MXNetError(f"{ctx} is not available: found {num_gpus()} GPU(s) "
                         "(install the 'gpu' extra and check the CUDA driver)")
    return _cupy()
