"""Data-parallel scaling: a GEMM-bound MLP training step, 1 process vs 2 processes with one BLAS thread each, on
the same global batch.

    python benchmarks/scaling.py                     # 5 rounds of (1 process, 2 processes), interleaved
    python benchmarks/scaling.py --rounds 7 --steps 20 --width 1024 --batch 256

Model: Dense(width) x 3 with ReLU + Dense(10), input `width` features, softmax cross-entropy, SGD with momentum,
hybridized. 1 process: gluon.Trainer (no KVStore) stepping over the global batch B. 2 processes (mpiexec -n 2):
each holds B/2 examples and steps with hvd.DistributedTrainer (gradients averaged over the ranks in flat
buckets); with --kvstore dist_sync, gluon.Trainer(kvstore='dist_sync') instead, when this checkout has one.
Every process runs with OMP/OPENBLAS/MKL/NUMBA_NUM_THREADS=1 (one thread each: Numba's parallel kernels would otherwise
start a thread per core in every rank).

    T1 = median seconds per step, 1 process, batch B
    T2 = median seconds per step, 2 processes, B/2 each (both ranks step together: the slower rank's time); the
         part of it rank 0 spends in the gradient allreduce (waiting for the other rank included) is printed too
    scaling efficiency = (B / T2) / (2 * B / T1) = T1 / (2 * T2)     (throughput ratio / 2; 1.0 is perfect)

Target: >= 0.8. Each round starts fresh processes for both configurations, one after the other, so machine load
hits both alike; the figures are medians over rounds, with the load average printed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def _args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=15, help="timed steps per run (after 3 warm-up steps)")
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--batch", type=int, default=256, help="global batch")
    p.add_argument("--kvstore", default=None, help="dist_sync: time gluon.Trainer with that KVStore instead")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


def _env():
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([repo] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    return env


def run_config(args, n):
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    cmd = [mpiexec if os.path.exists(mpiexec) else "mpiexec", "-n", str(n), sys.executable,
           os.path.abspath(__file__), "--worker", "--steps", str(args.steps), "--width", str(args.width),
           "--batch", str(args.batch)] + (["--kvstore", args.kvstore] if args.kvstore else [])
    out = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(args):
    per = {1: [], 2: []}
    comm = []
    loads = []
    for _ in range(args.rounds):
        for n in (1, 2):
            loads.append(os.getloadavg()[0])
            res = run_config(args, n)
            per[n].append(res["step_s"])
            if n == 2:
                comm.append(res["comm_s"])
    t1, t2 = statistics.median(per[1]), statistics.median(per[2])
    tc = statistics.median(comm)
    eff = t1 / (2 * t2)
    path = f"gluon.Trainer(kvstore={args.kvstore!r})" if args.kvstore else "hvd.DistributedTrainer"
    result = {"bench": "scaling", "path": path, "width": args.width, "global_batch": args.batch,
              "steps": args.steps, "rounds": args.rounds, "t1_ms": round(t1 * 1e3, 2), "t2_ms": round(t2 * 1e3, 2),
              "t2_allreduce_ms": round(tc * 1e3, 2),
              "t1_all_ms": [round(t * 1e3, 1) for t in per[1]], "t2_all_ms": [round(t * 1e3, 1) for t in per[2]],
              "efficiency": round(eff, 3), "load_min": round(min(loads), 2), "load_max": round(max(loads), 2)}
    print(json.dumps(result))
    print(f"# {path}: T1 {t1 * 1e3:.1f} ms (1 process, batch {args.batch}), T2 {t2 * 1e3:.1f} ms (2 processes, "
          f"{args.batch // 2} each, {tc * 1e3:.1f} ms of it in the gradient allreduce on rank 0); efficiency T1/(2*T2) = {eff:.2f} (target 0.80); load average "
          f"{min(loads):.2f}-{max(loads):.2f}")


def worker(args):
    import numpy as np

    import mixnet as mx
    from mixnet import autograd, gluon
    from _common import settle
    from mixnet.gluon import nn

    n = 1
    if "PMI_SIZE" in os.environ and int(os.environ["PMI_SIZE"]) > 1:
        import mixnet.horovod as hvd
        hvd.init()
        n, rank = hvd.size(), hvd.rank()
    local = args.batch // n
    rng = np.random.default_rng(0)
    x = mx.nd.array(rng.standard_normal((local, args.width)).astype(np.float32))
    y = mx.nd.array(rng.integers(0, 10, size=local).astype(np.float32))
    net = nn.HybridSequential()
    for _ in range(3):
        net.add(nn.Dense(args.width, activation="relu"))
    net.add(nn.Dense(10))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(x)
    opt_params = {"learning_rate": 0.01, "momentum": 0.9}
    if n == 1:
        trainer = gluon.Trainer(net.collect_params(), "sgd", opt_params, kvstore=None)
    elif args.kvstore:
        trainer = gluon.Trainer(net.collect_params(), "sgd", opt_params, kvstore=args.kvstore)
    else:
        hvd.broadcast_parameters(net.collect_params())
        trainer = hvd.DistributedTrainer(net.collect_params(), "sgd", opt_params)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    loss_fn.hybridize()
    comm_s = [0.0]                              # time inside the gradient allreduce (waiting for the peer included)
    reduce_grads = trainer._allreduce_grads

    def timed_reduce():
        t0 = time.perf_counter()
        reduce_grads()
        comm_s[0] += time.perf_counter() - t0
    trainer._allreduce_grads = timed_reduce

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(local)

    for _ in range(3):
        step()
    settle(net, loss_fn)                       # the steady state: kernels and eager loops loaded
    step()
    if n > 1:
        hvd.allreduce(mx.nd.zeros(1))          # start together
    comm_s[0] = 0.0
    t = time.perf_counter()
    for _ in range(args.steps):
        step()
    elapsed = (time.perf_counter() - t) / args.steps
    comm_step = comm_s[0] / args.steps
    if n > 1:                                   # the slower rank's time per step
        elapsed = float(hvd.allreduce(mx.nd.array([elapsed], dtype="float64"), op=hvd.Max).asscalar())
        if rank != 0:
            return
    print(json.dumps({"n": n, "step_s": elapsed, "comm_s": comm_step}))


if __name__ == "__main__":
    a = _args()
    if a.worker:
        worker(a)
    else:
        main(a)
