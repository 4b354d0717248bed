"""Generate spatial_ref.npz (outputs and input gradients of MXNet 1.9.1's spatial ops) for
test_spatial_mxnet_values.py.

Run it with MXNet 1.9.1's Python (NOT mixnet's); the test suite does not run it:

    ~/.venvs/mxref/bin/python tests/ops/make_spatial_ref.py

The .npz holds only plain numeric arrays (loaded with allow_pickle=False). For each case of
spatial_ref_cases.CASES: ``{name}/in{i}`` the inputs, ``{name}/head`` the head gradient, ``{name}/out`` the output
and ``{name}/grad{i}`` the gradient of each non-label input after ``out.backward(head)``.
"""
import os
import sys

import numpy as np
import mxnet as mx

sys.path.insert(0, os.path.dirname(__file__))
from spatial_ref_cases import CASES  # noqa: E402

assert mx.__version__ == "1.9.1", mx.__version__


def op_function(nd, name):
    return getattr(nd.contrib, name[len("_contrib_"):]) if name.startswith("_contrib_") else getattr(nd, name)


def main():
    rng = np.random.RandomState(7)
    out = {}
    for name, op, shapes, attrs, labels in CASES:
        arrays = [rng.randint(0, 3, shape).astype("float32") if i in labels
                  else rng.uniform(-1.2, 1.2, shape).astype("float32") for i, shape in enumerate(shapes)]
        inputs = [mx.nd.array(a) for a in arrays]
        for i, x in enumerate(inputs):
            if i not in labels:
                x.attach_grad()
        with mx.autograd.record():
            y = op_function(mx.nd, op)(*inputs, **attrs)
        head = rng.normal(size=y.shape).astype("float32")
        y.backward(mx.nd.array(head))
        for i, a in enumerate(arrays):
            out[f"{name}/in{i}"] = a
            if i not in labels:
                out[f"{name}/grad{i}"] = inputs[i].grad.asnumpy()
        out[f"{name}/head"] = head
        out[f"{name}/out"] = y.asnumpy()
    np.savez_compressed(os.path.join(os.path.dirname(__file__), "spatial_ref.npz"), **out)


if __name__ == "__main__":
    main()
