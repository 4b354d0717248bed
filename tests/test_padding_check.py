"""mx.test_utils.check_padding_invariance: passes on padding-invariant models (an Embedding -> GRU/LSTM ->
SequenceLast -> Dense classifier, attention), and on a model that is not (a mean over every time step, a softmax
over padded keys, a loss that divides by the padded length) raises PaddingInvarianceError naming the right layer."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import gluon, nd
from mixnet.base import MXNetError
from mixnet.gluon.contrib.nn import MultiHeadAttention
from mixnet.test_utils import PaddingInvarianceError, check_padding_invariance


class Classifier(gluon.HybridBlock):
    def __init__(self, cell, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.embed = gluon.nn.Embedding(10, 8)
            self.rnn = cell(12, num_layers=2, layout="NTC", use_sequence_length=True)
            self.head = gluon.nn.Dense(3)

    def hybrid_forward(self, F, tokens, length):
        h = self.rnn(self.embed(tokens), None, length)
        return self.head(F.SequenceLast(h, length, use_sequence_length=True, axis=1))


class MeanOverAllSteps(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.mean(x, axis=1)


class Pooled(gluon.HybridBlock):
    """Not padding invariant: its pooling averages the padded steps too."""

    def __init__(self, pool, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.proj = gluon.nn.Dense(6, flatten=False)
            self.pool = pool
            self.head = gluon.nn.Dense(2)

    def hybrid_forward(self, F, x, length):
        return self.head(self.pool(self.proj(x)))


class MaskedMean(gluon.HybridBlock):
    def hybrid_forward(self, F, x, length):
        return F.SequenceMean(x, length, use_sequence_length=True, axis=1)


class PooledMasked(Pooled):
    """Invariant: steps past the length are selected away before the position-wise Dense (whose weight
    gradient would otherwise be sum_t 0 * x_t = NaN for NaN padding) and the pooling skips them."""

    def hybrid_forward(self, F, x, length):
        x = F.SequenceMask(x, length, use_sequence_length=True, axis=1)
        return self.head(self.pool(self.proj(x), length))


class PooledUnmasked(PooledMasked):
    def hybrid_forward(self, F, x, length):
        return self.head(self.pool(self.proj(x), length))


class LeakyAttention(gluon.HybridBlock):
    """Self-attention whose softmax forgets the lengths: padded keys get weight."""

    def hybrid_forward(self, F, x, length):
        weights = F.softmax(F.batch_dot(x, x, transpose_b=True), axis=-1)
        return F.SequenceMask(F.batch_dot(weights, x), length, use_sequence_length=True, axis=1)


def _tokens(rng, b=4, t=6):
    length = np.array([t, 3, 1, 4][:b])
    tokens = rng.integers(1, 10, (b, t)).astype("float32")
    for i, n in enumerate(length):
        tokens[i, n:] = 0
    return nd.array(tokens), nd.array(length)


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")    # NaN token ids
@pytest.mark.parametrize("cell", [gluon.rnn.GRU, gluon.rnn.LSTM], ids=["GRU", "LSTM"])
def test_rnn_classifier_is_invariant(cell):
    net = Classifier(cell)
    net.initialize(mx.init.Xavier())
    tokens, length = _tokens(np.random.default_rng(0))
    check_padding_invariance(net, [tokens, length], length)
    assert not net._active                      # hybridized for the check only


def test_attention_model_is_invariant():
    net = MultiHeadAttention(8, 2)
    net.initialize()
    rng = np.random.default_rng(1)
    x, length = nd.array(rng.normal(size=(3, 5, 4))), nd.array([5, 2, 3])
    check_padding_invariance(net, [x, None, None, None, length], length)
    net2 = MultiHeadAttention(8, 2)
    net2.initialize()
    keys, key_length = nd.array(rng.normal(size=(3, 4, 6))), nd.array([1, 4, 0])
    check_padding_invariance(net2, [x, keys, None, key_length, length], {0: length, 1: key_length})


def test_masked_pooling_is_invariant():
    net = PooledMasked(MaskedMean())
    net.initialize()
    x, length = nd.array(np.random.default_rng(2).normal(size=(4, 6, 5))), nd.array([6, 3, 1, 4])
    check_padding_invariance(net, [x, length], length)


def test_nan_padding_through_a_position_wise_dense_is_caught():
    """Zero and large padding pass; NaN padding reaches the Dense weight's gradient (0 * NaN) and is reported,
    though no forward output differs."""
    net = PooledUnmasked(MaskedMean())
    net.initialize()
    x, length = nd.array(np.random.default_rng(2).normal(size=(4, 6, 5))), nd.array([6, 3, 1, 4])
    check_padding_invariance(net, [x, length], length, fills=(0.0, 1e30))
    with pytest.raises(PaddingInvarianceError, match=r"(?s)fill=nan.*gradient of parameter .*dense0_weight.*"
                                                     r"NaN.*no layer's eager forward output differs"):
        check_padding_invariance(net, [x, length], length, fills=(float("nan"),))


@pytest.mark.parametrize("fills", [(0.0,), (float("nan"),), (1e30,)], ids=["zeros", "nan", "large"])
def test_mean_over_all_steps_is_caught_and_named(fills):
    net = Pooled(MeanOverAllSteps())
    net.initialize()
    x, length = nd.array(np.random.default_rng(3).normal(size=(4, 6, 5))), nd.array([6, 3, 1, 4])
    with pytest.raises(PaddingInvarianceError) as info:
        check_padding_invariance(net, [x, length], length, fills=fills)
    msg = str(info.value)
    assert isinstance(info.value, AssertionError) and isinstance(info.value, MXNetError)
    assert "first layer whose output differs: net.pool (MeanOverAllSteps" in msg
    assert "output 0" in msg and "gradient of parameter" in msg
    assert "padded positions" in msg                    # gradient leaks into the padding


def test_leaky_attention_is_caught_and_named():
    x, length = nd.array(np.random.default_rng(4).normal(size=(2, 4, 3))), nd.array([4, 2])

    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.proj = gluon.nn.Dense(3, flatten=False)
                self.att = LeakyAttention()

        def hybrid_forward(self, F, x, length):
            return self.att(self.proj(x), length)

    net = Net()
    net.initialize()
    with pytest.raises(PaddingInvarianceError, match=r"first layer whose output differs: net\.att \(LeakyAttention"):
        check_padding_invariance(net, [x, length], length, fills=(1.0,))


def test_hybridized_only_divergence_is_reported_in_hybridized_mode():
    net = Pooled(MeanOverAllSteps())
    net.initialize()
    x, length = nd.array(np.random.default_rng(5).normal(size=(2, 3, 2))), nd.array([3, 1])
    with pytest.raises(PaddingInvarianceError, match="hybridized"):
        check_padding_invariance(net, [x, length], length, hybridize=(True,), fills=(0.5,))


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")
def test_user_loss_and_no_gradients():
    net = Classifier(gluon.rnn.GRU)
    net.initialize()
    tokens, length = _tokens(np.random.default_rng(6))
    check_padding_invariance(net, [tokens, length], length, loss_fn=lambda out, vl: (out ** 2).sum())
    check_padding_invariance(net, [tokens, length], length, grad=False, hybridize=(False,))


def test_time_major_and_numpy_lengths():
    layer = gluon.rnn.LSTM(4, layout="TNC", use_sequence_length=True, bidirectional=True)

    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.rnn = layer

        def hybrid_forward(self, F, x, length):
            return self.rnn(x, None, length)

    net = Net()
    net.initialize()
    length = nd.array([3, 1, 2])
    x = nd.array(np.random.default_rng(7).normal(size=(3, 3, 2)))
    check_padding_invariance(net, [x, length], np.array([3, 1, 2]), padded=[0], axis=0, pad=2)


def test_bad_arguments_are_clear_errors():
    net = Pooled(MeanOverAllSteps())
    net.initialize()
    x = nd.ones((2, 3, 2))
    with pytest.raises(MXNetError, match="do not fit input 0"):
        check_padding_invariance(net, [x, nd.array([4, 1])], nd.array([4, 1]))
    with pytest.raises(MXNetError, match="pad must be a positive"):
        check_padding_invariance(net, [x, nd.array([3, 1])], nd.array([3, 1]), pad=0)
    with pytest.raises(MXNetError, match="no input to pad"):
        check_padding_invariance(net, [x, nd.array([3, 1])], nd.array([3, 1]), padded=[])
