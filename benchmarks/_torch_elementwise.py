"""W1 in PyTorch, eager and torch.compile (Inductor's generated C++ kernel), for benchmarks/elementwise.py.

Run by elementwise.py in an interpreter that can import torch (a venv under ~/.venvs):
    python _torch_elementwise.py SIZES REPEATS THREADS
Prints one JSON line per (size, variant): ms median / min, and the one-time compile seconds for torch.compile.
"""
import json
import statistics
import sys
import time

import numpy as np
import torch


def chain(x):
    return torch.tanh(x * 0.5 + 1) * torch.sigmoid(x) - x * x / 3


def main():
    sizes, repeats, threads = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(threads)
    compiled = torch.compile(chain)
    for size in (int(float(s)) for s in sizes):
        x = torch.from_numpy(np.random.default_rng(0).standard_normal(size).astype(np.float32))
        start = time.perf_counter()
        compiled(x)
        compile_s = time.perf_counter() - start
        for name, fn in (("torch eager", chain), ("torch.compile", compiled)):
            fn(x)
            samples = []
            for _ in range(repeats):
                start = time.perf_counter()
                fn(x)
                samples.append((time.perf_counter() - start) * 1e3)
            row = {"size": size, "what": name, "ms_median": statistics.median(samples), "ms_min": min(samples)}
            if name == "torch.compile":
                row["first_call_s"] = round(compile_s, 2)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
