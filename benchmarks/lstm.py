"""W3: fused recurrent layers, LSTM and GRU 64 -> 256, T = 50, batch 32, TNC, 1 thread by default.

Cases: lstm-train, lstm-infer, gru-train, gru-infer. *train* = forward + backward of out.sum() w.r.t. the weights
(no optimizer); *infer* = forward only. Frameworks, interleaved in rounds in one run:
  numpy          a hand-written numpy forward / BPTT (one GEMM for the input projection, one per step, the weight
                 gradients as one GEMM over all steps): the floor of a plain numpy implementation
  mixnet         gluon.rnn.LSTM / GRU, hybridized (this checkout, a worker subprocess; timed once what compiles in
                 the background is in); 'mixnet:/path' runs another checkout the same way (before / after)
  torch          nn.LSTM / nn.GRU (a worker subprocess with an interpreter that imports torch: ~/.venvs/*)
  mxnet          gluon.rnn.LSTM / GRU hybridized on MXNet 1.9.1 (~/.venvs/mxref, worker subprocess)
  foreach        the Keras-MXNet `unroll=False` path: a HybridBlock whose hybrid_forward runs
                 F.contrib.foreach over a gluon.rnn.LSTMCell / GRUCell (begin states given as inputs), hybridized,
                 on mixnet (a worker subprocess; 'foreach:/path' runs another checkout); 'mxnet-foreach' on MXNet
Prints one JSON line per (case, framework): median / min ms, ratio vs torch (or numpy without torch), load average.
Then, unless --no-first-call, a fresh process measures mixnet's first calls (import, build, first train step with
its compiles, second step) with MIXNET_COMPILE_BACKGROUND=0 and with the default background compilation.
Targets (issue 12): mixnet train and infer <= 1.2x torch; foreach train and infer <= 2x torch.

    python3 benchmarks/lstm.py [--rounds 7] [--steps 5] [--threads 1] [--cases lstm-train,...]
                               [--frameworks numpy,mixnet,foreach,torch,mxnet,mxnet-foreach]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _threads_from_argv():
    n = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[var] = n
    return int(n)


THREADS = _threads_from_argv()        # before numpy / torch / mxnet are imported
from _common import MXNET_PYTHON, InProcess, Worker, interleave, report, serve_worker, skipped, torch_python  # noqa

import numpy as np

T, N, I, H = 50, 32, 64, 256
CASES = ("lstm-train", "lstm-infer", "gru-train", "gru-infer")


def make_data():
    return (np.random.default_rng(0).standard_normal((T, N, I)) * 0.5).astype(np.float32)


# ---------------------------------------------------------------------------------------------------------
def numpy_step(case):
    mode, what = case.split("-")
    g = 4 if mode == "lstm" else 3
    rng = np.random.default_rng(1)
    wx = (rng.standard_normal((g * H, I)) * 0.06).astype(np.float32)
    wh = (rng.standard_normal((g * H, H)) * 0.06).astype(np.float32)
    bx = np.zeros(g * H, np.float32)
    bh = np.zeros(g * H, np.float32)
    x = make_data()

    def sig(v):
        return 1 / (1 + np.exp(-v))

    def forward():
        xw = (x.reshape(T * N, I) @ wx.T + bx).reshape(T, N, g * H)
        hs = np.zeros((T + 1, N, H), np.float32)
        acts = np.empty((T, N, g * H), np.float32)
        if mode == "lstm":
            cs = np.zeros((T + 1, N, H), np.float32)
            tcs = np.empty((T, N, H), np.float32)
            for t in range(T):
                a = xw[t] + hs[t] @ wh.T + bh
                a[:, :2 * H] = sig(a[:, :2 * H])
                a[:, 2 * H:3 * H] = np.tanh(a[:, 2 * H:3 * H])
                a[:, 3 * H:] = sig(a[:, 3 * H:])
                cs[t + 1] = a[:, H:2 * H] * cs[t] + a[:, :H] * a[:, 2 * H:3 * H]
                tcs[t] = np.tanh(cs[t + 1])
                hs[t + 1] = a[:, 3 * H:] * tcs[t]
                acts[t] = a
            return hs, acts, (cs, tcs)
        hns = np.empty((T, N, H), np.float32)
        for t in range(T):
            hw = hs[t] @ wh.T + bh
            rz = sig(xw[t, :, :2 * H] + hw[:, :2 * H])
            n = np.tanh(xw[t, :, 2 * H:] + rz[:, :H] * hw[:, 2 * H:])
            z = rz[:, H:]
            hs[t + 1] = (1 - z) * n + z * hs[t]
            acts[t, :, :2 * H], acts[t, :, 2 * H:], hns[t] = rz, n, hw[:, 2 * H:]
        return hs, acts, (hns,)

    def backward(hs, acts, extra):
        dG = np.empty((T, N, g * H), np.float32)
        dGh = np.empty((T, N, g * H), np.float32) if mode == "gru" else dG
        dh = np.zeros((N, H), np.float32)
        dc = np.zeros((N, H), np.float32)
        for t in range(T - 1, -1, -1):
            dh = dh + 1.0                                   # d out.sum() / d h_t
            a = acts[t]
            if mode == "lstm":
                cs, tcs = extra
                i, f, gg, o = a[:, :H], a[:, H:2 * H], a[:, 2 * H:3 * H], a[:, 3 * H:]
                dct = dh * o * (1 - tcs[t] ** 2) + dc
                dG[t, :, :H] = dct * gg * i * (1 - i)
                dG[t, :, H:2 * H] = dct * cs[t] * f * (1 - f)
                dG[t, :, 2 * H:3 * H] = dct * i * (1 - gg * gg)
                dG[t, :, 3 * H:] = dh * tcs[t] * o * (1 - o)
                dc = dct * f
                dh = dG[t] @ wh
            else:
                (hns,) = extra
                r, z, n = a[:, :H], a[:, H:2 * H], a[:, 2 * H:]
                dan = dh * (1 - z) * (1 - n * n)
                dG[t, :, :H] = dan * hns[t] * r * (1 - r)
                dG[t, :, H:2 * H] = (hs[t] - n) * dh * z * (1 - z)
                dG[t, :, 2 * H:] = dan
                dGh[t, :, :2 * H] = dG[t, :, :2 * H]
                dGh[t, :, 2 * H:] = dan * r
                dh = dGh[t] @ wh + dh * z
        dG2, dGh2 = dG.reshape(T * N, -1), dGh.reshape(T * N, -1)
        return (dG2.T @ x.reshape(T * N, I), dGh2.T @ hs[:-1].reshape(T * N, H), dG2.sum(0), dGh2.sum(0))

    if what == "infer":
        return lambda: forward(), None
    return lambda: backward(*forward()), None


def gluon_step(mx, case):
    mode, what = case.split("-")
    layer = (mx.gluon.rnn.LSTM if mode == "lstm" else mx.gluon.rnn.GRU)(H, input_size=I)
    layer.initialize(mx.init.Xavier())
    layer.hybridize()
    x = mx.nd.array(make_data())

    if what == "infer":
        def step():
            layer(x).wait_to_read()
    else:
        def step():
            with mx.autograd.record():
                out = layer(x)
            out.backward()
            for p in layer.collect_params().values():
                p.grad().wait_to_read()
    step()
    step()
    fastpath = sys.modules.get("mixnet.ops._fastpath")
    if fastpath is not None:
        fastpath.wait_compiled()
    return step, None


def foreach_step(mx, case):
    """A cell written with F.contrib.foreach, as Keras-MXNet's `unroll=False` writes it."""
    mode, what = case.split("-")
    cell_type = mx.gluon.rnn.LSTMCell if mode == "lstm" else mx.gluon.rnn.GRUCell

    class ForeachRNN(mx.gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.cell = cell_type(H, input_size=I)

        def hybrid_forward(self, F, x, *states):
            outs, _ = F.contrib.foreach(lambda x_t, s: self.cell(x_t, s), x, list(states))
            return outs

    net = ForeachRNN()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.array(make_data())
    states = [mx.nd.zeros((N, H)) for _ in range(2 if mode == "lstm" else 1)]
    params = list(net.collect_params().values())

    if what == "infer":
        def step():
            net(x, *states).wait_to_read()
    else:
        def step():
            with mx.autograd.record():
                out = net(x, *states)
            out.backward()
            for p in params:
                p.grad().wait_to_read()
    step()
    step()
    fastpath = sys.modules.get("mixnet.ops._fastpath")
    if fastpath is not None:
        fastpath.wait_compiled()
    return step, None


def torch_step(case):
    import torch
    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    mode, what = case.split("-")
    layer = (torch.nn.LSTM if mode == "lstm" else torch.nn.GRU)(I, H)
    x = torch.from_numpy(make_data())
    if what == "infer":
        def step():
            with torch.no_grad():
                layer(x)
    else:
        def step():
            layer.zero_grad(set_to_none=True)
            out, _ = layer(x)
            out.sum().backward()
    return step, None


def build(name, case):
    if name == "numpy":
        return numpy_step(case)
    if name == "torch":
        return torch_step(case)
    if name.startswith(("mixnet", "foreach")):
        sys.path.insert(0, name.split(":", 1)[1] if ":" in name else os.path.dirname(HERE))
        import mixnet as mx
        return (foreach_step if name.startswith("foreach") else gluon_step)(mx, case)
    if name in ("mxnet", "mxnet-foreach"):
        import mxnet as mx
        return (foreach_step if name == "mxnet-foreach" else gluon_step)(mx, case)
    raise ValueError(name)


def first_call(background, cold=False):
    """In a fresh process: seconds to import mixnet, then each of the first 10 train steps (the first includes
    tracing and compiles). cold: empty Numba / mixnet kernel caches (a fresh install)."""
    import tempfile
    env = dict(os.environ)
    if cold:
        tmp = tempfile.mkdtemp(prefix="mixnet-lstm-cold-")
        env.update(NUMBA_CACHE_DIR=os.path.join(tmp, "numba"), MIXNET_CACHE_DIR=os.path.join(tmp, "kernels"))
    code = f"""
import os, sys, time, json
for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[v] = "{THREADS}"
os.environ["MIXNET_COMPILE_BACKGROUND"] = "{1 if background else 0}"
sys.path.insert(0, {os.path.dirname(HERE)!r})
t0 = time.perf_counter()
import numpy as np
import mixnet as mx
t1 = time.perf_counter()
x = mx.nd.array((np.random.default_rng(0).standard_normal(({T}, {N}, {I})) * 0.5).astype(np.float32))
layer = mx.gluon.rnn.LSTM({H}, input_size={I})
layer.initialize(mx.init.Xavier())
layer.hybridize()
times = []
for _ in range(10):
    s = time.perf_counter()
    with mx.autograd.record():
        out = layer(x)
    out.backward()
    layer.l0_i2h_weight.grad().wait_to_read()
    times.append(time.perf_counter() - s)
print(json.dumps({{"import_s": round(t1 - t0, 3), "steps_s": [round(v, 3) for v in times]}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    line = done.stdout.strip().splitlines()[-1] if done.returncode == 0 else json.dumps({"error": done.stderr[-500:]})
    info = json.loads(line)
    info.update({"benchmark": "lstm", "what": "mixnet first calls (fresh process, lstm-train)",
                 "compile_background": background, "kernel_caches": "empty" if cold else "warm",
                 "threads": THREADS,
                 "load_avg": round(os.getloadavg()[0], 2)})
    print(json.dumps(info), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--frameworks", default="numpy,mixnet,foreach,torch,mxnet")
    parser.add_argument("--no-first-call", action="store_true")
    parser.add_argument("--worker", default=None)
    parser.add_argument("--case", default=None)
    args = parser.parse_args()
    script = os.path.abspath(__file__)
    if args.worker:
        step, sync = build(args.worker, args.case)
        serve_worker(step, sync)
        return
    tpy = torch_python()
    for case in args.cases.split(","):
        runners = []
        for name in args.frameworks.split(","):
            extra = ("--case", case, "--threads", str(THREADS))
            if name == "torch":
                if tpy is None:
                    skipped("lstm", f"{case} torch", "no interpreter imports torch (~/.venvs/torch)")
                    continue
                runners.append(Worker(name, tpy, script, extra))
            elif name in ("mxnet", "mxnet-foreach"):
                if not os.path.exists(MXNET_PYTHON):
                    skipped("lstm", f"{case} mxnet", f"{MXNET_PYTHON} not found")
                    continue
                runners.append(Worker(name, MXNET_PYTHON, script, extra))
            elif name.startswith(("mixnet", "foreach")):
                runners.append(Worker(name, sys.executable, script, extra))
            else:
                step, sync = build(name, case)
                runners.append(InProcess(name, step, sync))
        results, loads = interleave(runners, args.rounds, args.steps)
        baseline = "torch" if "torch" in results else "numpy"
        report("lstm", results, baseline, loads, THREADS, {name: {"case": case} for name in results})
    if not args.no_first_call:
        first_call(background=False, cold=True)
        first_call(background=True, cold=True)
        first_call(background=False)
        first_call(background=True)


if __name__ == "__main__":
    main()
