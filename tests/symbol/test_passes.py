"""Graph passes: CSE merges only pure duplicates and keeps results; verify rejects malformed graphs."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.compiler import PIPELINE
from mixnet.symbol import passes


def _ops(sym):
    return [n.op.name for n in sym._nodes() if n.op is not None]


def test_cse_merges_duplicates_and_keeps_values():
    x = mx.sym.var("x")
    y = mx.sym.exp(x) * 2 + mx.sym.exp(x) * 2
    merged = passes.cse(y)
    assert _ops(y).count("exp") == 2 and _ops(merged).count("exp") == 1
    assert _ops(merged).count("_mul_scalar") == 1
    value = mx.nd.array([0.5, -1.0])
    np.testing.assert_allclose(merged.eval(x=value)[0].asnumpy(), y.eval(x=value)[0].asnumpy())
    assert _ops(y).count("exp") == 2                    # the input symbol is unchanged


def test_cse_never_merges_random_or_stateful_ops():
    x = mx.sym.var("x")
    y = mx.sym.Dropout(x, p=0.5) + mx.sym.Dropout(x, p=0.5)
    assert _ops(passes.cse(y)).count("Dropout") == 2
    z = mx.sym.exp(x) + mx.sym.exp(x, name="other")      # same computation, different names: still merged
    assert _ops(passes.cse(z)).count("exp") == 1


def test_verify_accepts_good_graphs_and_names_bad_nodes():
    x = mx.sym.var("x")
    y = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    passes.verify(y)
    node = next(n for n in y._nodes() if n.op is not None)
    node.inputs = node.inputs[:1]
    with pytest.raises(mx.MXNetError, match="'fc'.*has 1 inputs, expected 3"):
        passes.verify(y)
    with pytest.raises(mx.MXNetError, match="unknown graph pass"):
        PIPELINE.until("fold")


def test_gradient_of_an_input_read_through_two_same_named_variables_sums_both():
    import mixnet as mx
    from mixnet import autograd, nd
    from mixnet.gluon import SymbolBlock
    a, b = mx.sym.var("x"), mx.sym.var("x")            # two nodes, one input name (a hand-built graph)
    block = SymbolBlock(a * 2 + b * b, ["x"])
    x = nd.array([1.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = block(x)
    y.backward()
    assert x.grad.asnumpy().tolist() == [4.0, 8.0]     # d/dx (2x + x^2) = 2 + 2x


def _types(sym, **shapes):
    from mixnet.symbol import autodiff
    return autodiff.exact_types(sym, shapes, {k: np.float32 for k in shapes})


def test_identity_reshapes_are_dropped_and_others_kept():
    x = mx.sym.var("x")
    same = mx.sym.Reshape(mx.sym.exp(x), shape=(2, 3))              # (2, 3) -> (2, 3): nothing to do
    flat = mx.sym.Flatten(mx.sym.Reshape(same * 2, shape=(3, 2)))   # a real reshape, then an identity Flatten
    y = mx.sym.Group([same + 1, flat])
    dropped = passes.drop_identity_reshapes(y, *_types(y, x=(2, 3)))
    assert _ops(y).count("Reshape") == 2 and _ops(dropped).count("Reshape") == 1
    assert "Flatten" not in _ops(dropped)
    value = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3) / 7)
    for got, want in zip(dropped.eval(x=value), y.eval(x=value)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy())


def test_an_output_reshaping_an_input_keeps_its_reshape():
    x = mx.sym.var("x")
    y = mx.sym.Reshape(x, shape=(2, 3))
    dropped = passes.drop_identity_reshapes(y, *_types(y, x=(2, 3)))
    assert _ops(dropped) == ["Reshape"]
