"""The mixnet demo (`python -m mixnet.demo`): MXNet 1.x code, unchanged, on mixnet.

1. Eager NDArrays + autograd: fit a linear model, printing the loss falling.
2. Gluon: train a small MLP classifier with Trainer, a loss, a metric and a DataLoader.
"""
import numpy as np

import mixnet as mx
from mixnet import autograd, gluon, nd
from mixnet.gluon import nn


def linear_regression(steps=60, lr=0.1):
    mx.random.seed(42)
    true_w, true_b = nd.array([[2.0], [-3.4]]), 4.2
    features = nd.random.normal(0, 1, shape=(256, 2))
    labels = nd.dot(features, true_w) + true_b + nd.random.normal(0, 0.01, shape=(256, 1))

    w = nd.random.normal(0, 0.01, shape=(2, 1))
    b = nd.zeros((1,))
    for param in (w, b):
        param.attach_grad()

    for step in range(steps):
        with autograd.record():
            loss = ((nd.dot(features, w) + b - labels) ** 2).mean()
        loss.backward()
        for param in (w, b):
            param[:] = param - lr * param.grad
        if step % 10 == 0 or step == steps - 1:
            print(f"step {step:3d}  loss {loss.asscalar():.6f}")
    print("learned w:", w.asnumpy().ravel(), "b:", b.asscalar(), " (true: [2, -3.4], 4.2)")
    return loss.asscalar()


def gluon_classifier(epochs=5):
    rng = np.random.default_rng(0)
    centers = rng.normal(0, 3, size=(3, 10))
    labels = rng.integers(0, 3, size=900)
    features = (centers[labels] + rng.normal(0, 1.0, size=(900, 10))).astype(np.float32)
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(features, labels.astype(np.float32)),
                                   batch_size=64, shuffle=True)

    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(32, activation="relu"), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    metric = mx.metric.Accuracy()
    for epoch in range(epochs):
        metric.reset()
        for data, label in loader:
            with autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
            loss.backward()
            trainer.step(data.shape[0])
            metric.update(label, out)
        print(f"epoch {epoch}  {metric.get()[0]} {metric.get()[1]:.3f}")
    print(net)
    return metric.get()[1]


def main():
    print("== eager NDArray + autograd: linear regression ==")
    linear_regression()
    print("\n== Gluon: MLP classifier ==")
    gluon_classifier()


if __name__ == "__main__":
    main()
