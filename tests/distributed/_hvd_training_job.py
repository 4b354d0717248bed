"""Rank program for test_horovod.py: N ranks training with Horovod's averaged gradients make exactly the updates of
one process on the global batch. Each rank holds b examples; the mean-gradient equivalence is

    grad on rank r = sum over its b examples of d loss_i      (backward of the per-example loss, summed)
    averaged       = (1/N) sum_r grad_r,  scaled by 1/b by step(b)  =  (1/(N*b)) sum over all N*b examples
                   = one process, loss over the global batch, step(N * b).

Every rank also runs that single-process reference itself (plain Trainer, no MPI) and compares parameters after a
few steps, for DistributedTrainer and for gluon.Trainer with DistributedOptimizer; SGD with momentum and Adam;
hybridized and not. Prints 'OK rank R'."""
import numpy as np

import mixnet as mx
import mixnet.horovod as hvd
from mixnet import autograd, gluon
from mixnet.gluon import nn

hvd.init()
n, r = hvd.size(), hvd.rank()
B, STEPS = 4, 3                                   # per-rank batch, steps
rng = np.random.default_rng(7)                    # the same data on every rank: each takes its slice
X = rng.standard_normal((STEPS, n * B, 5)).astype(np.float32)
Y = rng.integers(0, 3, size=(STEPS, n * B))


def make_net(hybridize):
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="tanh"), nn.Dense(3))
    mx.random.seed(1234 + r)                      # different on every rank until broadcast_parameters
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    return net


def train(net, trainer, rows, batch_size):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for s in range(STEPS):
        with autograd.record():
            loss = loss_fn(net(mx.nd.array(X[s, rows])), mx.nd.array(Y[s, rows]))
        loss.backward()
        trainer.step(batch_size)
    return {name: p.data().asnumpy() for name, p in net.collect_params().items()}


def reference(opt_name, opt_params, hybridize, dist_params):
    """One process, the whole global batch, step(N * B), starting from rank 0's (broadcast) values."""
    net = make_net(hybridize)
    net(mx.nd.array(X[0, :1]))
    for (name, p), value in zip(net.collect_params().items(), dist_params):
        p.set_data(mx.nd.array(value))
    trainer = gluon.Trainer(net.collect_params(), opt_name, dict(opt_params), kvstore=None)
    return train(net, trainer, slice(None), n * B)


cases = [("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}), ("adam", {"learning_rate": 0.01})]
for opt_name, opt_params in cases:
    for hybridize in (False, True):
        for wrapper in ("trainer", "optimizer"):
            net = make_net(hybridize)
            params = net.collect_params()
            hvd.broadcast_parameters(params, root_rank=0)          # deferred: broadcast at the first forward
            net(mx.nd.array(X[0, :1]))
            start = [p.data().asnumpy().copy() for p in params.values()]
            if wrapper == "trainer":
                trainer = hvd.DistributedTrainer(params, opt_name, dict(opt_params))
            else:
                opt = hvd.DistributedOptimizer(mx.optimizer.create(opt_name, **opt_params))
                trainer = gluon.Trainer(params, opt, kvstore=None)
            got = train(net, trainer, slice(r * B, (r + 1) * B), B)
            want = reference(opt_name, opt_params, hybridize, start)
            for (name, g), w in zip(got.items(), want.values()):
                np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6,
                                           err_msg=f"{opt_name} hybridize={hybridize} {wrapper}: {name}")
            assert not np.allclose(start[0], got[next(iter(got))]), "the parameters did not change"

# gradient_predivide_factor splits the average around the sum: the same result
net = make_net(False)
hvd.broadcast_parameters(net.collect_params(), root_rank=0)
net(mx.nd.array(X[0, :1]))
start = [p.data().asnumpy().copy() for p in net.collect_params().values()]
trainer = hvd.DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, gradient_predivide_factor=4.0)
got = train(net, trainer, slice(r * B, (r + 1) * B), B)
want = reference("sgd", {"learning_rate": 0.1}, False, start)
for (name, g), w in zip(got.items(), want.values()):
    np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=f"predivide: {name}")

# fp16 compression: gradients travel as float16 (close, not equal), and every rank ends with the same parameters
net = make_net(False)
hvd.broadcast_parameters(net.collect_params(), root_rank=0)
net(mx.nd.array(X[0, :1]))
trainer = hvd.DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                                 compression=hvd.Compression.fp16)
got = train(net, trainer, slice(r * B, (r + 1) * B), B)
for name, g in got.items():
    everyone = hvd.allgather(mx.nd.array(g[None])).asnumpy()
    assert (everyone == everyone[0]).all(), name
print(f"OK rank {r}", flush=True)
