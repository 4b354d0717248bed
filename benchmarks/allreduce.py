"""Allreduce throughput: mixnet's paths vs raw mpi4py `Allreduce` on the same buffers, 2 processes on this machine.

    python benchmarks/allreduce.py                 # starts itself under mpiexec -n 2 (the venv's mpiexec)
    python benchmarks/allreduce.py --rounds 7 --sizes 4K,1M,64M

Paths, each summing a float32 buffer of the given size over the ranks, in place:
  mpi4py       comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM) on a numpy array (blocking; the baseline)
  comm         mixnet.distributed.world().allreduce_(buf) on the same numpy array (non-blocking + deadline poll)
  hvd_sum      hvd.allreduce_(nd, op=hvd.Sum) on an NDArray whose buffer is that array (no copy)
  hvd_avg      hvd.allreduce_(nd) (Horovod's default, Average): the sum plus one scaling pass over the buffer
  kv_pushpull  mx.kv.create('dist_sync').pushpull(key, nd, out=nd), when this checkout has a dist KVStore

Algorithm bandwidth = bytes / time per call (GB/s, 1e9 bytes). The paths run interleaved in rounds (each round
times every path once per size, after a barrier), so machine noise hits them alike; the figures are medians over
rounds, and `ratio` is a path's median bandwidth over mpi4py's in the same run (target: mixnet >= 0.9). Rank 0 prints
one JSON line per (size, path) and a table; the load average is recorded.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _size(text):
    text = text.strip().upper().rstrip("B")
    return int(text[:-1]) * _UNITS[text[-1]] if text[-1] in _UNITS else int(text)


def _args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="4K,16K,64K,256K,1M,4M,16M,64M", help="bytes per buffer (K, M suffixes)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--target-s", type=float, default=0.05, help="time per measurement (calls are repeated)")
    p.add_argument("--np", type=int, default=2, help="processes")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


def launch(args):
    """Runs this script under mpiexec (one BLAS thread each: the reductions are memory-bound anyway)."""
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               MIXNET_NUMBA=os.environ.get("MIXNET_NUMBA", "0"))
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([repo] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    cmd = [mpiexec if os.path.exists(mpiexec) else "mpiexec", "-n", str(args.np), sys.executable,
           os.path.abspath(__file__), "--worker", "--sizes", args.sizes, "--rounds", str(args.rounds),
           "--target-s", str(args.target_s)]
    return subprocess.call(cmd, env=env, timeout=1800)


def worker(args):
    import numpy as np
    from mpi4py import MPI

    import mixnet as mx
    import mixnet.horovod as hvd
    from mixnet.distributed import world

    hvd.init()
    comm, w = MPI.COMM_WORLD, world()
    rank = comm.Get_rank()
    try:
        kv = mx.kv.create("dist_sync")
    except Exception as err:            # the dist KVStore lives on another branch until merged
        kv = None
        kv_missing = f"{type(err).__name__}: {err}"
    sizes = [_size(s) for s in args.sizes.split(",")]
    bufs = {n: np.zeros(n // 4, dtype=np.float32) for n in sizes}
    nds = {n: mx.nd.NDArray.__new__(mx.nd.NDArray) for n in sizes}
    for n in sizes:                    # an NDArray over the very same numpy buffer
        nds[n]._data, nds[n]._ctx = bufs[n], mx.cpu()
    if kv is not None:
        for n in sizes:
            kv.init(n, mx.nd.zeros(n // 4))

    paths = {
        "mpi4py": lambda n: comm.Allreduce(MPI.IN_PLACE, bufs[n], op=MPI.SUM),
        "comm": lambda n: w.allreduce_(bufs[n]),
        "hvd_sum": lambda n: hvd.allreduce_(nds[n], op=hvd.Sum),
        "hvd_avg": lambda n: hvd.allreduce_(nds[n]),
    }
    if kv is not None:
        paths["kv_pushpull"] = lambda n: kv.pushpull(n, nds[n], out=nds[n])

    # calls per measurement: from one timed call of the baseline, so that a measurement takes about target_s
    reps = {}
    for n in sizes:
        paths["mpi4py"](n)
        comm.Barrier()
        t = time.perf_counter()
        paths["mpi4py"](n)
        reps[n] = max(3, min(2000, int(args.target_s / max(time.perf_counter() - t, 1e-6))))
        reps[n] = comm.bcast(reps[n], root=0)

    samples = {(n, p): [] for n in sizes for p in paths}
    loads = []
    for _ in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for n in sizes:
            for name, call in paths.items():
                call(n)                          # warm
                comm.Barrier()
                t = time.perf_counter()
                for _ in range(reps[n]):
                    call(n)
                elapsed = comm.allreduce(time.perf_counter() - t, op=MPI.MAX)   # the slowest rank's time
                samples[(n, name)].append(elapsed / reps[n])
    if rank != 0:
        return
    print(f"# {comm.Get_size()} processes, {args.rounds} rounds, load average {min(loads):.2f}-{max(loads):.2f}")
    if kv is None:
        print(f"# kv_pushpull not measured: mx.kv.create('dist_sync') failed here ({kv_missing})")
    header = f"{'size':>8} " + " ".join(f"{p + ' GB/s':>17}" for p in paths) + "  " + \
        " ".join(f"{p + '/mpi':>12}" for p in paths if p != "mpi4py")
    print(header)
    for n in sizes:
        gbps = {p: n / statistics.median(samples[(n, p)]) / 1e9 for p in paths}
        for p in paths:
            print(json.dumps({"bench": "allreduce", "bytes": n, "path": p, "median_us": round(
                statistics.median(samples[(n, p)]) * 1e6, 2), "gb_s": round(gbps[p], 3),
                "ratio_vs_mpi4py": round(gbps[p] / gbps["mpi4py"], 3), "reps": reps[n], "rounds": args.rounds,
                "load_min": round(min(loads), 2), "load_max": round(max(loads), 2)}), file=sys.stderr)
        label = f"{n // _UNITS['M']}M" if n >= _UNITS["M"] else f"{n // _UNITS['K']}K"
        print(f"{label:>8} " + " ".join(f"{gbps[p]:>17.3f}" for p in paths) + "  " +
              " ".join(f"{gbps[p] / gbps['mpi4py']:>12.2f}" for p in paths if p != "mpi4py"), flush=True)


if __name__ == "__main__":
    a = _args()
    if a.worker:
        worker(a)
    else:
        sys.exit(launch(a))
