"""mx.nd.*_update (the optimizer update ops) against numbers from real MXNet 1.9.1
(tests/data/make_update_ops_reference.py), and their in-place / out= semantics."""
import json
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError

with open(os.path.join(os.path.dirname(__file__), "data", "optimizer", "update_ops_mxnet.json")) as _f:
    CASES = json.load(_f)


@pytest.mark.parametrize("case", CASES, ids=[f"{c['op']}-{i}" for i, c in enumerate(CASES)])
def test_matches_mxnet(case):
    weight = mx.nd.array(case["weight"])
    states = {k: mx.nd.array(v) for k, v in case["states"].items()}
    new = getattr(mx.nd, case["op"])(weight, mx.nd.array(case["grad"]), *states.values(), **case["kwargs"])
    np.testing.assert_allclose(new.asnumpy(), case["expected_weight"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(weight.asnumpy(), np.float32(case["weight"]))   # out=None: a fresh array
    for name, arr in states.items():                                            # states: updated in place
        np.testing.assert_allclose(arr.asnumpy(), case["expected_states"][name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_out_is_the_weight_updates_in_place():
    w, g, mom = mx.nd.ones((3,)), mx.nd.ones((3,)), mx.nd.zeros((3,))
    res = mx.nd.sgd_mom_update(w, g, mom, lr=0.5, momentum=0.9, out=w)
    assert res is w
    np.testing.assert_allclose(w.asnumpy(), [0.5] * 3)
    np.testing.assert_allclose(mom.asnumpy(), [-0.5] * 3)


def test_multi_precision_updates_the_master_copy():
    w16 = mx.nd.ones((4,), dtype="float16")
    w32 = mx.nd.ones((4,), dtype="float32")
    mx.nd.mp_sgd_update(w16, mx.nd.full((4,), 1e-4, dtype="float16"), w32, lr=1.0, out=w16)
    assert w16.dtype == np.float16
    np.testing.assert_allclose(w32.asnumpy(), 1 - np.float32(np.float16(1e-4)), rtol=1e-6)


def test_adamw_skips_the_step_for_a_non_finite_scale():
    w = mx.nd.ones((2,))
    mean, var = mx.nd.zeros((2,)), mx.nd.zeros((2,))
    out = mx.nd.contrib.adamw_update(w, mx.nd.ones((2,)), mean, var, mx.nd.array([np.inf]), lr=0.1, eta=1.0)
    np.testing.assert_array_equal(out.asnumpy(), [1, 1])
    out = mx.nd.contrib.adamw_update(w, mx.nd.ones((2,)), mean, var, mx.nd.array([1.0]), lr=0.1, eta=1.0)
    assert (out.asnumpy() < 1).all()


def test_shape_mismatch_is_a_clear_error():
    with pytest.raises(MXNetError, match="sgd_mom_update: mom has shape"):
        mx.nd.sgd_mom_update(mx.nd.ones((3,)), mx.nd.ones((3,)), mx.nd.ones((2,)), lr=0.1)
