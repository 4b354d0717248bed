"""hybridize() never changes results for gluon.loss: every loss, eager vs hybridized, outputs and gradients of
every float input (pred, and label where it is a distribution), with sample_weight (positional and keyword)
where the loss takes one, across two batch sizes, in float64."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.gluon import loss as gloss

from .hybrid_equivalence import assert_hybrid_equals_eager, rand

F64 = np.float64


def _ints(shape, high, seed):
    return np.random.RandomState(seed).randint(0, high, size=shape).astype(F64)


def _signs(shape, seed):
    return np.where(np.random.RandomState(seed).uniform(size=shape) > 0.5, 1.0, -1.0)


def _prob(shape, seed):
    p = np.random.RandomState(seed).uniform(0.1, 1.0, shape)
    return p / p.sum(axis=-1, keepdims=True)


def _sw(n, seed):
    return rand((n, 1), seed, 0.0, 2.0)


# id, loss factory, args(n, seed) -> list of call arguments (numpy; ints are not differentiated)
CASES = [
    ("l2", gloss.L2Loss, lambda n, s: [rand((n, 3), s), rand((n, 3), s + 1), _sw(n, s + 2)]),
    ("l2_weight_label_1d", lambda: gloss.L2Loss(weight=0.5), lambda n, s: [rand((n, 1), s), rand((n,), s + 1)]),
    ("l1", gloss.L1Loss, lambda n, s: [rand((n, 2, 3), s), rand((n, 2, 3), s + 1), rand((n, 1, 1), s + 2)]),
    ("sigmoid_bce", gloss.SigmoidBCELoss, lambda n, s: [rand((n, 4), s, -3, 3), _ints((n, 4), 2, s + 1),
                                                         _sw(n, s + 2)]),
    ("sigmoid_bce_pos_weight", gloss.SigmoidBCELoss,
     lambda n, s: [rand((n, 4), s, -3, 3), _ints((n, 4), 2, s + 1), _sw(n, s + 2), rand((1, 4), s + 3, 0.5, 2)]),
    ("sigmoid_bce_from_sigmoid", lambda: gloss.SigmoidBCELoss(from_sigmoid=True),
     lambda n, s: [rand((n, 4), s, 0.05, 0.95), rand((n, 4), s + 1, 0, 1), _sw(n, s + 2)]),
    ("softmax_ce", gloss.SoftmaxCELoss, lambda n, s: [rand((n, 5), s, -2, 2), _ints((n,), 5, s + 1).astype(np.int32),
                                                       _sw(n, s + 2)]),
    ("softmax_ce_dense_axis1", lambda: gloss.SoftmaxCELoss(axis=1, sparse_label=False),
     lambda n, s: [rand((n, 4, 2), s, -2, 2), np.swapaxes(_prob((n, 2, 4), s + 1), 1, 2).copy()]),
    ("softmax_ce_from_logits", lambda: gloss.SoftmaxCELoss(from_logits=True, weight=2.0),
     lambda n, s: [np.log(_prob((n, 5), s)), _ints((n, 1), 5, s + 1), _sw(n, s + 2)]),
    ("kl_div", gloss.KLDivLoss, lambda n, s: [np.log(_prob((n, 5), s)), _prob((n, 5), s + 1), _sw(n, s + 2)]),
    ("kl_div_probabilities", lambda: gloss.KLDivLoss(from_logits=False),
     lambda n, s: [rand((n, 5), s), _prob((n, 5), s + 1)]),
    ("huber", lambda: gloss.HuberLoss(rho=0.5), lambda n, s: [rand((n, 3), s, -2, 2), rand((n, 3), s + 1),
                                                               _sw(n, s + 2)]),
    ("hinge", gloss.HingeLoss, lambda n, s: [rand((n, 3), s, -2, 2), _signs((n, 3), s + 1), _sw(n, s + 2)]),
    ("squared_hinge", gloss.SquaredHingeLoss, lambda n, s: [rand((n, 3), s, -2, 2), _signs((n, 3), s + 1),
                                                             _sw(n, s + 2)]),
    ("logistic_signed", gloss.LogisticLoss, lambda n, s: [rand((n, 3), s, -2, 2), _signs((n, 3), s + 1),
                                                           _sw(n, s + 2)]),
    ("logistic_binary", lambda: gloss.LogisticLoss(label_format="binary"),
     lambda n, s: [rand((n, 3), s, -2, 2), _ints((n, 3), 2, s + 1), _sw(n, s + 2)]),
    ("triplet", lambda: gloss.TripletLoss(margin=0.5), lambda n, s: [rand((n, 4), s), rand((n, 4), s + 1),
                                                                      rand((n, 4), s + 2)]),
    ("poisson_nll", gloss.PoissonNLLLoss, lambda n, s: [rand((n, 3), s), _ints((n, 3), 4, s + 1), _sw(n, s + 2)]),
    ("poisson_nll_full_probabilities", lambda: gloss.PoissonNLLLoss(from_logits=False, compute_full=True),
     lambda n, s: [rand((n, 3), s, 0.5, 3), _ints((n, 3), 5, s + 1)]),
    ("cosine_embedding", lambda: gloss.CosineEmbeddingLoss(margin=0.2),
     lambda n, s: [rand((n, 4), s), rand((n, 4), s + 1), _signs((n, 1), s + 2), _sw(n, s + 3)]),
    ("ctc", gloss.CTCLoss, lambda n, s: [rand((n, 6, 4), s, -2, 2),
                                         np.array([[0, 1, 2], [1, 1, -1], [2, -1, -1]][:n], F64)]),
    ("ctc_lengths_tnc", lambda: gloss.CTCLoss(layout="TNC", label_layout="TN"),
     lambda n, s: [rand((6, n, 4), s, -2, 2), np.array([[0, 1, 2], [2, 1, 0], [1, 2, 1]][:n], F64).T.copy(),
                   np.array([6, 4, 5][:n], np.int32), np.array([3, 2, 1][:n], np.int32), _sw(n, s + 2)[:, 0]]),
    ("sdml", gloss.SDMLLoss, lambda n, s: [rand((n, 4), s), rand((n, 4), s + 1)]),
]


@pytest.mark.parametrize("name, make, args", CASES, ids=[c[0] for c in CASES])
def test_loss_hybridized_equals_eager(name, make, args):
    loss = make()
    sigs = [args(3, 1), args(2, 30)]
    assert_hybrid_equals_eager(loss, sigs, True)


@pytest.mark.parametrize("keyword", ["sample_weight", "pos_weight"])
def test_loss_keyword_arguments_run_hybridized(keyword):
    """sample_weight / pos_weight given by keyword: the call is traced (not run eagerly), and equals eager."""
    loss = gloss.SigmoidBCELoss()
    pred, label = mx.nd.array(rand((3, 4), 1), dtype=F64), mx.nd.array(_ints((3, 4), 2, 2), dtype=F64)
    extra = {keyword: mx.nd.array(rand((3, 1) if keyword == "sample_weight" else (1, 4), 3, 0.5, 2), dtype=F64)}
    eager = loss(pred, label, **extra).asnumpy()
    loss.hybridize()
    out = loss(pred, label, **extra).asnumpy()
    assert len(loss._cached_graphs) == 1
    np.testing.assert_allclose(out, eager, rtol=1e-12)
    out_all_keywords = loss(pred=pred, label=label, **extra).asnumpy()
    np.testing.assert_allclose(out_all_keywords, eager, rtol=1e-12)
    assert len(loss._cached_graphs) == 1, "keywords bound to the same positions reuse the traced graph"
