"""gluon.contrib.data.sampler: IntervalSampler (MXNet 1.x)."""
from ....base import MXNetError
from ...data.sampler import Sampler

__all__ = ["IntervalSampler"]


class IntervalSampler(Sampler):
    """Indices of [0, length) at steps of `interval`: 0, interval, 2*interval, ...; with `rollover` it then
    starts again from 1, 2, ... until every index is visited (IntervalSampler(13, 3) gives 0 3 6 9 12 1 4 7 10 2
    5 8 11), without it stops after the first pass. len() is `length` either way, as in MXNet."""

    def __init__(self, length, interval, rollover=True):
        if not interval <= length:
            raise MXNetError(f"IntervalSampler: interval {interval} must be smaller than or equal to length "
                             f"{length}")
        if interval < 1:
            raise MXNetError(f"IntervalSampler: interval must be at least 1, got {interval}")
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self):
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self):
        return self._length
