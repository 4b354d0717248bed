"""Indexing, sorting, creation and random ops against values obtained from MXNet 1.9.1 (hard-coded below), plus
statistical tests of the samplers and autograd through the gather/scatter ops."""
import numpy as np
import pytest

import mixnet as mx

nd = mx.nd
X = [[1, 2, 3], [4, 5, 6]]


def _np(a):
    return a.asnumpy().tolist()


# ---------------------------------------------------------------------------------------------------------
# indexing (expected values from MXNet 1.9.1)
def test_take_modes_match_mxnet():
    x, i = nd.array(X), nd.array([-1, 0, 2, 5])
    assert _np(nd.take(x, i)) == [[1, 2, 3], [1, 2, 3], [4, 5, 6], [4, 5, 6]]
    assert _np(nd.take(x, i, axis=1)) == [[1, 1, 3, 3], [4, 4, 6, 6]]
    assert _np(nd.take(x, i, mode="wrap")) == [[4, 5, 6], [1, 2, 3], [1, 2, 3], [4, 5, 6]]
    assert _np(nd.take(x, i, axis=1, mode="wrap")) == [[3, 1, 3, 3], [6, 4, 6, 6]]
    # float indices are truncated toward zero, then clipped (MXNet 1.9.1: [2., 1.])
    assert _np(nd.take(nd.array([1, 2, 3]), nd.array([1.7, -0.5]))) == [2, 1]
    assert nd.take(x, nd.array([[0, 1]]), axis=-1).shape == (2, 1, 2)
    assert nd.take(x.astype("float64"), nd.array([0], dtype="int64")).dtype == np.float64


@pytest.mark.parametrize("idx", [[0, 5], [-1]])
def test_take_raise_mode_names_the_op(idx):
    with pytest.raises(mx.MXNetError, match=r"take.*take operator contains indices out of bound"):
        nd.take(nd.array(X), nd.array(idx), mode="raise")


def test_pick_match_mxnet():
    x = nd.array(X)
    assert _np(nd.pick(x, nd.array([0, 5]), axis=1)) == [1, 6]
    assert _np(nd.pick(x, nd.array([-1, 5]), axis=1, mode="wrap")) == [3, 6]
    assert _np(nd.pick(x, nd.array([0, 1, 0]), axis=0, keepdims=True)) == [[1, 5, 3]]
    assert _np(nd.pick(nd.array([[1, 2], [3, 4]]), nd.array([[1], [0]]), axis=1)) == [2, 3]
    assert _np(x.pick(nd.array([2, 0]))) == [3, 4]
    with pytest.raises(mx.MXNetError, match="axis=None is not supported by pick"):
        nd.pick(x, nd.array([4]), axis=None)


def test_batch_take_gather_scatter_match_mxnet():
    x = nd.array(X)
    assert _np(nd.batch_take(x, nd.array([0, 5], dtype="int32"))) == [1, 6]
    assert _np(nd.batch_take(x, nd.array([-1, 2], dtype="int32"))) == [1, 6]
    assert nd.batch_take(nd.zeros((2, 3, 4)), nd.array([0, 1, 2, 3, 0, 1], dtype="int32")).shape == (6,)
    assert _np(nd.gather_nd(x, nd.array([[1, 0], [2, 1]]))) == [6, 2]
    assert _np(nd.gather_nd(nd.array([[1, 2], [3, 4]]), nd.array([[-1], [0]]))) == [3]
    assert _np(nd.scatter_nd(nd.array([2, 3]), nd.array([[1, 1], [0, 2]]), shape=(2, 3))) == \
        [[0, 0, 0], [2, 0, 3]]
    with pytest.raises(mx.MXNetError, match="gather_nd"):
        nd.gather_nd(x, nd.array([[1, 5]]))


def test_one_hot_dtype_and_values_match_mxnet():
    out = nd.one_hot(nd.array([1, 0, -1, 5]), 3)
    assert out.dtype == np.float32
    assert _np(out) == [[0, 1, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0]]
    out = nd.one_hot(nd.array([1]), 3, on_value=8, off_value=-1, dtype="int32")
    assert out.dtype == np.int32 and _np(out) == [[-1, 8, -1]]
    assert nd.one_hot(nd.array([[1, 2]]), 4).shape == (1, 2, 4)
    assert _np(nd.one_hot(nd.array([1.7, -0.5]), 3)) == [[0, 1, 0], [1, 0, 0]]


def test_where_match_mxnet():
    x = nd.array(X)
    assert _np(nd.where(nd.array([[1, 0, 2], [0, 0, 1]]), x, -x)) == [[1, -2, 3], [-4, -5, 6]]
    assert _np(nd.where(nd.array([1, 0]), x, -x)) == [[1, 2, 3], [-4, -5, -6]]
    with pytest.raises(mx.MXNetError, match="where"):
        nd.where(nd.array([1, 0, 1]), x, -x)


def test_ravel_unravel_match_mxnet():
    r = nd.ravel_multi_index(nd.array([[3, 6, 6], [4, 5, 1]]), shape=(7, 6))
    assert _np(r) == [22, 41, 37]
    assert nd.ravel_multi_index(nd.array([[3, 6, 6], [4, 5, 1]], dtype="int32"), shape=(7, 6)).dtype == np.int32
    assert _np(nd.unravel_index(nd.array([22, 41, 37]), shape=(7, 6))) == [[3, 6, 6], [4, 5, 1]]
    assert _np(nd.unravel_index(nd.array([22, 41, 37]), shape=(-1, 6))) == [[3, 6, 6], [4, 5, 1]]
    assert nd._ravel_multi_index is nd.ravel_multi_index or _np(nd._ravel_multi_index(
        nd.array([[1], [2]]), shape=(3, 4))) == [6]


def test_contrib_indexing_match_mxnet():
    x = nd.array(X)
    assert _np(nd.contrib.boolean_mask(x, nd.array([0, 1]))) == [[4, 5, 6]]
    with pytest.raises(mx.MXNetError, match="boolean_mask"):
        nd.contrib.boolean_mask(x, nd.array([1, 0, 1]), axis=1)
    out = nd.contrib.index_copy(nd.zeros((4, 2)), nd.array([3, 0]), nd.array([[1, 2], [3, 4]]))
    assert _np(out) == [[3, 4], [0, 0], [0, 0], [1, 2]]
    ia = nd.contrib.index_array(nd.zeros((2, 3)))
    assert ia.shape == (2, 3, 2) and ia.dtype == np.int64
    assert _np(ia) == [[[0, 0], [0, 1], [0, 2]], [[1, 0], [1, 1], [1, 2]]]
    assert _np(nd.contrib.index_array(nd.zeros((2, 3)), axes=(1,))) == [[[0], [1], [2]], [[0], [1], [2]]]
    assert _np(nd.contrib.arange_like(x)) == [[0, 1, 2], [3, 4, 5]]
    assert _np(nd.contrib.arange_like(x, start=1, step=2, repeat=2, axis=1)) == [1, 1, 3]
    assert nd.contrib.arange_like(x.astype("int32")).dtype == np.int32
    assert _np(nd.contrib.arange_like(nd.zeros((5,)), repeat=2)) == [0, 0, 1, 1, 2]


# ---------------------------------------------------------------------------------------------------------
# sorting (MXNet 1.9.1)
A = [[3, 1, 2], [0, 5, 4]]


def test_sort_argsort_match_mxnet():
    a = nd.array(A)
    assert _np(nd.sort(a)) == [[1, 2, 3], [0, 4, 5]]
    assert _np(nd.sort(a, axis=0, is_ascend=False)) == [[3, 5, 4], [0, 1, 2]]
    assert _np(nd.sort(a, axis=None)) == [0, 1, 2, 3, 4, 5]
    assert nd.argsort(a).dtype == np.float32
    assert nd.argsort(a, dtype="int32").dtype == np.int32
    assert _np(nd.argsort(a)) == [[1, 2, 0], [0, 2, 1]]
    assert _np(nd.argsort(a, axis=None)) == [3, 1, 2, 0, 5, 4]
    # ties keep their order in both directions
    assert _np(nd.argsort(nd.array([1, 1, 0, 1]))) == [2, 0, 1, 3]
    assert _np(nd.argsort(nd.array([1, 1, 0, 1]), is_ascend=False)) == [0, 1, 3, 2]


def test_topk_ret_typ_and_dtype_match_mxnet():
    a = nd.array(A)
    v = nd.topk(a, k=2, ret_typ="value")
    assert v.dtype == np.float32 and _np(v) == [[3, 2], [5, 4]]
    i = nd.topk(a, k=2)
    assert i.dtype == np.float32 and _np(i) == [[0, 2], [1, 2]]
    m = nd.topk(a, k=2, ret_typ="mask")
    assert m.dtype == np.float32 and _np(m) == [[1, 0, 1], [0, 1, 1]]
    both = nd.topk(a, k=2, ret_typ="both")
    assert len(both) == 2 and _np(both[0]) == [[3, 2], [5, 4]] and _np(both[1]) == [[0, 2], [1, 2]]
    assert _np(nd.topk(a, axis=None, k=2)) == [4, 5]
    assert _np(nd.topk(a, axis=None, k=2, ret_typ="value")) == [5, 4]
    out = nd.topk(a, k=2, is_ascend=True, dtype="int32")
    assert out.dtype == np.int32 and _np(out) == [[1, 2], [0, 2]]
    assert nd.topk(a, k=2, ret_typ="mask", dtype="int32").dtype == np.float32   # mask keeps the data dtype
    assert nd.topk(a.astype("int32"), k=1, ret_typ="both")[0].dtype == np.int32
    assert _np(nd.topk(a, k=0)) == [[0, 2, 1], [1, 2, 0]]                       # k <= 0: all
    assert _np(nd.topk(nd.array([1, 1, 0, 1]), k=3)) == [0, 1, 3]
    with pytest.raises(mx.MXNetError, match="topk.*k must be smaller than 3"):
        nd.topk(a, k=5)


def test_sort_and_topk_gradients_scatter_back():
    x = nd.array([[3, 1, 2], [0, 5, 4]])
    x.attach_grad()
    w = nd.array([[1, 10], [100, 1000]])
    with mx.autograd.record():
        y = (nd.topk(x, k=2, ret_typ="value") * w).sum()
    y.backward()
    assert _np(x.grad) == [[1, 0, 10], [0, 100, 1000]]
    with mx.autograd.record():
        y = (nd.sort(x, axis=None) * nd.arange(6)).sum()
    y.backward()
    assert _np(x.grad) == [[3, 1, 2], [0, 5, 4]]


def test_take_gradient_accumulates_and_second_order():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    idx = nd.array([0, 0, 2, 7])
    with mx.autograd.record():
        y = (nd.take(x, idx) ** 2).sum()
        (g,) = mx.autograd.grad(y, [x], create_graph=True)
        z = g.sum()
    assert _np(g) == [4, 0, 12]          # 2*x summed over repeats: index 0 twice, 7 clipped to 2 twice
    z.backward()
    assert _np(x.grad) == [4, 0, 4]      # d/dx of sum(2 * count * x)


# ---------------------------------------------------------------------------------------------------------
# creation (MXNet 1.9.1)
def test_creation_functions_match_mxnet():
    z = nd.zeros((2, 3))
    assert z.dtype == np.float32 and z.shape == (2, 3)
    assert nd.zeros(5).shape == (5,)
    assert _np(nd.arange(0, 10, 2)) == [0, 2, 4, 6, 8]
    o = nd.ones((2,), ctx=mx.cpu(), dtype="int32")
    assert o.dtype == np.int32 and _np(o) == [1, 1] and o.context == mx.cpu()
    assert _np(nd.arange(0, 3, repeat=2)) == [0, 0, 1, 1, 2, 2]
    assert _np(nd.arange(3)) == [0, 1, 2]
    np.testing.assert_array_equal(nd.arange(1, 2, 0.3).asnumpy(), np.array([1, 1.3, 1.6, 1.9], np.float32))
    assert _np(nd.arange(5, 0, -1.5)) == [5, 3.5, 2, 0.5]
    assert nd.arange(0, 5, dtype="int32").dtype == np.int32
    assert _np(nd.arange(2, repeat=2, dtype="int64")) == [0, 0, 1, 1]
    assert _np(nd.linspace(0, 1, 5)) == [0, 0.25, 0.5, 0.75, 1]
    assert _np(nd.linspace(0, 1, 4, endpoint=False)) == [0, 0.25, 0.5, 0.75]
    assert _np(nd.linspace(0, 10, 5, dtype="int32")) == [0, 2, 5, 7, 10]
    assert _np(nd.eye(2, 3, 1)) == [[0, 1, 0], [0, 0, 1]]
    assert _np(nd.eye(3, k=-1)) == [[0, 0, 0], [1, 0, 0], [0, 1, 0]]
    assert nd.zeros_like(nd.array(X).astype("int32")).dtype == np.int32
    assert _np(nd.ones_like(nd.array(X))) == [[1, 1, 1], [1, 1, 1]]


def test_full_matches_mxnet():
    assert _np(nd._full(shape=(2, 2), value=7)) == [[7, 7], [7, 7]]
    out = nd._full(shape=(2,), value=2.7, dtype="int32")
    assert out.dtype == np.int32 and _np(out) == [2, 2]


def test_full_positional_value():
    assert _np(nd.full((2, 2), 7)) == [[7, 7], [7, 7]]


def test_arange_errors_match_mxnet():
    with pytest.raises(mx.MXNetError, match="step=0"):
        nd.arange(0, 3, 0)
    with pytest.raises(mx.MXNetError, match="Invalid range"):
        nd.arange(3, 0)


# ---------------------------------------------------------------------------------------------------------
# random: shapes, dtypes, dispatch like MXNet 1.9.1, statistics, seeding
def test_random_shapes_and_dtypes():
    assert nd.random.uniform(shape=(2,)).dtype == np.float32
    assert nd.random.uniform().shape == (1,)
    assert nd.random.randint(0, 5, shape=3).dtype == np.int32
    assert nd.random.randint(0, 5, shape=3, dtype="int64").dtype == np.int64
    assert nd.random.uniform(shape=2, dtype="float64").dtype == np.float64
    assert nd.random.uniform(nd.array([0, 1]), nd.array([1, 2]), shape=(3,)).shape == (2, 3)
    assert nd.random.uniform(nd.array([0, 1]), nd.array([1, 2])).shape == (2,)
    assert nd.random.randn(2, 3).shape == (2, 3)
    assert nd.random.exponential(nd.array([1, 2])).shape == (2,)
    assert nd.random.uniform_like(nd.zeros((2, 2), dtype="float64")).dtype == np.float64
    m = nd.random.multinomial(nd.array([[0.1, 0.9], [0.5, 0.5]]))
    assert m.dtype == np.int32 and m.shape == (2,)
    assert nd.random.multinomial(nd.array([0.1, 0.9]), shape=(3, 2)).shape == (3, 2)
    s, p = nd.random.multinomial(nd.array([[0.1, 0.9], [0.5, 0.5]]), shape=3, get_prob=True)
    assert (s.shape, s.dtype, p.shape, p.dtype) == ((2, 3), np.int32, (2, 3), np.float32)
    for name in ("uniform", "normal", "random_uniform", "random_normal", "random_poisson", "sample_uniform",
                 "sample_normal", "sample_multinomial", "shuffle", "random_randint"):
        assert callable(getattr(nd, name))
    with pytest.raises(mx.MXNetError, match="same type"):
        nd.random.uniform(nd.array([0]), 1)
    with pytest.raises(mx.MXNetError, match="low must be less or equal to high"):
        nd.random.uniform(3, 1, shape=2)


STATS = [
    # function, kwargs, mean, variance
    (nd.random.uniform, {"low": -1.0, "high": 3.0}, 1.0, 16 / 12),
    (nd.random.normal, {"loc": 1.0, "scale": 2.0}, 1.0, 4.0),
    (nd.random.exponential, {"scale": 0.5}, 0.5, 0.25),
    (nd.random.gamma, {"alpha": 2.0, "beta": 0.5}, 1.0, 0.5),
    (nd.random.poisson, {"lam": 3.0}, 3.0, 3.0),
    (nd.random.negative_binomial, {"k": 3, "p": 0.4}, 3 * 0.6 / 0.4, 3 * 0.6 / 0.16),
    (nd.random.generalized_negative_binomial, {"mu": 2.0, "alpha": 0.5}, 2.0, 2.0 + 0.5 * 4.0),
    (nd.random.randint, {"low": -3, "high": 5}, 0.5, (8 ** 2 - 1) / 12),
]


@pytest.mark.parametrize("fn,kwargs,mean,var", STATS, ids=[s[0].__name__ for s in STATS])
def test_sampler_moments(fn, kwargs, mean, var):
    x = fn(shape=(200000,), **kwargs).asnumpy().astype(np.float64)
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / x.size) + 1e-3
    assert abs(x.var() - var) < 0.03 * var


def test_sample_ops_per_element_parameters():
    out = nd.random.normal(nd.array([0.0, 10.0]), nd.array([1.0, 0.1]), shape=(50000,)).asnumpy()
    assert out.shape == (2, 50000)
    np.testing.assert_allclose(out.mean(axis=1), [0, 10], atol=0.03)
    np.testing.assert_allclose(out.std(axis=1), [1, 0.1], rtol=0.03)


def test_multinomial_frequencies_and_log_prob():
    probs = np.array([0.2, 0.5, 0.3], np.float32)
    s, lp = nd.random.multinomial(nd.array(probs), shape=100000, get_prob=True)
    freq = np.bincount(s.asnumpy(), minlength=3) / 100000
    np.testing.assert_allclose(freq, probs, atol=0.01)
    np.testing.assert_allclose(lp.asnumpy(), np.log(probs[s.asnumpy()]), rtol=1e-6)


def test_multinomial_log_prob_gradient():
    p = nd.array([[0.2, 0.8]])
    p.attach_grad()
    with mx.autograd.record():
        s, lp = nd.random.multinomial(p, shape=4, get_prob=True)
        lp.sum().backward()
    counts = np.bincount(s.asnumpy()[0], minlength=2)
    np.testing.assert_allclose(p.grad.asnumpy()[0], counts / np.array([0.2, 0.8]), rtol=1e-5)


def test_shuffle_is_a_permutation_of_rows():
    x = nd.arange(20).reshape((10, 2))
    y = nd.random.shuffle(x).asnumpy()
    assert sorted(map(tuple, y.tolist())) == sorted(map(tuple, x.asnumpy().tolist()))
    assert nd.shuffle(x).shape == (10, 2)


def test_seed_reproducible_and_seeds_differ():
    mx.random.seed(42)
    a = nd.random.uniform(shape=(5,)).asnumpy()
    n1 = nd.random.normal(shape=(3,)).asnumpy()
    mx.random.seed(42)
    b = nd.random.uniform(shape=(5,)).asnumpy()
    n2 = nd.random.normal(shape=(3,)).asnumpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(n1, n2)
    mx.random.seed(43)
    c = nd.random.uniform(shape=(5,)).asnumpy()
    assert not np.array_equal(a, c)
    assert not np.array_equal(a, nd.random.uniform(shape=(5,)).asnumpy())   # the stream advances


def test_random_seed_accepts_any_int_as_mxnet_c_int():
    # MXNet hands the seed to C as an int: negative seeds work, seeds equal modulo 2**32 give the same stream
    draws = []
    for seed in (-5, (1 << 32) - 5, 7):
        mx.random.seed(seed)
        draws.append(mx.random.uniform(shape=(4,)).asnumpy())
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2])
