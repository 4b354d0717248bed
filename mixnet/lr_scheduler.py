"""mx.lr_scheduler: learning-rate schedules, called as ``sched(num_update) -> lr``.

Schedulers are stateful, as in MXNet 1.x: FactorScheduler and MultiFactorScheduler lower ``base_lr`` in place
as updates pass (so calling with a smaller ``num_update`` later does not raise the rate again), and
Poly/Cosine store the last rate computed in ``base_lr`` and keep returning it once ``num_update`` passes
``max_update``. During the first ``warmup_steps`` updates every scheduler returns the warmup rate, which goes
from ``warmup_begin_lr`` to the ``base_lr`` given at construction ('linear') or stays at ``warmup_begin_lr``
('constant').

    sched = mx.lr_scheduler.FactorScheduler(step=100, factor=0.5, base_lr=0.1, warmup_steps=10)
    [sched(i) for i in (0, 5, 10, 101, 201)]   # 0.0, 0.05, 0.1, 0.05, 0.025
"""
import logging
from math import cos, pi

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler", "CosineScheduler"]

_LOG = logging.getLogger(__name__)     # the rate changes, at INFO (MXNet logged them to the root logger)


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


class LRScheduler:
    """Base class: holds ``base_lr`` and the warmup settings; subclasses implement ``__call__``."""

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        self.base_lr = base_lr
        if not _is_int(warmup_steps):
            raise AssertionError(f"warmup_steps must be an int, got {warmup_steps!r}")
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError("Base lr has to be higher than warmup_begin_lr "
                             f"(base_lr={base_lr}, warmup_begin_lr={warmup_begin_lr})")
        if self.warmup_steps < 0:
            raise ValueError(f"Warmup steps has to be positive or 0, got {warmup_steps}")
        if warmup_mode not in ("linear", "constant"):
            raise ValueError(f"Supports only linear and constant modes of warmup, got {warmup_mode!r}")
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        if num_update >= self.warmup_steps:
            raise AssertionError(f"num_update {num_update} is past the {self.warmup_steps} warmup steps")
        if self.warmup_mode == "linear":
            increase = (self.warmup_final_lr - self.warmup_begin_lr) * float(num_update) / float(self.warmup_steps)
            return self.warmup_begin_lr + increase
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        raise ValueError("Invalid warmup mode %s" % self.warmup_mode)

    def __call__(self, num_update):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__()")


# FactorScheduler applies at most this many passed steps one by one (as MXNet does), then all the rest at once.
_MAX_CATCH_UP = 1000


def _check_factor(factor):
    if factor > 1.0:
        raise ValueError(f"Factor must be no more than 1 to make lr reduce, got {factor}")


class FactorScheduler(LRScheduler):
    """lr = base_lr * factor ** floor((num_update - 1) / step), floored at ``stop_factor_lr``.

    The rate changes once ``num_update > count + step`` (so at update ``step + 1``, ``2 * step + 1``, ...).
    """

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError(f"Schedule step must be greater or equal than 1 round, got {step}")
        _check_factor(factor)
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # a loop, not an if: resuming at a large num_update applies every step passed
        while num_update > self.count + self.step:
            if self.base_lr == self.stop_factor_lr or self.factor == 1 or \
                    num_update - self.count > _MAX_CATCH_UP * self.step:
                self._catch_up(num_update)
                break
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                _LOG.info("Update[%d]: now learning rate arrived at %0.5e, will not change in the future",
                             num_update, self.base_lr)
            else:
                _LOG.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr

    def _catch_up(self, num_update):
        """All the steps passed at once (the loop's result up to rounding; the rate no longer changes or a restored
        count lags num_update by more than _MAX_CATCH_UP steps): never a loop as long as num_update is large."""
        steps = (num_update - self.count - 1) // self.step
        self.count += steps * self.step
        if self.base_lr != self.stop_factor_lr and self.factor != 1:
            try:
                lowered = self.base_lr * self.factor ** steps
            except OverflowError:
                lowered = 0.0
            self.base_lr = max(lowered, self.stop_factor_lr)
            _LOG.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` once ``num_update`` passes each entry of the increasing list ``step``."""

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or len(step) < 1:
            raise AssertionError(f"step must be a non-empty list of update counts, got {step!r}")
        for i, _step in enumerate(step):
            if i != 0 and step[i] <= step[i - 1]:
                raise ValueError(f"Schedule step must be an increasing integer list, got {step}")
            if _step < 1:
                raise ValueError(f"Schedule step must be greater or equal than 1 round, got {step}")
        _check_factor(factor)
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            _LOG.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class _DecayScheduler(LRScheduler):
    def __init__(self, max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not _is_int(max_update):
            raise AssertionError(f"max_update must be an int, got {max_update!r}")
        if max_update < 1:
            raise ValueError(f"maximum number of updates must be strictly positive, got {max_update}")
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def _decay(self, progress):
        raise NotImplementedError(f"{type(self).__name__} must implement _decay()")

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            progress = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * self._decay(progress)
        return self.base_lr


class PolyScheduler(_DecayScheduler):
    """lr = final_lr + (base_lr - final_lr) * (1 - t / T) ** pwr, t counted from the end of warmup,
    T = max_update - warmup_steps; constant after ``max_update``."""

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.power = pwr

    def _decay(self, progress):
        return pow(1 - progress, self.power)


class CosineScheduler(_DecayScheduler):
    """lr = final_lr + (base_lr - final_lr) * (1 + cos(pi * t / T)) / 2, t counted from the end of warmup,
    T = max_update - warmup_steps; constant after ``max_update``."""

    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)

    def _decay(self, progress):
        return (1 + cos(pi * progress)) / 2
