"""Attribute scopes (MXNet's `mx.attribute.AttrScope`): string attributes attached to everything created
inside a `with AttrScope(ctx_group='dev1'):` block; nested scopes merge, inner values winning."""
import collections
import threading

__all__ = ["AttrScope", "current"]


class AttrScope:
    _current = threading.local()
    _subgraph_names = collections.defaultdict(int)    # control-flow subgraph name -> uses (symbol/control_flow.py)

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError(f"AttrScope: attribute {key!r} must be a string, got {type(value).__name__}")
        self._attr = dict(kwargs)
        self._old_scope = None

    def get(self, attr):
        """The scope's attributes merged with `attr` (a dict or None; its values win)."""
        if not self._attr:
            return dict(attr) if attr else {}
        merged = dict(self._attr)
        if attr:
            merged.update(attr)
        return merged

    def __enter__(self):
        outer = AttrScope.current()
        self._old_scope = outer
        merged = dict(outer._attr)
        merged.update(self._attr)
        self._attr = merged
        AttrScope._current.value = self
        return self

    def __exit__(self, *exc):
        AttrScope._current.value = self._old_scope
        return False

    @classmethod
    def current(cls):
        scope = getattr(AttrScope._current, "value", None)
        if scope is None:
            scope = AttrScope._current.value = AttrScope()
        return scope


def current():
    return AttrScope.current()
