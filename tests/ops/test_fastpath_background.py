"""The eager fast paths compile their Numba loops in a child process (mixnet/ops/_fastpath.py with
mixnet/codegen/precompile.py): while a dtype's loops are neither compiled nor in Numba's on-disk cache, calls run
the generic numpy path; once the child is done they run the loops. With background compilation off (the suite's
default, tests/conftest.py) the loops compile on first use.

The tests drive the compilation by hand: `eager_is_cached` and `compile_eager_elsewhere` are replaced, and the
fake child finishes when the test says so.
"""
import json
import os
import shutil
import threading

import numpy as np
import pytest

import mixnet as mx
from mixnet import config
from mixnet.codegen import precompile
from mixnet.ops import _epilogue_kernels, _fastpath, _numba_kernels, _rnn_kernels, nn_conv

GEO = ((3, 3), (1, 1), (1, 1), (1, 1), 1)          # kernel, stride, dilate, pad, group


class FakeChild:
    """Stands in for compile_eager_elsewhere: records each launch and returns `ok` once released."""

    def __init__(self, ok=True):
        self.ok = ok
        self.launches = []
        self.asked = []                  # eager_is_cached calls
        self.running = 0
        self.most_running = 0
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, dtypes, timeout=600):
        with self._lock:
            self.launches.append(list(dtypes))
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        self.release.wait(30)
        with self._lock:
            self.running -= 1
        return self.ok


@pytest.fixture
def fresh(monkeypatch):
    """A process state where no loops are ready, background compilation on and nothing in the cache."""
    monkeypatch.setattr(config, "COMPILE_BACKGROUND", True)
    monkeypatch.setattr(_fastpath, "_module", None)
    monkeypatch.setattr(_fastpath, "_modules", None)
    monkeypatch.setattr(_fastpath, "_ready", set())
    monkeypatch.setattr(_fastpath, "_pending", set())
    monkeypatch.setattr(_fastpath, "_compiling", None)
    monkeypatch.setattr(_fastpath, "_loading", None)
    child = FakeChild()
    monkeypatch.setattr(precompile, "eager_is_cached", lambda dtype: child.asked.append(dtype) and False)
    monkeypatch.setattr(precompile, "compile_eager_elsewhere", child)
    calls = []
    real = nn_conv.conv_forward_fast
    monkeypatch.setattr(nn_conv, "conv_forward_fast", lambda *a, **k: calls.append(1) or real(*a, **k))
    yield child, calls
    child.release.set()
    _fastpath.wait_compiled()


def _conv_inputs(dtype=np.float32):
    rng = np.random.default_rng(0)
    return rng.standard_normal((2, 3, 7, 6)).astype(dtype), rng.standard_normal((4, 3, 3, 3)).astype(dtype)


def _generic_conv(x, w):
    _fastpath.ENABLED = False
    try:
        return nn_conv.conv_forward(np, x, w, *GEO)
    finally:
        _fastpath.ENABLED = True


def test_first_calls_run_the_generic_path_until_the_child_is_done(fresh):
    child, fast_calls = fresh
    x, w = _conv_inputs()
    expected = _generic_conv(x, w)
    for _ in range(3):                                   # the child is still compiling
        np.testing.assert_array_equal(nn_conv.conv_forward(np, x, w, *GEO), expected)
    assert fast_calls == [] and _fastpath._module is None
    assert child.launches == [["float32"]]               # started once, for the dtype asked for
    assert child.asked == ["float32"]                    # the cache checked once, not on every call
    child.release.set()
    _fastpath.wait_compiled()
    y = nn_conv.conv_forward(np, x, w, *GEO)
    assert fast_calls == [1] and _fastpath._module is _numba_kernels
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    assert child.launches == [["float32"]]


def test_one_child_at_a_time_and_a_later_dtype_waits_for_the_next(fresh):
    child, fast_calls = fresh
    x32, w32 = _conv_inputs(np.float32)
    x64, w64 = _conv_inputs(np.float64)
    nn_conv.conv_forward(np, x32, w32, *GEO)
    y64 = nn_conv.conv_forward(np, x64, w64, *GEO)       # float32 is compiling: float64 queues
    np.testing.assert_array_equal(y64, _generic_conv(x64, w64))
    assert child.launches == [["float32"]]
    child.release.set()
    _fastpath.wait_compiled()                            # runs the queued child too
    assert child.launches == [["float32"], ["float64"]] and child.most_running == 1
    nn_conv.conv_forward(np, x32, w32, *GEO)
    nn_conv.conv_forward(np, x64, w64, *GEO)
    assert fast_calls == [1, 1]


def test_light_kernels_neither_start_a_child_nor_wait_for_one(fresh):
    child, _ = fresh
    g = np.ones(5, np.float32)
    assert _fastpath.numba_kernels(np, g, load=False) is None
    assert child.launches == []
    assert _fastpath.numba_kernels(np, g) is None        # a heavy kernel starts the child
    assert _fastpath.numba_kernels(np, g, load=False) is None
    child.release.set()
    _fastpath.wait_compiled()
    assert _fastpath.numba_kernels(np, g) is _numba_kernels
    assert _fastpath.numba_kernels(np, g, load=False) is _numba_kernels
    assert _fastpath.numba_kernels(np, g.astype(np.float64), load=False) is None   # float64 not compiled yet


def test_a_failed_child_leaves_compiling_to_first_use(fresh):
    child, fast_calls = fresh
    child.ok = False
    x, w = _conv_inputs()
    nn_conv.conv_forward(np, x, w, *GEO)
    child.release.set()
    _fastpath.wait_compiled()
    nn_conv.conv_forward(np, x, w, *GEO)
    assert fast_calls == [1] and child.launches == [["float32"]]


def test_cached_loops_load_in_the_background_without_a_child(fresh, monkeypatch):
    """Loops in the cache start loading at first use, in a thread: that call (the first hybridized MLP call, say)
    does not wait the second Numba's import and the cache loads take; later calls run the loops."""
    child, fast_calls = fresh
    monkeypatch.setattr(precompile, "eager_is_cached", lambda dtype: dtype == "float32")
    x, w = _conv_inputs()
    expected = _generic_conv(x, w)
    np.testing.assert_array_equal(nn_conv.conv_forward(np, x, w, *GEO), expected)
    assert fast_calls == [] and child.launches == []
    assert _fastpath._loading is not None
    _fastpath.wait_compiled()
    np.testing.assert_allclose(nn_conv.conv_forward(np, x, w, *GEO), expected, rtol=1e-5, atol=1e-5)
    assert fast_calls == [1] and child.launches == []


class FakeNativeLoad:
    """Stands in for native_loops.load: returns the loop modules (as an export would load them), or None (a stale
    or broken export), once released; records the dtypes asked for."""

    def __init__(self, ok=True):
        self.ok, self.asked, self.release = ok, [], threading.Event()

    def __call__(self, dtypes):
        self.asked.append(list(dtypes))
        self.release.wait(30)
        if not self.ok:
            return None
        return {"_numba_kernels": _numba_kernels, "_epilogue_kernels": _epilogue_kernels,
                "_rnn_kernels": _rnn_kernels}


@pytest.fixture
def ahead(fresh, monkeypatch):
    """`fresh`, with float32's loops in Numba's cache and an export of them in the kernel cache (faked)."""
    from mixnet.codegen import native_loops
    child, fast_calls = fresh
    monkeypatch.setattr(config, "LOAD_AHEAD", True)
    monkeypatch.setattr(precompile, "eager_is_cached", lambda dtype: dtype == "float32")
    monkeypatch.setattr(native_loops, "has_export", lambda dtype: dtype == "float32")
    load = FakeNativeLoad()
    monkeypatch.setattr(native_loops, "load", load)
    yield child, fast_calls, load
    load.release.set()


def test_load_ahead_has_the_loops_in_before_the_first_call(ahead):
    """What `import mixnet` starts where the kernel cache holds an export: the first call runs the loops."""
    child, fast_calls, load = ahead
    _fastpath.load_ahead()
    loading = _fastpath._loading
    assert loading is not None and loading.name == "mixnet-eager-load"
    load.release.set()
    loading.join()
    x, w = _conv_inputs()
    np.testing.assert_allclose(nn_conv.conv_forward(np, x, w, *GEO), _generic_conv(x, w), rtol=1e-5, atol=1e-5)
    assert fast_calls == [1] and load.asked == [["float32"]] and child.launches == []
    assert _fastpath._loading is loading                    # no second load


def test_a_call_during_the_load_ahead_runs_generic_and_starts_nothing(ahead):
    child, fast_calls, load = ahead
    _fastpath.load_ahead()
    x, w = _conv_inputs()
    np.testing.assert_array_equal(nn_conv.conv_forward(np, x, w, *GEO), _generic_conv(x, w))
    assert fast_calls == [] and child.launches == [] and load.asked == [["float32"]]
    load.release.set()
    _fastpath.wait_compiled()
    nn_conv.conv_forward(np, x, w, *GEO)
    assert fast_calls == [1] and load.asked == [["float32"]]


@pytest.mark.parametrize("why", ["no export", "switched off", "background off", "numba off", "loops loaded"])
def test_no_load_ahead_without_an_export_or_when_switched_off(ahead, monkeypatch, why):
    from mixnet.codegen import native_loops
    _, _, load = ahead
    if why == "no export":
        monkeypatch.setattr(native_loops, "has_export", lambda dtype: False)
    elif why == "switched off":
        monkeypatch.setattr(config, "LOAD_AHEAD", False)
    elif why == "background off":
        monkeypatch.setattr(config, "COMPILE_BACKGROUND", False)
    elif why == "numba off":
        monkeypatch.setattr(config, "NUMBA", False)
    else:
        monkeypatch.setattr(_fastpath, "_module", _numba_kernels)
    _fastpath.load_ahead()
    assert _fastpath._loading is None and load.asked == []


def test_a_failed_load_ahead_leaves_the_loading_to_the_first_call(ahead, monkeypatch):
    """A stale export (native_loops.load gives None): the load ahead never falls back to Numba itself; a call
    that wants the loops then loads them the usual way, and wait_compiled waits for that too."""
    child, fast_calls, load = ahead
    load.ok = False
    through_numba = []
    monkeypatch.setattr(_fastpath, "_load_through_numba",
                        lambda dtypes: through_numba.append(list(dtypes)) or {"_numba_kernels": _numba_kernels})
    monkeypatch.setattr(precompile, "export_native_elsewhere", lambda dtypes: None)
    _fastpath.load_ahead()
    x, w = _conv_inputs()
    nn_conv.conv_forward(np, x, w, *GEO)                 # while the load ahead runs: generic, marks float32 ready
    load.release.set()
    _fastpath.wait_compiled()                            # the failed load ahead, then the usual load it started
    assert through_numba == [["float32"]] and _fastpath._module is _numba_kernels
    nn_conv.conv_forward(np, x, w, *GEO)
    assert fast_calls == [1] and child.launches == []


def test_a_fork_during_a_load_ahead_leaves_the_child_free_to_load(ahead):
    """The child of a fork has no loading thread and a lock of its own: its own first call starts its load."""
    _, _, load = ahead
    _fastpath.load_ahead()
    loading, held = _fastpath._loading, _fastpath._state_lock
    held.acquire()                                       # as if the loading thread held it at the fork
    try:
        _fastpath._after_fork_in_child()
        assert _fastpath._loading is None and _fastpath._state_lock is not held
        assert _fastpath._state_lock.acquire(blocking=False)
        _fastpath._state_lock.release()
    finally:
        held.release()
        load.release.set()
        loading.join()


def test_background_off_compiles_on_first_use(fresh, monkeypatch):
    child, fast_calls = fresh
    monkeypatch.setattr(config, "COMPILE_BACKGROUND", False)
    x, w = _conv_inputs(np.float64)
    np.testing.assert_allclose(nn_conv.conv_forward(np, x, w, *GEO), _generic_conv(x, w), rtol=1e-12)
    assert fast_calls == [1] and child.launches == []
    assert _fastpath.numba_kernels(np, np.ones(1, np.float32), load=False) is _numba_kernels


def test_training_starts_generic_and_switches_with_the_same_losses(fresh):
    """An eager LeNet-like training run gives the same losses whether its first steps ran before the loops were
    ready (generic path) or not."""
    child, fast_calls = fresh

    def run(release_after):
        mx.random.seed(0)
        net = mx.gluon.nn.Sequential()
        net.add(mx.gluon.nn.Conv2D(4, 3, activation="relu", in_channels=1), mx.gluon.nn.MaxPool2D(2),
                mx.gluon.nn.Dense(3, in_units=4 * 3 * 3))
        net.initialize(mx.init.Xavier())
        trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
        loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
        rng = np.random.default_rng(1)
        x = mx.nd.array(rng.standard_normal((4, 1, 8, 8)).astype(np.float32))
        y = mx.nd.array(np.array([0, 1, 2, 1], np.float32))
        losses = []
        for step in range(4):
            if step == release_after:
                child.release.set()
                _fastpath.wait_compiled()
            with mx.autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(4)
            losses.append(loss.asnumpy())
        return np.array(losses)

    switching = run(release_after=2)
    assert fast_calls and child.launches == [["float32"]]
    np.testing.assert_allclose(switching, run(release_after=0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_warm_up_covers_the_signatures_real_calls_use(dtype, monkeypatch):
    """Every argument-type tuple the fast paths pass to a loop in training (2-D and 1-D convolutions, max pooling,
    ReLU, SGD with and without momentum and weight decay, a hybridized softmax cross-entropy loss) is one warm_up
    passes, so the child compiles all that a
    training loop then needs."""
    import numba
    seen = {}
    for loop in _numba_kernels.loops():
        name = loop.py_func.__name__
        if name.startswith("_"):                         # helpers, called from compiled loops only
            continue

        def spy(*args, _loop=loop, _name=name):
            seen.setdefault(_name, set()).add(tuple(numba.typeof(a) for a in args))
            return _loop(*args)
        monkeypatch.setattr(_numba_kernels, name, spy)
    monkeypatch.setattr(config, "COMPILE_BACKGROUND", False)
    _numba_kernels.warm_up(dtype)
    warm, seen = seen, {}
    nn = mx.gluon.nn
    for dims, opts in ((2, {"momentum": 0.9, "wd": 1e-3}), (1, {})):
        net = nn.Sequential()
        conv, pool = (nn.Conv2D, nn.MaxPool2D) if dims == 2 else (nn.Conv1D, nn.MaxPool1D)
        net.add(conv(3, 3, activation="relu", in_channels=2, padding=1), conv(3, 3, in_channels=3), pool(2),
                nn.Dense(2))                             # the second convolution's data gradient: col2im
        net.initialize(mx.init.Xavier())
        net.cast(dtype)
        trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, **opts})
        x = mx.nd.array(np.ones((2, 2) + (6,) * dims), dtype=dtype)
        for _ in range(2):
            with mx.autograd.record():
                loss = net(x).sum()
            loss.backward()
            trainer.step(2)
    dense, loss_fn = nn.Dense(3, in_units=4), mx.gluon.loss.SoftmaxCrossEntropyLoss()    # the fused loss
    dense.initialize()
    dense.cast(dtype)
    loss_fn.hybridize()
    for label in (np.array([0, 2]), np.array([[1], [0]])):
        with mx.autograd.record():
            loss = loss_fn(dense(mx.nd.ones((2, 4), dtype=dtype)), mx.nd.array(label, dtype=dtype))
        loss.backward()
    assert {"im2col", "col2im", "max_pool_backward", "relu_backward", "sgd_update", "sgd_mom_update",
            "log_softmax_pick", "log_softmax_pick_backward"} <= set(seen)
    for name, types in seen.items():
        assert types <= warm[name], (name, types - warm[name])


@pytest.fixture
def marker_dir(tmp_path, monkeypatch):
    """NUMBA_CACHE_DIR in a temporary directory and a copy of the loops' sources, so stamps can change."""
    ops = tmp_path / "src" / "mixnet" / "ops"
    ops.mkdir(parents=True)
    for module in precompile.EAGER_MODULES:
        shutil.copy(os.path.join(precompile._EAGER_DIR, module + ".py"), ops)
    monkeypatch.setattr(precompile, "_EAGER_DIR", str(ops))
    source = ops / "_numba_kernels.py"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    directory = precompile._eager_cache_dir()
    os.makedirs(directory)
    return directory, source


class _FakeKernels:
    """loops() like a loop module's (`kernels`), with index files made by hand in `directory`."""

    def __init__(self, directory, kernels=_numba_kernels):
        self.__name__ = kernels.__name__
        self._loops = kernels.loops()
        module = kernels.__name__.rsplit(".", 1)[-1]
        for loop in self._loops:
            name = f"{module}.{loop.py_func.__qualname__}-{loop.py_func.__code__.co_firstlineno}.py311.nbi"
            open(os.path.join(directory, name), "wb").close()

    def loops(self):
        return self._loops


def test_eager_marker_needs_every_index_file_and_the_same_source(marker_dir):
    directory, source = marker_dir
    assert directory.startswith(os.environ["NUMBA_CACHE_DIR"]) and os.path.basename(directory).startswith("ops_")
    assert not precompile.eager_is_cached("float32")
    assert precompile._write_eager_marker("float32", _FakeKernels(directory))
    assert not precompile.eager_is_cached("float32")                   # the epilogue loops are not in yet
    assert precompile._write_eager_marker("float32", _FakeKernels(directory, _epilogue_kernels))
    assert not precompile.eager_is_cached("float32")                   # nor the RNN step loops
    assert precompile._write_eager_marker("float32", _FakeKernels(directory, _rnn_kernels))
    assert precompile.eager_is_cached("float32") and not precompile.eager_is_cached("float64")
    with open(precompile._eager_marker("float32"), encoding="utf-8") as f:
        index = json.load(f)["index"]
    assert len(index) == len(_numba_kernels.loops())
    os.unlink(os.path.join(directory, index[3]))                       # Numba's cache lost a file
    assert not precompile.eager_is_cached("float32")
    _FakeKernels(directory)
    assert precompile.eager_is_cached("float32")
    with open(source, "a", encoding="utf-8") as f:                      # the source changed
        f.write("\n")
    assert not precompile.eager_is_cached("float32")


def test_eager_marker_rejects_garbage_and_is_not_written_without_index_files(marker_dir):
    directory, _ = marker_dir
    assert not precompile._write_eager_marker("float32", _numba_kernels)       # no index files there
    assert not os.path.exists(precompile._eager_marker("float32"))
    for text in ("{not json", "[]", '{"index": []}', '{"index": "x"}'):
        with open(precompile._eager_marker("float32"), "w", encoding="utf-8") as f:
            f.write(text)
        assert not precompile.eager_is_cached("float32")


@pytest.mark.slow
def test_real_child_compiles_into_the_cache_this_process_uses():
    """The child really runs (python -m mixnet.codegen.precompile) and leaves a valid marker where Numba caches
    this process's loops (a few seconds with the suite's warm cache, ~15 s cold)."""
    assert precompile.compile_eager_elsewhere(["float64"])
    assert precompile.eager_is_cached("float64")


def test_cached_eager_loops_go_when_approx_changes(tmp_path, monkeypatch):
    """Numba's cache only checks the defining file's stamp, not the approx.py functions the loops inline: a
    changed approx.py fingerprint must drop the eager modules' cache files (and markers)."""
    from mixnet.codegen import precompile
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    directory = precompile._eager_cache_dir()
    os.makedirs(directory)
    files = ["_numba_kernels.softmax_forward-400.py311.nbi", "_numba_kernels.softmax_forward-400.py311.1.nbc",
             "_numba_kernels.mixnet-float32.json", "_epilogue_kernels.bias_relu-20.py311.nbi"]

    def make():
        for name in files:
            with open(os.path.join(directory, name), "w") as f:
                f.write("x")

    make()
    precompile.drop_stale_eager_cache()                 # no stamp yet: unknown provenance, dropped
    assert not any(os.path.exists(os.path.join(directory, n)) for n in files)
    make()
    precompile.drop_stale_eager_cache()                 # stamps match now: kept
    assert all(os.path.exists(os.path.join(directory, n)) for n in files)
    with open(os.path.join(directory, "_numba_kernels.mixnet-approx"), "w") as f:
        f.write("an older approx.py")
    precompile.drop_stale_eager_cache()
    assert not any(os.path.exists(os.path.join(directory, n)) for n in files[:3])
    assert os.path.exists(os.path.join(directory, files[3]))      # the other module's stamp still matched
