"""W2's step with mixnet's layers taken off one at a time: where the time between the kernels and the user's step goes.

The same W2 model (mlp.py: 784-512-512-10, net and loss hybridized, SGD, batch 128) is stepped five ways, in one
process, steady state (background loading waited for), interleaved in blocks:

  mixnet          the user's step: record, net(x), loss_fn(out, y), loss.backward(), trainer.step(128)
  no_trainer      the same, but the update is the SGD loop itself on the parameters' flat buffers (what
                  trainer.step runs in the end), without Trainer, Updater and Optimizer around it
  forward_tape    net(x) and loss_fn(out, y) under record as the user calls them, then the two compiled backward
                  graphs called directly on the values the tape saved (no autograd.backward, no gradient-rule
                  glue), and the SGD loop
  kernels_only    the four compiled graphs (the net's and the loss's forward and backward) called directly on the
                  raw arrays, and the SGD loop: the generated code and its kernels, with no framework around them
  numpy           mlp.py's hand-written numpy step, the baseline

Why interleaved, in blocks, and low percentiles: on a VM whose neighbours load it in spells, steps timed seconds
apart differ by more than the effects measured here. Each round runs --block steps of each variant in turn; the
first steps of a block pay for the previous variant having evicted this one's data and code, so only positions
2.. of each block are kept. The 10th percentile is the least disturbed figure; the median is printed beside it.

Prints one JSON line: per variant the p10 and median ms and the ratio to numpy's, and the differences between
neighbouring rungs at p10 (what each layer costs per step).

    OMP_NUM_THREADS=1 python3 benchmarks/step_ladder.py [--rounds 300] [--block 5]
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import numpy as np  # noqa: E402

import mlp  # noqa: E402

BATCH = 128


class KernelParts:
    """W2's step with no framework around its kernels: the compiled plans the user's steps made (one training
    signature per block; net and loss), called directly on raw arrays, and the Trainer's SGD loop on its flat
    buffers. forward(), backward() and sgd() are the three parts (step_parts.py times them apart)."""

    def __init__(self, net, loss_fn, x, y):
        from mixnet.ops import _fastpath
        (net_graph,), (loss_graph,) = net._cached_graphs.values(), loss_fn._cached_graphs.values()
        (self.net_plan,), (self.loss_plan,) = net_graph._training.values(), loss_graph._training.values()
        self.params = net_graph._param_arrays()
        self.weights = [p._data for p in self.params]
        self.grads = [p._grad._data for p in self.params]
        self.flat_w, self.flat_g = self.weights[0].base, self.grads[0].base   # the Trainer's flat buffers
        if self.flat_w is None or self.flat_g is None or self.flat_w.size != sum(w.size for w in self.weights):
            raise SystemExit("the parameters are not packed into one flat buffer (the SGD multi-tensor path); "
                             "nothing to compare the trainer against")
        self.loops = _fastpath.numba_kernels(np, self.flat_w)
        self.lr_rescale, self.one = np.float32(mlp.LR) * np.float32(1.0 / BATCH), np.float32(1)
        self.x, self.y, self.state = x._data, y._data, None

    @staticmethod
    def _saved(plan, arrays, results):
        return list(results[plan.n_out:]) + [arrays[k] for k in plan.saved_inputs]

    def forward(self):
        arrays = [self.x] + self.weights
        results = self.net_plan.forward._current.run(arrays, True, None)
        loss_arrays = [results[0], self.y]
        loss_results = self.loss_plan.forward._current.run(loss_arrays, True, None)
        self.state = (self._saved(self.net_plan, arrays, results),
                      self._saved(self.loss_plan, loss_arrays, loss_results), np.ones_like(loss_results[0]))

    def backward(self):
        self.backward_from(*self.state)

    def backward_from(self, net_saved, loss_saved, head):
        d_out = self.loss_plan.backward._current.run([head] + loss_saved, True, None)[0]
        self.net_plan.backward._current.run([d_out] + net_saved, True, self.grads)

    def sgd(self):
        self.loops.sgd_update(self.flat_w, self.flat_g, self.lr_rescale, self.one)
        for p in self.params:
            p._fresh_grad = False


def variants():
    """{name: step callable}, mixnet's four rungs after two steps and the background loading."""
    import mixnet as mx
    from mixnet.ops import _fastpath
    autograd = mx.autograd
    net, loss_fn, trainer, x, y = mlp.gluon_model(mx, BATCH, hybrid=True)
    net.hybridize()
    loss_fn.hybridize()

    def user_step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(BATCH)
        loss.wait_to_read()

    for _ in range(2):
        user_step()
    mlp.settle(net, loss_fn)
    _fastpath.wait_compiled()
    user_step()

    kernels = KernelParts(net, loss_fn, x, y)

    def no_trainer():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        kernels.sgd()

    def forward_tape():
        with autograd.record():
            out = net(x)
            loss = loss_fn(out, y)
        kernels.backward_from(out._node.attrs["saved"], loss._node.attrs["saved"], np.ones_like(loss._data))
        kernels.sgd()

    def kernels_only():
        kernels.forward()
        kernels.backward()
        kernels.sgd()

    return {"mixnet": user_step, "no_trainer": no_trainer, "forward_tape": forward_tape,
            "kernels_only": kernels_only}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--block", type=int, default=5, help="steps of one variant in a row (>= 3)")
    args = parser.parse_args()
    steps = {**variants(), "numpy": mlp.numpy_step(BATCH)[0]}
    times = {name: [] for name in steps}
    for step in steps.values():
        for _ in range(3):
            step()
    for _ in range(args.rounds):
        for name, step in steps.items():
            for position in range(max(args.block, 3)):
                start = time.perf_counter()
                step()
                if position >= 2:
                    times[name].append(time.perf_counter() - start)

    def quantile(name, q):
        ordered = sorted(times[name])
        return 1e3 * ordered[int(q * (len(ordered) - 1))]

    p10 = {name: quantile(name, 0.1) for name in steps}
    p50 = {name: quantile(name, 0.5) for name in steps}
    rungs = list(steps)[:-1]
    print(json.dumps({
        "benchmark": "W2 step ladder", "batch": BATCH, "rounds": args.rounds, "block": args.block,
        "p10_ms": {k: round(v, 3) for k, v in p10.items()},
        "median_ms": {k: round(v, 3) for k, v in p50.items()},
        "ratio_p10": {k: round(p10[k] / p10["numpy"], 3) for k in rungs},
        "ratio_median": {k: round(p50[k] / p50["numpy"], 3) for k in rungs},
        "layer_cost_p10_us": {f"{a} - {b}": round(1e3 * (p10[a] - p10[b]), 1) for a, b in zip(rungs, rungs[1:])},
        "threads": os.environ["OMP_NUM_THREADS"], "load_avg": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
