"""W4: eager dispatch overhead, microseconds per op: 1000 sequential `a = a + b` on 16-element float32 arrays.

Prints one JSON line per measurement with the ratio against numpy measured in the same run.
Targets (issue 2): mixnet <= 2.5 us/op eager, <= 5 us/op while recording (MXNet 1.9.1: 13 / 18 us,
PyTorch: 1.2 / 1.7 us, numpy 0.27 us on the project's 2-core machine).
Usage: python benchmarks/dispatch.py [--repeats 15]
"""
import argparse
import json
import os
import statistics
import time

import numpy as np

import mixnet as mx

N_OPS = 1000


def time_loop(step, a, b, repeats):
    samples = []
    for _ in range(repeats):
        x = a
        start = time.perf_counter()
        for _ in range(N_OPS):
            x = step(x, b)
        samples.append((time.perf_counter() - start) / N_OPS * 1e6)
    return samples


def numpy_add(x, b):
    return x + b


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()

    a_np = np.ones(16, dtype=np.float32)
    b_np = np.ones(16, dtype=np.float32)
    a, b = mx.nd.array(a_np), mx.nd.array(b_np)
    results = {}
    time_loop(numpy_add, a_np, b_np, 2)      # warm up
    results["numpy"] = time_loop(numpy_add, a_np, b_np, args.repeats)
    time_loop(numpy_add, a, b, 2)
    results["mixnet eager"] = time_loop(numpy_add, a, b, args.repeats)

    def recording(repeats):
        b.attach_grad()
        samples = []
        for _ in range(repeats):
            with mx.autograd.record():
                samples.extend(time_loop(numpy_add, a, b, 1))
        return samples

    recording(2)
    results["mixnet recording"] = recording(args.repeats)
    base = statistics.median(results["numpy"])
    load = os.getloadavg()[0]
    for name, samples in results.items():
        med = statistics.median(samples)
        print(json.dumps({"benchmark": "dispatch", "what": name, "us_per_op_median": round(med, 3),
                          "us_per_op_min": round(min(samples), 3), "ratio_vs_numpy": round(med / base, 2),
                          "load_avg": round(load, 2)}))


if __name__ == "__main__":
    main()
