"""mx.sym.maximum / minimum / power (pow) / hypot take Symbols or Python numbers on either side, as MXNet's do
(losses such as CosineEmbeddingLoss call F.maximum while hybridized)."""
import numpy as np
import pytest

import mixnet as mx


@pytest.mark.parametrize("name", ["maximum", "minimum", "power", "pow", "hypot"])
def test_symbol_function_matches_ndarray(name):
    a_val, b_val = np.array([0.5, 3.0, 2.0]), np.array([2.0, 1.5, 2.0])
    a, b = mx.sym.var("a"), mx.sym.var("b")
    nd_fn = getattr(mx.nd, "power" if name == "pow" else name)
    sym_fn = getattr(mx.sym, name)
    arrays = {"a": mx.nd.array(a_val, dtype="float64"), "b": mx.nd.array(b_val, dtype="float64")}
    for sym_args, nd_args in (((a, b), (arrays["a"], arrays["b"])), ((a, 1.7), (arrays["a"], 1.7)),
                              ((1.7, a), (1.7, arrays["a"]))):
        graph = sym_fn(*sym_args)
        feed = {k: v for k, v in arrays.items() if k in graph.list_arguments()}
        got = graph.eval(ctx=mx.cpu(), **feed)[0].asnumpy()
        np.testing.assert_allclose(got, nd_fn(*nd_args).asnumpy(), rtol=1e-12)
    assert sym_fn(2.0, 3.0) == nd_fn(2.0, 3.0)
