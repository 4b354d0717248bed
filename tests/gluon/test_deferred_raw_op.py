"""A custom block's parameter with unknown dims (`shape=(10, 0)`, allow_deferred_init) used by a raw op in
hybrid_forward gets its shape from the first call, eagerly and hybridized, as in MXNet 1.9.1."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon, nd


class RawDense(gluon.HybridBlock):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.w = self.params.get("w", shape=(units, 0), allow_deferred_init=True)
            self.b = self.params.get("b", shape=(units,), init="zeros")
        self.units = units

    def hybrid_forward(self, F, x, w, b):
        return F.relu(F.FullyConnected(x, w, b, num_hidden=self.units))


class RawConv(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.k = self.params.get("k", shape=(4, 0, 3, 3), allow_deferred_init=True)

    def hybrid_forward(self, F, x, k):
        return F.Convolution(x, k, kernel=(3, 3), num_filter=4, no_bias=True)


def _run(block, x, hybridize):
    block.initialize(mx.init.Constant(0.1))
    if hybridize:
        block.hybridize()
    x = nd.array(x)
    x.attach_grad()
    with autograd.record():
        y = block(x)
    y.backward()
    return y.asnumpy(), x.grad.asnumpy()


@pytest.mark.parametrize("make, shape, param_shape", [
    (lambda: RawDense(10), (2, 7), (10, 7)),
    (RawConv, (2, 3, 6, 6), (4, 3, 3, 3)),
])
def test_shape_filled_on_first_call_eager_and_hybridized(make, shape, param_shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    results = []
    for hybridize in (False, True):
        block = make()
        results.append(_run(block, x, hybridize))
        param = next(iter(block.collect_params().values()))
        assert param.shape == param_shape and param.grad().shape == param_shape
    for eager, hybrid in zip(*results):
        np.testing.assert_allclose(eager, hybrid, rtol=1e-6, atol=1e-6)


def test_uninferable_shape_names_the_parameter_and_why():
    class Opaque(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.w = self.params.get("w", shape=(3, 0), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return F.dot(x, w.T) * float(x.sum().asscalar())   # needs values: no symbolic run

    block = Opaque()
    block.initialize()
    with pytest.raises(gluon.parameter.DeferredInitializationError, match=r"opaque0_w \(3, 0\).*symbols failed"):
        block(nd.ones((2, 5)))
