"""Horovod's examples/mxnet/mxnet_mnist.py pattern, tiny and on generated data, as a user's script would be. The
only lines that differ from a Horovod MXNet script are the imports (`mixnet` for `mxnet`, `mixnet.horovod` for
`horovod.mxnet`). Run: mpiexec -n 2 python hvd_mnist_example.py --epochs 3 --out result.json"""
import argparse
import json
import logging
import time

import numpy as np

import mixnet as mx
from mixnet import autograd, gluon
import mixnet.horovod as hvd

parser = argparse.ArgumentParser(description='MXNet MNIST-style Example')
parser.add_argument('--batch-size', type=int, default=16)
parser.add_argument('--dtype', type=str, default='float32')
parser.add_argument('--epochs', type=int, default=3)
parser.add_argument('--lr', type=float, default=0.05)
parser.add_argument('--momentum', type=float, default=0.9)
parser.add_argument('--no-cuda', action='store_true', default=False)
parser.add_argument('--fp16-allreduce', action='store_true', default=False)
parser.add_argument('--gradient-predivide-factor', type=float, default=1.0)
parser.add_argument('--out', type=str, default=None, help='where rank 0 writes the results (JSON)')


def main(args):
    # Generated "digits": class k is a bright k-th quadrant on noise; every rank gets its own part (num_parts)
    def get_iterator(rank, num_parts):
        rng = np.random.default_rng(0)
        n = 256
        labels = rng.integers(0, 4, size=n)
        images = rng.normal(0, 0.3, size=(n, 1, 8, 8)).astype(np.float32)
        for i, k in enumerate(labels):
            images[i, 0, (k // 2) * 4:(k // 2) * 4 + 4, (k % 2) * 4:(k % 2) * 4 + 4] += 1.0
        part = slice(rank * n // num_parts, (rank + 1) * n // num_parts)
        train_iter = mx.io.NDArrayIter(images[part], labels[part].astype(np.float32), args.batch_size,
                                       shuffle=True)
        val_iter = mx.io.NDArrayIter(images, labels.astype(np.float32), args.batch_size)
        return train_iter, val_iter

    def conv_nets():
        net = gluon.nn.HybridSequential()
        with net.name_scope():
            net.add(gluon.nn.Conv2D(channels=4, kernel_size=3, activation='relu'))
            net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
            net.add(gluon.nn.Flatten())
            net.add(gluon.nn.Dense(16, activation="relu"))
            net.add(gluon.nn.Dense(4))
        return net

    def evaluate(model, data_iter, context):
        data_iter.reset()
        metric = mx.metric.Accuracy()
        for _, batch in enumerate(data_iter):
            data = batch.data[0].as_in_context(context)
            label = batch.label[0].as_in_context(context)
            output = model(data.astype(args.dtype, copy=False))
            metric.update([label], [output])
        return metric.get()

    # Initialize Horovod
    hvd.init()

    # Horovod: pin context to local rank
    context = mx.cpu(hvd.local_rank()) if args.no_cuda else mx.gpu(hvd.local_rank())
    num_workers = hvd.size()

    train_data, val_data = get_iterator(hvd.rank(), num_workers)

    model = conv_nets()
    model.cast(args.dtype)
    model.hybridize()

    # Create optimizer (learning rate scaled by the number of workers, as Horovod's example does)
    optimizer_params = {'momentum': args.momentum, 'learning_rate': args.lr * hvd.size()}
    opt = mx.optimizer.create('sgd', **optimizer_params)

    initializer = mx.init.Xavier(rnd_type='gaussian', factor_type="in", magnitude=2)
    model.initialize(initializer, ctx=context)

    # Horovod: fetch and broadcast parameters
    params = model.collect_params()
    if params is not None:
        hvd.broadcast_parameters(params, root_rank=0)

    # Horovod: create DistributedTrainer, a subclass of gluon.Trainer
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    trainer = hvd.DistributedTrainer(params, opt, compression=compression,
                                     gradient_predivide_factor=args.gradient_predivide_factor)

    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    metric = mx.metric.Accuracy()

    for epoch in range(args.epochs):
        tic = time.time()
        train_data.reset()
        metric.reset()
        for nbatch, batch in enumerate(train_data, start=1):
            data = batch.data[0].as_in_context(context)
            label = batch.label[0].as_in_context(context)
            with autograd.record():
                output = model(data.astype(args.dtype, copy=False))
                loss = loss_fn(output, label)
            loss.backward()
            trainer.step(args.batch_size)
            metric.update([label], [output])

        if hvd.rank() == 0:
            elapsed = time.time() - tic
            speed = nbatch * args.batch_size * hvd.size() / elapsed
            logging.info('Epoch[%d]\tSpeed=%.2f samples/s\tTime cost=%f', epoch, speed, elapsed)

        _, train_acc = metric.get()
        name, val_acc = evaluate(model, val_data, context)
        if hvd.rank() == 0:
            logging.info('Epoch[%d]\tTrain: %s=%f\tValidation: %s=%f', epoch, name, train_acc, name, val_acc)

    # Every rank must hold the same parameters: gather a checksum of each
    sums = hvd.allgather(mx.nd.array([[p.data().asnumpy().astype(np.float64).sum()
                                       for p in params.values()]], dtype='float64'))
    if hvd.rank() == 0 and args.out:
        with open(args.out, "w") as f:
            json.dump({"size": num_workers, "val_acc": val_acc, "param_sums": sums.asnumpy().tolist()}, f)


if __name__ == '__main__':
    args = parser.parse_args()
    if not args.no_cuda:
        # Disable CUDA if there are no GPUs.
        if not mx.test_utils.list_gpus():
            args.no_cuda = True
    logging.basicConfig(level=logging.INFO)
    main(args)
