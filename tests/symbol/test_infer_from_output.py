"""Shape inference that flows from outputs back to inputs, and partial shapes through slicing ops (MXNet 1.x's
graph inference does both): reshape/transpose/broadcast inputs filled from a known output, creation ops whose
shape has a -1 (unknown in a graph), and simple_bind's non-shape keyword arguments."""
import numpy as np
import pytest

import mixnet as mx


def test_ones_with_unknown_dims_gets_its_shape_through_transpose():
    ones = mx.sym.ones(shape=[2, 3]) + mx.sym.transpose(mx.sym.ones(shape=[-1, -1]))
    out = ones.bind(mx.cpu(), args={}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 2.0))


def test_partly_known_creation_shapes_fill_each_other():
    out = (mx.sym.ones(shape=[2, -1]) + mx.sym.transpose(mx.sym.zeros(shape=[3, 0]))).bind(mx.cpu(), {}).forward()
    assert out[0].shape == (2, 3)


@pytest.mark.parametrize("spec,reverse,held", [((0, -1), False, 0), ((-1, 0, 0), False, 3), ((0, -1), True, 1),
                                               ((-3, -3), False, 2)])
def test_reshape_input_dim_is_inferred_from_its_output(spec, reverse, held):
    src = (2, 3, 5, 4)
    dst = mx.nd.zeros(src).reshape(spec, reverse=reverse).shape
    partial = tuple(0 if i == held else d for i, d in enumerate(src))
    net = mx.sym.elemwise_add(mx.sym.var("data").reshape(spec, reverse=reverse), mx.sym.ones(shape=dst))
    args, outs, _ = net.infer_shape(data=partial)
    assert args == [src] and outs == [dst]


def test_reshape_reverse_reverses_the_spec_plainly():
    # MXNet reverses both the shape and the spec, so a -4's two values stand before it
    assert mx.nd.zeros((64,)).reshape((16, 4, -4), reverse=True).shape == (16, 4)
    assert mx.nd.zeros((1, 2, 3, 64)).reshape((-2, -1, 16, -4), reverse=True).shape == (1, 2, 3, 4, 16)


def test_reshape_legacy_target_shape_round_trips_through_json():
    net = mx.sym.load_json(mx.sym.Reshape(mx.sym.var("data"), target_shape=(2, 0)).tojson())
    assert net.infer_shape(data=(2, 3, 5, 5))[1] == [(2, 75)]
    kept = mx.nd.Reshape(mx.nd.zeros((4, 3, 5)), target_shape=(0, 5, 3), keep_highest=True)
    assert kept.shape == (4, 5, 3)


@pytest.mark.parametrize("begin,end,step,expected", [((None, None), (None, 10), (), (0, 10)),
                                                     ((None, None), (None, 10), (None, 2), (0, 5)),
                                                     ((2, 3), (None, 10), (3, 3), (0, 3))])
def test_slice_keeps_unknown_dims_unknown(begin, end, step, expected):
    out = mx.sym.slice(mx.sym.var("data", shape=(0, 20)), begin=begin, end=end, step=step)
    assert out.infer_shape_partial()[1] == [expected]


def test_slice_axis_on_partial_shapes():
    data = mx.sym.var("data", shape=(10, 0))
    assert mx.sym.slice_axis(data, axis=0, begin=0, end=5).infer_shape_partial()[1] == [(5, 0)]
    assert mx.sym.slice_axis(data, axis=1, begin=0, end=5).infer_shape_partial()[1] == [(10, 0)]


def test_simple_bind_skips_keyword_values_that_are_not_shapes():
    net = mx.sym.take(mx.sym.var("a"), mx.sym.var("indices"), axis=0, mode="clip")
    exe = net.simple_bind(mx.cpu(), a=(4, 3), indices=(2,), axis=0, mode="clip")
    assert exe.outputs[0].shape == (2, 3)
