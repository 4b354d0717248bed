"""`_bump_versions`: the in-place write mark (NDArray._version, which autograd checks) of several arrays in one
call, as the optimizers' multi-tensor updates use it every step."""
import mixnet as mx
from mixnet import autograd, gluon
from mixnet.ndarray.ndarray import _bump_versions


def test_bump_versions_bumps_each_array_and_its_bases():
    a, b = mx.nd.zeros((4,)), mx.nd.zeros((2, 2))
    view = b[0]
    before = (a._version, b._version, view._version)
    _bump_versions([a, view])
    assert (a._version, b._version, view._version) == (before[0] + 1, before[1] + 1, before[2] + 1)


def test_multi_tensor_sgd_and_adam_bump_every_weight():
    for optimizer in ("sgd", "adam"):
        net = gluon.nn.Dense(3, in_units=2)
        net.initialize()
        trainer = gluon.Trainer(net.collect_params(), optimizer, {"learning_rate": 0.1})
        with autograd.record():
            loss = net(mx.nd.ones((4, 2))).sum()
        loss.backward()
        weights = [p.data() for p in net.collect_params().values()]
        before = [w._version for w in weights]
        trainer.step(4)
        assert [w._version for w in weights] == [v + 1 for v in before]
