"""Generates tests/data/random_pdf_ref.json with real MXNet 1.9.1: the densities of the `_random_pdf_*` ops and
their gradients for small fixed inputs. Run with MXNet's interpreter:
    ~/.venvs/mxref/bin/python tests/data/make_random_pdf_ref.py
"""
import json
import os

import mxnet as mx

CASES = {
    "normal": ([[0.5, -1.0, 2.0], [1.5, 0.2, 3.0]], [[0.0], [1.0]], [[1.0], [2.5]]),
    "uniform": ([[0.5, 0.7, 0.9], [1.5, 1.2, 1.9]], [[0.1], [1.0]], [[1.0], [2.5]]),
    "gamma": ([[0.5, 1.0, 2.0], [1.5, 0.2, 3.0]], [[2.0], [0.7]], [[1.5], [0.5]]),
    "exponential": ([[0.5, 1.0, 2.0], [1.5, 0.2, 3.0]], [[2.0], [0.7]]),
    "poisson": ([[0.0, 1.0, 4.0], [2.0, 3.0, 7.0]], [[2.0], [3.5]]),
    "negative_binomial": ([[0.0, 1.0, 4.0], [2.0, 3.0, 7.0]], [[2.0], [3.0]], [[0.4], [0.7]]),
    "generalized_negative_binomial": ([[0.0, 1.0, 4.0], [2.0, 3.0, 7.0]], [[2.0], [3.0]], [[0.4], [0.7]]),
    "dirichlet": ([[[0.2, 0.8], [0.6, 0.4]], [[0.1, 0.9], [0.5, 0.5]]], [[1.5, 0.7], [2.0, 3.0]]),
}


def main():
    out = {}
    for name, inputs in CASES.items():
        for is_log in (False, True):
            arrays = [mx.nd.array(x, dtype="float64") for x in inputs]
            if name != "dirichlet":          # parameters of shape (2,) for samples of shape (2, 3)
                arrays[1:] = [a.reshape((-1,)) for a in arrays[1:]]
            for a in arrays:
                a.attach_grad()
            with mx.autograd.record():
                y = getattr(mx.nd, "random_pdf_" + name)(*arrays, is_log=is_log)
            y.backward(mx.nd.ones_like(y))
            out[f"{name}/{is_log}"] = {"inputs": [a.asnumpy().tolist() for a in arrays],
                                       "output": y.asnumpy().tolist(),
                                       "grads": [a.grad.asnumpy().tolist() for a in arrays]}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "random_pdf_ref.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
