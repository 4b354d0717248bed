"""Inference through nested control flow is linear in the size of the graph: each subgraph is inferred once per
distinct input shapes within one top-level inference, and parameter rules run only while an input is unknown
(nested `_foreach` used to multiply the work by 3 per level, so a depth-20 file never finished)."""
import pytest

from mixnet import symbol as sym
from mixnet.symbol import infer


def _nested_foreach(depth, dense):
    """`depth` foreach loops inside each other; the innermost body multiplies by a weight (dense: a
    FullyConnected whose weight shape only inference can tell)."""
    w = sym.var("w")

    def body_at(level):
        def body(row, states):
            if level < depth - 1:
                inner, (acc,) = sym.contrib.foreach(body_at(level + 1), row, [states[0]])
                return inner, [acc]
            h = sym.FullyConnected(row, weight=w, num_hidden=3, no_bias=True, flatten=False) if dense else row * w
            return h, [states[0] + h]
        return body
    outs, (total,) = sym.contrib.foreach(body_at(0), sym.var("x"), [sym.var("z")])
    return sym.Group([outs, total])


def _count_inferences(monkeypatch, net, **shapes):
    """(infer_shape's result, how many graphs and subgraphs were inferred)."""
    calls = []
    real = infer._infer_nodes

    def counted(*args):
        calls.append(1)
        return real(*args)
    monkeypatch.setattr(infer, "_infer_nodes", counted)
    result = net.infer_shape(**shapes)
    monkeypatch.setattr(infer, "_infer_nodes", real)
    return result, len(calls)


@pytest.mark.timeout(120)        # exponential inference would hang at depth 20: fail instead
@pytest.mark.parametrize("dense", [False, True], ids=["known weight", "weight inferred from the body"])
def test_nested_foreach_inference_grows_linearly_with_depth(monkeypatch, dense):
    counts = {}
    for depth in (5, 10, 20):
        net = _nested_foreach(depth, dense)
        shapes = {"x": (2,) * depth + (4,), "z": (3,)} if dense else {"x": (2,) * depth + (3,), "z": (3,),
                                                                      "w": (1,)}
        (args, outs, _), counts[depth] = _count_inferences(monkeypatch, net, **shapes)
        assert outs == [(2,) * depth + (3,), (3,)]
        if dense:
            assert dict(zip(net.list_arguments(), args))["w"] == (3, 4)
    per_level = (counts[10] - counts[5]) / 5
    assert per_level <= 2 and counts[20] - counts[10] == 10 * per_level, counts


@pytest.mark.timeout(60)
def test_a_depth_20_symbol_file_infers():
    text = _nested_foreach(20, dense=True).tojson()
    loaded = sym.load_json(text)
    _, outs, _ = loaded.infer_shape(x=(1,) * 20 + (4,), z=(3,))
    assert outs == [(1,) * 20 + (3,), (3,)]
