"""Tests generated from the operator registry: every op, from its own declaration (OpDef.test).

1. forward vs the op's independent numpy reference;
2. gradient vs central finite differences (float64);
3. second-order gradient (the gradient of <grad, v>) vs finite differences of the first-order gradient.
The eager-vs-compiled and fused-vs-unfused equivalences are generated in test_compiled.py.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import mixnet as mx
from mixnet.ops import registry
from mixnet.ops.attrs import REQUIRED

from .recipes import make_inputs, recipe_cases

OPS = [op for op in registry.all_ops() if op.test is not None]
GRAD_OPS = [op for op in OPS if op.differentiable and op.test.grad and not op.test.random]
GRAD2_OPS = [op for op in GRAD_OPS if op.test.grad2]


def _ids(ops):
    return [op.name for op in ops]


def run_op(op, arrays, attrs):
    inputs = tuple(mx.nd.array(a, dtype=a.dtype) for a in arrays)
    with mx.autograd.train_mode():
        out = mx.nd.ndarray._op_call(op.name, inputs, attrs) if op.variadic else \
            getattr(mx.nd, op.name)(*inputs, **attrs)
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


# Draws per element for the statistics of a random op's output (fixed seed: the check is deterministic).
DRAWS = 1000


def check_random(op, arrays, attrs, seed, outs):
    """A random op: the outputs have the shapes and dtypes its infer gives, and where the op declares its
    moments, each element's sample mean (over DRAWS calls) lies within 5 standard errors of the mean, and the
    pooled standardized variance within 5 standard errors of 1 (error bound for kurtosis up to 9)."""
    parsed = op.parse(attrs)
    shapes, dtypes = op.infer([a.shape for a in arrays], [a.dtype for a in arrays], **parsed)
    for got, shape, dtype in zip(outs, shapes, dtypes):
        assert got.shape == tuple(shape) and got.dtype == np.dtype(dtype), (op.name, attrs, got.shape, got.dtype)
    if op.test.moments is None or not outs[0].size:
        return
    mx.random.seed(seed)
    draws = np.stack([run_op(op, arrays, attrs)[0].asnumpy().astype(np.float64) for _ in range(DRAWS)])
    mean, var = (np.broadcast_to(np.asarray(m, np.float64), draws.shape[1:])
                 for m in op.test.moments(*arrays, **parsed))
    err = np.abs(draws.mean(axis=0) - mean) / np.sqrt(var / DRAWS)
    assert err.max() < 5, f"{op.name} {attrs}: sample means {err.max():.1f} standard errors off"
    ratio = (((draws - mean) ** 2).mean(axis=0) / var).mean()
    assert abs(ratio - 1) < 5 * np.sqrt(8 / draws.size), f"{op.name} {attrs}: variance ratio {ratio:.3f}"


def check_forward(op, shapes, attrs, seed):
    arrays = make_inputs(op.test, shapes, seed)
    outs = run_op(op, arrays, attrs)
    if op.test.random:
        check_random(op, arrays, attrs, seed, outs)
        return
    expected = _as_tuple(op.test.ref(*[a.copy() for a in arrays], **op.parse(attrs)))
    assert len(outs) == len(expected), f"{op.name}: {len(outs)} outputs, reference has {len(expected)}"
    for got, want in zip(outs, expected):
        want = np.asarray(want)
        assert got.shape == want.shape, f"{op.name}{attrs}: shape {got.shape} != reference {want.shape}"
        np.testing.assert_allclose(got.asnumpy().astype(np.float64), want.astype(np.float64),
                                   rtol=op.test.rtol, atol=op.test.atol, err_msg=f"{op.name} {attrs}")


def _diff_inputs(op, arrays):
    return [i for i, a in enumerate(arrays)
            if i not in op.test.int_inputs and i not in op.nondiff_inputs and a.dtype.kind == "f"]


def _loss(op, arrays, attrs, weights):
    """sum_k <out_k, w_k> over the visible float outputs, in float64."""
    outs = run_op(op, arrays, attrs)
    return sum(float((o.asnumpy().astype(np.float64) * w).sum()) for o, w in zip(outs, weights))


def analytic_grads(op, arrays, attrs, weights, create_graph=False):
    inputs = [mx.nd.array(a, dtype=a.dtype) for a in arrays]
    wrt = _diff_inputs(op, arrays)
    for i in wrt:
        inputs[i].attach_grad()
    with mx.autograd.record():
        out = mx.nd.ndarray._op_call(op.name, tuple(inputs), op.parse(attrs))
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        loss = None
        for o, w in zip(outs, weights):
            # each output's term in float64, so outputs of different dtypes (topk 'both') can be summed
            term = (o * mx.nd.array(w, dtype=o.dtype)).sum().astype("float64") if o.size else None
            if term is not None:
                loss = term if loss is None else loss + term
    if loss is None:
        return wrt, inputs, None, [np.zeros(a.shape) for a in arrays]
    grads = mx.autograd.grad(loss, [inputs[i] for i in wrt], create_graph=create_graph)
    return wrt, inputs, grads, None


def numeric_grad(fn, arrays, i, eps=1e-5):
    base = arrays[i]
    grad = np.zeros(base.shape)
    flat = base.reshape(-1)
    for j in range(flat.size):
        orig = flat[j]
        flat[j] = orig + eps
        plus = fn(arrays)
        flat[j] = orig - eps
        minus = fn(arrays)
        flat[j] = orig
        grad.reshape(-1)[j] = (plus - minus) / (2 * eps)
    return grad


def _weights(op, arrays, attrs, seed):
    outs = run_op(op, arrays, attrs)
    rng = np.random.default_rng(seed + 1)
    return [rng.uniform(-1, 1, size=o.shape) for o in outs]


def check_grad(op, shapes, attrs, seed):
    arrays = make_inputs(op.test, shapes, seed, dtype="float64")
    weights = _weights(op, arrays, attrs, seed)
    wrt, _, grads, zeros = analytic_grads(op, arrays, attrs, weights)
    if grads is None:
        return
    for i, g in zip(wrt, grads):
        num = numeric_grad(lambda arrs: _loss(op, arrs, attrs, weights), arrays, i)
        np.testing.assert_allclose(g.asnumpy(), num, rtol=op.test.grad_rtol, atol=op.test.grad_atol,
                                   err_msg=f"{op.name} {attrs}: gradient of input {i}")


def check_grad2(op, shapes, attrs, seed):
    arrays = make_inputs(op.test, shapes, seed, dtype="float64")
    weights = _weights(op, arrays, attrs, seed)
    rng = np.random.default_rng(seed + 2)
    wrt = _diff_inputs(op, arrays)
    probes = {i: rng.uniform(-1, 1, size=arrays[i].shape) for i in wrt}

    def grad_dot_probe(arrs):
        _, _, grads, _ = analytic_grads(op, arrs, attrs, weights)
        if grads is None:
            return 0.0
        return sum(float((g.asnumpy() * probes[i]).sum()) for i, g in zip(wrt, grads))

    wrt, inputs, grads, _ = analytic_grads(op, arrays, attrs, weights, create_graph=True)
    if grads is None:
        return
    with mx.autograd.record():
        total = None
        for i, g in zip(wrt, grads):
            if g.size == 0:
                continue
            term = (g * mx.nd.array(probes[i], dtype=g.dtype)).sum()
            total = term if total is None else total + term
    if total is None or total._node is None:
        return      # the gradient does not depend on the inputs (a linear op): nothing to differentiate
    second = mx.autograd.grad(total, [inputs[i] for i in wrt])
    for i, g2 in zip(wrt, second):
        num = numeric_grad(grad_dot_probe, arrays, i)
        np.testing.assert_allclose(g2.asnumpy(), num, rtol=op.test.grad_rtol, atol=op.test.grad_atol,
                                   err_msg=f"{op.name} {attrs}: second-order gradient of input {i}")


def _cases(op):
    return list(op.test.cases)


def _run_all(check, op, data):
    for k, (shapes, attrs) in enumerate(_cases(op)):
        check(op, shapes, attrs, seed=k)
    if op.test.recipe is not None:
        shapes, attrs = data.draw(recipe_cases(op.test))
        seed = data.draw(st.integers(0, 2 ** 16))
        check(op, shapes, attrs, seed)


@pytest.mark.parametrize("op", OPS, ids=_ids(OPS))
@given(data=st.data())
def test_forward(op, data):
    _run_all(check_forward, op, data)


@pytest.mark.parametrize("op", GRAD_OPS, ids=_ids(GRAD_OPS))
@given(data=st.data())
def test_gradient(op, data):
    _run_all(check_grad, op, data)


@pytest.mark.parametrize("op", GRAD2_OPS, ids=_ids(GRAD2_OPS))
@given(data=st.data())
def test_second_order_gradient(op, data):
    _run_all(check_grad2, op, data)


# Ops whose attribute is a compiled object or a subgraph Symbol, or that run a user's Python operator; tested
# where they are made.
PLAN_ONLY = {"_fused_elemwise": "tests/symbol/test_fuse.py", "_foreach": "tests/symbol/test_control_flow.py",
             "_foreach_bwd": "tests/symbol/test_foreach_compiled.py",
             "_while_loop": "tests/symbol/test_control_flow.py", "_cond": "tests/symbol/test_control_flow.py",
             "Custom": "tests/test_operator.py", "_backward_Custom": "tests/test_operator.py"}


def test_every_public_op_declares_tests():
    missing = [op.name for op in registry.all_ops() if op.test is None and op.name not in PLAN_ONLY]
    assert not missing, f"ops without OpTest declarations: {missing}"


def test_every_test_has_cases_or_recipe():
    empty = [op.name for op in OPS if not op.test.cases and op.test.recipe is None]
    assert not empty, f"OpTest without cases or recipe: {empty}"


@pytest.mark.parametrize("op", [op for op in OPS if any(a.default is REQUIRED for a in op.attrs.values())],
                         ids=lambda op: op.name)
def test_missing_required_attribute_is_a_clear_error(op):
    with pytest.raises(mx.MXNetError, match=op.name):
        op.parse({})
