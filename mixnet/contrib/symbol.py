"""`mx.contrib.symbol`: MXNet 1.x's older path of `mx.sym.contrib`; importing it gives that same module."""
import sys

from ..symbol import contrib as _contrib

sys.modules[__name__] = _contrib
