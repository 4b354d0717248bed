"""gluon.rnn: fused recurrent layers (RNN, LSTM, GRU on the `RNN` op) and recurrent cells."""
from .rnn_cell import *  # noqa: F401,F403
from .rnn_layer import *  # noqa: F401,F403
