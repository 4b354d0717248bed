"""Automatic names for blocks and symbols: `dense0`, `dense1`, ... counted per hint (MXNet's `mx.name`).

    with mx.name.Prefix("net_"):
        mx.name.NameManager.current().get(None, "dense")   # 'net_dense0'
"""
import threading

__all__ = ["NameManager", "Prefix", "current"]


class NameManager:
    """Hands out names: an explicit name is returned as is, otherwise `hint` plus a per-hint counter.
    Used as a context manager it becomes the current manager of this thread until the scope ends."""
    _current = threading.local()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return f"{hint}{count}"

    def __enter__(self):
        self._old_manager = NameManager.current()
        NameManager._current.value = self
        return self

    def __exit__(self, *exc):
        NameManager._current.value = self._old_manager
        self._old_manager = None
        return False

    @classmethod
    def current(cls):
        """This thread's current manager (a fresh default one per thread)."""
        manager = getattr(NameManager._current, "value", None)
        if manager is None:
            manager = NameManager._current.value = NameManager()
        return manager


class Prefix(NameManager):
    """A NameManager that puts `prefix` in front of every name it makes (explicit names too, as MXNet)."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def current():
    return NameManager.current()
