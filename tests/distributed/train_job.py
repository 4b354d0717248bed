"""One rank of a data-parallel job for test_dist_trainer.py: trains a small MLP with a 'dist_sync' Trainer on its
slice of a global batch, for every configuration (optimizer, hybridized or not, update_on_kvstore or not, one or
two contexts), and saves its parameters and optimizer states; rank 0 also trains the single-process reference on
the whole global batch (loss summed over all N*b examples, step(b)) and saves that.

    mpiexec -n N python train_job.py OUT_DIR
"""
import sys

import numpy as np

import mixnet as mx
from mixnet import autograd, gluon

STEPS = 3
PER_RANK = 4          # b: each rank's batch; the reference sees N*b examples and also calls step(b)
CONFIGS = [
    # name, optimizer, params, hybridize, update_on_kvstore, contexts per process
    ("sgd", "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}, False, None, 1),
    ("sgd-hyb", "sgd", {"learning_rate": 0.1, "momentum": 0.9}, True, None, 1),
    ("adam", "adam", {"learning_rate": 0.01}, False, None, 1),
    ("adam-hyb-local", "adam", {"learning_rate": 0.01}, True, False, 1),
    ("sgd-2ctx-local", "sgd", {"learning_rate": 0.1, "momentum": 0.9}, False, False, 2),
    ("adam-2ctx", "adam", {"learning_rate": 0.01}, True, None, 2),
    ("sgd-split", "sgd", {"learning_rate": 0.1, "momentum": 0.9}, False, False, 1),   # allreduce_grads + update
]


def build(seed):
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(8, activation="relu", in_units=5), gluon.nn.Dense(3, in_units=8))
    return net


def batches(n_workers):
    rng = np.random.RandomState(42)
    for _ in range(STEPS):
        x = rng.randn(n_workers * PER_RANK, 5).astype(np.float32)
        y = rng.randn(n_workers * PER_RANK, 3).astype(np.float32)
        yield x, y


def train(net, trainer, data, ctxs, loss_fn, split=False):
    for x, y in data:
        xs = gluon.utils.split_and_load(x, ctxs)
        ys = gluon.utils.split_and_load(y, ctxs)
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(xs, ys)]
        autograd.backward(losses)
        if split:
            trainer.allreduce_grads()
            trainer.update(PER_RANK)
        else:
            trainer.step(PER_RANK)


def params(net):
    """Every context's copy of every parameter, in creation order (names differ between nets)."""
    return [d.asnumpy() for p in net.collect_params().values() for d in p.list_data()]


def main(out):
    loss_fn = gluon.loss.L2Loss()
    kv = mx.kv.create("dist_sync")
    rank, n = kv.rank, kv.num_workers
    for name, optim, hyper, hybridize, on_kv, n_ctx in CONFIGS:
        ctxs = [mx.cpu(i) for i in range(n_ctx)]
        net = build(seed=1000 + rank)      # different on every rank: init broadcasts rank 0's
        net.initialize(mx.init.Xavier(), ctx=ctxs)
        if hybridize:
            net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), optim, dict(hyper), kvstore=mx.kv.create("dist_sync"),
                                update_on_kvstore=on_kv)
        mine = [(x[rank * PER_RANK:(rank + 1) * PER_RANK], y[rank * PER_RANK:(rank + 1) * PER_RANK])
                for x, y in batches(n)]
        train(net, trainer, mine, ctxs, loss_fn, split=name.endswith("-split"))
        np.savez(f"{out}/{name}-rank{rank}.npz", *params(net))
        trainer.save_states(f"{out}/{name}-rank{rank}.states")
        if rank == 0:
            ref = build(seed=1000)
            ref.initialize(mx.init.Xavier(), ctx=mx.cpu())
            if hybridize:
                ref.hybridize()
            ref_trainer = gluon.Trainer(ref.collect_params(), optim, dict(hyper), kvstore=None)
            train(ref, ref_trainer, list(batches(n)), [mx.cpu()], loss_fn)
            np.savez(f"{out}/{name}-reference.npz", *params(ref))
    kv.barrier()


if __name__ == "__main__":
    main(sys.argv[1])
