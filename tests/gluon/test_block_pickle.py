"""pickle and copy.deepcopy of Blocks, also after they ran hybridized: compiled graphs are dropped (traced again
at the next call); parameters, structure, names and hybridize flags are kept; the copy is independent and trains
like the original."""
import copy
import pickle

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, gluon


def _net():
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(8, activation="relu"), gluon.nn.BatchNorm(), gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier())
    return net


def _pickled(net):
    return pickle.loads(pickle.dumps(net))


COPIES = {"pickle": _pickled, "deepcopy": copy.deepcopy}


def _train(net, x, steps):
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    for _ in range(steps):
        with autograd.record():
            loss = (net(x) ** 2).mean()
        loss.backward()
        trainer.step(x.shape[0])


@pytest.mark.parametrize("how", sorted(COPIES))
@pytest.mark.parametrize("hybridize", [False, True])
def test_copy_of_a_block_that_ran_gives_the_same_outputs_and_trains_the_same(how, hybridize):
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (5, 4)))
    net = _net()
    if hybridize:
        net.hybridize(static_alloc=True)
    _train(net, x, 2)                                  # it ran (and compiled) before being copied
    twin = COPIES[how](net)
    assert twin._active == hybridize and twin._flags == net._flags
    assert twin._cached_graphs == {} and twin._last_graph is None
    assert [type(c).__name__ for c in twin._children.values()] == ["Dense", "BatchNorm", "Dense"]
    assert list(twin.collect_params()) == list(net.collect_params())     # the same names
    with autograd.predict_mode():
        np.testing.assert_array_equal(twin(x).asnumpy(), net(x).asnumpy())
    _train(net, x, 3)
    _train(twin, x, 3)
    for name, p in net.collect_params().items():
        np.testing.assert_allclose(twin.collect_params()[name].data().asnumpy(), p.data().asnumpy(), rtol=1e-6,
                                   atol=1e-7, err_msg=name)
    if hybridize:
        assert twin._cached_graphs                     # it traced again


@pytest.mark.parametrize("how", sorted(COPIES))
def test_copy_is_independent_of_the_original(how):
    net = _net()
    net.hybridize()
    x = mx.nd.ones((2, 4))
    before = net(x).asnumpy()
    twin = COPIES[how](net)
    twin[0].weight.set_data(mx.nd.zeros(twin[0].weight.shape))
    np.testing.assert_array_equal(net(x).asnumpy(), before)
    assert net[0].weight.data() is not twin[0].weight.data()


def test_copy_forgets_the_trainer_and_keeps_grad_req():
    net = _net()
    net.collect_params(".*beta").setattr("grad_req", "null")
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    net(mx.nd.ones((2, 4)))
    twin = copy.deepcopy(net)
    assert all(p._trainer is None for p in twin.collect_params().values())
    assert trainer._params[0]._trainer is trainer
    assert {n: p.grad_req for n, p in twin.collect_params().items()} == \
        {n: p.grad_req for n, p in net.collect_params().items()}


def test_copy_of_a_block_with_deferred_shapes_initializes_at_its_first_call():
    net = gluon.nn.Dense(3)
    net.initialize()                                   # shapes still unknown
    twin = _pickled(net)
    assert twin(mx.nd.ones((2, 7))).shape == (2, 3) and twin.weight.shape == (3, 7)


def test_context_pickles_by_device():
    assert pickle.loads(pickle.dumps(mx.cpu())) is mx.cpu()
    assert pickle.loads(pickle.dumps(mx.cpu(2))) == mx.cpu(2)
