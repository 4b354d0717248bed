"""hybridize() never changes results: every hybridizable Gluon layer (the cases of test_layers.py), eager vs
compiled, outputs and input and parameter gradients, in training and in predict mode, across two input
signatures (the second one re-traces), in float64 so only summation order may differ."""
import numpy as np
import pytest

import mixnet as mx

from .test_layers import CASES, F64, _local_params, _rand, _randomize_params, _run

CLOSE = dict(rtol=1e-11, atol=1e-13)
HYBRID_CASES = [c for c in CASES if c[4].get("hybrid", True)]


def _second_signature(x):
    """The same data with one more row on axis 0 (batch or time), so the block must trace a new graph."""
    return np.concatenate([x, x[:1]], axis=0)


def _snapshot(layer):
    return {k: p.data().asnumpy().copy() for k, p in _local_params(layer).items()}


def _restore(layer, values):
    for k, p in _local_params(layer).items():
        p.set_data(mx.nd.array(values[k], dtype=F64))


def _runs(layer, signatures, train, grad_inputs):
    results = []
    for xs in signatures:
        probe = layer(*[mx.nd.array(x, dtype=F64) for x in xs])
        cot = _rand(probe.shape, 5)
        results.append(_run(layer, xs, train, cot, grad_inputs))
    return results


@pytest.mark.parametrize("train", [True, False], ids=["train", "predict"])
@pytest.mark.parametrize("name, make, shapes, ref, kwargs", HYBRID_CASES, ids=[c[0] for c in HYBRID_CASES])
def test_hybridized_layer_equals_eager(name, make, shapes, ref, kwargs, train):
    layer = make()
    assert isinstance(layer, mx.gluon.HybridBlock), name
    xs = [s if isinstance(s, np.ndarray) else _rand(s, 1) for s in shapes]
    signatures = [xs, [_second_signature(x) for x in xs]]
    grad_inputs = kwargs.get("grad_inputs", [True] * len(xs))
    layer.initialize(mx.init.Uniform(0.5))
    layer.cast(F64)
    layer(*[mx.nd.array(x, dtype=F64) for x in xs])
    _randomize_params(layer, 100)
    start = _snapshot(layer)
    eager = _runs(layer, signatures, train, grad_inputs)
    eager_state = _snapshot(layer)                    # running statistics after the eager steps
    _restore(layer, start)
    layer.hybridize()
    hybrid = _runs(layer, signatures, train, grad_inputs)
    assert len(layer._cached_graphs) >= 2, "the second signature must trace its own graph"
    for (eo, eg, ep), (ho, hg, hp) in zip(eager, hybrid):
        np.testing.assert_allclose(ho, eo, err_msg="output", **CLOSE)
        for a, b in zip(hg, eg):
            if b is not None:
                np.testing.assert_allclose(a, b, err_msg="input gradient", **CLOSE)
        assert hp.keys() == ep.keys()
        for k in ep:
            np.testing.assert_allclose(hp[k], ep[k], err_msg=f"gradient of {k}", **CLOSE)
    for k, value in _snapshot(layer).items():         # BatchNorm's running statistics moved the same way
        np.testing.assert_allclose(value, eager_state[k], err_msg=k, **CLOSE)
