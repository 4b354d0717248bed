"""Multi-tensor support: view many parameters' buffers as one flat buffer, so an optimizer step over a group of
parameters is a handful of whole-group numpy (or cupy) operations instead of several per parameter.

`FlatCache.flat(arrays)` returns one contiguous 1-d buffer whose slices *are* the arrays' buffers: the first time
a list of NDArrays is seen, their values are copied into a new flat buffer and each NDArray's `_data` is re-pointed
at its slice (same shape, dtype and values; every later in-place write by backward, zero_grad, set_data, the
optimizer... goes to the flat buffer). Later calls only check, by identity, that every NDArray still uses its
slice; if anything replaced a buffer (Parameter.cast, reset_ctx, attach_grad, loading states), the group is packed
again. Arrays that are views of another NDArray (`_base`) are never packed: callers fall back to per-tensor code.
"""
import operator

__all__ = ["FlatCache", "packable"]

_DATA = operator.attrgetter("_data")


def packable(arrays):
    """True when every array is a plain NDArray (not a view) of the first one's dtype and context."""
    if not arrays:
        return False
    first = arrays[0]
    dtype, ctx = first._data.dtype, first._ctx
    for arr in arrays:
        if arr._base is not None or arr._data.dtype != dtype or arr._ctx != ctx:
            return False
    return True


class _Entry:
    __slots__ = ("flat", "views")

    def __init__(self, flat, views):
        self.flat = flat
        self.views = views


class FlatCache:
    """Flat buffers for lists of NDArrays, keyed by the arrays' identities (at most `capacity` lists kept)."""

    def __init__(self, capacity=32):
        self._entries = {}
        self._capacity = capacity

    def clear(self):
        self._entries.clear()

    def flats(self, *lists):
        """One flat buffer per list of NDArrays (as `flat`), or None when the arrays of all the lists together are
        not packable (one dtype and device, no views): the buffers a group's multi-tensor update runs on. The
        packability is checked only when some list is new or had a buffer replaced."""
        found = list(map(self._packed, lists))
        dtype, ctx, same = found[0] is not None and found[0].dtype, lists[0][0]._ctx, True
        for f, arrays in zip(found, lists):   # a loop, no generator frames: this runs every optimizer step
            if f is None:
                if not packable([arr for arrays in lists for arr in arrays]):
                    return None
                return [self.flat(arrays) for arrays in lists]
            if f.dtype != dtype or (arrays[0]._ctx is not ctx and arrays[0]._ctx != ctx):
                same = False
        return found if same else None

    def _packed(self, arrays):
        """The flat buffer of `arrays` if they still use its slices, else None."""
        entry = self._entries.get(tuple(map(id, arrays)))
        if entry is not None and all(map(operator.is_, map(_DATA, arrays), entry.views)):
            return entry.flat
        return None

    def flat(self, arrays):
        datas = [arr._data for arr in arrays]
        key = tuple(map(id, arrays))
        entry = self._entries.get(key)
        if entry is not None and all(map(operator.is_, datas, entry.views)):
            return entry.flat
        entry = self._pack(arrays, datas)
        if key not in self._entries and len(self._entries) >= self._capacity:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = entry
        return entry.flat

    @staticmethod
    def _pack(arrays, datas):
        xp = arrays[0]._ctx.xp
        total = sum(d.size for d in datas)
        flat = xp.empty((total,), dtype=datas[0].dtype)
        views = []
        offset = 0
        for arr, data in zip(arrays, datas):
            n = data.size
            view = flat[offset:offset + n].reshape(data.shape)
            view[...] = data
            arr._data = view
            views.append(view)
            offset += n
        return _Entry(flat, views)
