"""mx.optimizer: every optimizer against MXNet 1.9.1 over several steps, the registry, lr/wd multipliers,
schedulers, multi-precision, the multi-tensor path and the Updater's state (de)serialization."""
import os
import numpy as np
import pytest

import mixnet as mx
import mixnet.optimizer as opt
from mixnet.base import MXNetError

W0 = [0.5, -1.25, 2.0, 0.1, -0.3]
GRADS = [[0.3, -0.2, 0.9, -1.5, 0.05], [-0.4, 0.7, 0.2, 1.1, -0.6], [0.25, 0.1, -0.8, -0.3, 1.4],
         [0.6, -0.9, 0.05, 0.4, -0.2], [0.1, 0.2, 0.3, -0.4, 0.5]]

# (name, kwargs, weights after the 4 updates GRADS[:4] from W0 with get_updater(create(name, **kwargs))).
# Produced with MXNet 1.9.1 (adamw: MXNet's nd.contrib.adamw_update with eta=lr, lr=sqrt(1-b2^t)/(1-b1^t)).
ORACLE = [
    ('sgd', {'learning_rate': 0.1, 'wd': 0.01}, [0.42303798, -1.2149175, 1.9572417, 0.12934095, -0.36376676]),
    ('sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.05, 'clip_gradient': 0.5, 'rescale_grad': 0.5},
     [0.42677304, -1.218596, 1.8038599, 0.13908336, -0.29903421]),
    ('nag', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.05, 'clip_gradient': 0.5},
     [0.32396412, -1.1965617, 1.7399088, 0.12828936, -0.2296589]),
    ('nag', {'learning_rate': 0.1, 'wd': 0.05}, [0.41524854, -1.1947371, 1.9264418, 0.12672342, -0.35886872]),
    ('adam', {'learning_rate': 0.01, 'wd': 0.1, 'clip_gradient': 0.5, 'rescale_grad': 0.8},
     [0.48083806, -1.2408283, 1.9741755, 0.10987382, -0.30212262]),
    ('adam', {}, [0.49853116, -1.249831, 1.9980567, 0.10130011, -0.30092248]),
    ('adamax', {'wd': 0.1, 'clip_gradient': 0.5}, [0.49667794, -1.248264, 1.9952502, 0.10203512, -0.30088446]),
    ('nadam', {'wd': 0.1, 'clip_gradient': 0.5}, [0.49821913, -1.2489858, 1.9984699, 0.10022341, -0.30038726]),
    ('adagrad', {'learning_rate': 0.1, 'wd': 0.1, 'clip_gradient': 0.5},
     [0.35073531, -1.14537, 1.8483346, 0.11626405, -0.33035862]),
    ('adadelta', {'wd': 0.1, 'clip_gradient': 0.5}, [0.30882499, -0.8134855, 1.3086674, 0.061894543, -0.19854049]),
    ('adadelta', {'learning_rate': 0.5, 'rho': 0.8}, [0.48422137, -1.2440424, 1.9970936, 0.099928446, -0.30721319]),
    ('rmsprop', {'learning_rate': 0.01, 'wd': 0.1, 'clip_gradient': 0.5},
     [0.45226473, -1.2221855, 1.9584833, 0.10504816, -0.31236911]),
    ('rmsprop', {'learning_rate': 0.01, 'wd': 0.1, 'centered': True, 'clip_weights': 1.5, 'rescale_grad': 0.7},
     [0.38332704, -1.1704065, 1.4080549, 0.16316535, -0.37404972]),
    ('ftrl', {'wd': 0.1, 'clip_gradient': 0.5}, [0.072987124, -0.19941978, 0.64135426, 0.031994298, -0.0026629756]),
    ('ftml', {'learning_rate': 0.01, 'wd': 0.1, 'clip_gradient': 0.5},
     [0.48568222, -1.241142, 1.9872333, 0.10274796, -0.3045651]),
    ('signum', {'learning_rate': 0.01, 'wd': 0.1, 'wd_lh': 0.05, 'clip_gradient': 0.5},
     [0.4790107, -1.2475017, 1.9560328, 0.099790148, -0.29939044]),
    ('signum', {'learning_rate': 0.01, 'momentum': 0.0, 'wd': 0.1, 'clip_gradient': 0.5},
     [0.47802299, -1.2450075, 1.9720521, 0.099580631, -0.29878184]),
    ('lamb', {'learning_rate': 0.01, 'wd': 0.1, 'clip_gradient': 0.5},
     [0.46379173, -1.2509245, 1.9451015, 0.11383499, -0.2953015]),
    ('lamb', {'learning_rate': 0.01, 'wd': 0.1, 'lower_bound': 0.5, 'upper_bound': 2.0, 'bias_correction': False},
     [0.47222668, -1.256372, 1.9702504, 0.11635391, -0.31613827]),
    ('lars', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.1, 'eta': 0.01},
     [0.49803558, -1.2490093, 1.9949864, 0.10194892, -0.30063075]),
    ('lars', {'learning_rate': 0.1, 'wd': 0.1, 'clip_gradient': 0.5},
     [0.49987397, -1.2499026, 1.9998559, 0.099954233, -0.29994908]),
    ('adamw', {'learning_rate': 0.01, 'wd': 0.1, 'clip_gradient': 0.5, 'rescale_grad': 0.8},
     [0.48334244, -1.243775, 1.9723034, 0.10967842, -0.30228069]),
    ('adamw', {'learning_rate': 0.001, 'wd': 0.01}, [0.49851122, -1.2497809, 1.997977, 0.10129606, -0.30091047]),
]


def _run(name, kw, n=4, dtype="float32", index=0):
    o = opt.create(name, **kw)
    upd = opt.get_updater(o)
    w = mx.nd.array(W0, dtype=dtype)
    for g in GRADS[:n]:
        upd(index, mx.nd.array(g, dtype=dtype), w)
    return o, upd, w


@pytest.mark.parametrize("name,kw,expected", ORACLE, ids=[f"{c[0]}{i}" for i, c in enumerate(ORACLE)])
def test_matches_mxnet(name, kw, expected):
    _, _, w = _run(name, kw)
    np.testing.assert_allclose(w.asnumpy(), expected, rtol=2e-6, atol=1e-7)
    assert w.dtype is np.float32


def test_multi_precision_float16_sgd():
    # produced with MXNet 1.9.1
    o, upd, w = _run("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "multi_precision": True},
                     dtype="float16")
    np.testing.assert_array_equal(w.asnumpy(), np.array([0.39331055, -1.2890625, 1.765625, 0.33300781, -0.39794922],
                                                        dtype=np.float16))
    assert w.dtype is np.float16
    mom, master = upd.states[0]        # MXNet's order for SGD: (momentum, float32 master copy)
    assert master.dtype is np.float32 and mom.dtype is np.float32
    np.testing.assert_allclose(master.asnumpy(), w.asnumpy(), atol=1e-3)


def test_multi_precision_keeps_master_copy_adam():
    o, upd, w = _run("adam", {"learning_rate": 1e-4, "multi_precision": True}, dtype="float16")
    master, (m, v) = upd.states[0]
    assert master.dtype is np.float32
    # tiny steps are lost in float16 but accumulate in the master copy
    assert not np.array_equal(master.asnumpy(), np.array(W0, np.float32))


def test_registry_and_create():
    assert isinstance(opt.create("SGD"), opt.SGD)
    assert isinstance(opt.create("adamw"), opt.AdamW)
    assert isinstance(opt.create("signsgd"), opt.SignSGD)
    for name in ["sgd", "nag", "adam", "adamax", "nadam", "adagrad", "adadelta", "rmsprop", "ftrl", "ftml", "lamb",
                 "lars", "signum", "ccsgd", "test"]:
        assert name in opt.Optimizer.opt_registry
    with pytest.raises(ValueError, match="Cannot find optimizer"):
        opt.create("nope")

    class MyOpt(opt.Optimizer):
        def create_state(self, index, weight):
            return None

        def _step(self, index, w, g, state, lr, wd):
            w -= lr * g

    opt.Optimizer.register(MyOpt)
    try:
        o = opt.create("myopt", learning_rate=0.5)
        w = mx.nd.array([1.0, 2.0])
        opt.get_updater(o)(0, mx.nd.array([1.0, 1.0]), w)
        np.testing.assert_allclose(w.asnumpy(), [0.5, 1.5])
        with pytest.warns(UserWarning, match="overriding"):
            opt.Optimizer.register(MyOpt)
    finally:
        opt.Optimizer.opt_registry.pop("myopt")


def test_defaults():
    o = opt.Optimizer()
    assert o.lr == 0.01 and o.learning_rate == 0.01 and o.wd == 0.0 and o.rescale_grad == 1.0
    assert o.clip_gradient is None and o.num_update == 0
    assert opt.Adam().lr == 0.001 and opt.Ftrl().lr == 0.1 and opt.Adamax().lr == 0.002
    o.set_learning_rate(0.3)
    assert o.learning_rate == 0.3


def test_num_update_counting():
    o = opt.create("sgd", begin_num_update=10)
    upd = opt.get_updater(o)
    w0, w1 = mx.nd.zeros(2), mx.nd.zeros(2)
    upd(0, mx.nd.ones(2), w0)
    upd(0, mx.nd.ones(2), w0)
    upd(1, mx.nd.ones(2), w1)
    assert o._index_update_count == {0: 12, 1: 11}
    assert o.num_update == 12


def _sched(num_update):
    """A tiny schedule: 0.1 halved every 2 updates (what FactorScheduler(step=2, factor=0.5) gives)."""
    return 0.1 * 0.5 ** max(0, (num_update - 1) // 2)


def test_lr_scheduler_interplay():
    try:
        from mixnet.lr_scheduler import FactorScheduler
        sched = FactorScheduler(step=2, factor=0.5, base_lr=0.1)
    except ImportError:    # colleague's module not there yet: the same schedule as a function
        sched = _sched
        sched.base_lr = 0.1
    o = opt.create("sgd", momentum=0.9, lr_scheduler=sched)
    upd = opt.get_updater(o)
    w = mx.nd.array(W0)
    for g in GRADS:
        upd(0, mx.nd.array(g), w)
    # produced with MXNet 1.9.1 (FactorScheduler(step=2, factor=0.5, base_lr=0.1), 5 updates)
    np.testing.assert_allclose(w.asnumpy(), [0.42133203, -1.3418782, 1.658811, 0.34862497, -0.29733548], rtol=2e-6)
    assert o.num_update == 5
    assert o.learning_rate == pytest.approx(0.025)
    with pytest.raises(UserWarning, match="LRScheduler of the optimizer has already been defined"):
        o.set_learning_rate(0.5)


def test_learning_rate_overrides_scheduler_base_lr():
    def sched(n):
        return sched.base_lr
    sched.base_lr = 0.1
    with pytest.warns(UserWarning, match="overwritten"):
        o = opt.create("sgd", learning_rate=0.3, lr_scheduler=sched)
    assert sched.base_lr == 0.3 and o.learning_rate == 0.3


class _P:
    def __init__(self, lr_mult, wd_mult):
        self.lr_mult, self.wd_mult = lr_mult, wd_mult


def test_param_dict_multipliers():
    o = opt.create("adam", learning_rate=0.01, wd=0.1, param_dict={0: _P(0.5, 0.0), 1: _P(2.0, 1.0)})
    upd = opt.get_updater(o)
    w0, w1 = mx.nd.array(W0), mx.nd.array(W0)
    for g in GRADS[:3]:
        upd(0, mx.nd.array(g), w0)
        upd(1, mx.nd.array(g), w1)
    # produced with MXNet 1.9.1
    np.testing.assert_allclose(w0.asnumpy(), [0.49520719, -1.2501278, 1.9906366, 0.10639098, -0.30345774], rtol=2e-6)
    np.testing.assert_allclose(w1.asnumpy(), [0.47526318, -1.2408782, 1.9560641, 0.12519076, -0.3124676], rtol=2e-6)


def test_idx2name_and_set_mult():
    o = opt.create("sgd", wd=0.1, param_idx2name={0: "fc_weight", 1: "fc_bias", 2: "bn_gamma"})
    assert o._get_wds([0, 1, 2]) == [0.1, 0.0, 0.1]          # biases get no weight decay
    o.set_lr_mult({"fc_weight": 3.0})
    o.set_wd_mult({"fc_bias": 2.0})
    assert o._get_lr(0) == pytest.approx(0.03) and o._get_lr(1) == pytest.approx(0.01)
    assert o._get_wd(1) == pytest.approx(0.2)
    o.set_lr_mult({2: 0.5})                                      # by index
    assert o._get_lr(2) == pytest.approx(0.005)


@pytest.mark.parametrize("name,kw", [("sgd", {"learning_rate": 0.1}),
                                     ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3, "clip_gradient": 1}),
                                     ("adam", {"learning_rate": 0.01, "wd": 1e-3}),
                                     ("adamw", {"learning_rate": 0.01, "wd": 1e-2}),
                                     ("nag", {"momentum": 0.9})])
def test_multi_tensor_path_identical_to_per_parameter(name, kw):
    rng = np.random.RandomState(1)
    shapes = [(3, 4), (4,), (2, 3, 2), (1,), (5, 5)]
    init = [rng.randn(*s).astype(np.float32) for s in shapes]
    grads = [[rng.randn(*s).astype(np.float32) for s in shapes] for _ in range(3)]
    mults = {i: _P(1.0 if i != 3 else 0.5, 1.0) for i in range(len(shapes))}   # index 3 is its own group

    def run(batched):
        o = opt.create(name, param_dict=mults, **kw)
        upd = opt.get_updater(o)
        ws = [mx.nd.array(a) for a in init]
        for step in grads:
            gs = [mx.nd.array(g) for g in step]
            if batched:
                upd(list(range(len(ws))), gs, ws)
            else:
                for i, (g, w) in enumerate(zip(gs, ws)):
                    upd(i, g, w)
        return o, upd, ws

    _, _, ref = run(False)
    o, upd, got = run(True)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r.asnumpy(), g.asnumpy())
    assert o.num_update == 3


def test_multi_tensor_packs_buffers_and_survives_replacement():
    o = opt.create("sgd", learning_rate=0.5, momentum=0.5)
    upd = opt.get_updater(o)
    ws = [mx.nd.ones((2, 2)), mx.nd.ones((3,))]
    gs = [mx.nd.ones((2, 2)), mx.nd.ones((3,))]
    v0 = ws[0]._version
    upd([0, 1], gs, ws)
    assert ws[0]._version > v0                                   # updates bump the version
    assert ws[0]._data.base is not None and ws[0]._data.base is ws[1]._data.base   # one flat buffer
    gs[0]._data[...] = 2.0            # in-place writes go through the flat view
    ws[1]._data = np.full((3,), 10.0, np.float32)                # a replaced buffer is noticed and re-packed
    upd([0, 1], gs, ws)
    np.testing.assert_allclose(ws[0].asnumpy(), 1 - 0.5 - (0.25 + 1.0))
    np.testing.assert_allclose(ws[1].asnumpy(), 10 - (0.25 + 0.5))


def test_update_not_recorded_and_bumps_version():
    w = mx.nd.array([1.0, 2.0])
    w.attach_grad()
    with mx.autograd.record():
        y = (w * w).sum()
    opt.get_updater(opt.create("sgd", learning_rate=0.1))(0, mx.nd.array([1.0, 1.0]), w)
    np.testing.assert_allclose(w.asnumpy(), [0.9, 1.9])
    with pytest.raises(MXNetError):
        y.backward()                        # the graph saw the old weight: stale


def test_updater_states_roundtrip_without_pickle():
    o, upd, w = _run("adam", {"learning_rate": 0.01}, n=2)
    blob = upd.get_states(dump_optimizer=True)
    assert blob[:1] != b"\x80"
    o2 = opt.create("adam", learning_rate=0.5)
    upd2 = opt.get_updater(o2)
    upd2.set_states(blob)
    # the update counts come back under the weight's device (cpu(0), unless the suite runs on another one)
    assert upd2.optimizer.lr == 0.01 and upd2.optimizer._all_index_update_counts[str(w.context)] == {0: 2}
    for k in range(2):
        np.testing.assert_array_equal(upd2.states[0][k].asnumpy(), upd.states[0][k].asnumpy())
    w2 = w.copy()
    for g in GRADS[2:4]:
        upd(0, mx.nd.array(g), w)
        upd2(0, mx.nd.array(g), w2)
    np.testing.assert_array_equal(w.asnumpy(), w2.asnumpy())
    with pytest.raises(MXNetError, match="pickle"):
        upd2.set_states(b"\x80\x04K\x01.")


def test_states_file_is_nd_loadable(tmp_path):
    _, upd, _ = _run("sgd", {"momentum": 0.9}, n=1)
    fname = str(tmp_path / "s.states")
    opt.optimizer.write_atomic(fname, upd.get_states())
    loaded = mx.nd.load(fname)
    assert "__mixnet_states__" in loaded and "s0" in loaded


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("wd", [0.0, 1e-3])
def test_sgd_numba_pass_equals_numpy_path(dtype, momentum, wd):
    """The one-pass Numba SGD update gives bit-identical weights and momenta to the numpy path, infinities and
    NaN included (without weight decay, 0 * inf must not turn the momentum into NaN)."""
    from mixnet.ops import _fastpath
    from mixnet.optimizer.optimizer import _sgd_flat, _sgd_kernel
    assert _fastpath.numba_kernels(np, np.zeros(1, np.float32)) is not None    # loaded, as after a convolution
    rng = np.random.default_rng(0)
    w = rng.standard_normal(257).astype(dtype)
    w[:3] = [np.inf, -np.inf, np.nan]
    g = rng.standard_normal(257).astype(dtype)
    m = rng.standard_normal(257).astype(dtype) if momentum else None
    results = []
    for enabled in (True, False):
        for update in (_sgd_kernel, lambda xp, *a: _sgd_flat(xp, a[:3], *a[3:])):    # one buffer / flat group
            _fastpath.ENABLED = enabled
            try:
                wk, mk = w.copy(), None if m is None else m.copy()
                with np.errstate(invalid="ignore"):
                    update(np, wk, g, mk, 0.01, wd, 1 / 128, None, momentum)
            finally:
                _fastpath.ENABLED = True
            results.append((wk, mk))
    w_ref, m_ref = results[-1]                                  # the numpy path
    for w_k, m_k in results:
        assert w_k.dtype == dtype and np.array_equal(w_k, w_ref, equal_nan=True)
        if m is not None:
            assert np.array_equal(m_k, m_ref, equal_nan=True)


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("case", ["plain", "wd", "clip", "mom", "mom_wd", "mom_wd_clip"])
def test_sgd_matches_mxnet_bit_for_bit(case, fast):
    """sgd_update / sgd_mom_update results of MXNet 1.9.1 (tests/data/make_optimizer_reference.py), on the numpy
    path and the one-pass Numba path."""
    from mixnet.ops import _fastpath
    from mixnet.optimizer.optimizer import _sgd_kernel
    ref = np.load(os.path.join(os.path.dirname(__file__), "data", "optimizer", "sgd_mxnet.npz"))
    lr, wd, rescale, clip, momentum = ref[case + "_hparams"]
    w, m = ref["weight"].copy(), ref["mom"].copy() if momentum else None
    if fast:
        assert _fastpath.numba_kernels(np, w) is not None
    _fastpath.ENABLED = fast
    try:
        _sgd_kernel(np, w, ref["grad"], m, lr, wd, rescale, clip if clip > 0 else None, momentum)
    finally:
        _fastpath.ENABLED = True
    assert np.array_equal(w, ref[case + "_weight"])
    if momentum:
        assert np.array_equal(m, ref[case + "_mom"])


def test_update_multi_precision_takes_lists():
    opt = mx.optimizer.SGD(learning_rate=0.5)
    weights = [mx.nd.ones((2,)), mx.nd.ones((3,))]
    grads = [mx.nd.ones((2,)), mx.nd.ones((3,)) * 2]
    states = [opt.create_state_multi_precision(i, w) for i, w in enumerate(weights)]
    opt.update_multi_precision([0, 1], weights, grads, states)
    assert weights[0].asnumpy().tolist() == [0.5, 0.5] and weights[1].asnumpy().tolist() == [0.0] * 3


def test_update_counts_of_the_device_after_set_states():
    """Each device keeps its own update counts; an updater selects its device's before it updates. Loaded states
    replace every device's counts (and select the first device's), so the next update on another device must
    count from that device's loaded count, even when that device was the one selected before the load."""
    o = opt.create("sgd", learning_rate=0.1)
    on_cpu0, on_cpu1 = opt.get_updater(o), opt.get_updater(o)
    arrays = {k: (mx.nd.ones((3,), ctx=mx.cpu(k)), mx.nd.ones((3,), ctx=mx.cpu(k))) for k in (0, 1)}
    for _ in range(3):
        on_cpu0(0, *arrays[0])
    on_cpu1(0, *arrays[1])
    states = on_cpu1.get_states(dump_optimizer=True)          # cpu(0) counted 3 updates, cpu(1) one

    loaded = opt.create("sgd", learning_rate=0.1)
    updater = opt.get_updater(loaded)
    updater(0, *arrays[1])                                     # cpu(1) selected
    updater.set_states(states)
    updater(0, *arrays[1])
    assert loaded._all_index_update_counts == {"cpu(0)": {0: 3}, "cpu(1)": {0: 2}}
    assert loaded.num_update == 3
