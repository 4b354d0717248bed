"""`_unfuse()` of the fused RNN layers (MXNet 1.x): a stack of cells sharing the layer's parameters that computes
the same outputs as the fused RNN op."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import gluon

from .hybrid_equivalence import rand


@pytest.mark.parametrize("layer", [
    lambda: gluon.rnn.LSTM(4, num_layers=2, bidirectional=True),
    lambda: gluon.rnn.GRU(3, num_layers=2),
    lambda: gluon.rnn.RNN(5, activation="tanh", bidirectional=True),
    lambda: gluon.rnn.RNN(2, num_layers=3, activation="relu", input_size=3),
], ids=["lstm_bi_2", "gru_2", "rnn_tanh_bi", "rnn_relu_3"])
def test_unfused_cells_share_parameters_and_outputs(layer):
    layer = layer()
    cells = layer._unfuse()
    layer.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(rand((6, 2, 3), 4))            # TNC
    fused = layer(x).asnumpy()                      # also infers the deferred input size
    unfused, _ = cells.unroll(6, x, layout="TNC", merge_outputs=True)
    np.testing.assert_allclose(unfused.asnumpy(), fused, rtol=1e-5, atol=1e-6)
    assert set(cells.collect_params().keys()) == set(layer.collect_params().keys())
    for name, param in cells.collect_params().items():
        assert param is layer.collect_params()[name]


def test_unfuse_keeps_dropout_between_layers_and_refuses_projection():
    cells = gluon.rnn.LSTM(4, num_layers=3, dropout=0.5)._unfuse()
    kinds = [type(c).__name__ for c in cells._children.values()]
    assert kinds == ["LSTMCell", "DropoutCell", "LSTMCell", "DropoutCell", "LSTMCell"]
    with pytest.raises(mx.base.MXNetError, match="projection_size"):
        gluon.rnn.LSTM(4, projection_size=2)._unfuse()
