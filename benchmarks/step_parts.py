"""W2 at full size, part by part: where mixnet's training step differs from the hand-written numpy step.

mlp.py times whole steps. This times the parts of both steps in one process, interleaved (steady state: mixnet's
background loading is waited for first), to show where the difference lies:

  forward+loss   mixnet: net(x) and loss_fn(out, y) under autograd.record() (both hybridized);
                 numpy: the three GEMMs, bias, ReLU, softmax cross-entropy (mlp.numpy_parts, as in mlp.py)
  backward       mixnet: loss.backward(); numpy: the softmax gradient, five GEMMs, ReLU masks, bias sums
  update         mixnet: trainer.step(128); numpy: the SGD update of the six arrays
  gemms          the eight GEMMs alone (numpy, same shapes and layouts as both steps): the floor both share
The same three parts are also timed as "kernels": mixnet's compiled plans and its SGD loop called directly on raw
arrays (step_ladder.KernelParts), no Block, tape, autograd or Trainer around them: what mixnet's generated code
and kernels cost, part by part, against numpy's.

Prints one JSON line: median milliseconds per part, the differences mixnet - numpy and kernels - numpy per part,
and the load average.

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
from step_ladder import KernelParts  # noqa: E402

BATCH = 128


def mixnet_parts():
    import mixnet as mx
    from mixnet.ops import _fastpath
    net, loss_fn, trainer, x, y = mlp.gluon_model(mx, BATCH, hybrid=True)
    net.hybridize()
    loss_fn.hybridize()
    autograd, state = mx.autograd, {}

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
    kernels = KernelParts(net, loss_fn, x, y)
    return (forward, backward, update), (kernels.forward, kernels.backward, kernels.sgd)


def gemms_alone():
    """The eight GEMMs both steps run, on arrays of the same shapes and layouts."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((BATCH, mlp.IN), dtype=np.float32)
    w1, w2, w3 = (rng.standard_normal(shape, dtype=np.float32)
                  for shape in ((mlp.HID, mlp.IN), (mlp.HID, mlp.HID), (mlp.OUT, mlp.HID)))

    def gemms():
        h1 = x @ w1.T
        h2 = h1 @ w2.T
        z = h2 @ w3.T
        z.T @ h2                  # (OUT, HID), as dz.T @ h2
        dh2 = z @ w3
        dh2.T @ h1
        dh1 = dh2 @ w2
        dh1.T @ x

    return gemms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args()
    user, kernels = mixnet_parts()
    mx_parts = dict(zip(("forward+loss", "backward", "update"), user))
    kernel_parts = dict(zip(mx_parts, kernels))
    np_parts = dict(zip(mx_parts, mlp.numpy_parts(BATCH)[:3]))
    gemms = gemms_alone()
    whos = (("mixnet", mx_parts), ("kernels", kernel_parts), ("numpy", np_parts))
    times = {f"{who} {part}": [] for who, _ in whos for part in mx_parts}
    times["gemms"] = []
    for _ in range(args.steps):
        for who, parts in whos:
            for part, fn in parts.items():
                start = time.perf_counter()
                fn()
                times[f"{who} {part}"].append(time.perf_counter() - start)
        start = time.perf_counter()
        gemms()
        times["gemms"].append(time.perf_counter() - start)
    ms = {k: round(1e3 * statistics.median(v), 3) for k, v in times.items()}
    diff = {part: round(ms[f"mixnet {part}"] - ms[f"numpy {part}"], 3) for part in mx_parts}
    kernel_diff = {part: round(ms[f"kernels {part}"] - ms[f"numpy {part}"], 3) for part in mx_parts}
    for who, _ in whos:
        ms[f"{who} step"] = round(sum(ms[f"{who} {p}"] for p in mx_parts), 3)
    print(json.dumps({"benchmark": "W2 step parts", "batch": BATCH, "steps": args.steps, "median_ms": ms,
                      "mixnet_minus_numpy_ms": diff, "kernels_minus_numpy_ms": kernel_diff,
                      "threads": os.environ["OMP_NUM_THREADS"],
                      "load_avg": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
