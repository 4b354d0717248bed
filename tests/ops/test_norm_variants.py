"""BatchNorm_v1 and contrib.SyncBatchNorm (one device) against MXNet 1.9.1's numbers: outputs (out, mean, var),
gradients that ignore the mean/var head gradients, moving statistics updated in training."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError

# from MXNet 1.9.1: x = arange(24).reshape(2, 3, 2, 2) / 7, gamma (1, 2, .5), beta (0, 1, -1), fix_gamma=False,
# eps=1e-5, training forward; backward with head gradients (arange(24) % 5, 10s, 10s)
_MEAN = [1.0714285373687744, 1.6428571939468384, 2.2142858505249023]
_VAR = [0.7602040767669678] * 3
_OUT0 = [-1.2288397550582886, -1.4576795101165771, -1.614419937133789]
_XGRAD = [[-1.5587375164031982, -0.49071788787841797], [5.484403133392334, -3.848728656768799],
          [0.5436331033706665, 1.140183687210083]]
_GGRAD = [3.3588294982910156, 3.358828067779541, -1.9661450386047363]
_MOVING_MEAN = [0.10714288055896759, 0.16428576409816742, 0.22142863273620605]
_MOVING_VAR = [0.9760203957557678] * 3


@pytest.mark.parametrize("make", [lambda *a, **k: mx.sym.BatchNorm_v1(*a, **k),
                                  lambda *a, **k: mx.sym.contrib.SyncBatchNorm(*a, key="bn", **k)])
def test_matches_mxnet(make):
    net = make(mx.sym.var("x"), mx.sym.var("g"), mx.sym.var("b"), fix_gamma=False, output_mean_var=True, eps=1e-5,
               name="bn")
    assert net.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    exe = net.simple_bind(mx.current_context(), x=(2, 3, 2, 2))          # where the head gradients are
    exe.arg_dict["x"][:] = mx.nd.array(np.arange(24).reshape(2, 3, 2, 2) / 7.0)
    exe.arg_dict["g"][:] = mx.nd.array([1.0, 2.0, 0.5])
    exe.arg_dict["b"][:] = mx.nd.array([0.0, 1.0, -1.0])
    exe.aux_dict["bn_moving_var"][:] = 1
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(np.arange(24).reshape(2, 3, 2, 2) % 5), mx.nd.ones(3) * 10, mx.nd.ones(3) * 10])
    out, mean, var = (o.asnumpy() for o in exe.outputs)
    np.testing.assert_allclose(mean, _MEAN, rtol=1e-5)
    np.testing.assert_allclose(var, _VAR, rtol=1e-5)
    np.testing.assert_allclose(out[0, :, 0, 0], _OUT0, rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy()[0, :, 0, :2], _XGRAD, rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["g"].asnumpy(), _GGRAD, rtol=1e-5)
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"].asnumpy(), _MOVING_MEAN, rtol=1e-5)
    np.testing.assert_allclose(exe.aux_dict["bn_moving_var"].asnumpy(), _MOVING_VAR, rtol=1e-5)


def test_sync_batch_norm_refuses_several_devices():
    args = [mx.nd.ones((2, 3))] + [mx.nd.ones((3,))] * 4
    with pytest.raises(MXNetError, match="ndev"):
        mx.nd.contrib.SyncBatchNorm(*args, key="k", ndev=2)
