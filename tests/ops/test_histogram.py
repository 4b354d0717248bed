"""mx.nd.histogram / mx.sym.histogram: numpy's counting rule, a bin count over a range or given edges, counts
as int64 (values from MXNet 1.9.1)."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError

_X = [-3, -1, 0, 0.5, 1, 2.5, 2.49, 7]


def test_bin_count_over_range():
    counts, edges = mx.nd.histogram(mx.nd.array(_X), bins=5, range=(-2.5, 2.5))
    assert counts.dtype == np.int64 and edges.dtype == np.float32
    np.testing.assert_array_equal(counts.asnumpy(), [0, 1, 1, 2, 2])
    np.testing.assert_allclose(edges.asnumpy(), [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])


def test_given_edges_and_default_range():
    counts, edges = mx.nd.histogram(mx.nd.array(_X), bins=mx.nd.array([-1.0, 0.5, 2.0, 4.5, 50.0]))
    np.testing.assert_array_equal(counts.asnumpy(), [2, 2, 2, 1])
    counts, edges = mx.nd.histogram(mx.nd.array(_X), bins=5)
    np.testing.assert_array_equal(counts.asnumpy(), [1, 3, 3, 0, 1])
    np.testing.assert_allclose(edges.asnumpy(), [-3, -1, 1, 3, 5, 7])


def test_symbolic_forms():
    data, bins = mx.sym.var("data"), mx.sym.var("bins")
    assert mx.sym.histogram(a=data, bins=bins).list_arguments() == ["data", "bins"]
    sym = mx.sym.histogram(a=data, bins=4, range=(0, 1))
    assert sym.infer_shape(data=(3,))[1] == [(4,), (5,)]
    out = sym.bind(mx.cpu(), {"data": mx.nd.array([0.1, 0.3, 0.9])}).forward()
    np.testing.assert_array_equal(out[0].asnumpy(), [1, 1, 0, 1])


@pytest.mark.parametrize("kwargs", [{"bins": 2.5}, {"bins": 0, "range": (0, 1)}, {"bins": 3, "range": (1, 0)}])
def test_bad_bins_raise(kwargs):
    with pytest.raises(MXNetError):
        mx.nd.histogram(mx.nd.array(_X), **kwargs)


def test_decreasing_edges_raise():
    with pytest.raises(MXNetError, match="monoton"):
        mx.nd.histogram(mx.nd.array(_X), bins=mx.nd.array([1.0, 0.0, 2.0]))
