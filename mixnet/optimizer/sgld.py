"""SGLD (stochastic gradient Langevin dynamics, Welling & Teh 2011), as MXNet 1.x's `mx.optimizer.SGLD`:
`w += -lr/2 * (clip(rescale_grad*grad) + wd*w) + N(0, sqrt(lr))`. The noise comes from `mx.nd.random.normal`
with the weight's shape, dtype and device, so `mx.random.seed` reproduces it exactly as it does MXNet's."""
import math

import numpy as np

from ..ndarray import random as _random
from .optimizer import Optimizer, _rescaled, _xp_of, register


@register
class SGLD(Optimizer):
    """Stochastic Gradient Langevin Dynamics: a gradient step of lr/2 plus Gaussian noise of variance lr."""

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        w = weight._data
        g = _rescaled(_xp_of(w), grad._data, w, self.rescale_grad, 0, self.clip_gradient, wd_first=False)
        w -= (g + np.float32(wd) * w) * np.float32(lr / 2)
        w += _random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype, ctx=weight.context)._data
        weight._bump_version()
