"""Sequence ops against values made by real MXNet 1.9.1 (tests/data/make_sequence_reference.py): SequenceMask/
Last/Reverse and softmax with use_length, outputs and input gradients, with an empty and a full sequence; and
SequenceSoftmaxCELoss against GluonNLP's masked cross entropy, which divides by the padded length T instead of the
valid length."""
import os

import numpy as np
import pytest

from mixnet import autograd, gluon, nd

REF = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "ops", "sequence_reference.npz"))
LENGTH = REF["length"]
OPS = {
    "mask_ntc": lambda a: nd.SequenceMask(a, nd.array(LENGTH), use_sequence_length=True, axis=1, value=-2.0),
    "last_ntc": lambda a: nd.SequenceLast(a, nd.array(np.maximum(LENGTH, 1)), use_sequence_length=True, axis=1),
    "reverse_tnc": lambda a: nd.SequenceReverse(nd.transpose(a, axes=(1, 0, 2)), nd.array(LENGTH),
                                                use_sequence_length=True),
    "softmax_t": lambda a: nd.softmax(nd.transpose(a, axes=(0, 2, 1)),
                                      nd.array(np.repeat(LENGTH[:, None], 4, 1), dtype="int32"), axis=-1,
                                      use_length=True),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_matches_mxnet(name):
    data = nd.array(REF["x"])
    data.attach_grad()
    with autograd.record():
        y = OPS[name](data)
    y.backward(nd.array(REF[name + "_head"]))
    np.testing.assert_allclose(y.asnumpy(), REF[name], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(data.grad.asnumpy(), REF[name + "_grad"], rtol=1e-6, atol=1e-7)


def test_sequence_softmax_ce_is_gluonnlp_masked_ce_rescaled_to_valid_steps():
    ours = gluon.loss.SequenceSoftmaxCELoss()(nd.array(REF["x"]), nd.array(REF["label"]), nd.array(LENGTH))
    steps = REF["x"].shape[1]
    np.testing.assert_allclose(ours.asnumpy() * LENGTH / steps, REF["gluonnlp_masked_ce"], rtol=1e-5, atol=1e-7)
