"""mx.metric against MXNet 1.9.1: every expected number below was produced by MXNet 1.9.1 (mxnet.metric) on the
same inputs (np.random.RandomState(0) draws, made by _data() in the same order), rounded to 6 digits."""
import math

import numpy as np
import pytest

import mixnet as mx
import mixnet.metric as metric
from mixnet.base import MXNetError


def _data():
    rs = np.random.RandomState(0)
    p1 = rs.rand(8, 3).astype("float32")
    p1 /= p1.sum(1, keepdims=True)
    p2 = rs.rand(6, 3).astype("float32")
    p2 /= p2.sum(1, keepdims=True)
    b1 = rs.rand(10, 2).astype("float32")
    b2 = rs.rand(7, 2).astype("float32")
    r1, rl1 = rs.rand(5).astype("float32"), rs.rand(5).astype("float32")
    r2, rl2 = rs.rand(4, 2).astype("float32"), rs.rand(4, 2).astype("float32")
    t = rs.rand(2, 4, 5).astype("float32")
    return dict(
        P1=p1, L1=np.array([0, 1, 2, 1, 0, 2, 2, 1], "float32"), P2=p2, L2=np.array([2, 2, 0, 1, 1, 0], "float32"),
        B1=b1, BL1=np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 1], "float32"), B2=b2,
        BL2=np.array([1, 1, 0, 0, 1, 0, 1], "float32"), R1=r1, RL1=rl1, R2=r2, RL2=rl2, T=t,
        TL=np.array([[0, 1, 4, -1], [3, 3, -1, 2]], "float32"))


D = _data()
A = mx.nd.array


def _run(m, batches):
    """[get() after each batch], and get_global() after a final reset_local()."""
    values = []
    for labels, preds in batches:
        m.update(labels, preds)
        values.append(m.get()[1])
        assert m.get_global()[1] == pytest.approx(values[-1], rel=1e-5, nan_ok=True)
    m.reset_local()
    assert math.isnan(m.get()[1])
    return values, m.get_global()[1]


def _two(lk, pk, lk2, pk2):
    return [([A(D[lk])], [A(D[pk])]), ([A(D[lk2])], [A(D[pk2])])]


CASES = [  # (metric, batches, MXNet 1.9.1's get() after each batch)
    (lambda: metric.Accuracy(), [([A(D["L1"])], [A(D["P1"])]), (A(D["L2"]), A(D["P2"]))], [0.5, 0.357143]),
    (lambda: metric.TopKAccuracy(2), _two("L1", "P1", "L2", "P2"), [0.625, 0.571429]),
    (lambda: metric.TopKAccuracy(3), _two("L1", "P1", "L2", "P2")[:1], [1.0]),
    (lambda: metric.F1(), _two("BL1", "B1", "BL2", "B2"), [0.25, 0.325]),
    (lambda: metric.F1(average="micro"), _two("BL1", "B1", "BL2", "B2"), [0.25, 0.307692]),
    (lambda: metric.MCC(), _two("BL1", "B1", "BL2", "B2"), [-0.102062, 0.125746]),
    (lambda: metric.MCC(average="micro"), _two("BL1", "B1", "BL2", "B2"), [-0.102062, 0.073771]),
    (lambda: metric.PearsonCorrelation(), _two("RL1", "R1", "RL2", "R2"), [0.271416, -0.134887]),
    (lambda: metric.PearsonCorrelation(average="micro"), _two("RL1", "R1", "RL2", "R2"), [0.271416, -0.394761]),
    (lambda: metric.PCC(), _two("L1", "P1", "L2", "P2") + [([A([3, 4, 0])], [A([3, 1, 0])])],
     [0.225282, 0.02344, 0.184544]),
    (lambda: metric.MAE(), _two("RL1", "R1", "RL2", "R2"), [0.216861, 0.321447]),
    (lambda: metric.MSE(), _two("RL1", "R1", "RL2", "R2"), [0.076172, 0.168485]),
    (lambda: metric.RMSE(), _two("RL1", "R1", "RL2", "R2"), [0.275992, 0.393338]),
    (lambda: metric.CrossEntropy(), _two("L1", "P1", "L2", "P2"), [0.975523, 1.362906]),
    (lambda: metric.NegativeLogLikelihood(), _two("L1", "P1", "L2", "P2"), [0.975523, 1.362906]),
    (lambda: metric.Perplexity(ignore_label=None), _two("L1", "P1", "L2", "P2"), [2.652553, 3.907534]),
    (lambda: metric.Perplexity(ignore_label=2), _two("L1", "P1", "L2", "P2")[:1], [3.208267]),
    (lambda: metric.Perplexity(ignore_label=-1), [([A(D["TL"])], [A(D["T"].reshape(8, 5))])], [1.870291]),
    (lambda: metric.Loss(), [(None, [A(D["P1"])]), (None, A(D["L2"]))], [0.333333, 0.466667]),
]


@pytest.mark.parametrize("make, batches, expected", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_values_match_mxnet(make, batches, expected):
    values, global_value = _run(make(), batches)
    assert values == pytest.approx(expected, abs=2e-6)
    assert global_value == pytest.approx(expected[-1], abs=2e-6)


def test_accuracy_variants():
    # MXNet 1.9.1: same-shape preds are compared directly (0.75); axis=0 argmaxes columns (1/3)
    m = metric.Accuracy()
    m.update([A(D["L1"])], [A([0, 1, 1, 1, 0, 2, 0, 1])])
    assert m.get() == ("accuracy", 0.75)
    m = metric.Accuracy(axis=0)
    m.update([A([0, 1, 2])], [A(D["P1"][:3].T)])
    assert m.get()[1] == pytest.approx(1 / 3)
    # numpy inputs work too (a mixnet extension)
    m = metric.Accuracy()
    m.update(D["L1"], D["P1"])
    assert m.get()[1] == 0.5


def test_perplexity_3d_preds_equal_flattened():
    # MXNet 1.9.1 rejects (B, T, C) preds (pick shape error); mixnet picks along the last axis
    m = metric.Perplexity(ignore_label=-1)
    m.update([A(D["TL"])], [A(D["T"])])
    assert m.get()[1] == pytest.approx(1.870291, abs=2e-6)


def test_custom_and_np():
    m = metric.np(lambda label, pred: float(np.abs(label - pred.argmax(1)).sum()))
    m.update([A(D["L1"])], [A(D["P1"])])
    assert m.get() == ("custom(<lambda>)", 4.0)  # MXNet 1.9.1

    def tup(label, pred):
        return float((label == pred.argmax(1)).sum()), label.size
    values, _ = _run(metric.np(tup), _two("L1", "P1", "L2", "P2"))
    assert values == pytest.approx([0.5, 0.357143], abs=2e-6)  # MXNet 1.9.1
    assert metric.create(tup).name == "tup"
    with pytest.raises(NotImplementedError):
        metric.np(tup).get_config()


def test_composite():
    c = metric.create(["acc", "ce"])
    assert isinstance(c, metric.CompositeEvalMetric)
    c.update([A(D["L1"])], [A(D["P1"])])
    names, values = c.get()
    assert names == ["accuracy", "cross-entropy"]
    assert values == pytest.approx([0.5, 0.975523], abs=2e-6)  # MXNet 1.9.1
    assert [n for n, _ in c.get_global_name_value()] == names
    assert c.get_metric(1).name == "cross-entropy"
    with pytest.raises(ValueError, match="out of range"):
        c.get_metric(5)
    c.reset()
    assert all(math.isnan(v) for v in c.get()[1])
    assert metric.create("composite").get() == ([], [])


def test_registry_names():
    # get()[0] of metric.create(name) in MXNet 1.9.1
    expected = {"acc": "accuracy", "accuracy": "accuracy", "f1": "f1", "mcc": "mcc", "mae": "mae", "mse": "mse",
                "rmse": "rmse", "ce": "cross-entropy", "crossentropy": "cross-entropy", "nll_loss": "nll-loss",
                "pearsonr": "pearsonr", "pcc": "pcc", "loss": "loss", "torch": "torch", "caffe": "caffe",
                "ACC": "accuracy"}
    for key, name in expected.items():
        assert metric.create(key).get()[0] == name
    assert metric.create("top_k_accuracy", top_k=3).get()[0] == "top_k_accuracy_3"
    assert metric.create("top_k_acc", 5).name == "top_k_accuracy_5"
    assert metric.create("perplexity", -1).name == "perplexity"
    assert isinstance(metric.create("custom", lambda a, b: 0), metric.CustomMetric)
    m = metric.MAE()
    assert metric.create(m) is m
    with pytest.raises(MXNetError, match="not registered"):
        metric.create("nope")
    with pytest.raises(AssertionError, match="Please use Accuracy"):
        metric.TopKAccuracy(1)


def test_config_roundtrip_and_update_dict():
    # MXNet 1.9.1's get_config()
    assert metric.Accuracy(axis=0, name="xx").get_config() == {
        "axis": 0, "metric": "Accuracy", "name": "xx", "output_names": None, "label_names": None}
    assert metric.Perplexity(-1).get_config()["ignore_label"] == -1
    cfg = metric.create(["acc", "mae"]).get_config()
    assert [c["metric"] for c in cfg["metrics"]] == ["Accuracy", "MAE"]
    again = metric.create(metric.CrossEntropy(eps=1e-3).get_config())
    assert isinstance(again, metric.CrossEntropy) and again.eps == 1e-3
    m = metric.Accuracy(output_names=["o"], label_names=["l"])
    m.update_dict({"l": A(D["L1"]), "x": A(D["L2"])}, {"o": A(D["P1"]), "y": A(D["P2"])})
    assert m.get_name_value() == [("accuracy", 0.5)]
    assert str(m) == "EvalMetric: {'accuracy': 0.5}"


def test_errors_and_empty():
    with pytest.raises(ValueError, match="Shape of labels 2 does not match shape of predictions 1"):
        metric.Accuracy().update([A(D["L1"]), A(D["L1"])], [A(D["P1"])])
    with pytest.raises(ValueError, match="binary"):
        metric.F1().update([A(D["L1"])], [A(D["P1"])])
    assert math.isnan(metric.Accuracy().get()[1])
    assert math.isnan(metric.Perplexity(None).get_global()[1])


@pytest.mark.parametrize("name, first, second", [("f1", 0.8, 0.7333333333333334),
                                                 ("mcc", 0.6666666666666666, 0.5833333333333333)])
def test_macro_average_counts_one_instance_per_update_call(name, first, second):
    # numbers from MXNet 1.9.1: the pairs of one update() call are pooled into one score
    metric = mx.metric.create(name, average="macro")
    l1, p1 = mx.nd.array([1, 0]), mx.nd.array([[0.1, 0.9], [0.5, 0.5]])
    l2, p2 = mx.nd.array([1, 0, 1]), mx.nd.array([[0.85, 0.15], [1.0, 0.0], [0.2, 0.8]])
    metric.update([l1, l2], [p1, p2])
    assert metric.num_inst == 1 and metric.get()[1] == pytest.approx(first)
    metric.update([l2], [p2])
    assert metric.num_inst == 2 and metric.get()[1] == pytest.approx(second)
    assert metric.get_global()[1] == pytest.approx(second)
