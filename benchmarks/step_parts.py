"""W2 at full size, part by part: where mixnet's training step differs from the hand-written numpy step.

mlp.py times whole steps. This times the parts of both steps in one process, interleaved (steady state: mixnet's
background loading is waited for first), to show where the difference lies:

  forward+loss   mixnet: net(x) and loss_fn(out, y) under autograd.record() (both hybridized);
                 numpy: the three GEMMs, bias, ReLU, softmax cross-entropy (mlp.numpy_step's first half)
  backward       mixnet: loss.backward(); numpy: the softmax gradient, five GEMMs, ReLU masks, bias sums
  update         mixnet: trainer.step(128); numpy: the SGD update of the six arrays
  gemms          the eight GEMMs alone (numpy, same shapes and layouts as both steps): the floor both share

Prints one JSON line: median milliseconds per part, the difference mixnet - numpy per part, and the load average.

    OMP_NUM_THREADS=1 python3 benchmarks/step_parts.py [--steps 500]
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import numpy as np  # noqa: E402

import mlp  # noqa: E402

BATCH = 128


def mixnet_parts():
    import mixnet as mx
    from mixnet.ops import _fastpath
    gluon, nn, autograd = mx.gluon, mx.gluon.nn, mx.autograd
    x_np, y_np = mlp.make_data(BATCH)
    x, y = mx.nd.array(x_np), mx.nd.array(y_np.astype(np.float32))
    net = nn.HybridSequential()
    net.add(nn.Dense(mlp.HID, activation="relu", in_units=mlp.IN),
            nn.Dense(mlp.HID, activation="relu", in_units=mlp.HID), nn.Dense(mlp.OUT, in_units=mlp.HID))
    net.initialize(mx.init.Xavier())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": mlp.LR})
    net.hybridize()
    loss_fn.hybridize()
    state = {}

    def forward():
        with autograd.record():
            state["loss"] = loss_fn(net(x), y)

    def backward():
        state["loss"].backward()

    def update():
        trainer.step(BATCH)
        state["loss"].wait_to_read()

    for _ in range(2):
        forward(), backward(), update()
    mlp.settle(net, loss_fn)
    _fastpath.wait_compiled()
    return forward, backward, update


def numpy_parts():
    """mlp.numpy_step split where mixnet's parts split (same arithmetic, same parameters' shapes)."""
    x, y = mlp.make_data(BATCH)
    rng = np.random.default_rng(1)

    def xavier(fan_out, fan_in):
        s = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-s, s, (fan_out, fan_in)).astype(np.float32)

    params = [xavier(mlp.HID, mlp.IN), np.zeros(mlp.HID, np.float32), xavier(mlp.HID, mlp.HID),
              np.zeros(mlp.HID, np.float32), xavier(mlp.OUT, mlp.HID), np.zeros(mlp.OUT, np.float32)]
    rows, scale, state = np.arange(BATCH), np.float32(mlp.LR / BATCH), {}

    def forward():
        w1, b1, w2, b2, w3, b3 = params
        h1 = x @ w1.T
        h1 += b1
        np.maximum(h1, 0, out=h1)
        h2 = h1 @ w2.T
        h2 += b2
        np.maximum(h2, 0, out=h2)
        z = h2 @ w3.T
        z += b3
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        state.update(loss=np.log(s[:, 0]) - z[rows, y], h1=h1, h2=h2, e=e, s=s)

    def backward():
        _, _, w2, _, w3, _ = params
        h1, h2 = state["h1"], state["h2"]
        dz = state["e"] / state["s"]
        dz[rows, y] -= 1
        dw3, db3 = dz.T @ h2, dz.sum(axis=0)
        dh2 = dz @ w3
        dh2 *= h2 > 0
        dw2, db2 = dh2.T @ h1, dh2.sum(axis=0)
        dh1 = dh2 @ w2
        dh1 *= h1 > 0
        state["grads"] = (dh1.T @ x, dh1.sum(axis=0), dw2, db2, dw3, db3)

    def update():
        for p, g in zip(params, state["grads"]):
            g *= scale
            p -= g

    def gemms():
        w1, _, w2, _, w3, _ = params
        h1 = x @ w1.T
        h2 = h1 @ w2.T
        z = h2 @ w3.T
        dz3 = z.T @ h2            # (OUT, HID), as dz.T @ h2
        dh2 = z @ w3
        dh2.T @ h1
        dh1 = dh2 @ w2
        dh1.T @ x
        return dz3

    return forward, backward, update, gemms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args()
    mx_parts = dict(zip(("forward+loss", "backward", "update"), mixnet_parts()))
    np_f, np_b, np_u, gemms = numpy_parts()
    np_parts = {"forward+loss": np_f, "backward": np_b, "update": np_u}
    times = {f"{who} {part}": [] for who in ("mixnet", "numpy") for part in mx_parts}
    times["gemms"] = []
    for _ in range(args.steps):
        for who, parts in (("mixnet", mx_parts), ("numpy", np_parts)):
            for part, fn in parts.items():
                start = time.perf_counter()
                fn()
                times[f"{who} {part}"].append(time.perf_counter() - start)
        start = time.perf_counter()
        gemms()
        times["gemms"].append(time.perf_counter() - start)
    ms = {k: round(1e3 * statistics.median(v), 3) for k, v in times.items()}
    diff = {part: round(ms[f"mixnet {part}"] - ms[f"numpy {part}"], 3) for part in mx_parts}
    ms["mixnet step"] = round(sum(ms[f"mixnet {p}"] for p in mx_parts), 3)
    ms["numpy step"] = round(sum(ms[f"numpy {p}"] for p in mx_parts), 3)
    print(json.dumps({"benchmark": "W2 step parts", "batch": BATCH, "steps": args.steps, "median_ms": ms,
                      "mixnet_minus_numpy_ms": diff, "threads": os.environ["OMP_NUM_THREADS"],
                      "load_avg": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
