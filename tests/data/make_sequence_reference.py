"""Makes tests/data/ops/sequence_reference.npz with real MXNet 1.9.1 (never run by the tests themselves):

    ~/.venvs/mxref/bin/python tests/data/make_sequence_reference.py

For one fixed float32 input and lengths with an empty and a full sequence: SequenceMask/Last/Reverse,
softmax with use_length (MXNet 1.9.1's log_softmax takes no length input) (outputs and input gradients for fixed head gradients), and GluonNLP's masked
cross entropy (SoftmaxCELoss with a SequenceMask-ed sample_weight, which divides by the padded length T).
tests/ops/test_sequence_reference.py compares mixnet's ops, and SequenceSoftmaxCELoss * length / T, with them.
MXNet 1.9.1 has no masked_softmax / masked_log_softmax ops (they came with 2.0), so there is nothing to match there.
"""
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(3, 5, 4)).astype("float32")           # B, T, C
    length = np.array([5, 2, 0], dtype="int32")
    label = rng.randint(0, 4, size=(3, 5)).astype("float32")
    out = {"x": x, "length": length, "label": label}
    nd = mx.nd
    for name, fn in {
        "mask_ntc": lambda a: nd.SequenceMask(a, nd.array(length), use_sequence_length=True, axis=1, value=-2.0),
        "last_ntc": lambda a: nd.SequenceLast(a, nd.array(np.maximum(length, 1)), use_sequence_length=True, axis=1),
        "reverse_tnc": lambda a: nd.SequenceReverse(nd.transpose(a, axes=(1, 0, 2)), nd.array(length),
                                                    use_sequence_length=True),
        "softmax_t": lambda a: nd.softmax(nd.transpose(a, axes=(0, 2, 1)), nd.array(np.repeat(length[:, None], 4, 1),
                                                                                      dtype="int32"),
                                          axis=-1, use_length=True),
    }.items():
        data = nd.array(x)
        data.attach_grad()
        with mx.autograd.record():
            y = fn(data)
        h = nd.array(rng.uniform(-1, 1, size=y.shape).astype("float32"))
        y.backward(h)
        out[name], out[name + "_head"], out[name + "_grad"] = y.asnumpy(), h.asnumpy(), data.grad.asnumpy()
    weight = nd.SequenceMask(nd.ones((3, 5, 1)), nd.array(length), use_sequence_length=True, axis=1)
    out["gluonnlp_masked_ce"] = mx.gluon.loss.SoftmaxCELoss()(nd.array(x), nd.array(label), weight).asnumpy()
    np.savez(os.path.join(HERE, "ops", "sequence_reference.npz"), **out)


if __name__ == "__main__":
    main()
