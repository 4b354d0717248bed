"""W2: MLP training step (784-512-512-10, ReLU, softmax cross-entropy, SGD lr 0.01, batch 128).

One step = forward + backward + SGD update. Frameworks, run interleaved in rounds in one run:
  numpy        hand-written forward / backward / SGD (the floor for an eager numpy framework)
  mixnet       eager Gluon: nn.Dense, gluon.loss.SoftmaxCrossEntropyLoss, gluon.Trainer('sgd')
  mixnet-hybrid  the same with HybridSequential, net and loss hybridized (timed once its fused kernels are in)
  mixnet-hybrid-static  the same with hybridize(static_alloc=True): planned buffers, kernels writing into them
  mxnet        the same Gluon code on MXNet 1.9.1 (~/.venvs/mxref, as a worker subprocess of this script)
  mxnet-hybrid the hybridized Gluon code on MXNet 1.9.1
  torch        eager PyTorch, if some interpreter (this one or a venv in ~/.venvs) can import torch
Prints one JSON line per framework: median / min ms, ratio vs numpy, load average, threads, final loss.
Targets (issues): mixnet eager <= 1.5x the hand-written numpy step; mixnet-hybrid <= 1.1x.

    python3 benchmarks/mlp.py [--rounds 10] [--steps 10] [--threads 1] [--frameworks numpy,mixnet,mxnet,torch]
A framework 'mixnet:/path/to/checkout' (or 'mixnet-hybrid:/path/to/checkout') runs another mixnet checkout as a
worker (before/after comparisons).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import (MXNET_PYTHON, InProcess, Worker, interleave, report, serve_worker, settle,  # noqa: E402
                     set_threads_from_argv, skipped, torch_python)

THREADS = set_threads_from_argv()
import numpy as np  # noqa: E402

IN, HID, OUT = 784, 512, 10
LR = 0.01


def make_data(batch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, IN)).astype(np.float32)
    y = rng.integers(0, OUT, size=batch)
    return x, y


def hybridize_and_settle(net, loss_fn, step, hybrid, static_alloc=False):
    """Hybridizes net and loss when asked; runs two steps and, on mixnet, waits until what compiles or loads in
    the background is in (fused kernels, the eager Numba loops), so the timed steps are the steady state."""
    if hybrid:
        net.hybridize(static_alloc=static_alloc)
        loss_fn.hybridize(static_alloc=static_alloc)
    step()
    step()
    settle(net, loss_fn)


def gluon_model(mx, batch, hybrid=False):
    """(net, loss_fn, trainer, x, y): the W2 model, loss, SGD trainer and data, the same Gluon code for mixnet and
    MXNet 1.9.1 (not hybridized yet), on the current context."""
    gluon, nn = mx.gluon, mx.gluon.nn
    x_np, y_np = make_data(batch)
    x, y = mx.nd.array(x_np), mx.nd.array(y_np.astype(np.float32))
    net = nn.HybridSequential() if hybrid else nn.Sequential()
    net.add(nn.Dense(HID, activation="relu", in_units=IN), nn.Dense(HID, activation="relu", in_units=HID),
            nn.Dense(OUT, in_units=HID))
    net.initialize(mx.init.Xavier())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})
    return net, loss_fn, trainer, x, y


def gluon_step(mx, batch, hybrid=False, static_alloc=False):
    """The same Gluon code for mixnet and MXNet 1.9.1; returns (step, sync, final_loss)."""
    net, loss_fn, trainer, x, y = gluon_model(mx, batch, hybrid)
    autograd = mx.autograd
    last = {}

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
        last["loss"] = loss

    def final_loss():
        return float(last["loss"].mean().asscalar())

    hybridize_and_settle(net, loss_fn, step, hybrid, static_alloc)
    return step, mx.nd.waitall, final_loss


def numpy_parts(batch, xp=np):
    """(forward, backward, update, state): the hand-written step in the three parts a Gluon step has (forward and
    loss, backward, SGD update); state["loss"] is the last forward's per-example loss. `xp` is numpy, or cupy for
    the same step on a GPU (mlp_gpu.py)."""
    x, y = map(xp.asarray, make_data(batch))
    rng = np.random.default_rng(1)

    def xavier(fan_out, fan_in):
        s = np.sqrt(6.0 / (fan_in + fan_out))
        return xp.asarray(rng.uniform(-s, s, (fan_out, fan_in)).astype(np.float32))

    params = [xavier(HID, IN), xp.zeros(HID, np.float32), xavier(HID, HID), xp.zeros(HID, np.float32),
              xavier(OUT, HID), xp.zeros(OUT, np.float32)]
    rows = xp.arange(batch)
    scale = np.float32(LR / batch)            # Trainer.step(batch) rescales the summed gradient by 1/batch
    state = {}

    def forward():
        w1, b1, w2, b2, w3, b3 = params
        h1 = x @ w1.T
        h1 += b1
        xp.maximum(h1, 0, out=h1)
        h2 = h1 @ w2.T
        h2 += b2
        xp.maximum(h2, 0, out=h2)
        z = h2 @ w3.T
        z += b3
        z -= z.max(axis=1, keepdims=True)
        e = xp.exp(z)
        s = e.sum(axis=1, keepdims=True)
        state.update(loss=xp.log(s[:, 0]) - z[rows, y], h1=h1, h2=h2, e=e, s=s)

    def backward():
        _, _, w2, _, w3, _ = params
        h1, h2 = state["h1"], state["h2"]
        dz = state["e"] / state["s"]
        dz[rows, y] -= 1
        dw3, db3 = dz.T @ h2, dz.sum(axis=0)
        dh2 = dz @ w3
        dh2 *= h2 > 0
        dw2, db2 = dh2.T @ h1, dh2.sum(axis=0)
        dh1 = dh2 @ w2
        dh1 *= h1 > 0
        state["grads"] = (dh1.T @ x, dh1.sum(axis=0), dw2, db2, dw3, db3)

    def update():
        for p, g in zip(params, state["grads"]):
            g *= scale
            p -= g

    return forward, backward, update, state


def numpy_step(batch):
    forward, backward, update, state = numpy_parts(batch)

    def step():
        forward()
        backward()
        update()

    return step, None, lambda: float(state["loss"].mean())


def torch_step(batch, device="cpu"):
    """Eager PyTorch on `device` ('cpu', or 'cuda' for mlp_gpu.py, which then synchronizes after each step)."""
    import torch
    torch.manual_seed(0)
    x_np, y_np = make_data(batch)
    x, y = torch.from_numpy(x_np).to(device), torch.from_numpy(y_np).to(device)
    net = torch.nn.Sequential(torch.nn.Linear(IN, HID), torch.nn.ReLU(), torch.nn.Linear(HID, HID),
                              torch.nn.ReLU(), torch.nn.Linear(HID, OUT)).to(device)
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    last = {}

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        last["loss"] = loss

    sync = torch.cuda.synchronize if device == "cuda" else None
    return step, sync, lambda: float(last["loss"].detach())


def _mixnet_root(name):
    """'mixnet' is this checkout; 'mixnet:/path' is another checkout (e.g. a before/after comparison)."""
    return name.split(":", 1)[1] if ":" in name else os.path.dirname(HERE)


def build(name, batch):
    if name == "numpy":
        return numpy_step(batch)
    if name == "torch":
        return torch_step(batch)
    if name.startswith("mixnet"):
        sys.path.insert(0, _mixnet_root(name))
        import mixnet as mx
        return gluon_step(mx, batch, hybrid=name.startswith("mixnet-hybrid"),
                          static_alloc=name == "mixnet-hybrid-static")
    if name in ("mxnet", "mxnet-hybrid"):
        import mxnet as mx
        return gluon_step(mx, batch, hybrid=name == "mxnet-hybrid")
    raise ValueError(name)


def main(benchmark="mlp", build_fn=build, baseline="numpy"):
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--frameworks", default="numpy,mixnet,mxnet,torch")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    batch = args.batch or (128 if benchmark == "mlp" else 64)
    if args.worker:
        step, sync, _ = build_fn(args.worker, batch)
        serve_worker(step, sync)
        return
    script = os.path.abspath(sys.argv[0])
    extra_args = ["--batch", str(batch)] + (["--threads", str(args.threads)] if args.threads else [])
    runners, finals = [], {}
    for name in args.frameworks.split(","):
        if name in ("numpy", "mixnet", "mixnet-hybrid", "mixnet-hybrid-static"):
            step, sync, final = build_fn(name, batch)
            runners.append(InProcess(name, step, sync))
            finals[name] = final
        elif name.startswith(("mixnet:", "mixnet-hybrid:")):    # another mixnet checkout, in its own interpreter
            runners.append(Worker(name, sys.executable, script, extra_args))
        elif name in ("mxnet", "mxnet-hybrid"):
            if not os.path.exists(MXNET_PYTHON):
                skipped(benchmark, name, f"{MXNET_PYTHON} not found")
                continue
            runners.append(Worker(name, MXNET_PYTHON, script, extra_args))
        elif name == "torch":
            py = torch_python()
            if py is None:
                skipped(benchmark, name, "no interpreter here or in ~/.venvs can import torch")
                continue
            runners.append(Worker(name, py, script, extra_args))
        else:
            raise SystemExit(f"unknown framework {name}")
    results, loads = interleave(runners, args.rounds, args.steps)
    extra = {name: {"batch": batch, "final_loss": round(f(), 4)} for name, f in finals.items()}
    report(benchmark, results, baseline, loads, THREADS, extra)


if __name__ == "__main__":
    main()
