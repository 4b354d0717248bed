"""`mx.optimizer`: MXNet 1.x optimizers (SGD, NAG, Adam, AdamW, Adamax, Nadam, AdaGrad, AdaDelta, RMSProp, Ftrl,
FTML, Signum, SignSGD, LAMB, LARS, ...), the registry (`create`, `register`) and `get_updater`."""
from . import optimizer  # noqa: F401
from .optimizer import (Optimizer, register, create, get_updater, Updater, SGD, ccSGD, NAG, Adam,  # noqa: F401
                        AdamW, Adamax, Nadam, AdaGrad, AdaDelta, RMSProp, Ftrl, FTML, Signum, SignSGD, LAMB, LARS,
                        LBSGD, Test)
from .sgld import SGLD  # noqa: F401

__all__ = optimizer.__all__ + ["SGLD"]
