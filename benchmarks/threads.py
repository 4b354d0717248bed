"""One hybridized block called from several threads (issue 10): correctness and per-call time.

For each workload (a static_alloc MLP / LeNet inference call, an MLP training step), the same block is called
from 1 thread and from 4 threads at once, each call on its own input. Printed per workload:
  * wrong: how many of the threaded outputs differ (np.array_equal) from the sequential output for that input
    (must be 0: a call's planned buffers are never shared with a concurrent call);
  * ms/call with 1 thread and with 4 threads (wall time / calls), and their ratio: below 1 means threads overlap
    (numpy and BLAS release the GIL), above 1 means they serialize and pay for it.

    python benchmarks/threads.py [--threads 1]     # BLAS threads per call (default 1)
"""
import sys
import threading
import time

from _common import set_threads_from_argv

BLAS_THREADS = set_threads_from_argv() if "--threads" in sys.argv else None
if BLAS_THREADS is None:
    sys.argv += ["--threads", "1"]
    BLAS_THREADS = set_threads_from_argv()

import numpy as np  # noqa: E402  (after the BLAS thread count is set)

import mixnet as mx  # noqa: E402
from mixnet import autograd, gluon  # noqa: E402
from mixnet.gluon import nn  # noqa: E402

THREADS = 4


def mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(512, activation="relu"), nn.Dense(512, activation="relu"), nn.Dense(10))
    return net, (128, 784)


def lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(20, 5, activation="relu"), nn.MaxPool2D(2, 2), nn.Conv2D(50, 5, activation="relu"),
            nn.MaxPool2D(2, 2), nn.Flatten(), nn.Dense(500, activation="relu"), nn.Dense(10))
    return net, (64, 1, 28, 28)


def make_call(make, train):
    """call(x) -> the output (inference) or the loss (training step) as numpy, on a static_alloc block."""
    net, shape = make()
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    net.hybridize(static_alloc=True)
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    label = mx.nd.array(np.arange(shape[0]) % 10)

    def call(x):
        if not train:
            return net(x).asnumpy()
        with autograd.record():
            out = loss(net(x), label)
        out.backward()
        return out.asnumpy()

    inputs = [mx.nd.array(np.random.default_rng(k).standard_normal(shape).astype(np.float32)) for k in range(8)]
    for x in inputs[:2]:
        call(x)                                  # trace and compile before timing
    return call, inputs


def run(call, inputs, threads, calls_each):
    """Wall ms per call, and the outputs of every call as (input index, output)."""
    results = [[] for _ in range(threads)]

    def work(t):
        for k in range(calls_each):
            j = (t + k) % len(inputs)
            results[t].append((j, call(inputs[j])))

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - start
    return elapsed * 1e3 / (threads * calls_each), [r for rs in results for r in rs]


def main():
    print(f"# one block, {THREADS} threads vs 1; BLAS threads per call: {BLAS_THREADS}")
    print(f"{'workload':<22} {'wrong':>9} {'1 thread ms':>12} {f'{THREADS} threads ms':>14} {'ratio':>6}")
    for name, make, train, calls in (("mlp inference", mlp, False, 60), ("lenet inference", lenet, False, 16),
                                     ("mlp training step", mlp, True, 16)):
        call, inputs = make_call(make, train)
        expected = [call(x) for x in inputs]
        one = min(run(call, inputs, 1, calls)[0] for _ in range(3))
        best, wrong, total = None, 0, 0
        for _ in range(3):
            ms, outputs = run(call, inputs, THREADS, calls // 2)
            best = ms if best is None else min(best, ms)
            wrong += sum(not np.array_equal(out, expected[j]) for j, out in outputs)
            total += len(outputs)
        print(f"{name:<22} {f'{wrong}/{total}':>9} {one:>12.2f} {best:>14.2f} {best / one:>6.2f}")


if __name__ == "__main__":
    main()
