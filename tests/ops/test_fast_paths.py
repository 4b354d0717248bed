"""Generated from the registry: every op that declares a fast path (`OpDef.fast`) gives, on each of its test cases
in float32 and float64, what its generic xp code gives (`_fastpath.ENABLED = False`).

The generated forward and gradient tests (test_generated.py) already run the fast paths against the op's numpy
reference, since they are on by default; this compares the two paths with each other, tighter, in both float
dtypes. The hand-written tests beside it (test_numba_kernels.py, test_fused_norms.py, ...) reach the geometry the
cases do not.
"""
import numpy as np
import pytest

import mixnet as mx
from mixnet.ops import _fastpath, registry

from .recipes import fast_and_generic, make_inputs
from .test_generated import run_op

FAST_OPS = [op for op in registry.all_ops() if op.fast]
# (rtol, atol relative to the output's largest magnitude): the paths sum in different orders, and a float32 fast
# path may keep float64 sums where the generic code works in float32 (BatchNorm's backward cancels terms)
TOLERANCE = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}


@pytest.fixture(autouse=True)
def _loaded():
    """The loops loaded, as after a first convolution: some ops (ReLU's backward) only use loaded loops."""
    for dtype in TOLERANCE:
        assert _fastpath.numba_kernels(np, np.zeros(1, dtype)) is not None


def test_ops_with_fast_paths_are_declared():
    assert {"Convolution", "BatchNorm", "LayerNorm", "softmax", "RNN", "_act_bwd_bias"} <= {op.name for op in FAST_OPS}


@pytest.mark.parametrize("dtype", sorted(TOLERANCE))
@pytest.mark.parametrize("op", FAST_OPS, ids=[op.name for op in FAST_OPS])
def test_fast_path_matches_generic(op, dtype):
    assert op.test is not None and op.test.cases, f"{op.name} declares a fast path but no test cases to compare it on"
    rtol, atol = TOLERANCE[dtype]
    for seed, (shapes, attrs) in enumerate(op.test.cases):
        arrays = make_inputs(op.test, shapes, seed, dtype=dtype)

        def outputs():
            mx.random.seed(seed)                          # random ops (RNN's dropout) draw the same either way
            return [o.asnumpy() for o in run_op(op, arrays, attrs)]

        fast, generic = fast_and_generic(outputs)
        for i, (f, g) in enumerate(zip(fast, generic)):
            assert f.shape == g.shape and f.dtype == g.dtype, (op.name, attrs, i, f.shape, f.dtype, g.shape, g.dtype)
            scale = float(np.abs(g).max()) if g.size and np.isfinite(g).all() else 1.0
            np.testing.assert_allclose(f, g, rtol=rtol, atol=atol * max(scale, 1.0), err_msg=f"{op.name} {attrs} output {i} ({dtype})")
