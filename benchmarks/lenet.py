"""W5: LeNet training step (batch 64, 1x28x28): conv5x5(20)+relu, maxpool2, conv5x5(50)+relu, maxpool2,
dense(500)+relu, dense(10), softmax cross-entropy, SGD lr 0.01. One step = forward + backward + update.

Frameworks, run interleaved in rounds in one run:
  numpy        hand-written im2col (sliding_window_view + GEMM) forward / backward / SGD
  mixnet       eager Gluon: nn.Conv2D, nn.MaxPool2D, nn.Dense, SoftmaxCrossEntropyLoss, Trainer('sgd')
  mixnet-hybrid  the same with HybridSequential, net and loss hybridized (timed once its fused kernels are in)
  mixnet-hybrid-static  the same with hybridize(static_alloc=True): planned buffers, kernels writing into them
  mxnet        the same Gluon code on MXNet 1.9.1 (~/.venvs/mxref, worker subprocess); reference 13.7 ms eager
  mxnet-hybrid the hybridized Gluon code on MXNet 1.9.1
  torch        eager PyTorch, if some interpreter (this one or a venv in ~/.venvs) can import torch

    python3 benchmarks/lenet.py [--rounds 10] [--steps 5] [--threads 1] [--frameworks numpy,mixnet,mxnet,torch]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mlp  # noqa: E402  (shares the driver; sets the thread count from --threads before numpy loads)

np = mlp.np
LR = 0.01
C1, C2, K, HID, OUT = 20, 50, 5, 500, 10


def make_data(batch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, OUT, size=batch)
    return x, y


def gluon_step(mx, batch, hybrid=False, static_alloc=False):
    gluon, nn, autograd = mx.gluon, mx.gluon.nn, mx.autograd
    x_np, y_np = make_data(batch)
    x, y = mx.nd.array(x_np), mx.nd.array(y_np.astype(np.float32))
    net = nn.HybridSequential() if hybrid else nn.Sequential()
    net.add(nn.Conv2D(C1, kernel_size=K, activation="relu", in_channels=1), nn.MaxPool2D(pool_size=2, strides=2),
            nn.Conv2D(C2, kernel_size=K, activation="relu", in_channels=C1), nn.MaxPool2D(pool_size=2, strides=2),
            nn.Dense(HID, activation="relu", in_units=C2 * 4 * 4), nn.Dense(OUT, in_units=HID))
    net.initialize(mx.init.Xavier())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})
    last = {}

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
        last["loss"] = loss

    mlp.hybridize_and_settle(net, loss_fn, step, hybrid, static_alloc)
    return step, mx.nd.waitall, lambda: float(last["loss"].mean().asscalar())


def _windows(x, k):
    return np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))       # N, C, Ho, Wo, k, k


def numpy_step(batch):
    x, y = make_data(batch)
    rng = np.random.default_rng(1)

    def xavier(shape, fan_in, fan_out):
        s = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-s, s, shape).astype(np.float32)

    params = [xavier((C1, 1 * K * K), K * K, C1 * K * K), np.zeros(C1, np.float32),
              xavier((C2, C1 * K * K), C1 * K * K, C2 * K * K), np.zeros(C2, np.float32),
              xavier((HID, C2 * 16), C2 * 16, HID), np.zeros(HID, np.float32),
              xavier((OUT, HID), HID, OUT), np.zeros(OUT, np.float32)]
    rows = np.arange(batch)
    scale = np.float32(LR / batch)
    last = {}

    def conv_relu(a, wm, b):
        n, c, h, w = a.shape
        ho, wo = h - K + 1, w - K + 1
        cols = _windows(a, K).transpose(0, 2, 3, 1, 4, 5).reshape(n * ho * wo, c * K * K)     # copy
        out = cols @ wm.T
        out += b
        np.maximum(out, 0, out=out)
        return cols, out                                   # out: (N*Ho*Wo, F), i.e. NHWC

    def pool(o, n, h, f):                                  # o (N*H*W, F) NHWC -> (N, H/2, W/2, F)
        v = o.reshape(n, h // 2, 2, h // 2, 2, f)
        p = v.max(axis=(2, 4))
        mask = v == p[:, :, None, :, None, :]
        return p, mask

    def step():
        w1, b1, w2, b2, w3, b3, w4, b4 = params
        cols1, o1 = conv_relu(x, w1, b1)                                   # (N*24*24, 20)
        p1, m1 = pool(o1, batch, 24, C1)                                   # N, 12, 12, 20
        a1 = np.ascontiguousarray(p1.transpose(0, 3, 1, 2))               # N, 20, 12, 12
        cols2, o2 = conv_relu(a1, w2, b2)                                  # (N*8*8, 50)
        p2, m2 = pool(o2, batch, 8, C2)                                    # N, 4, 4, 50
        f = p2.transpose(0, 3, 1, 2).reshape(batch, -1)                    # NCHW flatten, as Gluon
        h = f @ w3.T
        h += b3
        np.maximum(h, 0, out=h)
        z = h @ w4.T
        z += b4
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        last["loss"] = np.log(s[:, 0]) - z[rows, y]
        dz = e / s
        dz[rows, y] -= 1
        dw4, db4 = dz.T @ h, dz.sum(axis=0)
        dh = dz @ w4
        dh *= h > 0
        dw3, db3 = dh.T @ f, dh.sum(axis=0)
        df = (dh @ w3).reshape(batch, C2, 4, 4).transpose(0, 2, 3, 1)     # N, 4, 4, 50
        do2 = (m2 * df[:, :, None, :, None, :]).reshape(-1, C2)           # (N*8*8, 50)
        do2 *= o2 > 0
        dw2, db2 = do2.T @ cols2, do2.sum(axis=0)
        dcols = (do2 @ w2).reshape(batch, 8, 8, C1, K, K)
        da1 = np.zeros((batch, 12, 12, C1), np.float32)                   # col2im, NHWC
        for i in range(K):
            for j in range(K):
                da1[:, i:i + 8, j:j + 8, :] += dcols[:, :, :, :, i, j]
        do1 = (m1 * da1[:, :, None, :, None, :]).reshape(-1, C1)          # (N*24*24, 20)
        do1 *= o1 > 0
        dw1, db1 = do1.T @ cols1, do1.sum(axis=0)
        for p, g in zip(params, (dw1, db1, dw2, db2, dw3, db3, dw4, db4)):
            g *= scale
            p -= g

    return step, None, lambda: float(last["loss"].mean())


def torch_step(batch):
    import torch
    torch.manual_seed(0)
    x_np, y_np = make_data(batch)
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
    nn = torch.nn
    net = nn.Sequential(nn.Conv2d(1, C1, K), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(C1, C2, K), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(C2 * 16, HID), nn.ReLU(), nn.Linear(HID, OUT))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    last = {}

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        last["loss"] = loss

    return step, None, lambda: float(last["loss"])


def build(name, batch):
    if name == "numpy":
        return numpy_step(batch)
    if name == "torch":
        return torch_step(batch)
    if name.startswith("mixnet"):
        sys.path.insert(0, mlp._mixnet_root(name))
        import mixnet as mx
        return gluon_step(mx, batch, hybrid=name.startswith("mixnet-hybrid"),
                          static_alloc=name == "mixnet-hybrid-static")
    if name in ("mxnet", "mxnet-hybrid"):
        import mxnet as mx
        return gluon_step(mx, batch, hybrid=name == "mxnet-hybrid")
    raise ValueError(name)


if __name__ == "__main__":
    mlp.main("lenet", build)
