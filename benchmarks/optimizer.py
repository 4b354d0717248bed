"""Optimizer step time: the multi-tensor path (Updater called with all parameters at once: one flat buffer per
group) vs a per-parameter loop (Updater called once per parameter), for 100 float32 parameters of mixed sizes.

    python benchmarks/optimizer.py [--params 100] [--steps 200]
"""
import argparse
import time

import numpy as np

import mixnet as mx
import mixnet.optimizer as opt


def _shapes(n, rng):
    # a conv-net-like mix: many small vectors (biases, norms), some matrices
    choices = [(64,), (256,), (3, 3, 16, 16), (128, 64), (512,), (32, 32), (1000,), (256, 256)]
    return [choices[k] for k in rng.randint(0, len(choices), size=n)]


def bench(name, kw, batched, n_params, steps):
    rng = np.random.RandomState(0)
    shapes = _shapes(n_params, rng)
    ws = [mx.nd.array(rng.randn(*s).astype(np.float32)) for s in shapes]
    gs = [mx.nd.array(rng.randn(*s).astype(np.float32)) for s in shapes]
    upd = opt.get_updater(opt.create(name, **kw))
    idx = list(range(n_params))

    def step():
        if batched:
            upd(idx, gs, ws)
        else:
            for i, g, w in zip(idx, gs, ws):
                upd(i, g, w)

    for _ in range(3):
        step()                                  # states created, buffers packed
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps, sum(int(np.prod(s)) for s in shapes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--params", type=int, default=100)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    cases = [("sgd", {"learning_rate": 0.1}), ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}),
             ("adam", {"learning_rate": 1e-3, "wd": 1e-4}), ("nag", {"momentum": 0.9})]
    print(f"{args.params} parameters, {args.steps} steps")
    for name, kw in cases:
        loop, total = bench(name, kw, False, args.params, args.steps)
        fused, _ = bench(name, kw, True, args.params, args.steps)
        print(f"{name:5s} {str(kw):45s} elements={total:8d}  per-parameter {loop * 1e3:7.3f} ms/step  "
              f"multi-tensor {fused * 1e3:7.3f} ms/step  speed-up {loop / fused:5.2f}x")


if __name__ == "__main__":
    main()
