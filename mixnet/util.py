"""`mx.util`: the NumPy-semantics switches of MXNet 1.x and small environment helpers.

mixnet implements MXNet 1.x's legacy semantics only (no `mx.np`, no np-shape mode where 0 is a real size and
-1 unknown). The queries answer False; turning the modes *off* works; turning them on raises MXNetError rather
than pretending.
"""
import functools
import os

from .base import MXNetError

__all__ = ["is_np_array", "is_np_shape", "set_np_shape", "set_np", "reset_np", "np_shape", "np_array",
           "use_np_shape", "use_np_array", "use_np", "getenv", "setenv", "get_gpu_count", "makedirs"]

_UNSUPPORTED = ("mixnet implements MXNet 1.x's legacy array semantics only; NumPy-compatible {what} (mx.np / "
                "mx.npx.set_np) is not available")


def is_np_array():
    return False


def is_np_shape():
    return False


def set_np_shape(active):
    """Only False is accepted; returns the previous state (always False)."""
    if active:
        raise MXNetError(_UNSUPPORTED.format(what="shape semantics"))
    return False


def set_np(shape=True, array=True, dtype=False):
    if shape or array or dtype:
        raise MXNetError(_UNSUPPORTED.format(what="semantics"))


def reset_np():
    """Back to legacy semantics: what mixnet always uses."""


class _Mode:
    def __init__(self, active, what):
        if active:
            raise MXNetError(_UNSUPPORTED.format(what=what))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def np_shape(active=True):
    return _Mode(active, "shape semantics")


def np_array(active=True):
    return _Mode(active, "arrays")


def _raising_decorator(what):
    def decorator(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            raise MXNetError(_UNSUPPORTED.format(what=what) + f" (needed by {func.__name__})")
        return wrapper
    return decorator


use_np_shape = _raising_decorator("shape semantics")
use_np_array = _raising_decorator("arrays")


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
    from .context import num_gpus
    return num_gpus()


def makedirs(d):
    os.makedirs(os.path.expanduser(d), exist_ok=True)
