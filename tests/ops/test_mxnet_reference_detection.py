"""The detection / correlation / attention / quantization ops against numbers real MXNet 1.9.1 computed
(tests/data/ops/detection_reference.npz, made by tests/data/make_detection_reference.py): outputs and the
gradients of sum(output * head), eagerly and through a hybridized graph."""
import json
import os

import numpy as np
import pytest

import mixnet as mx

DATA = os.path.join(os.path.dirname(__file__), os.pardir, "data", "ops", "detection_reference.npz")
REF = np.load(DATA)
CASES = sorted({key.split("/")[0] for key in REF.files})


def _op(root, path):
    fn = root
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn


def _case(name):
    meta = json.loads(str(REF[f"{name}/attrs"]))
    inputs = [REF[f"{name}/in{i}"] for i in range(sum(k.startswith(f"{name}/in") for k in REF.files))]
    outs = [REF[f"{name}/out{i}"] for i in range(sum(k.startswith(f"{name}/out") for k in REF.files))]
    heads = [REF[f"{name}/head{i}"] for i in range(len(outs))]
    grads = {i: REF[f"{name}/grad{i}"] for i in meta["wrt"]}
    return meta, inputs, outs, heads, grads


def _run(fn, meta, inputs, heads):
    arrays = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
    for i in meta["wrt"]:
        arrays[i].attach_grad()
    with mx.autograd.record():
        result = fn(*arrays)
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    if meta["wrt"]:
        mx.autograd.backward(results, [mx.nd.array(h) for h in heads])
    return [r.asnumpy() for r in results], {i: arrays[i].grad.asnumpy() for i in meta["wrt"]}


def _check(got, grads, outs, want_grads, name):
    for g, w in zip(got, outs):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{name}: {g.shape} {g.dtype} vs {w.shape} {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"{name}: output")
    for i, w in want_grads.items():
        np.testing.assert_allclose(grads[i], w, rtol=1e-5, atol=1e-5, err_msg=f"{name}: gradient of input {i}")


@pytest.mark.parametrize("name", CASES)
def test_eager_matches_mxnet(name):
    meta, inputs, outs, heads, want_grads = _case(name)
    op = _op(mx.nd, meta["op"])
    got, grads = _run(lambda *xs: op(*xs, **meta["attrs"]), meta, inputs, heads)
    _check(got, grads, outs, want_grads, name)


@pytest.mark.parametrize("name", CASES)
def test_hybridized_matches_mxnet(name):
    meta, inputs, outs, heads, want_grads = _case(name)

    class Net(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, *xs):
            return _op(F, meta["op"])(*xs, **meta["attrs"])

    net = Net()
    net.hybridize()
    got, grads = _run(net, meta, inputs, heads)
    _check(got, grads, outs, want_grads, name)
