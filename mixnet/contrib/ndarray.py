"""`mx.contrib.ndarray`: MXNet 1.x's older path of `mx.nd.contrib`; importing it gives that same module."""
import sys

from ..ndarray import contrib as _contrib

sys.modules[__name__] = _contrib
