"""`mx.gluon`: Blocks, Parameters and layers (MXNet 1.x Gluon API)."""
from .parameter import Parameter, Constant, ParameterDict, DeferredInitializationError  # noqa: F401
from .block import Block, HybridBlock  # noqa: F401
from . import nn, rnn, utils, loss, contrib, data, model_zoo  # noqa: F401
from .trainer import Trainer  # noqa: F401
from .symbol_block import SymbolBlock  # noqa: F401
