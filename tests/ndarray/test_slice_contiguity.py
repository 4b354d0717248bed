"""NDArray._basic_indexing_slice_is_contiguous agrees with numpy, and a contiguous basic slice is a view that
writes through to its base (as MXNet's is); x.split_v2 is the fluent form of nd.split_v2."""
import numpy as np
from hypothesis import given, settings, strategies as st

import mixnet as mx

_bounds = st.one_of(st.none(), st.integers(-6, 6))
_slices = st.builds(slice, _bounds, _bounds, st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2])))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=4), data=st.data())
def test_contiguity_prediction_matches_numpy(shape, data):
    key = tuple(data.draw(_slices) for _ in shape)
    x = np.zeros(shape, np.float32)
    assert mx.nd.NDArray._basic_indexing_slice_is_contiguous(key, shape) == x[key].flags.c_contiguous


def test_contiguous_slice_writes_through():
    x = mx.nd.arange(24).reshape((2, 3, 4))
    key = (slice(1, 2), slice(None), slice(None))
    assert mx.nd.NDArray._basic_indexing_slice_is_contiguous(key, x.shape)
    view = x[key]
    view[:] = 0
    assert (x[key].asnumpy() == 0).all() and (x[0].asnumpy() != 0).any()


def test_split_v2_fluent():
    x = mx.nd.arange(30).reshape((5, 6))
    for kwargs in ({"indices_or_sections": 3, "axis": 1}, {"indices_or_sections": (1, 4), "axis": 1}):
        fluent, regular = x.split_v2(**kwargs), mx.nd.split_v2(x, **kwargs)
        assert len(fluent) == len(regular)
        for a, b in zip(fluent, regular):
            np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
