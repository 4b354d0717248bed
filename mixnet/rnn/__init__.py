"""`mx.rnn`: MXNet 1.x's legacy symbolic RNN API (cells that build `mx.sym` graphs, a bucketing sentence
iterator, checkpoints that store fused RNN weights unpacked)."""
from . import rnn_cell, rnn, io  # noqa: F401
from .rnn_cell import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .io import *  # noqa: F401,F403
