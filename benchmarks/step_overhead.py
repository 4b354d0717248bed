"""W2's fixed per-step Python: the MLP training step at a width where compute vanishes.

The W2 model (3 Dense, relu, SoftmaxCrossEntropyLoss, SGD; net and loss hybridized, one thread) at width 16 and
batch 128: its GEMMs take a few microseconds, so what is timed is mixnet's Python around them. Each part of the
step is timed separately (median over --steps steps after warm-up):

  net       net(x) under autograd.record()
  loss      loss_fn(out, y) under autograd.record()
  backward  loss.backward() (the tape sweep and both graphs' backward plans)
  step      trainer.step(batch)
  whole     one whole step, timed as one

and counted: the Python function calls one step makes (`calls`, by `sys.setprofile` over a few steps, C calls
not counted), overall and per part. Calls are a load-independent measure; the times move with the machine's load,
so compare them only between checkouts run alternately (--mixnet, several rounds), never across sittings.

    python3 benchmarks/step_overhead.py [--steps 2000] [--width 16] [--batch 128] [--top 0]
                                        [--mixnet /path/to/checkout ...] [--rounds 3]
With --mixnet (one or more checkouts), each round runs one fresh process per checkout, alternating; one JSON line
per process. --top N prints the N functions called most per step (where the calls are).
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")


def build(mx, np, width, batch):
    """(parts, whole): the step's parts as callables run in order, and the whole step as one callable."""
    gluon, nn, autograd = mx.gluon, mx.gluon.nn, mx.autograd
    rng = np.random.default_rng(0)
    x = mx.nd.array(rng.standard_normal((batch, width)).astype(np.float32))
    y = mx.nd.array(rng.integers(0, 10, size=batch).astype(np.float32))
    net = nn.HybridSequential()
    net.add(nn.Dense(width, activation="relu", in_units=width), nn.Dense(width, activation="relu", in_units=width),
            nn.Dense(10, in_units=width))
    net.initialize(mx.init.Xavier())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    net.hybridize()
    loss_fn.hybridize()
    state = {}

    def net_forward():
        with autograd.record():
            state["out"] = net(x)

    def loss_forward():
        with autograd.record():
            state["loss"] = loss_fn(state["out"], y)

    def backward():
        state["loss"].backward()

    def step():
        trainer.step(batch)
        state["loss"].wait_to_read()

    def whole():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
        loss.wait_to_read()

    return {"net": net_forward, "loss": loss_forward, "backward": backward, "step": step}, whole, (net, loss_fn)


def settle(blocks):
    """Waits for what compiles or loads in the background, so the timed steps are the steady state."""
    for block in blocks:
        for graph in getattr(block, "_cached_graphs", {}).values():
            for plan in list(getattr(graph, "_training", {}).values()):
                for p in (plan.forward, plan.backward):
                    if p is not None and hasattr(p, "wait_fused"):
                        p.wait_fused()
    fastpath = sys.modules.get("mixnet.ops._fastpath")
    if fastpath is not None and hasattr(fastpath, "wait_compiled"):
        fastpath.wait_compiled()


def count_calls(fn, steps):
    """Python function calls per call of fn (mean over `steps` calls) and a Counter of them by function."""
    counter = collections.Counter()

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            counter[(os.path.relpath(code.co_filename, ROOT) if code.co_filename.startswith(ROOT)
                     else os.path.basename(code.co_filename), code.co_firstlineno, code.co_name)] += 1

    sys.setprofile(profile)
    try:
        for _ in range(steps):
            fn()
    finally:
        sys.setprofile(None)
    return sum(counter.values()) / steps, counter


def child(args):
    """One measurement in this process: prints one JSON line."""
    if not os.environ.get("PYTHONPATH"):
        sys.path.insert(0, ROOT)  # this checkout's mixnet, not an installed one
    import numpy as np

    import mixnet as mx
    parts, whole, blocks = build(mx, np, args.width, args.batch)
    for _ in range(20):
        for fn in parts.values():
            fn()
    settle(blocks)
    for _ in range(200):
        whole()
    # calls: a few steps (the profile's own cost makes more pointless: the count does not vary)
    calls = {}
    counters = {}
    for name, fn in parts.items():
        calls[name], counters[name] = None, collections.Counter()
    for _ in range(5):
        for name, fn in parts.items():
            n, c = count_calls(fn, 1)
            counters[name].update(c)
    for name in parts:
        calls[name] = sum(counters[name].values()) / 5
    calls["whole"], whole_counter = count_calls(whole, 5)
    # times: the parts interleaved step by step, then the whole step
    samples = {name: [] for name in parts}
    clock = time.perf_counter
    for _ in range(args.steps):
        for name, fn in parts.items():
            t = clock()
            fn()
            samples[name].append(clock() - t)
    whole_samples = []
    for _ in range(args.steps):
        t = clock()
        whole()
        whole_samples.append(clock() - t)
    row = {"mixnet": os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__))),
           "width": args.width, "batch": args.batch, "steps": args.steps,
           "us": {name: round(statistics.median(s) * 1e6, 1) for name, s in samples.items()},
           "calls": {name: round(n, 1) for name, n in calls.items()},
           "load": os.getloadavg()[0]}
    row["us"]["whole"] = round(statistics.median(whole_samples) * 1e6, 1)
    print(json.dumps(row), flush=True)
    if args.top:
        per_step = collections.Counter({k: v / 5 for k, v in whole_counter.items()})
        for (path, line, name), n in per_step.most_common(args.top):
            print(f"{n:7.1f}  {path}:{line} {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--top", type=int, default=0, help="print the N functions called most per step")
    parser.add_argument("--mixnet", action="append", default=[],
                        help="a mixnet checkout to run (repeat for A/B; default: this one)")
    parser.add_argument("--rounds", type=int, default=1, help="with --mixnet: rounds of one process per checkout")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child or not args.mixnet:
        return child(args)
    for _ in range(args.rounds):
        for checkout in args.mixnet:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--steps", str(args.steps),
                   "--width", str(args.width), "--batch", str(args.batch), "--top", str(args.top)]
            subprocess.run(cmd, env=env, check=True, cwd=os.path.abspath(checkout))


if __name__ == "__main__":
    main()
