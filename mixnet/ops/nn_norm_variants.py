"""BatchNorm_v1 and _contrib_SyncBatchNorm: MXNet's older and multi-device batch norms, on one device the same
computation as BatchNorm over axis 1 (nn_norm.py's kernel and gradient), with their own attributes and MXNet's
outputs for output_mean_var: (out, mean, var) where BatchNorm gives (out, mean, 1/sqrt(var + eps)). Their
backward reads only the output's head gradient (mean and var get none), as MXNet's do."""
from types import SimpleNamespace

import numpy as np

from .attrs import Attr, REQUIRED, parse_bool, parse_float, parse_int, parse_str
from .nn_norm import _BN_PARAMS, _g_batchnorm, _infer_params, _k_batchnorm, _ref_batchnorm, channel_params
from .registry import OpDef, OpTest, register

_COMMON = {"eps": Attr(parse_float, 1e-3), "momentum": Attr(parse_float, 0.9), "fix_gamma": Attr(parse_bool, True),
           "use_global_stats": Attr(parse_bool, False), "output_mean_var": Attr(parse_bool, False)}
# what BatchNorm's kernel and rule need beyond the common attributes
_AS_BATCHNORM = {"axis": 1, "cudnn_off": False, "min_calib_range": None, "max_calib_range": None}


def _bn_attrs(attrs):
    return dict({k: attrs[k] for k in _COMMON}, **_AS_BATCHNORM)


def _kernel(op_name):
    def kernel(xp, data, gamma, beta, moving_mean, moving_var, *, is_train, **attrs):
        if attrs.get("ndev", 1) != 1:
            raise ValueError(f"ndev={attrs['ndev']}: mixnet synchronizes no devices; the statistics are this "
                             "batch's (use ndev=1)")
        a = _bn_attrs(attrs)
        batch = is_train and not a["use_global_stats"]
        if batch:     # the biased batch variance, before the kernel folds it into the moving statistics
            axes = (0,) + tuple(range(2, data.ndim))
            wide = data.astype(np.float64)
            var = ((wide - wide.mean(axis=axes, keepdims=True)) ** 2).mean(axis=axes).astype(data.dtype)
        else:
            var = moving_var.astype(data.dtype, copy=True)
        out, mean, _ = _k_batchnorm(xp, data, gamma, beta, moving_mean, moving_var, is_train=is_train, **a)
        return out, mean, var
    kernel.__name__ = f"_k_{op_name}"
    return kernel


def _grad(c, g, gmean, gvar):
    view = SimpleNamespace(inputs=c.inputs, attrs=_bn_attrs(c.attrs), is_train=c.is_train, outputs=c.outputs,
                           grad_buffer=c.grad_buffer)
    return _g_batchnorm(view, g, gmean * 0, gvar * 0)


def _ref(x, gamma, beta, mm, mv, ndev=1, key=None, **attrs):
    return _ref_batchnorm(x, gamma, beta, mm, mv, **attrs)


_infer = _infer_params(_BN_PARAMS, lambda shape, ax: [(shape[ax],), (shape[ax],)])
# no output_mean_var case: the generated tests differentiate every output, and these ops (as MXNet's) give the
# mean and var outputs no gradient (tests/ops/test_norm_variants.py checks those outputs against MXNet's numbers)
_CASES = ((((2, 3, 2, 2), (3,), (3,), (3,), (3,)), {}),
          (((4, 3), (3,), (3,), (3,), (3,)), {"fix_gamma": False, "eps": 1e-5}),
          (((2, 3, 4), (3,), (3,), (3,), (3,)), {"fix_gamma": False, "use_global_stats": True}))


def _register(name, extra_attrs, extra_case_attrs, doc):
    register(OpDef(
        name=name, kernel=_kernel(name), inputs=("data", "gamma", "beta", "moving_mean", "moving_var"),
        attrs=dict(_COMMON, **extra_attrs), grad=_grad, num_outputs=3,
        num_visible=lambda a: 3 if a["output_mean_var"] else 1,
        infer=lambda shapes, dtypes, **a: _infer(shapes, dtypes, **_bn_attrs(a)),
        nondiff_inputs=(3, 4), mutates=(3, 4), train_aware=True, param_shapes=channel_params(5, axis=1),
        test=OpTest(ref=_ref, domain=(0.5, 2.0), cases=tuple((shapes, dict(a, **extra_case_attrs))
                                                             for shapes, a in _CASES)),
        doc=doc))


_register("BatchNorm_v1", {}, {},
          "MXNet's first BatchNorm (axis 1): BatchNorm's computation; output_mean_var gives (out, mean, var).")
_register("_contrib_SyncBatchNorm", {"ndev": Attr(parse_int, 1), "key": Attr(parse_str, REQUIRED)},
          {"key": "bn0"},
          "Batch norm whose statistics MXNet synchronizes over ndev devices; mixnet runs one device (ndev=1), "
          "where it is BatchNorm over axis 1; output_mean_var gives (out, mean, var).")
