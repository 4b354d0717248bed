"""gluon.model_zoo.vision against real MXNet 1.9.1 (tests/data/make_model_zoo_reference.py made the reference):
parameter names and shapes of every model, logits for fixed weights, and .params files written by MXNet."""
import hashlib
import json
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet.gluon.model_zoo import vision

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "gluon")
with open(os.path.join(DATA, "model_zoo_reference.json")) as _f:
    REF = json.load(_f)
X = np.random.RandomState(42).uniform(-1, 1, (1, 3, 32, 32)).astype("float32")


def _digest(lines):
    return hashlib.sha1("\n".join(lines).encode()).hexdigest()


def _param_lines(net):
    return ["%s %s" % (name[len(net.prefix):], tuple(p.shape)) for name, p in net.collect_params().items()]


def _structural_lines(net):
    return ["%s %s" % (name, tuple(p.shape)) for name, p in net._collect_params_with_prefix().items()]


def _fill(net):
    """As the generator's fill(): parameter i in sorted-name order from RandomState(i)."""
    for i, (name, p) in enumerate(sorted(net.collect_params().items())):
        rng = np.random.RandomState(i)
        value = rng.uniform(0.5, 1.5, p.shape) if name.endswith(("gamma", "running_var")) \
            else rng.uniform(-0.1, 0.1, p.shape)
        p.set_data(mx.nd.array(value.astype("float32")))


def _tiny_resnet(version):
    net_class, block = (vision.ResNetV1, vision.BasicBlockV1) if version == 1 else \
        (vision.ResNetV2, vision.BottleneckV2)
    return net_class(block, [1, 1, 1, 1], [4, 8, 12, 16, 20], classes=10, thumbnail=True)


def test_every_model_has_mxnets_parameter_names_and_shapes():
    assert sorted(vision._models) == sorted(REF["models"])
    for name, ref in REF["models"].items():
        net = vision.get_model(name.upper())     # get_model is case-insensitive, as MXNet's
        lines = _param_lines(net)
        assert len(lines) == ref["count"], name
        assert _digest(lines) == ref["params"], name
        assert _digest(_structural_lines(net)) == ref["structural"], name


@pytest.mark.parametrize("name", sorted(REF["forward"]))
def test_logits_match_mxnet_for_fixed_weights(name):
    ref = REF["forward"][name]
    net = vision.get_model(name)
    net.initialize()
    net(mx.nd.array(X))
    _fill(net)
    lines = _param_lines(net)
    assert lines[:6] == ref["first_params"]
    assert _digest(lines) == ref["params"] and _digest(_structural_lines(net)) == ref["structural"]
    y = net(mx.nd.array(X)).asnumpy()
    scale = max(1.0, float(np.abs(ref["logits"]).max()))
    np.testing.assert_allclose(y[0, :8], ref["logits"], rtol=1e-4, atol=1e-4 * scale)
    np.testing.assert_allclose(y.sum(), ref["sum"], rtol=1e-4, atol=1e-3 * scale)


@pytest.mark.parametrize("name", sorted(REF["forward"]))
def test_graph_node_names_match_mxnet(name):
    # Blocks made with prefix='' (the residual blocks of a stage) name their ops in the enclosing scope:
    # stage1_activation0, stage1_activation1, ... as MXNet's trace does.
    net = vision.get_model(name)
    internals = [n[len(net.prefix):] if n.startswith(net.prefix) else n
                 for n in net(mx.sym.var("data")).get_internals().list_outputs()]
    assert len(internals) == REF["forward"][name]["n_internals"]
    assert _digest(internals) == REF["forward"][name]["internals"]


def test_hybridized_model_matches_eager():
    net = vision.mobilenet_v2_0_25(classes=7)
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(X)
    eager = net(x).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    assert eager.shape == (1, 7)


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("hybridize", [False, True])
def test_loads_params_files_written_by_mxnet(version, hybridize):
    # V1's file was written by save_parameters (structural names), V2's as a legacy prefix-stripped file.
    net = _tiny_resnet(version)
    net.load_parameters(os.path.join(DATA, f"tiny_resnet_v{version}.params"))
    if hybridize:
        net.hybridize()
    y = net(mx.nd.array(X)).asnumpy()
    np.testing.assert_allclose(y[0], REF[f"tiny_resnet_v{version}"], rtol=1e-4, atol=1e-5)


def test_unknown_model_name():
    with pytest.raises(ValueError, match="resnet18_v1"):
        vision.get_model("resnet19_v1")
    with pytest.raises(ValueError, match="Invalid number of layers"):
        vision.get_resnet(1, 19)
