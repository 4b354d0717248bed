"""MXNet's optimizer update ops (`mx.nd.sgd_update`, `adam_update`, ..., `contrib.adamw_update`): one step of an
optimizer on given arrays, as MXNet users' custom training loops call them.

Each op runs the update formula of the matching optimizer class in optimizer.py (one source of truth for the
math): the new weight goes to `out` (a fresh array when out is None, the weight itself when out is the weight),
and the state arrays (momentum, mean/var, ...) are updated in place, as MXNet's ops do. They are not recorded
by autograd (MXNet's are not differentiable either)."""
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from . import optimizer as _opt

__all__ = ["sgd_update", "sgd_mom_update", "nag_mom_update", "mp_sgd_update", "mp_sgd_mom_update",
           "mp_nag_mom_update", "adam_update", "ftrl_update", "ftml_update", "signsgd_update", "signum_update",
           "rmsprop_update", "rmspropalex_update", "adamw_update"]


def _check(op, weight, grad, states):
    for what, arr in (("weight", weight), ("grad", grad)) + tuple(states.items()):
        if not isinstance(arr, NDArray):
            raise MXNetError(f"{op}: {what} must be an NDArray, got {type(arr).__name__}")
        if arr.shape != weight.shape:
            raise MXNetError(f"{op}: {what} has shape {arr.shape}, the weight {weight.shape}")


def _target(op, weight, out):
    """The array whose buffer the step updates in place: out (given the weight's values first) or a copy."""
    if out is None:
        return weight.copy()
    if not isinstance(out, NDArray) or out.shape != weight.shape:
        raise MXNetError(f"{op}: out must be an NDArray of the weight's shape {weight.shape}")
    if out is not weight:
        out[:] = weight
    return out


def _run(op, optimizer, weight, grad, out, state, lr, wd, t=None, **states):
    _check(op, weight, grad, states)
    target = _target(op, weight, out)
    if t is not None:
        optimizer._index_update_count[0] = t
    optimizer._step(0, target._data, grad._data, state, lr, wd)
    for arr in (target,) + tuple(states.values()):
        arr._bump_version()
    return target


def _mp_run(op, optimizer, weight, grad, weight32, out, state, lr, wd, **states):
    """Multi-precision: the step runs on the float32 master copy, which the (float16) weight then takes."""
    _check(op, weight, grad, dict(states, weight32=weight32))
    optimizer._step(0, weight32._data, grad._data.astype(weight32.dtype), state, lr, wd)
    target = _target(op, weight, out)
    target._data[...] = weight32._data.astype(target.dtype)
    for arr in (target, weight32) + tuple(states.values()):
        arr._bump_version()
    return target


def _common(rescale_grad, clip_gradient):
    return {"rescale_grad": rescale_grad, "clip_gradient": clip_gradient}


def sgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, lazy_update=True, out=None):
    """w = w - lr * (clip(rescale_grad * grad) + wd * w)."""
    opt = _opt.SGD(momentum=0.0, **_common(rescale_grad, clip_gradient))
    return _run("sgd_update", opt, weight, grad, out, None, lr, wd)


def sgd_mom_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                   lazy_update=True, out=None):
    """mom = momentum * mom - lr * (clip(rescale_grad * grad) + wd * w); w = w + mom."""
    opt = _opt.SGD(momentum=momentum, **_common(rescale_grad, clip_gradient))
    return _run("sgd_mom_update", opt, weight, grad, out, mom, lr, wd, mom=mom)


def nag_mom_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None):
    """Nesterov momentum (see optimizer.NAG; MXNet's momentum depends on whether out is the weight)."""
    _check("nag_mom_update", weight, grad, {"mom": mom})
    target = _target("nag_mom_update", weight, out)
    _opt._nag_kernel(_opt._xp_of(target._data), target._data, grad._data, mom._data, lr, wd, rescale_grad,
                     clip_gradient, momentum, out_is_weight=target is weight)
    for arr in (target, mom):
        arr._bump_version()
    return target


def mp_sgd_update(weight, grad, weight32, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, lazy_update=True,
                  out=None):
    """sgd_update on the float32 master copy weight32; the weight gets its value."""
    opt = _opt.SGD(momentum=0.0, **_common(rescale_grad, clip_gradient))
    return _mp_run("mp_sgd_update", opt, weight, grad, weight32, out, None, lr, wd)


def mp_sgd_mom_update(weight, grad, mom, weight32, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                      lazy_update=True, out=None):
    """sgd_mom_update on the float32 master copy weight32; the weight gets its value."""
    opt = _opt.SGD(momentum=momentum, **_common(rescale_grad, clip_gradient))
    return _mp_run("mp_sgd_mom_update", opt, weight, grad, weight32, out, mom, lr, wd, mom=mom)


def mp_nag_mom_update(weight, grad, mom, weight32, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                      out=None):
    """nag_mom_update on the float32 master copy weight32; the weight gets its value."""
    opt = _opt.NAG(momentum=momentum, **_common(rescale_grad, clip_gradient))
    return _mp_run("mp_nag_mom_update", opt, weight, grad, weight32, out, mom, lr, wd, mom=mom)


def adam_update(weight, grad, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
                clip_gradient=-1.0, lazy_update=True, out=None):
    """Adam without bias correction (the caller folds it into lr, as optimizer.Adam does)."""
    _check("adam_update", weight, grad, {"mean": mean, "var": var})
    target = _target("adam_update", weight, out)
    _opt._adam_kernel(_opt._xp_of(target._data), target._data, grad._data, mean._data, var._data, lr, wd,
                      rescale_grad, clip_gradient, beta1, beta2, epsilon)
    for arr in (target, mean, var):
        arr._bump_version()
    return target


def ftrl_update(weight, grad, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                out=None):
    """FTRL-proximal (see optimizer.Ftrl)."""
    opt = _opt.Ftrl(lamda1=lamda1, beta=beta, learning_rate=lr, **_common(rescale_grad, clip_gradient))
    return _run("ftrl_update", opt, weight, grad, out, (z, n), lr, wd, z=z, n=n)


def ftml_update(weight, grad, d, v, z, lr, t, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
                clip_grad=-1.0, out=None):
    """FTML at step t (see optimizer.FTML)."""
    opt = _opt.FTML(beta1=beta1, beta2=beta2, epsilon=epsilon, **_common(rescale_grad, clip_grad))
    return _run("ftml_update", opt, weight, grad, out, (d, v, z), lr, wd, t=int(t), d=d, v=v, z=z)


def signsgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None):
    """w = (1 - lr * wd) * w - lr * sign(clip(rescale_grad * grad))."""
    opt = _opt.Signum(momentum=0.0, **_common(rescale_grad, clip_gradient))
    return _run("signsgd_update", opt, weight, grad, out, None, lr, wd)


def signum_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, wd_lh=0.0,
                  out=None):
    """Signum (see optimizer.Signum); the momentum state is updated in place."""
    opt = _opt.Signum(momentum=momentum, wd_lh=wd_lh, **_common(rescale_grad, clip_gradient))
    return _run("signum_update", opt, weight, grad, out, mom, lr, wd, mom=mom)


def rmsprop_update(weight, grad, n, lr, gamma1=0.95, epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                   clip_weights=-1.0, out=None):
    """RMSProp (see optimizer.RMSProp, centered=False)."""
    opt = _opt.RMSProp(gamma1=gamma1, epsilon=epsilon, clip_weights=clip_weights,
                       **_common(rescale_grad, clip_gradient))
    return _run("rmsprop_update", opt, weight, grad, out, (n,), lr, wd, n=n)


def rmspropalex_update(weight, grad, n, g, delta, lr, gamma1=0.95, gamma2=0.9, epsilon=1e-8, wd=0.0,
                       rescale_grad=1.0, clip_gradient=-1.0, clip_weights=-1.0, out=None):
    """Centered RMSProp, Graves 2013 (see optimizer.RMSProp, centered=True)."""
    opt = _opt.RMSProp(gamma1=gamma1, gamma2=gamma2, epsilon=epsilon, centered=True, clip_weights=clip_weights,
                       **_common(rescale_grad, clip_gradient))
    return _run("rmspropalex_update", opt, weight, grad, out, (n, g, delta), lr, wd, n=n, g=g, delta=delta)


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0,
                 clip_gradient=-1.0, out=None):
    """MXNet's contrib.adamw_update: w -= eta * (lr * m / (sqrt(v) + epsilon) + wd * w); rescale_grad is an
    NDArray (the update is skipped when it is 0 or not finite, as MXNet's is)."""
    scale = float(rescale_grad.asnumpy().reshape(-1)[0]) if isinstance(rescale_grad, NDArray) else float(rescale_grad)
    _check("adamw_update", weight, grad, {"mean": mean, "var": var})
    target = _target("adamw_update", weight, out)
    if scale and scale == scale and abs(scale) != float("inf"):
        _opt._adam_kernel(_opt._xp_of(target._data), target._data, grad._data, mean._data, var._data, lr, wd,
                          scale, clip_gradient, beta1, beta2, epsilon, decoupled_wd=(eta, wd))
    for arr in (target, mean, var):
        arr._bump_version()
    return target


