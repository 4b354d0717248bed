"""HybridBlock.register_op_hook: callback(name, op name, array) per op output of a hybridized run (inputs
first with monitor_all), named as MXNet 1.9.1 names them; registered on the children too."""
import numpy as np

import mixnet as mx
from mixnet.gluon import nn


def _run(model, monitor_all):
    seen = []
    model.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.shape)), monitor_all)
    y = model(mx.nd.ones((2, 3)))
    return seen, y


def test_outputs_and_inputs_with_mxnets_names():
    model = nn.HybridSequential(prefix="dense_")
    with model.name_scope():
        model.add(nn.Dense(2), nn.Dense(4))
    model.initialize()
    model(mx.nd.ones((2, 3)))                     # shapes known: the hybridized runs below are graph runs
    model.hybridize()
    seen, y = _run(model, False)
    assert seen == [("dense_dense0_fwd_output", "FullyConnected", (2, 2)),
                    ("dense_dense1_fwd_output", "FullyConnected", (2, 4))]
    seen, y2 = _run(model, True)
    assert [name for name, _, _ in seen[:4]] == ["dense_dense0_fwd_data", "dense_dense0_fwd_weight",
                                                "dense_dense0_fwd_bias", "dense_dense0_fwd_output"]
    assert seen[1][2] == (2, 3) and seen[2][2] == (2,)
    np.testing.assert_allclose(y.asnumpy(), y2.asnumpy())
    assert model[0]._op_hook is not None           # the children have it too


def test_ops_without_listed_input_names_call_them_input0():
    # MXNet 1.9.1: Activation, Flatten, reshape, the unary/scalar/reduce families name their inputs input<i>;
    # Pooling, LeakyReLU, squeeze, binary ops (lhs/rhs) name them.
    model = nn.HybridSequential(prefix="m_")
    with model.name_scope():
        model.add(nn.Activation("relu"), nn.LeakyReLU(0.1), nn.Flatten())
    model.initialize()
    model.hybridize()
    seen = []
    model.register_op_hook(lambda name, op, arr: seen.append(name), monitor_all=True)
    model(mx.nd.ones((2, 3, 4)))
    # (MXNet calls Flatten's output 'm_flatten0_flatten0_0' here; mixnet '..._output')
    assert seen[:5] == ["m_relu0_fwd_input0", "m_relu0_fwd_output", "m_leakyrelu0_fwd_data",
                        "m_leakyrelu0_fwd_output", "m_flatten0_flatten0_input0"]
