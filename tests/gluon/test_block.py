"""Block / HybridBlock / Parameter behaviour (expected names, shapes and messages checked with MXNet 1.9.1)."""
import warnings

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon, nd
from mixnet.gluon import nn


class Scale(gluon.HybridBlock):
    """A layer with a deferred parameter, written in the 1.x style."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(0,), allow_deferred_init=True)

    def infer_shape(self, x):
        self.weight.shape = (x.shape[-1],)

    def hybrid_forward(self, F, x, weight):
        return F.broadcast_mul(x, weight)


class Scale2(gluon.HybridBlock):
    """The same in the 2.0 style (forward + Parameter attribute)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.weight = gluon.Parameter("weight", shape=(0,), allow_deferred_init=True)

    def infer_shape(self, x):
        self.weight.shape = (x.shape[-1],)

    def forward(self, x):
        return x * self.weight.data()


def test_auto_prefixes_and_name_scope():
    a, b = Scale(), Scale()
    assert a.prefix.startswith("scale") and a.prefix != b.prefix
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(Scale(), Scale())
    assert list(net.collect_params()) == ["net_scale0_weight", "net_scale1_weight"]
    assert list(net._collect_params_with_prefix()) == ["0.weight", "1.weight"]
    assert list(net.collect_params(".*1_weight")) == ["net_scale1_weight"]
    assert nn.HybridSequential(prefix="").prefix == ""


def test_deferred_initialization_both_styles():
    for cls in (Scale, Scale2):
        layer = cls()
        layer.initialize(mx.init.One())
        with pytest.raises(gluon.DeferredInitializationError, match="deferred"):
            layer.weight.data()
        x = nd.array([[1.0, 2.0, 3.0]])
        assert layer(x).asnumpy().tolist() == [[1, 2, 3]]
        assert layer.weight.shape == (3,)


def test_gradients_flow_to_parameters_and_are_lazy():
    layer = Scale()
    layer.initialize(mx.init.Constant(2.0))
    x = nd.array([[1.0, 2.0]])
    layer(x)
    assert layer.weight.data()._grad is None           # inference allocates no gradient
    with autograd.record():
        y = layer(x).sum()
    y.backward()
    assert layer.weight.grad().asnumpy().tolist() == [1, 2]
    layer.collect_params().zero_grad()
    assert layer.weight.grad().asnumpy().tolist() == [0, 0]


def test_shape_mismatch_names_parameter():
    p = gluon.Parameter("w", shape=(3, 0))
    p.shape = (3, 4)
    with pytest.raises(mx.MXNetError, match="'w'.*incompatible"):
        p.shape = (2, 4)


def test_initialize_twice_warns_and_force_reinit():
    layer = Scale()
    layer.initialize(mx.init.One())
    layer(nd.ones((1, 2)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layer.initialize()
    assert any("already initialized" in str(w.message) for w in caught)
    layer.initialize(mx.init.Zero(), force_reinit=True)


def test_parameter_sharing():
    a = Scale(prefix="shared_")
    b = Scale(params=a.collect_params())
    assert b.weight is a.weight


def test_hooks_fire_and_detach():
    layer = Scale()
    layer.initialize(mx.init.One())
    seen = []
    pre = layer.register_forward_pre_hook(lambda blk, inputs: seen.append(("pre", inputs[0].shape)))
    post = layer.register_forward_hook(lambda blk, inputs, out: seen.append(("post", out.shape)))
    layer(nd.ones((2, 3)))
    assert seen == [("pre", (2, 3)), ("post", (2, 3))]
    pre.detach()
    post.detach()
    layer(nd.ones((2, 3)))
    assert len(seen) == 2


def test_hybridize_is_accepted_and_changes_nothing():
    layer = Scale()
    layer.initialize(mx.init.Constant(3.0))
    x = nd.array([[1.0, -1.0]])
    eager = layer(x).asnumpy()
    layer.hybridize(static_alloc=True, static_shape=True)
    assert (layer(x).asnumpy() == eager).all()


def test_save_load_parameters_structural_and_missing(tmp_path):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(Scale(), Scale())
    net.initialize(mx.init.Normal(1.0))
    net(nd.ones((1, 4)))
    f = str(tmp_path / "net.params")
    net.save_parameters(f)
    assert sorted(nd.load(f)) == ["0.weight", "1.weight"]
    net2 = nn.HybridSequential()
    with net2.name_scope():
        net2.add(Scale(), Scale())
    net2.load_parameters(f)                    # fills the deferred shapes from the file
    assert net2[1].weight.shape == (4,)
    np.testing.assert_array_equal(net2[1].weight.data().asnumpy(), net[1].weight.data().asnumpy())
    net3 = nn.HybridSequential()
    with net3.name_scope():
        net3.add(Scale(), Scale(), Scale())
    with pytest.raises(mx.MXNetError, match="'2.weight' is missing"):
        net3.load_parameters(f)
    net3.load_parameters(f, allow_missing=True)
    one = nn.HybridSequential()
    with one.name_scope():
        one.add(Scale())
    with pytest.raises(mx.MXNetError, match="'1.weight'.*not present"):
        one.load_parameters(f)
    one.load_parameters(f, ignore_extra=True)


def test_save_with_deduplicate(tmp_path):
    a = Scale(prefix="s_")
    net = nn.HybridSequential()
    net.add(a, Scale(params=a.collect_params()))
    net.initialize(mx.init.One())
    net(nd.ones((1, 2)))
    f = str(tmp_path / "d.params")
    net.save_parameters(f, deduplicate=True)
    assert list(nd.load(f)) == ["1.weight"]
    net.load_parameters(f)


def test_legacy_prefix_named_files_load(tmp_path):
    layer = Scale(prefix="old_")
    layer.initialize()
    layer(nd.ones((1, 3)))
    f = str(tmp_path / "legacy.params")
    nd.save(f, {"weight": nd.array([5.0, 6.0, 7.0])})      # old save_params stripped the prefix
    layer.load_parameters(f)
    assert layer.weight.data().asnumpy().tolist() == [5, 6, 7]


def test_dtype_mismatch_needs_cast_dtype(tmp_path):
    layer = Scale()
    layer.initialize()
    layer(nd.ones((1, 2)))
    f = str(tmp_path / "f64.params")
    nd.save(f, {"weight": nd.array([1.0, 2.0], dtype="float64")})
    with pytest.raises(mx.MXNetError, match="cast_dtype"):
        layer.load_parameters(f)
    layer.load_parameters(f, cast_dtype=True)
    assert layer.weight.data().dtype is np.float32


def test_summary_before_and_after_init(capsys):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(Scale())
    net.summary()
    assert "(?,)" in capsys.readouterr().out
    net.initialize()
    net.summary(nd.ones((2, 5)))
    out = capsys.readouterr().out
    assert "(2, 5)" in out and "Parameters in total: 5" in out


def test_parameter_repr_and_constant():
    p = gluon.Parameter("w", shape=(2, 3))
    assert repr(p) == "Parameter w (shape=(2, 3), dtype=float32)"
    c = gluon.Constant("c", [1.0, 2.0])
    c.initialize()
    assert c.grad_req == "null" and c.data().asnumpy().tolist() == [1, 2]


def test_grad_req_null_detaches():
    layer = Scale()
    layer.initialize(mx.init.One())
    x = nd.ones((1, 2))
    layer(x)
    layer.collect_params().setattr("grad_req", "null")
    with pytest.raises(mx.MXNetError, match="grad_req='null'"):
        layer.weight.grad()
