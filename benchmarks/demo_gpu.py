"""The demo's model on a GPU against the CPU: is GPU training deterministic, and does the quick demo reach the
same accuracy on both devices? (First GPU session: not deterministic from step 8 or 9, by one float32 ulp; quick
demo accuracy 0.62-0.96 on the GPU against 0.944-0.964 on the CPU. See benchmarks/README.md, "On a GPU".)

  determinism  two identical GPU trainings of the demo's model (3 epochs of the quick settings), per mode (fused,
               unfused, eager): the first step whose loss differs, by how much, the largest difference
  accuracy     the quick demo (`mixnet.demo.train`) on each device for each seed: validation accuracy

Needs cupy and a GPU; says so and exits 0 otherwise.
    python3 benchmarks/demo_gpu.py [--what determinism,accuracy] [--seeds 0,1] [--epochs 3]
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from mlp_gpu import gpu_missing  # noqa: E402

import mixnet as mx  # noqa: E402
from mixnet import autograd, gluon  # noqa: E402
from mixnet import demo  # noqa: E402


def losses_of_a_training(epochs, fuse, hybridize):
    settings = demo.QUICK
    width = demo.data.answer_width(settings["max_digits"])
    mx.random.seed(0)
    np.random.seed(0)
    texts, answers = demo.data.make_problems(settings["train"], settings["max_digits"], 0, "+")
    with mx.gpu(0), mx.config.override(FUSE=fuse):
        loader, _ = demo.bucketed_loader(texts, answers, width, settings["batch_size"], training=True)
        net = demo.Calculator(settings["hidden"], settings["layers"], width)
        net.initialize(mx.init.Xavier())
        if hybridize:
            net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "adam",
                                {"learning_rate": settings["lr"], "clip_gradient": 1.0})
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss(axis=-1)
        losses = []
        for _ in range(epochs):
            for (chars, length), target in loader:
                with autograd.record():
                    loss = loss_fn(net(chars, length.astype("float32")), target)
                loss.backward()
                trainer.step(chars.shape[0])
                losses.append(float(loss.mean().asscalar()))
    return np.array(losses)


def determinism(epochs):
    for mode, fuse, hybridize in (("fused", True, True), ("unfused", False, True), ("eager", True, False)):
        a, b = (losses_of_a_training(epochs, fuse, hybridize) for _ in range(2))
        diff = np.abs(a - b)
        first = int(np.argmax(diff > 0)) if (diff > 0).any() else None
        print(json.dumps({"benchmark": "demo_gpu determinism", "mode": mode, "steps": len(a),
                          "first_differing_step": first, "diff_there": None if first is None else float(diff[first]),
                          "max_diff": float(diff.max())}), flush=True)


def accuracy(seeds):
    for seed in seeds:
        for ctx in (mx.cpu(), mx.gpu(0)):
            with ctx:
                result = demo.train(**dict(demo.QUICK, seed=seed), progress=False)
            print(json.dumps({"benchmark": "demo_gpu accuracy", "device": str(ctx), "seed": seed,
                              "accuracy": result["accuracy"], "train_s": round(result["train_seconds"], 1)}),
                  flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--what", default="determinism,accuracy")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    reason = gpu_missing()
    if reason:
        print(json.dumps({"benchmark": "demo_gpu", "skipped": reason}))
        return 0
    what = args.what.split(",")
    if "determinism" in what:
        determinism(args.epochs)
    if "accuracy" in what:
        accuracy([int(s) for s in args.seeds.split(",")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
