"""Makes tests/data/gluon/contrib_rnn_reference.npz with real MXNet 1.9.1 (never run by the tests themselves):

    ~/.venvs/mxref/bin/python tests/data/make_contrib_rnn_reference.py

gluon.contrib.rnn.LSTMPCell(hidden 5, projection 3) unrolled over a fixed float32 NTC input from given begin
states, with and without valid_length: parameters set from seeded uniforms in sorted-name order; stores the
outputs, the final states and the sorted parameter names and shapes. tests/gluon/test_contrib_rnn.py rebuilds
the cell with mixnet and compares.
"""
import os

import numpy as np
import mxnet as mx
from mxnet.gluon.contrib.rnn import LSTMPCell

HERE = os.path.dirname(os.path.abspath(__file__))
VALID_LENGTH = [4, 2, 3]


def main():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (3, 4, 2)).astype("float32")
    r0 = rng.uniform(-1, 1, (3, 3)).astype("float32")
    c0 = rng.uniform(-1, 1, (3, 5)).astype("float32")
    cell = LSTMPCell(5, 3, input_size=2, prefix="lstmp0_")
    cell.initialize()
    params = sorted(cell.collect_params().items())
    for i, (_, p) in enumerate(params):
        p.set_data(mx.nd.array(np.random.RandomState(i + 7).uniform(-0.5, 0.5, p.shape).astype("float32")))
    out = {"x": x, "r0": r0, "c0": c0, "valid_length": np.array(VALID_LENGTH, np.float32),
           "names": np.array([k for k, _ in params])}
    begin = [mx.nd.array(r0), mx.nd.array(c0)]
    for tag, valid in (("full", None), ("valid", mx.nd.array(VALID_LENGTH))):
        outputs, states = cell.unroll(4, mx.nd.array(x), begin_state=begin, layout="NTC", merge_outputs=True,
                                      valid_length=valid)
        out[tag + "_out"] = outputs.asnumpy()
        out[tag + "_r"], out[tag + "_c"] = (s.asnumpy() for s in states)
    out["shapes"] = np.array([str(p.shape) for _, p in params])
    np.savez(os.path.join(HERE, "gluon", "contrib_rnn_reference.npz"), **out)


if __name__ == "__main__":
    main()
