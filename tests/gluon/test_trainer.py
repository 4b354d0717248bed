"""gluon.Trainer: training, rescaling, stale gradients, grad_req='null', lr, save/load states, several contexts."""
import re

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon
from mixnet.base import MXNetError
from mixnet.gluon.trainer import Trainer


class Linear(gluon.HybridBlock):
    def __init__(self, in_units=3, out_units=1, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(in_units, out_units))
            self.bias = self.params.get("bias", shape=(out_units,), init="zeros")

    def hybrid_forward(self, F, x, weight, bias):
        return F.broadcast_add(F.dot(x, weight), bias)


def _data(n=16):
    rng = np.random.RandomState(0)
    x = rng.randn(n, 3).astype(np.float32)
    y = x @ np.array([[1.0], [2.0], [-1.0]], np.float32) + 0.5
    return mx.nd.array(x), mx.nd.array(y)


def _loss_step(net, trainer, x, y, batch_size=1):
    with autograd.record():
        loss = ((net(x) - y) ** 2).mean()
    loss.backward()
    trainer.step(batch_size)
    return loss.asscalar()


def _net(ctx=None):
    net = Linear()
    net.initialize(mx.init.Uniform(0.5), ctx=ctx)
    return net


@pytest.mark.parametrize("name,params", [("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
                                         ("adam", {"learning_rate": 0.1})])
def test_training_reduces_loss(name, params):
    x, y = _data()
    net = _net()
    trainer = Trainer(net.collect_params(), name, params)
    first = _loss_step(net, trainer, x, y)
    for _ in range(40):
        last = _loss_step(net, trainer, x, y)
    assert last < first * 0.05
    assert trainer._kvstore is None and trainer._update_on_kvstore is None   # one device: no KVStore (as MXNet)


def test_step_rescales_by_batch_size():
    p = gluon.Parameter("p", shape=(2,), init="zeros")
    p.initialize()
    trainer = Trainer([p], "sgd", {"learning_rate": 1.0})
    w = p.data()
    with autograd.record():
        y = (w * mx.nd.array([4.0, 8.0])).sum()
    y.backward()
    trainer.step(4)
    np.testing.assert_allclose(w.asnumpy(), [-1.0, -2.0])
    assert trainer.optimizer.rescale_grad == 0.25


def test_stale_gradient_raises_and_ignore():
    a = gluon.Parameter("a", shape=(2,), init="ones")
    b = gluon.Parameter("b", shape=(2,), init="ones")
    for p in (a, b):
        p.initialize()
    trainer = Trainer([a, b], "sgd", {"learning_rate": 0.5})
    with autograd.record():
        y = (a.data() * 2).sum()
    y.backward()
    where = re.escape(str(mx.current_context()))          # cpu(0), unless the suite runs on another device
    with pytest.raises(UserWarning, match=f"Gradient of Parameter `b` on context {where} has not been updated"):
        trainer.step(1)
    np.testing.assert_array_equal(a.data().asnumpy(), [1, 1])     # nothing was updated
    trainer.step(1, ignore_stale_grad=True)
    np.testing.assert_allclose(a.data().asnumpy(), [0.0, 0.0])
    np.testing.assert_array_equal(b.data().asnumpy(), [1, 1])      # stale: skipped
    assert not a.data()._fresh_grad
    with pytest.raises(UserWarning, match="`a`"):                   # a's gradient is stale now too
        trainer.step(1)


def test_grad_req_null_untouched_and_lr_mult():
    net = _net()
    net.bias.grad_req = "null"
    net.weight.lr_mult = 0.0
    bias0 = net.bias.data().asnumpy().copy()
    w0 = net.weight.data().asnumpy().copy()
    x, y = _data()
    trainer = Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    _loss_step(net, trainer, x, y)
    np.testing.assert_array_equal(net.bias.data().asnumpy(), bias0)
    np.testing.assert_array_equal(net.weight.data().asnumpy(), w0)    # lr_mult 0
    net.weight.lr_mult = 1.0
    _loss_step(net, trainer, x, y)
    assert not np.array_equal(net.weight.data().asnumpy(), w0)
    assert 1 not in trainer._updaters[0].states                        # no state for the 'null' parameter


def test_params_forms_and_dedupe():
    net = _net()
    params = net.collect_params()
    t1 = Trainer(params, "sgd")
    t2 = Trainer(dict(params.items()), "sgd")
    t3 = Trainer(list(params.values()) + [net.weight], "sgd")          # duplicate listed once
    assert len(t1._params) == len(t2._params) == len(t3._params) == 2
    assert t1._optimizer.param_dict[0] is t1._params[0]
    with pytest.raises(ValueError, match="First argument must be a list or dict of Parameters"):
        Trainer(net.weight, "sgd")
    with pytest.raises(ValueError):
        Trainer([1, 2], "sgd")
    o = mx.optimizer.create("adam") if hasattr(mx, "optimizer") else __import__("mixnet.optimizer").optimizer.Adam()
    with pytest.raises(AssertionError, match="optimizer_params must be None"):
        Trainer(params, o, {"learning_rate": 0.1})
    t4 = Trainer(params, o)
    assert t4.optimizer is o and o.param_dict[1] is t4._params[1]


def test_learning_rate_property_and_setter():
    net = _net()
    trainer = Trainer(net.collect_params(), "sgd", {"learning_rate": 0.2})
    assert trainer.learning_rate == 0.2
    trainer.set_learning_rate(0.05)
    assert trainer.learning_rate == 0.05 and trainer.optimizer.lr == 0.05


def _train(trainer, net, x, y, n):
    for _ in range(n):
        _loss_step(net, trainer, x, y, batch_size=4)


@pytest.mark.parametrize("name,params", [("adam", {"learning_rate": 0.05, "wd": 0.01}),
                                         ("sgd", {"learning_rate": 0.05, "momentum": 0.9}),
                                         ("nadam", {"learning_rate": 0.01})])
def test_save_load_states_resumes_bit_exactly(tmp_path, name, params):
    x, y = _data()
    net = _net()
    trainer = Trainer(net.collect_params(), name, params)
    _train(trainer, net, x, y, 3)
    fname = str(tmp_path / "t.states")
    trainer.save_states(fname)
    pfile = str(tmp_path / "t.params")
    net.save_parameters(pfile) if hasattr(net, "save_parameters") else net.collect_params().save(pfile, net.prefix)
    _train(trainer, net, x, y, 2)
    expected = [p.data().asnumpy() for p in net.collect_params().values()]

    net2 = _net()
    net2.load_parameters(pfile) if hasattr(net2, "load_parameters") else \
        net2.collect_params().load(pfile, restore_prefix=net2.prefix)
    trainer2 = Trainer(net2.collect_params(), name, {"learning_rate": 123.0})
    trainer2.load_states(fname)
    assert trainer2.learning_rate == params["learning_rate"]
    _train(trainer2, net2, x, y, 2)
    for p, e in zip(net2.collect_params().values(), expected):
        np.testing.assert_array_equal(p.data().asnumpy(), e)
    with open(fname, "rb") as f:
        assert f.read(1) != b"\x80"                                      # not a pickle
    assert "__mixnet_states__" in mx.nd.load(fname)


def test_load_states_refuses_pickle(tmp_path):
    import pickle
    fname = str(tmp_path / "mx.states")
    with open(fname, "wb") as f:
        pickle.dump({0: None}, f)
    net = _net()
    trainer = Trainer(net.collect_params(), "sgd")
    with pytest.raises(MXNetError, match="pickle"):
        trainer.load_states(fname)


def test_lr_scheduler_state_saved(tmp_path):
    from mixnet.lr_scheduler import FactorScheduler
    x, y = _data()
    net = _net()
    trainer = Trainer(net.collect_params(), "sgd",
                      {"lr_scheduler": FactorScheduler(step=2, factor=0.5, base_lr=0.1)})
    _train(trainer, net, x, y, 5)
    lr = trainer.learning_rate
    fname = str(tmp_path / "s.states")
    trainer.save_states(fname)
    trainer2 = Trainer(_net().collect_params(), "sgd",
                       {"lr_scheduler": FactorScheduler(step=2, factor=0.5, base_lr=0.1)})
    trainer2.load_states(fname)
    assert trainer2.optimizer.num_update == 5 and trainer2.learning_rate == lr


def test_multiple_contexts_allreduce():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    for update_on_kvstore in (False, True):
        p = gluon.Parameter("p", shape=(2,), init="ones")
        p.initialize(ctx=ctxs)
        trainer = Trainer([p], "sgd", {"learning_rate": 0.1, "momentum": 0.5}, update_on_kvstore=update_on_kvstore)
        for _ in range(2):
            with autograd.record():
                ys = [(p.data(c) * mx.nd.array([1.0, 2.0], ctx=c) * (k + 1)).sum() for k, c in enumerate(ctxs)]
            for yy in ys:
                yy.backward()
            if not update_on_kvstore:
                trainer.allreduce_grads()
                np.testing.assert_allclose(p.grad(ctxs[1]).asnumpy(), [3.0, 6.0])   # summed over contexts
                trainer.update(1)
            else:
                trainer.step(1)
        assert trainer._update_on_kvstore is update_on_kvstore
        # two SGD-momentum steps on the summed gradient [3, 6]
        expected = 1 - np.array([3.0, 6.0]) * 0.1 * (1 + 1.5)
        for c in ctxs:
            np.testing.assert_allclose(p.data(c).asnumpy(), expected, rtol=1e-6)
        if update_on_kvstore:
            with pytest.raises(AssertionError, match="update_on_kvstore"):
                trainer.allreduce_grads()
