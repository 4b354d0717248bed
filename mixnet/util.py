"""`mx.util`: MXNet 1.x's NumPy-semantics switches and small environment helpers.

np-shape mode (`set_np_shape`, `np_shape()`, `use_np_shape`) is MXNet 1.x's per-thread flag under which legacy
NDArrays and Symbols may be scalars (shape `()`) and have zero-size dimensions, and `-1` marks an unknown
dimension (see mixnet/_shape_mode.py). NumPy array semantics (`mx.np`, `set_np(array=True)`) are not available:
turning them on raises MXNetError rather than pretending.
"""
import functools
import inspect
import os

from ._shape_mode import NP_SHAPE
from .base import MXNetError
from .context import num_gpus

__all__ = ["is_np_array", "is_np_shape", "set_np_shape", "set_np", "reset_np", "np_shape", "np_array",
           "use_np_shape", "use_np_array", "use_np", "getenv", "setenv", "get_gpu_count", "makedirs"]

_UNSUPPORTED = ("mixnet implements MXNet 1.x's legacy arrays only; NumPy-compatible {what} (mx.np / "
                "mx.npx.set_np) is not available")


def is_np_array():
    return False


def is_np_shape():
    """Whether this thread uses np-shape semantics (scalar and zero-size arrays; -1 for unknown dims)."""
    return NP_SHAPE.get()


def set_np_shape(active):
    """Turns np-shape semantics on or off for this thread; returns the previous state."""
    previous = NP_SHAPE.get()
    NP_SHAPE.set(bool(active))
    return previous


def set_np(shape=True, array=True, dtype=False):
    """MXNet's switch for NumPy semantics: only the shape part exists in mixnet."""
    if array or dtype:
        raise MXNetError(_UNSUPPORTED.format(what="arrays" if array else "dtypes"))
    set_np_shape(shape)


def reset_np():
    """Back to legacy semantics."""
    set_np_shape(False)


class _NpShapeScope:
    """`with np_shape(active):` sets the mode for the block and restores the previous one after it."""

    def __init__(self, active=True):
        self._active = bool(active)
        self._previous = []

    def __enter__(self):
        self._previous.append(set_np_shape(self._active))
        return self

    def __exit__(self, *exc):
        set_np_shape(self._previous.pop())
        return False


def np_shape(active=True):
    return _NpShapeScope(active)


class _Unsupported:
    def __init__(self, active, what):
        if active:
            raise MXNetError(_UNSUPPORTED.format(what=what))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def np_array(active=True):
    return _Unsupported(active, "arrays")


def use_np_shape(func):
    """Runs a function (or every method and property of a class) with np-shape semantics on."""
    if inspect.isclass(func):
        for name, member in inspect.getmembers(func, predicate=lambda f: inspect.isfunction(f)
                                               or inspect.ismethod(f) or isinstance(f, property)):
            if isinstance(member, property):
                setattr(func, name, property(use_np_shape(member.__get__), member.__set__, member.__delattr__,
                                             member.__doc__))
            else:
                setattr(func, name, use_np_shape(member))
        return func
    if not callable(func):
        raise TypeError(f"use_np_shape can only decorate classes and callable objects, got {type(func)}")

    @functools.wraps(func)
    def with_np_shape(*args, **kwargs):
        with np_shape(True):
            return func(*args, **kwargs)
    return with_np_shape


def use_np_array(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        raise MXNetError(_UNSUPPORTED.format(what="arrays") + f" (needed by {func.__name__})")
    return wrapper


def use_np(func):
    """No-op (as mx.test_utils.use_np): code decorated with it runs with mixnet's legacy semantics."""
    return func


def getenv(name):
    return os.environ.get(name)


def setenv(name, value):
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def get_gpu_count():
    return num_gpus()


def makedirs(d):
    os.makedirs(os.path.expanduser(d), exist_ok=True)
