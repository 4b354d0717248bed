"""Shared check for the hybridize tests of composite blocks: run a block eagerly and hybridized on the same
parameters, inputs, output cotangents and random seed, and compare outputs, input gradients and parameter
gradients. Arguments may be arrays, None or lists of arrays (recurrent states); integer arrays (lengths,
labels) are not differentiated."""
import numpy as np

import mixnet as mx
from mixnet import autograd


def rand(shape, seed, low=-1.0, high=1.0):
    return np.random.RandomState(seed).uniform(low, high, shape)


def flat_outputs(out):
    if isinstance(out, (list, tuple)):
        return [a for item in out for a in flat_outputs(item)]
    return [out]


def _to_nd(arg, leaves):
    if arg is None:
        return None
    if isinstance(arg, (list, tuple)):
        return [_to_nd(a, leaves) for a in arg]
    arr = mx.nd.array(arg, dtype=arg.dtype)
    if np.dtype(arg.dtype).kind == "f":
        arr.attach_grad()
        leaves.append(arr)
    return arr


def snapshot(block):
    return {k: p.data().asnumpy().copy() for k, p in block.collect_params().items()}


def restore(block, values):
    for k, p in block.collect_params().items():
        p.set_data(mx.nd.array(values[k], dtype=values[k].dtype))


def run(block, args, train, seed=11, cot_seed=5):
    """One forward under autograd.record and backward of sum(out_i * cot_i); then one forward without
    recording (predict mode: the inference path). Returns (outputs, input grads, param grads, inference)."""
    leaves = []
    nd_args = [_to_nd(a, leaves) for a in args]
    mx.random.seed(seed)
    with autograd.record(train_mode=train):
        outs = flat_outputs(block(*nd_args))
    cots = [mx.nd.array(rand(o.shape, cot_seed + i), dtype=o.dtype) for i, o in enumerate(outs)]
    autograd.backward(outs, cots)
    params = {k: p.grad().asnumpy().copy() for k, p in block.collect_params().items() if p.grad_req != "null"}
    inference = [o.asnumpy().copy() for o in flat_outputs(block(*nd_args))]
    return [o.asnumpy().copy() for o in outs], [a.grad.asnumpy().copy() for a in leaves], params, inference


def assert_hybrid_equals_eager(block, signatures, train, rtol=1e-10, atol=1e-12):
    """`block` is initialized (its parameters are the starting point). Runs every signature (a list of call
    arguments) eagerly, then hybridized from the same parameters, and compares everything. Returns both
    runs' results."""
    start = snapshot(block)
    eager = [run(block, args, train) for args in signatures]
    after_eager = snapshot(block)
    restore(block, start)
    block.hybridize()
    hybrid = [run(block, args, train) for args in signatures]
    assert len(block._cached_graphs) >= len({_signature_key(a) for a in signatures}), \
        "every signature must run its own traced graph"
    for i, ((eo, eg, ep, ei), (ho, hg, hp, hi)) in enumerate(zip(eager, hybrid)):
        assert len(eo) == len(ho), f"signature {i}: number of outputs"
        for k, (a, b) in enumerate(zip(hi, ei)):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"signature {i}: inference output {k}")
        for k, (a, b) in enumerate(zip(ho, eo)):
            assert a.shape == b.shape and a.dtype == b.dtype, f"signature {i}: output {k} {a.shape} vs {b.shape}"
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"signature {i}: output {k}")
        for k, (a, b) in enumerate(zip(hg, eg)):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"signature {i}: input gradient {k}")
        assert hp.keys() == ep.keys()
        for k in ep:
            np.testing.assert_allclose(hp[k], ep[k], rtol=rtol, atol=atol, err_msg=f"signature {i}: gradient of {k}")
    for k, value in snapshot(block).items():     # running statistics moved the same way
        np.testing.assert_allclose(value, after_eager[k], rtol=rtol, atol=atol, err_msg=k)
    return eager, hybrid


def _signature_key(args):
    def key(a):
        if a is None:
            return None
        if isinstance(a, (list, tuple)):
            return tuple(key(x) for x in a)
        return (a.shape, a.dtype.str)
    return tuple(key(a) for a in args)
