"""Which devices an Estimator trains on when it is given no context."""
import numpy as np

import mixnet as mx
from mixnet import gluon
from mixnet.gluon.contrib.estimator import Estimator


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 5)).astype(np.float32)
    return gluon.data.DataLoader(gluon.data.ArrayDataset(x, (x[:, 0] > 0).astype(np.float32)), batch_size=16)


def _net(ctx, deferred):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(8, activation="relu", in_units=0 if deferred else 5), gluon.nn.Dense(2))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    return net


def test_an_initialized_net_trains_where_it_was_initialized():
    # MXNet 1.9 picks gpu(0) whenever there is a GPU, and a net initialized on the CPU fails at its first batch;
    # cpu(1) stands in for that second device on any machine
    for deferred in (False, True):
        net = _net(mx.cpu(1), deferred)
        est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(),
                        trainer=gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}))
        assert est.context == [mx.cpu(1)]
        est.fit(_data(), epochs=1)
        assert net[0].weight.list_ctx() == [mx.cpu(1)]


def test_a_net_not_initialized_gets_the_default_device():
    net = gluon.nn.Dense(2)
    est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), initializer=mx.init.Xavier())
    assert est.context == ([mx.gpu(0)] if mx.context.num_gpus() else [mx.cpu()])
    assert net.weight.list_ctx() == est.context
