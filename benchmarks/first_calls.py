"""W2's first calls in a fresh process: what the first training steps of a script cost, call by call.

short_run.py averages 3 s of calls; this looks at the first ones, where the trace, the plans and the loading of the
eager loops land. Run in a fresh interpreter (this script is one), in the default mode, on the user's kernel cache
(warm it first by running this once): it prints one JSON line with the first --calls step times in ms, their
total, the call after which the eager loops were in, and whether Numba was imported.

    OMP_NUM_THREADS=1 python3 benchmarks/first_calls.py [--calls 40]
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import mlp  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    import mixnet as mx
    from mixnet.ops import _fastpath
    net, loss_fn, trainer, x, y = mlp.gluon_model(mx, 128, hybrid=True)
    net.hybridize()
    loss_fn.hybridize()
    times, loaded_after = [], None
    for call in range(args.calls):
        start = time.perf_counter()
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(128)
        loss.wait_to_read()
        times.append(time.perf_counter() - start)
        if loaded_after is None and _fastpath._module is not None:
            loaded_after = call
    print(json.dumps({"benchmark": "W2 first calls", "calls": args.calls, "total_ms": round(sum(times) * 1e3, 1),
                      "first_ms": [round(t * 1e3, 1) for t in times[:6]],
                      "last_ms": round(times[-1] * 1e3, 2), "loops_in_after_call": loaded_after,
                      "numba_imported": "numba" in sys.modules}))


if __name__ == "__main__":
    main()
