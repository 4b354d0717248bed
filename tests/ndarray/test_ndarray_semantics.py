"""MXNet 1.x NDArray semantics (expected values checked against MXNet 1.9.1)."""
import pickle

import numpy as np
import pytest

import mixnet as mx
from mixnet import nd


def test_default_dtype_is_float32_even_from_int64_numpy():
    assert nd.array([1, 2]).dtype is np.float32
    assert nd.array(np.arange(3)).dtype is np.float32
    assert nd.array(np.arange(3), dtype="int64").dtype is np.int64
    src = nd.array([1, 2], dtype="int32")
    assert nd.array(src).dtype is np.int32           # an NDArray source keeps its dtype


def test_scalar_source_is_0d_like_mxnet():
    assert nd.array(5).shape == ()


def test_scalar_ops_keep_array_dtype():
    a = nd.array([7], dtype="int32")
    assert (a / 2).dtype is np.int32 and (a / 2).asnumpy().tolist() == [3]
    assert (a * 2).asnumpy().tolist() == [14]
    assert (2.5 * a).dtype is np.int32
    x = nd.array([1.5], dtype="float16")
    assert (x + 1).dtype is np.float16


def test_int_scalar_is_truncated_to_the_array_dtype_first():
    # MXNet casts the Python scalar to an integer array's dtype before the op (toward zero), then keeps the dtype.
    a = nd.array([0], dtype="int32")
    assert (a < 1e-3).asnumpy().tolist() == [0]
    assert (a < 1e-3).dtype is np.int32
    b = nd.array([7, -7], dtype="int32")
    assert (b * 2.5).asnumpy().tolist() == [14, -14]
    assert (2.5 * b).asnumpy().tolist() == [14, -14]
    assert (b - 0.5).asnumpy().tolist() == [7, -7]
    assert (b % 2.5).asnumpy().tolist() == [1, 1]
    assert (b ** 0.5).asnumpy().tolist() == [1, 1]
    assert (10 / nd.array([7], dtype="int64")).asnumpy().tolist() == [1]
    # float arrays use the scalar as given
    assert (nd.array([7]) * 2.5).asnumpy().tolist() == [17.5]


def test_comparisons_return_input_dtype():
    x = nd.array([1, 2, 3])
    y = x > 1.5
    assert y.dtype is np.float32 and y.asnumpy().tolist() == [0, 1, 1]
    assert (x == x).asnumpy().tolist() == [1, 1, 1]


def test_broadcasting_arithmetic():
    out = nd.ones((2, 3)) + nd.ones((3,))
    assert out.shape == (2, 3) and float(out.asnumpy().sum()) == 12.0


def test_mixed_dtypes_are_a_clear_error():
    with pytest.raises(mx.MXNetError, match="broadcast_add.*dtypes must match"):
        nd.ones((2,)) + nd.ones((2,), dtype="float64")


def test_error_names_user_line():
    with pytest.raises(mx.MXNetError) as info:
        nd.ones((2, 3)) * nd.ones((4,))
    assert "broadcast_mul" in str(info.value)
    assert "(2, 3) float32, (4,) float32" in str(info.value)
    assert "test_ndarray_semantics.py" in str(info.value)


def test_indexing_views_and_legacy_shapes():
    x = nd.array([1, 2, 3])
    assert x[0].shape == (1,)
    assert x[1:].shape == (2,)
    y = nd.ones((2, 3))
    assert y[1, 2].shape == (1,) and y[1].shape == (3,)
    assert y[:, 1].shape == (2,)
    assert [e.shape for e in x] == [(1,)] * 3
    view = y[0]
    view[:] = 5
    assert y.asnumpy()[0].tolist() == [5, 5, 5]       # basic indexing returns a view


def test_advanced_indexing_copies():
    y = nd.array(np.arange(12).reshape(3, 4))
    picked = y[[0, 2]]
    picked[:] = -1
    assert picked.shape == (2, 4) and y.asnumpy()[0, 0] == 0
    idx = nd.array([2, 0])
    assert y[idx].asnumpy()[:, 0].tolist() == [8, 0]


def test_setitem_forms():
    x = nd.zeros((2, 3))
    x[:] = 1
    x[0] = nd.array([1, 2, 3])
    x[1, 1:] = np.array([7, 8])
    x[:, 0] = 9
    assert x.asnumpy().tolist() == [[9, 2, 3], [9, 7, 8]]
    with pytest.raises(mx.MXNetError, match="cannot assign"):
        x[0] = nd.ones((4,))


def test_inplace_operators_modify_the_same_buffer():
    x = nd.ones((2, 2))
    view = x[0]
    x += 1
    x *= 3
    assert x.asnumpy().tolist() == [[6, 6], [6, 6]]
    assert view.asnumpy().tolist() == [6, 6]


def test_bool_len_and_scalars():
    assert not bool(nd.array([0])) and bool(nd.array([2]))
    assert not bool(nd.array(np.zeros((0,))))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(nd.ones((2,)))
    assert len(nd.ones((4, 2))) == 4
    assert nd.array([3.5]).asscalar() == 3.5
    with pytest.raises(mx.MXNetError, match="asscalar"):
        nd.ones((2,)).asscalar()


def test_repr_shows_values_shape_and_context():
    text = repr(nd.ones((2, 3)))        # made on the default device: cpu(0), unless the suite runs on another one
    assert text == f"\n[[1. 1. 1.]\n [1. 1. 1.]]\n<NDArray 2x3 @{mx.current_context()}>"


def test_pickle_round_trip_and_hash_by_identity():
    x = nd.array([[1, 2], [3, 4]], dtype="int32")
    y = pickle.loads(pickle.dumps(x))
    assert y.dtype is np.int32 and y.asnumpy().tolist() == [[1, 2], [3, 4]]
    table = {x: "x"}
    assert table[x] == "x"


def test_numpy_interop():
    x = nd.array([1, 2, 3])
    assert np.asarray(x).tolist() == [1, 2, 3]
    assert isinstance(np.exp(x), np.ndarray)
    assert np.allclose(np.add(x, 1), [2, 3, 4])


def test_dlpack_round_trip():
    x = nd.array([1, 2, 3])
    y = nd.from_dlpack(x.to_dlpack_for_read())
    assert y.asnumpy().tolist() == [1, 2, 3]


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.0.0",
                    reason="numpy < 2 imports every DLPack capsule read-only, so writing through one is impossible")
def test_dlpack_for_write_shares_memory():
    x = nd.array([1, 2, 3])
    z = nd.from_dlpack(x.to_dlpack_for_write())
    z[:] = 0
    assert x.asnumpy().tolist() == [0, 0, 0]


def test_copyto_astype_context():
    x = nd.array([1.5, 2.5], ctx=mx.cpu())
    y = nd.zeros((2,))
    x.copyto(y)
    assert y.asnumpy().tolist() == [1.5, 2.5]
    z = x.copyto(mx.cpu(1))
    assert z.context == mx.cpu(1) and z.asnumpy().tolist() == [1.5, 2.5]
    assert x.as_in_context(mx.cpu()) is x
    assert x.astype("int32").asnumpy().tolist() == [1, 2]
    assert x.astype("float32", copy=False) is x
    with mx.cpu(1):
        assert nd.ones((1,)).context == mx.cpu(1)
    with pytest.raises(mx.MXNetError, match="different devices"):
        x + z


def test_reshape_special_codes():
    x = nd.zeros((2, 3, 4))
    assert x.reshape((4, 0, 2)).shape == (4, 3, 2)
    assert x.reshape((6, -1)).shape == (6, 4)
    assert x.reshape((-2,)).shape == (2, 3, 4)
    assert x.reshape((2, -2)).shape == (2, 3, 4)
    assert x.reshape((-3, 4)).shape == (6, 4)
    assert x.reshape((-4, 1, 2, -2)).shape == (1, 2, 3, 4)
    y = nd.zeros((10, 5, 4))
    assert y.reshape((-1, 0)).shape == (40, 5)
    assert y.reshape((-1, 0), reverse=True).shape == (50, 4)
    assert x.reshape(-1).shape == (24,)
    with pytest.raises(mx.MXNetError, match="Reshape"):
        x.reshape((5, -1))


def test_out_argument_writes_in_place():
    x = nd.array([1.0, 4.0])
    out = nd.zeros((2,))
    result = nd.sqrt(x, out=out)
    assert result is out and out.asnumpy().tolist() == [1, 2]


def test_functional_forms_accept_scalars():
    x = nd.array([1.0, 2.0])
    assert nd.add(x, 1).asnumpy().tolist() == [2, 3]
    assert nd.subtract(1, x).asnumpy().tolist() == [0, -1]
    assert nd.maximum(x, 1.5).asnumpy().tolist() == [1.5, 2]
    assert nd.power(2, x).asnumpy().tolist() == [2, 4]
    assert nd.add(1, 2) == 3


def test_unknown_attribute_and_bad_input_are_clear_errors():
    with pytest.raises(mx.MXNetError, match=r"Reshape: unknown argument\(s\) \['shap'\]"):
        nd.Reshape(nd.ones((2,)), shap=(2,))
    with pytest.raises(mx.MXNetError, match="input 'data' must be an NDArray"):
        nd.relu([1, 2])
    with pytest.raises(mx.MXNetError, match="hard_sigmoid: attribute alpha='x'"):
        nd.hard_sigmoid(nd.ones((1,)), alpha="x")


def test_attribute_strings_parse_like_mxnet_json():
    x = nd.zeros((2, 3, 4))
    assert nd.Reshape(x, shape="(6, -1)").shape == (6, 4)
    assert nd.Reshape(x, shape="[4,0,2]", reverse="False").shape == (4, 3, 2)


def test_elemwise_ops_need_equal_shapes():
    with pytest.raises(mx.MXNetError, match="elemwise_add"):
        nd.elemwise_add(nd.ones((2, 3)), nd.ones((3,)))


def test_round_is_half_away_from_zero():
    assert nd.round(nd.array([0.5, 1.5, -0.5, 2.5])).asnumpy().tolist() == [1, 2, -1, 3]


def test_waitall_and_wait_to_read_are_noops():
    x = nd.ones((2,))
    x.wait_to_read()
    nd.waitall()


def test_sparse_constructors():
    c = nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [1, 0, 2], [0, 1, 3]), shape=(2, 3))
    assert c.asnumpy().tolist() == [[0, 1, 0], [2, 0, 3]] and c.stype == "csr"
    r = nd.sparse.row_sparse_array((np.ones((1, 2)), [1]), shape=(3, 2))
    assert r.asnumpy().tolist() == [[0, 0], [1, 1], [0, 0]]
    with pytest.raises(mx.MXNetError, match="csr_matrix"):
        nd.sparse.csr_matrix(([1.0], [5], [0, 1]), shape=(1, 3))


def test_ops_without_attributes_ignore_unknown_attributes_as_mxnet():
    # MXNet 1.9.1: an op with no parameter struct ignores unknown keyword attributes; one with attributes refuses
    a, b = mx.nd.array([1.0, -2.0]), mx.nd.array([0.0, 0.0])
    np.testing.assert_array_equal(mx.nd.broadcast_maximum(a, b, axis=1).asnumpy(), [1, 0])
    assert mx.sym.relu(mx.sym.var("x"), axis=0).list_arguments() == ["x"]
    with pytest.raises(mx.MXNetError, match=r"sum: unknown argument\(s\) \['foo'\]"):
        mx.nd.sum(a, foo=1)
    with pytest.raises(mx.MXNetError, match="unknown argument"):
        mx.nd.relu(a, other=b)          # an unknown array argument is still an error
