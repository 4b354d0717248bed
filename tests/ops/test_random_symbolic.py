"""mx.sym.random's samplers, multinomial's outputs, the Zipfian candidate samplers and mx.contrib.autograd."""
import numpy as np
import pytest

import mixnet as mx


def test_sym_random_numbers_and_symbols_pick_the_op():
    assert '"_random_uniform"' in mx.sym.random.uniform(0, 1, shape=(2,)).tojson()
    lo, hi = mx.sym.var("lo"), mx.sym.var("hi")
    s = mx.sym.random.uniform(lo, hi, shape=(4,))
    assert '"_sample_uniform"' in s.tojson()
    out = s.eval(lo=mx.nd.array([0.0, 10.0]), hi=mx.nd.array([1.0, 11.0]))[0].asnumpy()
    assert out.shape == (2, 4) and (out[0] < 1).all() and (out[1] >= 10).all()
    with pytest.raises(mx.MXNetError, match="same type"):
        mx.sym.random.normal(lo, 1.0)


def test_rankless_random_node_takes_its_partners_shape():
    """Legacy shape mode: a sampler with shape () has an unknown shape, which `+ x` decides (as in MXNet)."""
    x = mx.sym.var("x")
    y = mx.sym.random.normal(loc=5.0, scale=0.1) + x
    _, out_shapes, _ = y.infer_shape(x=(30, 40))
    assert out_shapes == [(30, 40)]
    out = y.eval(x=mx.nd.zeros((30, 40)))[0].asnumpy()
    assert out.shape == (30, 40) and out.std() > 0.05


def test_multinomial_outputs():
    probs = mx.nd.array([[0.2, 0.8], [0.5, 0.5]])
    both = mx.nd.random.multinomial(probs, shape=5, get_prob=True)
    assert isinstance(both, list) and len(both) == 2 and both[0].shape == (2, 5)
    assert len(mx.sym.random.multinomial(mx.sym.var("p"), shape=3)) == 2     # symbolic default: get_prob=True
    with pytest.raises(mx.MXNetError, match="precision"):
        mx.nd.random.multinomial(mx.nd.ones((300,)) / 300, dtype="uint8")


def test_unique_zipfian_rows_are_distinct():
    classes, tries = mx.nd._internal._sample_unique_zipfian(range_max=1000, shape=(3, 50))
    assert classes.dtype == np.int64 and tries.shape == (3,)
    for row, n in zip(classes.asnumpy(), tries.asnumpy()):
        assert len(set(row)) == 50 and row.min() >= 0 and row.max() < 1000 and n >= 50
    with pytest.raises(mx.MXNetError, match="cannot exceed"):
        mx.nd._internal._sample_unique_zipfian(range_max=10, shape=(1, 11))


def test_rand_zipfian_expected_counts():
    true = mx.nd.array([0, 3], dtype="int64")
    sampled, count_true, count_sampled = mx.nd.contrib.rand_zipfian(true, 100, 20)
    p = lambda c: np.log((c + 2.0) / (c + 1.0)) / np.log(21)
    np.testing.assert_allclose(count_true.asnumpy(), 100 * p(np.array([0, 3])), rtol=1e-6)
    np.testing.assert_allclose(count_sampled.asnumpy(), 100 * p(sampled.asnumpy()), rtol=1e-6)
    outs = mx.sym.contrib.rand_zipfian(mx.sym.var("t"), 100, 20)
    assert len(outs) == 3


def test_contrib_autograd():
    x = mx.nd.array([1.0, 2.0])
    grad_fn = mx.contrib.autograd.grad_and_loss(lambda a: (a * a).sum())
    grads, loss = grad_fn(x)
    np.testing.assert_allclose(grads[0].asnumpy(), [2.0, 4.0])
    assert float(loss.asscalar()) == 5.0
    with mx.contrib.autograd.train_section():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
    assert not mx.autograd.is_recording()
