"""SequenceSum / SequenceMean semantics beyond the generated tests: lengths clipped to [0, T], an empty sequence's
mean is 0, trailing feature axes, and NaN/inf padding never reaching outputs or gradients."""
import numpy as np
import pytest

from mixnet import autograd, nd
from mixnet.base import MXNetError


def test_lengths_are_clipped_and_empty_mean_is_zero():
    x = nd.array(np.arange(12, dtype="float32").reshape(2, 3, 2))          # B=2, T=3 (axis=1)
    length = nd.array([7, 0])
    np.testing.assert_array_equal(nd.SequenceSum(x, length, use_sequence_length=True, axis=1).asnumpy(),
                                  [[6, 9], [0, 0]])
    np.testing.assert_array_equal(nd.SequenceMean(x, length, use_sequence_length=True, axis=1).asnumpy(),
                                  [[2, 3], [0, 0]])
    np.testing.assert_array_equal(nd.SequenceMean(x, axis=1).asnumpy(), x.asnumpy().mean(axis=1))


@pytest.mark.parametrize("op", ["SequenceSum", "SequenceMean"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, 1e30])
def test_padding_never_reaches_result_or_gradient(op, bad):
    data = np.ones((4, 2, 3), dtype="float32")                             # T=4, B=2 (axis=0)
    data[2:, 0] = bad
    data[1:, 1] = bad
    x = nd.array(data)
    x.attach_grad()
    with autograd.record():
        y = getattr(nd, op)(x, nd.array([2, 1]), use_sequence_length=True, axis=0)
    y.backward()
    want = [[2, 2, 2], [1, 1, 1]] if op == "SequenceSum" else np.ones((2, 3))
    np.testing.assert_array_equal(y.asnumpy(), want)
    grad = x.grad.asnumpy()
    assert np.all(grad[2:, 0] == 0) and np.all(grad[1:, 1] == 0)
    np.testing.assert_allclose(grad[:2, 0], 1.0 if op == "SequenceSum" else 0.5)


def test_bad_lengths_shape_is_a_clear_error():
    with pytest.raises(MXNetError, match="SequenceMean"):
        nd.SequenceMean(nd.ones((3, 2)), nd.array([1, 2, 3]), use_sequence_length=True, axis=0)
