"""Names MXNet test files import at module level, and their behaviour."""
import threading

import numpy as np
import pytest

import mixnet as mx


def test_base_names():
    assert mx.base.py_str(b"abc") == "abc" and mx.base.py_str("x") == "x"
    assert isinstance(3, mx.base.integer_types)
    assert mx.base._as_list(1) == [1] and mx.base._as_list((1, 2)) == [1, 2]
    assert issubclass(mx.base.MXNetError, Exception)
    from mixnet.ndarray.ndarray import py_slice, _STORAGE_TYPE_STR_TO_ID   # noqa: F401
    from mixnet.test_utils import use_np                                  # noqa: F401
    import mixnet.ndarray.sparse                                          # noqa: F401


def test_name_manager_counts_per_hint():
    with mx.name.NameManager():
        nm = mx.name.NameManager.current()
        assert [nm.get(None, "dense"), nm.get(None, "dense"), nm.get(None, "conv")] == ["dense0", "dense1", "conv0"]
        assert nm.get("given", "dense") == "given"
        with mx.name.Prefix("net_") as p:
            assert mx.name.NameManager.current() is p
            assert p.get(None, "dense") == "net_dense0"
        assert mx.name.NameManager.current() is nm
        assert nm.get(None, "dense") == "dense2"


def test_name_manager_is_per_thread():
    seen = []
    with mx.name.Prefix("main_"):
        t = threading.Thread(target=lambda: seen.append(mx.name.NameManager.current().get(None, "x")))
        t.start()
        t.join()
    assert seen == ["x0"]


def test_attr_scope_merges():
    with mx.attribute.AttrScope(ctx_group="dev1", lr_mult="2"):
        with mx.attribute.AttrScope(lr_mult="3"):
            assert mx.attribute.AttrScope.current().get({"wd_mult": "0"}) == \
                {"ctx_group": "dev1", "lr_mult": "3", "wd_mult": "0"}
        assert mx.attribute.AttrScope.current().get(None) == {"ctx_group": "dev1", "lr_mult": "2"}
    assert mx.attribute.AttrScope.current().get(None) == {}
    with pytest.raises(ValueError):
        mx.attribute.AttrScope(lr_mult=2)


def test_util_np_switches():
    assert mx.util.is_np_array() is False and mx.util.is_np_shape() is False
    assert mx.util.set_np_shape(True) is False
    assert mx.util.is_np_shape() and mx.is_np_shape()
    assert mx.util.set_np_shape(False) is True
    with mx.util.np_shape(True):
        assert mx.util.is_np_shape()
        with mx.util.np_shape(False):
            assert not mx.util.is_np_shape()
        assert mx.util.is_np_shape()
    assert not mx.util.is_np_shape()
    with pytest.raises(mx.MXNetError):
        mx.util.np_array(True)
    with pytest.raises(mx.MXNetError):
        mx.util.set_np()                 # NumPy arrays are not available

    @mx.util.use_np_shape
    def in_np_shape():
        """doc"""
        return mx.util.is_np_shape()
    assert in_np_shape() is True and in_np_shape.__doc__ == "doc" and not mx.util.is_np_shape()
    mx.util.set_np(shape=True, array=False)
    assert mx.util.is_np_shape()
    mx.util.reset_np()
    assert not mx.util.is_np_shape()


def test_np_shape_is_per_thread():
    import threading
    seen = []
    with mx.util.np_shape(True):
        worker = threading.Thread(target=lambda: seen.append(mx.util.is_np_shape()))
        worker.start()
        worker.join()
    assert seen == [False]


def test_runtime_features():
    feats = mx.runtime.Features()
    assert "CUDA" in feats and "MKLDNN" in feats
    assert feats.is_enabled("CUDA") == (mx.context.num_gpus() > 0)
    assert feats.is_enabled("mkldnn") is False
    assert feats.is_enabled("LAPACK") is True
    with pytest.raises(RuntimeError):
        feats.is_enabled("NO_SUCH_FEATURE")
    assert all(isinstance(f.enabled, bool) for f in mx.runtime.feature_list())


def test_more_base_names_mxnet_code_imports():
    from mixnet.base import (NotImplementedForSymbol, NotSupportedForSparseNDArray, _Null, mx_real_t, mx_uint,  # noqa: F401
                             _NP_OP_PREFIX, data_dir, error_types)
    assert mx_real_t is np.float32 and _NP_OP_PREFIX == "_np_" and repr(_Null) == "_Null"
    assert error_types["NotImplementedForSymbol"] is NotImplementedForSymbol
    err = NotImplementedForSymbol(bool, "__bool__", 1)
    assert isinstance(err, mx.MXNetError) and err.function == "bool"
    assert str(err).startswith('Function bool (namely operator "__bool__") with arguments')


def test_symbol_without_data_raises_not_implemented_for_symbol():
    x = mx.sym.var("x")
    for call in (bool, float, int, lambda s: s.asnumpy()):
        with pytest.raises(mx.base.NotImplementedForSymbol, match="not implemented for Symbol"):
            call(x)


def test_star_imports_bring_what_mxnet_test_files_use():
    namespace = {}
    exec("from mixnet.autograd import *\nfrom mixnet.test_utils import *", namespace)
    assert namespace["mx"] is mx and namespace["np"] is np and namespace["NDArray"] is mx.nd.NDArray
    assert namespace["array"] is mx.nd.array and callable(namespace["assert_almost_equal"])


def test_np_and_npx_modules_import_and_name_what_is_missing():
    import mixnet.numpy as mnp
    import mixnet.numpy_extension as mnpx
    assert mx.np is mnp and mx.npx is mnpx
    assert not hasattr(mx.np, "array")                         # hasattr: an AttributeError
    with pytest.raises(mx.MXNetError, match=r"mx\.np\.concatenate is not implemented.*mx\.nd"):
        mx.np.concatenate
    with pytest.raises(mx.MXNetError, match=r"mx\.npx\.set_np is not implemented"):
        mx.npx.set_np()
    with pytest.raises(ImportError):
        from mixnet.numpy import ndarray  # noqa: F401


def test_top_level_np_switches_as_mxnet_exports_them():
    for name in ("is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array", "np_array",
                 "use_np_array", "use_np"):
        assert getattr(mx, name) is getattr(mx.util, name)


def test_context_default_ctx_follows_the_current_context_per_thread():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        default = mx.current_context()          # cpu(0), unless the suite runs on another device
        assert mx.Context.default_ctx == default
        with mx.cpu(3):
            assert mx.Context.default_ctx == mx.cpu(3)
        seen = []

        def other_thread():
            mx.Context.default_ctx = mx.cpu(5)       # MXNet's setter: this thread's default only
            seen.append((mx.Context.default_ctx, mx.nd.zeros((1,)).context))

        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
        assert seen == [(mx.cpu(5), mx.cpu(5))]
        assert mx.Context.default_ctx == default == mx.current_context()
        with pytest.raises(mx.MXNetError, match="must be a Context"):
            mx.Context.default_ctx = "cpu"
    with pytest.warns(DeprecationWarning, match="default_ctx is deprecated"):
        mx.Context.default_ctx
