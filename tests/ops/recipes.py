"""Hypothesis shape families named by `OpTest.recipe`, the input builder the generated tests share, and
`fast_and_generic` for the fast-path tests."""
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

_SHAPE = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def _same(n):
    return _SHAPE.map(lambda s: (s,) * n)


RECIPES = {
    "unary": _SHAPE.map(lambda s: (s,)),
    "same2": _same(2),
    "same3": _same(3),
    "broadcast2": hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, min_side=0, max_side=4).map(
        lambda r: tuple(r.input_shapes)),
}


def recipe_cases(test):
    """A strategy of (input_shapes, attrs) for an op's recipe, combined with each of its recipe_attrs."""
    return st.tuples(RECIPES[test.recipe], st.sampled_from(list(test.recipe_attrs)))


def make_inputs(test, shapes, seed, dtype=None):
    """numpy inputs for a case: floats uniform in the test's domain, integer inputs in their ranges."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype or test.dtype)
    lo, hi = test.domain
    arrays = []
    for i, shape in enumerate(shapes):
        spec = test.int_inputs.get(i)
        if spec is not None:
            low, high = spec[0], spec[1]
            int_dtype = np.dtype(spec[2]) if len(spec) > 2 else dtype
            arrays.append(rng.integers(low, high, size=shape).astype(int_dtype))
        else:
            arrays.append(rng.uniform(lo, hi, size=shape).astype(dtype))
    return arrays


def fast_and_generic(fn):
    """(fn() with the Numba fast paths on, fn() with them off): the two results a fast-path test compares."""
    from mixnet.ops import _fastpath
    fast = fn()
    _fastpath.ENABLED = False
    try:
        generic = fn()
    finally:
        _fastpath.ENABLED = True
    return fast, generic
