"""Writes tests/data/optimizer/update_ops_mxnet.json: MXNet 1.9.1's optimizer update ops (nd.sgd_update, ...) on
small fixed inputs, the new weight and every state after one call.

Run with real MXNet 1.9.1 (a separate venv): ~/.venvs/mxref/bin/python tests/data/make_update_ops_reference.py"""
import json
import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(7)
SHAPE = (2, 3)


def arr(low=-1.0, high=1.0):
    return rng.uniform(low, high, SHAPE).astype(np.float32)


CASES = [  # (op, [(input name, low, high)], kwargs)
    ("sgd_update", [], dict(lr=0.1, wd=0.01, rescale_grad=0.5)),
    ("sgd_update", [], dict(lr=0.1, clip_gradient=0.2)),
    ("sgd_mom_update", [("mom", -1, 1)], dict(lr=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5)),
    ("nag_mom_update", [("mom", -1, 1)], dict(lr=0.1, momentum=0.9, wd=0.01, clip_gradient=0.3)),
    ("adam_update", [("mean", -1, 1), ("var", 0, 1)], dict(lr=0.01, wd=0.01, rescale_grad=0.5)),
    ("ftrl_update", [("z", -1, 1), ("n", 0, 1)], dict(lr=0.1, lamda1=0.01, beta=1.0, wd=0.01)),
    ("ftml_update", [("d", 0, 1), ("v", 0, 1), ("z", -1, 1)], dict(lr=0.1, t=3, wd=0.01, clip_grad=0.5)),
    ("signsgd_update", [], dict(lr=0.1, wd=0.01, rescale_grad=0.5)),
    ("signum_update", [("mom", -1, 1)], dict(lr=0.1, momentum=0.9, wd=0.01, wd_lh=0.01)),
    ("rmsprop_update", [("n", 0, 1)], dict(lr=0.1, gamma1=0.9, wd=0.01, clip_weights=0.5)),
    ("rmspropalex_update", [("n", 1, 2), ("g", -0.1, 0.1), ("delta", -1, 1)], dict(lr=0.1, wd=0.01)),
]

out = []
for op, states, kwargs in CASES:
    weight, grad = arr(), arr()
    state_values = {name: rng.uniform(lo, hi, SHAPE).astype(np.float32) for name, lo, hi in states}
    nd_states = {name: mx.nd.array(v) for name, v in state_values.items()}
    new_weight = getattr(mx.nd, op)(mx.nd.array(weight), mx.nd.array(grad), *nd_states.values(), **kwargs)
    out.append({"op": op, "kwargs": kwargs, "weight": weight.tolist(), "grad": grad.tolist(),
                "states": {k: v.tolist() for k, v in state_values.items()},
                "expected_weight": new_weight.asnumpy().tolist(),
                "expected_states": {k: v.asnumpy().tolist() for k, v in nd_states.items()}})

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizer", "update_ops_mxnet.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
print("wrote", path)
