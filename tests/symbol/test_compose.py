"""Symbol composition, `sym(name=Symbol, ...)`: a copy of the graph with input variables replaced."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError


def _two_nets():
    net1 = mx.sym.FullyConnected(data=mx.sym.var("data"), name="fc1", num_hidden=4)
    net2 = mx.sym.Activation(mx.sym.FullyConnected(name="fc3", num_hidden=3), act_type="relu")
    return net1, net2


def test_compose_by_name_as_mxnet():
    net1, net2 = _two_nets()
    composed = net2(fc3_data=net1, name="composed")
    # names and order as MXNet 1.9.1 gives them
    assert composed.name == "composed"
    assert composed.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc3_weight", "fc3_bias"]
    assert net2.list_arguments() == ["fc3_data", "fc3_weight", "fc3_bias"]        # the original is unchanged
    assert len(mx.sym.Group([composed, net1]).list_outputs()) == 2
    assert composed.infer_shape(data=(2, 5))[1] == [(2, 3)]


def test_composed_graph_computes_the_chain():
    net1, net2 = _two_nets()
    composed = net2(fc3_data=net1)
    rng = np.random.default_rng(1)
    args = {"data": rng.standard_normal((2, 5)), "fc1_weight": rng.standard_normal((4, 5)), "fc1_bias": np.zeros(4),
            "fc3_weight": rng.standard_normal((3, 4)), "fc3_bias": np.zeros(3)}
    out = composed.eval(**{k: mx.nd.array(v) for k, v in args.items()})[0].asnumpy()
    hidden = args["data"] @ args["fc1_weight"].T
    np.testing.assert_allclose(out, np.maximum(hidden @ args["fc3_weight"].T, 0), rtol=1e-5, atol=1e-5)


def test_positional_and_group_composition():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    assert (x + y)(mx.sym.var("a"), mx.sym.var("b")).list_arguments() == ["a", "b"]
    assert mx.sym.Group([x * 2, y * 3])(x=mx.sym.var("q")).list_arguments() == ["q", "y"]


@pytest.mark.parametrize("call, match", [
    (lambda s: s(foo=mx.sym.var("a")), "not an input"),
    (lambda s: s(x=3), "must be a Symbol"),
    (lambda s: s(mx.sym.var("a"), x=mx.sym.var("b")), "given twice"),
    (lambda s: s(*[mx.sym.var(str(i)) for i in range(3)]), "positional"),
])
def test_bad_composition_is_a_clear_error(call, match):
    with pytest.raises(MXNetError, match=match):
        call(mx.sym.var("x") + mx.sym.var("y"))
