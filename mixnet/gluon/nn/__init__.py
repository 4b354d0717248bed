"""gluon.nn: neural network layers."""
from .basic_layers import *  # noqa: F401,F403
from .activations import *  # noqa: F401,F403
from .conv_layers import *  # noqa: F401,F403
from ..block import Block, HybridBlock  # noqa: F401
from ..symbol_block import SymbolBlock  # noqa: F401  (MXNet 1.x exports it from gluon.nn too)
