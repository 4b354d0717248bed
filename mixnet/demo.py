"""The mixnet demo (`python -m mixnet.demo`): fit a linear model with autograd, eager NDArray code exactly as MXNet 1.x users write it."""
import mixnet as mx
from mixnet import autograd, nd


def main(steps=60, lr=0.1):
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


if __name__ == "__main__":
    main()
