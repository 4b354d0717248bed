"""Shared timing / JSON-lines helpers for the training-step benchmarks (mlp.py, lenet.py).

Every framework runs in rounds, interleaved (A, B, C, A, B, C, ...), so machine noise hits all of them alike.
Frameworks that cannot live in this process (MXNet 1.9.1 needs its own venv and numpy) run as a persistent
worker subprocess of the same script (`--worker mxnet`): it reads "N" from stdin, runs N timed steps and answers
one JSON list of milliseconds.
"""
import json
import os
import statistics
import subprocess
import sys
import time

MXNET_PYTHON = os.path.expanduser("~/.venvs/mxref/bin/python")
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def set_threads_from_argv():
    """Honours `--threads N` before numpy is imported (BLAS reads these at load time); returns the count used."""
    argv = sys.argv
    if "--threads" in argv:
        n = argv[argv.index("--threads") + 1]
        for var in _THREAD_VARS:
            os.environ[var] = str(n)
    return thread_count()


def thread_count():
    for var in _THREAD_VARS:
        if os.environ.get(var):
            return int(os.environ[var])
    return os.cpu_count()


def time_steps(step, n, sync=None):
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        step()
        if sync is not None:
            sync()
        samples.append((time.perf_counter() - start) * 1e3)
    return samples


class InProcess:
    def __init__(self, name, step, sync=None, warmup=3):
        self.name, self._step, self._sync = name, step, sync
        time_steps(step, warmup, sync)

    def run(self, n):
        return time_steps(self._step, n, self._sync)

    def close(self):
        pass


class Worker:
    """A framework running the same script in another interpreter (`--worker NAME`)."""

    def __init__(self, name, python, script, extra_args=()):
        self.name = name
        self._proc = subprocess.Popen([python, script, "--worker", name, *extra_args], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True, bufsize=1)
        line = self._proc.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"{name} worker failed to start: {line!r}")

    def run(self, n):
        self._proc.stdin.write(f"{n}\n")
        self._proc.stdin.flush()
        return json.loads(self._proc.stdout.readline())

    def close(self):
        try:
            self._proc.stdin.write("quit\n")
            self._proc.stdin.flush()
            self._proc.wait(timeout=30)
        except Exception:      # noqa: BLE001 - best effort shutdown
            self._proc.kill()


def serve_worker(step, sync=None, warmup=3):
    """The worker side of Worker: warm up, say ready, then answer "N" requests."""
    time_steps(step, warmup, sync)
    print("ready", flush=True)
    for line in sys.stdin:
        line = line.strip()
        if line == "quit" or not line:
            break
        print(json.dumps(time_steps(step, int(line), sync)), flush=True)


def settle(*blocks):
    """On mixnet, waits until what compiles or loads in the background is in (the eager Numba loops, and the fused
    kernels of the blocks' training plans), so the steps timed next are the steady state."""
    fastpath = sys.modules.get("mixnet.ops._fastpath")
    if fastpath is not None and hasattr(fastpath, "wait_compiled"):
        fastpath.wait_compiled()
    for block in blocks:
        for graph in getattr(block, "_cached_graphs", {}).values():
            for plan in list(getattr(graph, "_training", {}).values()):
                for part in (plan.forward, plan.backward):
                    if part is not None:
                        part.wait_fused()


def interleave(runners, rounds, steps):
    results = {r.name: [] for r in runners}
    loads = []
    for _ in range(rounds):
        loads.append(os.getloadavg()[0])
        for r in runners:
            results[r.name].extend(r.run(steps))
    for r in runners:
        r.close()
    return results, loads


def report(benchmark, results, baseline, loads, threads, extra=None):
    base = statistics.median(results[baseline]) if baseline in results else None
    lines = []
    for name, samples in results.items():
        med = statistics.median(samples)
        line = {"benchmark": benchmark, "what": name, "median_ms": round(med, 3), "min_ms": round(min(samples), 3),
                "n": len(samples), "threads": threads,
                "load_avg": round(statistics.median(loads), 2), "load_avg_max": round(max(loads), 2)}
        if base is not None:
            line[f"ratio_vs_{baseline}"] = round(med / base, 2)
        if extra and name in extra:
            line.update(extra[name])
        print(json.dumps(line), flush=True)
        lines.append(line)
    return lines


def skipped(benchmark, what, reason):
    print(json.dumps({"benchmark": benchmark, "what": what, "skipped": reason}), flush=True)


def torch_python():
    """An interpreter that can `import torch` (this one, or a venv under ~/.venvs), or None."""
    candidates = [sys.executable]
    venvs = os.path.expanduser("~/.venvs")
    if os.path.isdir(venvs):
        candidates += [os.path.join(venvs, v, "bin", "python") for v in sorted(os.listdir(venvs))]
    for py in candidates:
        if os.path.exists(py) and subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0:
            return py
    return None
