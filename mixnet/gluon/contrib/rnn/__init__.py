"""gluon.contrib.rnn: contributed recurrent cells (MXNet 1.x `mx.gluon.contrib.rnn`)."""
from .rnn_cell import LSTMPCell, VariationalDropoutCell  # noqa: F401

__all__ = ["LSTMPCell", "VariationalDropoutCell"]
