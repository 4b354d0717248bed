"""codegen/native_loops.py: the eager loops' machine code exported by a process with Numba and loaded by one
without it. Every loop call the warm-ups make is replayed on the loaded loops against Numba's own result; the
guard hands argument types it has no overload for to Numba; an export that is stale, altered or incomplete is not
loaded; a fresh process trains with the loaded loops and never imports Numba."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from numba.core.dispatcher import Dispatcher

from mixnet.codegen import cache, native_loops
from mixnet.ops import _epilogue_kernels, _numba_kernels, _rnn_kernels

MODULES = (_numba_kernels, _epilogue_kernels, _rnn_kernels)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """float32's loops exported into a kernel cache of this module's own (~15-25 s: they compile again), where a
    killed export had left its work directory."""
    kernels = tmp_path_factory.mktemp("native-kernels")
    os.makedirs(kernels / "native-loops" / ".export-killed")
    (kernels / "native-loops" / ".export-killed" / "overload0.o").write_bytes(b"half")
    previous = cache.set_cache_dir(kernels)
    try:
        native_loops.export("float32")
        yield native_loops.directory("float32")
    finally:
        cache.set_cache_dir(previous)


@pytest.fixture
def in_cache(exported):
    previous = cache.set_cache_dir(os.path.dirname(os.path.dirname(exported)))
    yield exported
    cache.set_cache_dir(previous)


def recorded_warm_up_calls(monkeypatch):
    """[(module name, loop name, args before the call, Numba's args after it, Numba's result)] of warm_up."""
    calls = []

    def recorder(module, name, dispatcher):
        def record(*args):
            before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            for a, b in zip(args, before):
                if isinstance(a, np.ndarray):
                    b.flags.writeable = a.flags.writeable
            result = dispatcher(*args)
            calls.append((module, name, before, [a.copy() if isinstance(a, np.ndarray) else a for a in args],
                          result))
            return result
        return record

    with monkeypatch.context() as patch:
        for module in MODULES:
            for name, value in list(vars(module).items()):
                if isinstance(value, Dispatcher):
                    patch.setattr(module, name, recorder(module.__name__.rsplit(".", 1)[1], name, value))
        for module in MODULES:
            module.warm_up("float32")
    return calls


def test_every_warm_up_call_runs_loaded_code_and_matches_numba(in_cache, monkeypatch):
    loaded = native_loops.load(["float32"])
    assert loaded is not None
    calls = recorded_warm_up_calls(monkeypatch)
    assert len(calls) >= 20
    for module, name, before, numba_after, numba_result in calls:
        loop = getattr(loaded[module], name)
        assert isinstance(loop, native_loops.NativeLoop)
        args = [a.copy() if isinstance(a, np.ndarray) else a for a in before]
        for a, b in zip(args, before):
            if isinstance(a, np.ndarray):
                a.flags.writeable = b.flags.writeable
        assert loop.overload_for(args) is not None, f"{name}: no loaded overload"
        result = loop(*args)
        assert repr(result) == repr(numba_result), name
        for a, expected in zip(args, numba_after):
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, expected, err_msg=name)      # bit for bit (NaN == NaN)
    assert loaded["_epilogue_kernels"].BACKWARD_KINDS == _epilogue_kernels.BACKWARD_KINDS


def test_types_numba_types_alike_reach_one_overload(in_cache):
    """Only each overload's canonical key is loaded: a Python float and np.float64, a bool and np.bool_, a 1-d array
    (C and F at once) and a 2-d one reach it through the canonical form, and the key seen is remembered."""
    softmax_backward = native_loops.load(["float32"])["_numba_kernels"].softmax_backward
    rows = np.ones((2, 3), np.float32)
    assert len(softmax_backward.table) == 1
    plain = softmax_backward.overload_for((rows, rows, 1.0, True, rows.copy()))
    numpy_scalars = softmax_backward.overload_for((rows, rows, np.float64(1.0), np.bool_(True), rows.copy()))
    assert plain is not None and numpy_scalars is plain and len(softmax_backward.table) == 2
    sgd = native_loops.load(["float32"])["_numba_kernels"].sgd_update
    flat, half = np.ones(4, np.float32), np.float32(0.5)
    assert (flat.flags.num & native_loops._FLAGS) & 0x3 == 0x3           # 1-d: C- and F-contiguous both
    assert sgd.overload_for((flat, flat, half, half)) is not None
    assert sgd.overload_for((flat, flat, 0.5, half)) is None            # a float64 scale: no float32 overload


def test_types_without_an_overload_go_to_numba(in_cache):
    loaded = native_loops.load(["float32"])
    bias_relu = loaded["_epilogue_kernels"].bias_relu
    rng = np.random.default_rng(0)
    for y, b, zero in [
            (rng.standard_normal(12), rng.standard_normal(4), 0.0),                             # float64
            (rng.standard_normal(24).astype(np.float32)[::2], np.ones(4, np.float32), np.float32(0)),  # strided
            (rng.standard_normal(12).astype(np.float32), np.ones(4, np.float32), 0.0)]:        # a Python float
        assert bias_relu.overload_for((y, b, zero)) is None
        expected = y.copy()
        _epilogue_kernels.bias_relu(expected, b, zero)
        bias_relu(y, b, zero)
        np.testing.assert_array_equal(y, expected)
    frozen = np.ones(4, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(Exception, match="readonly"):      # Numba refuses to write into it, and so does the guard
        bias_relu(frozen, np.ones(4, np.float32), np.float32(0))


def _load_from_copy(tmp_path, exported, change):
    copy = tmp_path / "kernels" / "native-loops" / "float32"
    shutil.copytree(exported, copy)
    change(copy)
    previous = cache.set_cache_dir(tmp_path / "kernels")
    try:
        return native_loops.load(["float32"]), native_loops.is_exported("float32")
    finally:
        cache.set_cache_dir(previous)


def _rewrite_index(copy, edit):
    path = copy / "index.json"
    index = json.loads(path.read_text())
    edit(index)
    path.write_text(json.dumps(index))


@pytest.mark.parametrize("change", [
    lambda c: _rewrite_index(c, lambda i: i["key"].update(cpu="another-cpu")),
    lambda c: _rewrite_index(c, lambda i: i["key"].update(numba="0.0")),
    lambda c: _rewrite_index(c, lambda i: i["key"].update(sources="0" * 64)),
    lambda c: (c / "overload0.o").write_bytes(b"\x7fELF" + b"\0" * 60),
    lambda c: (c / "nrt.o").unlink(),
    lambda c: (c / "index.json").write_text("{not json"),
    lambda c: (c / "index.json").unlink(),
    lambda c: _rewrite_index(c, lambda i: i["overloads"][0].update(loop="not a name")),
], ids=["other-cpu", "other-numba", "other-source", "altered-object", "missing-object", "bad-index",
        "no-index", "not-a-loop-name"])
def test_a_stale_altered_or_incomplete_export_is_not_loaded(tmp_path, exported, change):
    loaded, _ = _load_from_copy(tmp_path, exported, change)
    assert loaded is None


def test_an_intact_copy_loads_and_the_export_left_no_work_directory(tmp_path, exported):
    loaded, is_exported = _load_from_copy(tmp_path, exported, lambda c: None)
    assert loaded is not None and is_exported
    assert [n for n in os.listdir(os.path.dirname(exported)) if n.startswith(".export-")] == []


FRESH_PROCESS = r"""
import sys
import numpy as np
import mixnet as mx
from mixnet.ops import _fastpath
from mixnet import config
config.COMPILE_BACKGROUND = True
_fastpath._ready.add("float32")          # what a warm Numba cache makes of float32
_fastpath._load(["float32"])
assert type(_fastpath._module).__name__ == "SimpleNamespace", _fastpath._module
net = mx.gluon.nn.HybridSequential()
net.add(mx.gluon.nn.Dense(16, activation="relu", in_units=8), mx.gluon.nn.Dense(4, in_units=16))
net.initialize(mx.init.Xavier())
net.hybridize()
loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
rng = np.random.default_rng(0)
x, y = mx.nd.array(rng.standard_normal((32, 8))), mx.nd.array(rng.integers(0, 4, 32))
for _ in range(5):
    with mx.autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(32)
print("numba imported:", "numba" in sys.modules)
print("loss:", float(loss.mean().asscalar()))
"""


def test_a_fresh_process_trains_with_the_loaded_loops_without_importing_numba(exported):
    env = {**os.environ, "MIXNET_CACHE_DIR": os.path.dirname(os.path.dirname(exported)), "PYTHONPATH": ROOT}
    env.pop("MIXNET_COMPILE_BACKGROUND", None)
    out = subprocess.run([sys.executable, "-c", "import mixnet, sys; mixnet.random.seed(0)\n" + FRESH_PROCESS],
                         env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "numba imported: False" in out.stdout
    plain = subprocess.run([sys.executable, "-c", "import mixnet, sys; mixnet.random.seed(0)\n"
                            + FRESH_PROCESS.replace('_fastpath._load(["float32"])', "_fastpath.ENABLED = False")
                            .replace('assert type(_fastpath._module).__name__ == "SimpleNamespace", _fastpath._module',
                                     "")],
                           env=env, capture_output=True, text=True, timeout=120, check=False)
    assert plain.returncode == 0, plain.stderr[-2000:]
    loss = float(out.stdout.split("loss:")[1])
    assert loss == pytest.approx(float(plain.stdout.split("loss:")[1]), rel=1e-5)


LOAD_AHEAD_PROBE = r"""
import sys
import mixnet as mx
from mixnet.ops import _fastpath
loading = _fastpath._loading
print("thread:", loading.name if loading is not None else None)
if loading is not None:
    loading.join()
print("loaded:", type(_fastpath._module).__name__)
net = mx.gluon.nn.Dense(4, in_units=8)
net.initialize()
x = mx.nd.ones((2, 8))
with mx.autograd.record():
    y = net(x).sum()
y.backward()
print("numba imported:", "numba" in sys.modules)
"""


def _numba_cache_with_markers(directory, monkeypatch):
    """A Numba cache directory whose markers say float32's loops are in (index files touched, as Numba names
    them): what eager_is_cached reads before a load."""
    from mixnet.codegen import precompile
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(directory))
    os.makedirs(precompile._eager_cache_dir())
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    for module in MODULES:
        name = module.__name__.rsplit(".", 1)[1]
        for loop in module.loops():
            code = loop.py_func.__code__
            open(os.path.join(precompile._eager_cache_dir(), f"{name}.{loop.py_func.__qualname__}-"
                              f"{code.co_firstlineno}.{tag}.nbi"), "wb").close()
        assert precompile._write_eager_marker("float32", module)
    assert precompile.eager_is_cached("float32")


@pytest.mark.parametrize("switch", [None, "0"], ids=["default", "MIXNET_LOAD_AHEAD=0"])
def test_import_loads_an_exported_dtype_ahead_without_numba(exported, tmp_path, monkeypatch, switch):
    """With float32 exported and its Numba cache current, `import mixnet` starts loading the loops (the first
    call then finds them in); MIXNET_LOAD_AHEAD=0 leaves the loading to the first call, as before."""
    _numba_cache_with_markers(tmp_path / "numba", monkeypatch)
    env = {**os.environ, "MIXNET_CACHE_DIR": os.path.dirname(os.path.dirname(exported)), "PYTHONPATH": ROOT}
    for name in ("MIXNET_COMPILE_BACKGROUND", "MIXNET_LOAD_AHEAD"):
        env.pop(name, None)
    if switch is not None:
        env["MIXNET_LOAD_AHEAD"] = switch
    out = subprocess.run([sys.executable, "-c", LOAD_AHEAD_PROBE], env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    if switch is None:
        assert lines[:2] == ["thread: mixnet-eager-load", "loaded: SimpleNamespace"], out.stdout
    else:
        assert lines[:2] == ["thread: None", "loaded: NoneType"], out.stdout
    assert lines[-1] == "numba imported: False"


def test_the_child_job_is_checked_like_the_others():
    from mixnet.codegen import precompile
    assert precompile._checked({"native": "float32"}) == {"native": "float32"}
    for job in ({"native": "float16"}, {"native": "float32", "eager": "float32"}, {"native": ["float32"]}):
        with pytest.raises(ValueError, match="malformed"):
            precompile._checked(job)


def test_the_exporting_child_writes_an_export_a_process_loads(tmp_path):
    """precompile's child with a {'native': dtype} job, as export_native_elsewhere starts it."""
    from mixnet.codegen import precompile
    argument = json.dumps({"parent": os.getpid(), "jobs": [{"native": "float32"}]})
    env = {**os.environ, "MIXNET_CACHE_DIR": str(tmp_path / "kernels"), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    done = subprocess.run([sys.executable, "-c", precompile._CHILD, precompile._PACKAGE_ROOT, argument], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    previous = cache.set_cache_dir(tmp_path / "kernels")
    try:
        assert native_loops.is_exported("float32")
        loaded = native_loops.load(["float32"])
    finally:
        cache.set_cache_dir(previous)
    assert loaded is not None and isinstance(loaded["_numba_kernels"].softmax_forward, native_loops.NativeLoop)
    # Numba's cache is warm now: exporting again (the export gone) takes the object code the cache loads hold, and
    # compiles nothing (an export that recompiled took ~14 s, more than a short script's child lives)
    shutil.rmtree(tmp_path / "kernels" / "native-loops")
    again = subprocess.run([sys.executable, "-c", EXPORT_COUNTING_COMPILES, str(tmp_path / "kernels")], env=env,
                           capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout.split()[-2:] == ["compiles", "0"], again.stdout
    previous = cache.set_cache_dir(tmp_path / "kernels")
    try:
        assert native_loops.load(["float32"]) is not None
    finally:
        cache.set_cache_dir(previous)


EXPORT_COUNTING_COMPILES = """
import sys
import numba
from mixnet.codegen import cache, native_loops
import mixnet.ops._numba_kernels, mixnet.ops._epilogue_kernels, mixnet.ops._rnn_kernels
compiles = []
real_njit = numba.njit


def counting_njit(*args, **kwargs):     # counts mixnet's loops compiled again (Numba's own modules use njit too)
    if args:
        return real_njit(*args, **kwargs)

    def decorate(function):
        if function.__module__.startswith("mixnet.ops."):
            compiles.append(function.__name__)
        return real_njit(**kwargs)(function)
    return decorate


numba.njit = counting_njit
cache.set_cache_dir(sys.argv[1])
native_loops.export("float32")
print("compiles", len(compiles))
"""


def test_an_export_in_a_directory_others_can_write_is_not_loaded(tmp_path, exported):
    shared = tmp_path / "shared"
    shutil.copytree(os.path.dirname(os.path.dirname(exported)), shared)
    os.chmod(shared, 0o777)                       # anyone could have put machine code there
    previous = cache.set_cache_dir(shared)
    try:
        with pytest.warns(cache.CacheWarning, match="compile in memory"):
            assert native_loops.load(["float32"]) is None
        assert not native_loops.is_exported("float32")
    finally:
        cache.set_cache_dir(previous)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps (Linux)")
def test_the_llvm_library_is_mapped_before_llvmlite_binding_is_imported():
    """_map_llvm_library maps libllvmlite with the GIL let go (its own ctypes.CDLL keeps it for the 5-10 ms a
    180 MB library takes); the import that follows finds that mapping, and works."""
    probe = ("import sys; from mixnet.codegen import native_loops as n; n._map_llvm_library(); "
             "maps = open('/proc/self/maps').read(); "
             "print('llvmlite.binding' in sys.modules, 'libllvmlite' in maps); "
             "import llvmlite.binding as ll; print(ll.get_host_cpu_name() != '')")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "True"]
