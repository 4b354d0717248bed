"""Two registry contracts the compiler layers will rely on, checked for every op now:

* the scalar template of each elementwise op, rendered with numpy functions, computes what the kernel computes
  (the fusion code generator renders the same templates; this is the "fused vs unfused" check's reference);
* shape/dtype inference (every OpDef's pure `infer`) predicts every output the eager kernel makes, hidden ones
  included, for each case and recipe draw of the op's tests, and explains bad input with an MXNetError naming the
  op.
"""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mixnet as mx
from mixnet._mode import Mode
from mixnet.ops import common, dispatch, registry

from .recipes import make_inputs, recipe_cases

# The template vocabulary and its meaning, in numpy terms (the code generators map the same names).
VOCAB = {
    "abs": np.abs, "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh, "atan": np.arctan,
    "atanh": np.arctanh, "cbrt": np.cbrt, "ceil": np.ceil, "cos": np.cos, "cosh": np.cosh, "exp": np.exp,
    "expm1": np.expm1, "floor": np.floor, "fmod_floor": np.mod, "hypot": np.hypot, "isfinite": np.isfinite,
    "isinf": np.isinf, "isnan": np.isnan, "log": np.log, "log10": np.log10, "log1p": np.log1p, "log2": np.log2,
    "max": np.maximum, "min": np.minimum, "pow": np.power, "rint": np.rint,
    "round": lambda x: np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5)), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "sign": np.sign, "sin": np.sin,
    "sinh": np.sinh, "sqrt": np.sqrt, "tan": np.tan, "tanh": np.tanh, "trunc": np.trunc,
}
SPECIAL = {"erf", "erfinv", "lgamma", "tgamma"}      # rendered by the code generators' own approximations
TEMPLATE_OPS = [op for op in registry.all_ops() if op.scalar and op.test is not None]


def render(template, n_inputs, attrs):
    expr = template
    for key, value in attrs.items():
        expr = expr.replace("{" + key + "}", f"({float(value)!r})")
    for i in range(n_inputs):
        expr = expr.replace("{" + str(i) + "}", f"x{i}")
    assert "{" not in expr, f"unrendered placeholder in {template!r}"
    return expr


def test_template_vocabulary_is_closed():
    used = set()
    for op in TEMPLATE_OPS:
        used |= set(re.findall(r"([a-z_0-9]+)\(", op.scalar))
    assert used <= set(VOCAB) | SPECIAL, f"unknown template functions: {sorted(used - set(VOCAB) - SPECIAL)}"


@pytest.mark.parametrize("op", [op for op in TEMPLATE_OPS
                                if not set(re.findall(r"([a-z_0-9]+)\(", op.scalar)) & SPECIAL],
                         ids=lambda op: op.name)
def test_template_matches_kernel(op):
    test = op.test
    parsed = op.parse(dict(test.recipe_attrs[0]) if test.recipe else dict(test.cases[0][1]))
    attrs = {k: v for k, v in parsed.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    n = 1 if op.kind in ("unary", "scalar") else (2 if op.kind in ("binary", "broadcast") else None)
    assert n is not None and not op.variadic, f"{op.name}: a template needs a fixed arity (kind {op.kind!r})"
    arrays = make_inputs(test, [(3, 4)] * n, seed=1, dtype="float64")
    expected = mx.nd.ndarray._op_call(op.name, tuple(mx.nd.array(a, dtype=a.dtype) for a in arrays),
                                      parsed).asnumpy()
    scope = dict(VOCAB, **{f"x{i}": a for i, a in enumerate(arrays)})
    with np.errstate(all="ignore"):
        got = eval(render(op.scalar, n, attrs), {"__builtins__": {}}, scope)  # noqa: S307 - test-only renderer
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), expected.astype(np.float64), rtol=1e-6,
                               atol=1e-9, err_msg=f"{op.name}: template {op.scalar!r}")


INFER_OPS = [op for op in registry.all_ops() if op.test is not None and not op.dynamic_shape]


def _kernel_outputs(op, arrays, attrs):
    """Every output of the op's kernel (hidden ones too) as the dispatch door runs it, in training mode."""
    ctx = mx.cpu()
    if op.creates and "ctx" in op.attrs:
        attrs = dict(attrs, ctx=ctx)
    out = dispatch.run_kernel(op, np, arrays, attrs, Mode(training=True), ctx)
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def check_inference(op, shapes, attrs, seed):
    arrays = make_inputs(op.test, shapes, seed)
    parsed = op.parse(attrs)
    outs = _kernel_outputs(op, arrays, parsed)
    shapes_out, dtypes_out = common.infer(op, [a.shape for a in arrays], [a.dtype for a in arrays], parsed)
    assert len(shapes_out) == len(dtypes_out) == op.n_outputs(parsed) == len(outs), f"{op.name} {attrs}"
    assert [tuple(s) for s in shapes_out] == [o.shape for o in outs], f"{op.name} {attrs}: {shapes}"
    assert [np.dtype(d) for d in dtypes_out] == [o.dtype for o in outs], f"{op.name} {attrs}: {shapes}"


@pytest.mark.parametrize("op", INFER_OPS, ids=lambda op: op.name)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_inference_predicts_every_eager_output(op, data):
    for k, (shapes, attrs) in enumerate(op.test.cases):
        check_inference(op, shapes, attrs, seed=k)
    if op.test.recipe is not None:
        shapes, attrs = data.draw(recipe_cases(op.test))
        check_inference(op, shapes, attrs, seed=data.draw(st.integers(0, 2 ** 16)))


def test_every_op_declares_a_pure_infer():
    missing = [op.name for op in registry.all_ops() if op.infer is None]
    assert not missing, f"ops without infer: {missing}"
    assert not hasattr(common, "infer_by_running")
    with pytest.raises(mx.MXNetError, match="declares no infer"):
        registry.register(registry.OpDef(name="_test_no_infer", kernel=lambda xp, x: x))
    assert registry.find("_test_no_infer") is None


def test_dynamic_shape_ops_say_so():
    with pytest.raises(mx.MXNetError, match="depends on the input values"):
        common.infer(registry.get("_contrib_boolean_mask"), [(3, 2), (3,)], [np.float32] * 2, {"axis": 0})


def test_inference_errors_name_the_op():
    with pytest.raises(mx.MXNetError, match="broadcast_add"):
        common.infer(registry.get("broadcast_add"), [(2, 3), (4,)], [np.float32, np.float32], {})
    with pytest.raises(mx.MXNetError, match="FullyConnected"):
        op = registry.get("FullyConnected")
        common.infer(op, [(2, 3), (4, 5), (4,)], [np.float32] * 3, op.parse({"num_hidden": 4}))
