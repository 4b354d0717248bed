"""W2 on a GPU: the MLP training step of mlp.py (784-512-512-10, ReLU, softmax cross-entropy, SGD lr 0.01) on
cupy arrays, at batch 128 (launch-bound: the framework's Python and the kernel launches are the step) and at a
larger batch (the GEMMs are the step).

Frameworks, interleaved in rounds in one process, each step timed to the device's completion (a stream
synchronize after every step, so the figure is what a user's loop gets per step):
  cupy           mlp.py's hand-written step on cupy arrays (the floor: the same kernels, no framework)
  mixnet         eager Gluon on mx.gpu(0)
  mixnet-hybrid  the same, net and loss hybridized (fused CUDA kernels; timed once they are in)
  mixnet-hybrid-static  hybridize(static_alloc=True)
  torch          eager PyTorch on CUDA, if importable (it is on the GPU machines this project borrows)
Prints one JSON line per framework and batch: median / min ms, ratio vs cupy. Needs cupy and a GPU; says so and
exits 0 otherwise.

    python3 benchmarks/mlp_gpu.py [--rounds 10] [--steps 20] [--batches 128,4096] [--frameworks ...]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from _common import InProcess, interleave, report, skipped  # noqa: E402
from mlp import gluon_step, numpy_parts, torch_step  # noqa: E402

BENCHMARK = "mlp_gpu"


def cupy_step(batch):
    import cupy
    forward, backward, update, state = numpy_parts(batch, xp=cupy)

    def step():
        forward()
        backward()
        update()

    return step, cupy.cuda.get_current_stream().synchronize, lambda: float(state["loss"].mean())


def mixnet_step(batch, hybrid, static_alloc=False):
    import mixnet as mx
    with mx.gpu(0):      # data, parameters and trainer state are made on the GPU; the ops follow their inputs
        return gluon_step(mx, batch, hybrid=hybrid, static_alloc=static_alloc)


BUILDERS = {
    "cupy": cupy_step,
    "mixnet": lambda batch: mixnet_step(batch, hybrid=False),
    "mixnet-hybrid": lambda batch: mixnet_step(batch, hybrid=True),
    "mixnet-hybrid-static": lambda batch: mixnet_step(batch, hybrid=True, static_alloc=True),
    "torch": lambda batch: torch_step(batch, "cuda"),
}


def gpu_missing():
    try:
        import cupy
    except ImportError:
        return "cupy is not installed"
    return None if cupy.is_available() else "cupy finds no usable GPU"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batches", default="128,4096")
    parser.add_argument("--frameworks", default=",".join(BUILDERS))
    args = parser.parse_args()
    reason = gpu_missing()
    if reason:
        skipped(BENCHMARK, "all", reason)
        return 0
    for batch in (int(b) for b in args.batches.split(",")):
        runners, finals = [], {}
        for name in args.frameworks.split(","):
            try:
                step, sync, final = BUILDERS[name](batch)
            except ImportError as e:
                skipped(BENCHMARK, name, str(e))
                continue
            runners.append(InProcess(name, step, sync))
            finals[name] = final
        results, loads = interleave(runners, args.rounds, args.steps)
        extra = {name: {"batch": batch, "final_loss": round(f(), 4)} for name, f in finals.items()}
        report(BENCHMARK, results, "cupy", loads, None, extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
