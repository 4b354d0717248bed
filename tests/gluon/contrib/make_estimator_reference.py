"""Writes estimator_reference.json: the scenarios of estimator_scenarios.py run by real MXNet 1.9.1.

    ~/.venvs/mxref/bin/python tests/gluon/contrib/make_estimator_reference.py

test_estimator_reference.py runs the same scenarios under mixnet and compares.
"""
import json
import os
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mxnet as mx  # noqa: E402

import estimator_scenarios  # noqa: E402


def main():
    warnings.simplefilter("ignore")
    mx.random.seed(0)
    with tempfile.TemporaryDirectory() as workdir:
        result = estimator_scenarios.run_all(mx, workdir)
    result["mxnet_version"] = mx.__version__
    with open(os.path.join(HERE, "estimator_reference.json"), "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
