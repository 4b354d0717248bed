"""The Loss base class: a subclass that defines nothing says what to define."""
import pytest

import mixnet as mx
from mixnet.base import MXNetError


def test_a_loss_without_hybrid_forward_says_what_to_define():
    class Empty(mx.gluon.loss.Loss):
        def __init__(self):
            super().__init__(weight=None, batch_axis=0)

    with pytest.raises(MXNetError, match=r"Empty must define hybrid_forward\(self, F, pred, label"):
        Empty()(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))
