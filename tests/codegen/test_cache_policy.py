"""What the kernel disk cache (mixnet/codegen/cache.py, precompile.py) keeps and where: the key is the kernel's
structure (not the user's lines), the directory has a size cap with LRU eviction, one process at a time runs a
compiling child for a directory and children end with their parent, and an unusable or unsafe directory means a
warning and in-memory kernels."""
import json
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import mixnet as mx
from mixnet import config, gluon
from mixnet.codegen import Group, Step, cache, compile_kernel, inp, numba_cpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def group(value, location=None):
    """x + value, then exp. Each test uses values of its own: a kernel this process loaded already is not read
    from (or written to) the directory again."""
    return Group([Step("_plus_scalar", "{0} + {scalar}", (inp(0),), {"scalar": value}, location),
                  Step("exp", "exp({0})", (numba_cpu.step(0),), {}, location)], [1], 1)


def kernel_files(directory):
    return sorted(f for f in os.listdir(directory) if f.startswith("mx_") and f.endswith(".py"))


def forget(kernel):
    """This process forgets a kernel, as a new process would (memo and sys.modules)."""
    sys.modules.pop(cache.kernel_name(kernel.source), None)
    for key in [k for k in numba_cpu._kernels if k[0] == kernel.source]:
        del numba_cpu._kernels[key]


@pytest.fixture
def fresh_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    directory = tmp_path / "kernels"
    previous = cache.set_cache_dir(directory)
    yield directory
    cache.set_cache_dir(previous)


# ------------------------------------------------------------------------------------------------ the key
MODULE = '''
from mixnet import gluon


class Chain(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
{padding}        return F.tanh(x * 0.4375 + 1) * F.sigmoid(x)
'''


def test_the_same_math_on_other_lines_and_files_is_one_file(fresh_dir, tmp_path, monkeypatch):
    kernels = [compile_kernel(group(1.0625, where)) for where in ("a.py:1", "b.py:20", None)]
    assert kernels[0] is kernels[1] is kernels[2] and len(kernel_files(fresh_dir)) == 1
    assert "a.py" not in kernels[0].source
    x = mx.nd.array(np.linspace(-2, 2, 64 * 32, dtype=np.float32).reshape(64, 32))
    outputs = []
    for k, padding in enumerate(["", "\n" * 7]):                      # two files, the chain on other lines
        directory = tmp_path / f"module{k}"
        directory.mkdir()
        (directory / f"same_math_{k}.py").write_text(MODULE.format(padding=padding))
        monkeypatch.syspath_prepend(str(directory))
        net = __import__(f"same_math_{k}").Chain()
        net.hybridize()
        outputs.append(net(x).asnumpy())
        assert net._last_graph.inference.fused_groups == 1
        if k == 0:
            files = kernel_files(fresh_dir)
    assert kernel_files(fresh_dir) == files and len(files) == 2           # the group above and the chain
    np.testing.assert_array_equal(outputs[0], outputs[1])


# ------------------------------------------------------------------------------------------------ size cap
def _size(kernel):
    return sum(os.path.getsize(f) for f in [kernel.path] + cache.numba_cache_files(kernel.path))


def test_the_least_recently_used_kernels_go_when_the_cap_is_passed(fresh_dir, monkeypatch):
    a, b = compile_kernel(group(2.0625)), compile_kernel(group(3.0625))
    assert cache.numba_cache_files(a.path) and cache.numba_cache_files(b.path)
    time.sleep(0.05)
    forget(a)
    a = compile_kernel(group(2.0625))                     # loaded again: now more recently used than b
    monkeypatch.setattr(config, "CACHE_MAX_MB", (_size(a) + _size(b)) / (1 << 20))
    c = compile_kernel(group(4.0625))                     # its file passes the cap: b goes, with its Numba files
    assert not os.path.exists(b.path) and cache.numba_cache_files(b.path) == []
    assert os.path.exists(a.path) and cache.numba_cache_files(a.path) and os.path.exists(c.path)
    np.testing.assert_allclose(c(np.zeros(3, np.float32)), np.exp(np.float32(4.0625)), rtol=1e-6)
    forget(b)
    b = compile_kernel(group(3.0625))                     # an evicted kernel is simply made again
    np.testing.assert_allclose(b(np.zeros(3, np.float32)), np.exp(np.float32(3.0625)), rtol=1e-6)


# ------------------------------------------------------------------------------------------------ the directory
def _make(kind, tmp_path, monkeypatch):
    """A kernel directory of `kind`; returns its path."""
    path = tmp_path / "kernels"
    if kind == "a file":
        path.write_text("not a directory")
    elif kind == "below a file":
        (tmp_path / "file").write_text("")
        path = tmp_path / "file" / "kernels"
    elif kind == "numba dir world-writable":
        path.mkdir(mode=0o700)
        numba_dir = tmp_path / "numba"
        numba_dir.mkdir()
        numba_dir.chmod(0o777)
        monkeypatch.setenv("NUMBA_CACHE_DIR", str(numba_dir))
    else:
        path.mkdir()
        if kind == "another user's":
            if os.geteuid() != 0:
                print("SKIP reason: giving a directory to another user needs root")
                pytest.skip("giving a directory to another user needs root")
            os.chown(path, 12345, -1)
            path.chmod(0o700)
        else:
            path.chmod({"read-only": 0o555, "world-writable": 0o777, "group-writable": 0o770,
                        "sticky world-writable": 0o1777}[kind])
    return path


REFUSED = {"a file": "is not a directory", "below a file": "cannot be created", "read-only": "is not writable",
           "world-writable": "writable by other users", "group-writable": "writable by other users",
           "another user's": "owned by another user", "numba dir world-writable": "writable by other users"}


@pytest.mark.parametrize("kind", list(REFUSED))
def test_an_unusable_or_unsafe_directory_means_one_warning_and_kernels_in_memory(kind, tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    path = _make(kind, tmp_path, monkeypatch)
    before = sorted(os.listdir(path)) if path.is_dir() else None
    previous = cache.set_cache_dir(path)
    value = 5.0625 + list(REFUSED).index(kind) / 8          # kernels this process has not loaded yet
    try:
        with pytest.warns(cache.CacheWarning, match=REFUSED[kind]) as record:
            k = compile_kernel(group(value))
        assert len(record) == 1 and record[0].filename == __file__          # it points at the caller's line
        assert isinstance(record[0].message, mx.base.MXNetWarning)
        assert k.path is None
        np.testing.assert_allclose(k(np.zeros(3, np.float32)), np.exp(np.float32(value)), rtol=1e-6)
        with warnings.catch_warnings():
            warnings.simplefilter("error")                                  # one warning per directory
            k2 = compile_kernel(group(-value), parallel_threshold=2)
            np.testing.assert_allclose(k2(np.zeros(3, np.float32)), np.exp(np.float32(-value)), rtol=1e-6)
        if before is not None:
            assert sorted(os.listdir(path)) == before                       # nothing written there
    finally:
        cache.set_cache_dir(previous)
        if path.is_dir():
            path.chmod(0o700)


@pytest.mark.parametrize("kind", ["a file", "world-writable"])
def test_a_quiet_look_neither_warns_nor_decides(kind, tmp_path, monkeypatch):
    """usable_dir(quiet=True) (the loops' load ahead at import) refuses an unsafe directory without a word, and
    leaves the one warning to the first real use, which points at the user's line."""
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    path = _make(kind, tmp_path, monkeypatch)
    previous = cache.set_cache_dir(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert cache.usable_dir(quiet=True) is None
            assert cache.usable_dir(quiet=True) is None
        with pytest.warns(cache.CacheWarning, match=REFUSED[kind]) as record:
            assert cache.usable_dir() is None
        assert len(record) == 1 and record[0].filename == __file__
    finally:
        cache.set_cache_dir(previous)
        if path.is_dir():
            path.chmod(0o700)


def test_import_with_an_unsafe_cache_holding_an_export_neither_warns_nor_loads(tmp_path):
    """An export in a directory others can write could be anyone's machine code: `import mixnet` does not load
    it, and says nothing at the import line (the warning comes with the first kernel that wants the cache)."""
    kernels = tmp_path / "kernels"
    (kernels / "native-loops" / "float32").mkdir(parents=True)
    (kernels / "native-loops" / "float32" / "index.json").write_text("{}")
    kernels.chmod(0o777)
    probe = ("import threading, warnings\nwarnings.simplefilter('always')\nimport mixnet\n"
             "print(sorted(t.name for t in threading.enumerate() if t.name.startswith('mixnet')))")
    env = {**os.environ, "MIXNET_CACHE_DIR": str(kernels), "MIXNET_COMPILE_BACKGROUND": "1"}
    env.pop("MIXNET_LOAD_AHEAD", None)
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120,
                         check=False)
    kernels.chmod(0o700)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "[]" and "CacheWarning" not in out.stderr, (out.stdout, out.stderr)


def test_a_sticky_world_writable_directory_is_used(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    path = _make("sticky world-writable", tmp_path, monkeypatch)
    previous = cache.set_cache_dir(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            k = compile_kernel(group(7.0625))
        assert k.path is not None and os.path.dirname(k.path) == str(path)
    finally:
        cache.set_cache_dir(previous)


class Chain(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.tanh(x * 0.25 + 1) * F.sigmoid(x)


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
def test_a_forward_call_warns_at_the_users_line_and_runs(tmp_path, monkeypatch, background):
    monkeypatch.setattr(config, "COMPILE_BACKGROUND", background)
    path = tmp_path / "a-file"
    path.write_text("")
    previous = cache.set_cache_dir(path)
    try:
        net = Chain()
        net.hybridize()
        x = mx.nd.array(np.linspace(-3, 3, 4096, dtype=np.float32).reshape(64, 64))
        with pytest.warns(cache.CacheWarning, match="is not a directory") as record:
            y = net(x)
            net._last_graph.inference.wait_fused()
            y2 = net(x)
        assert [r.filename for r in record] == [__file__]
        assert net._last_graph.inference.fused_groups == 1
        xn = x.asnumpy()
        expected = np.tanh(xn * 0.25 + 1) / (1 + np.exp(-xn))
        for out in (y, y2):
            np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    finally:
        cache.set_cache_dir(previous)


# ------------------------------------------------------------------------------------------------ compiling children
WORKER = textwrap.dedent('''
    import json, sys
    import numpy as np
    import mixnet as mx
    from mixnet import gluon
    from mixnet.codegen import precompile

    started = []
    real_run = precompile.subprocess.run

    def counting_run(args, **kwargs):
        started.append(args)
        return real_run(args, **kwargs)

    precompile.subprocess.run = counting_run


    class Chain(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.tanh(x * 0.5 + 1) * F.sigmoid(x) - F.exp(x * 0.125)


    net = Chain()
    net.hybridize()
    x = mx.nd.array(np.linspace(-2, 2, 64 * 64, dtype=np.float32).reshape(64, 64))
    first = net(x).asnumpy()
    plan = net._last_graph.inference
    plan.wait_fused()
    second = net(x).asnumpy()
    print(json.dumps({"children": len(started), "fused": plan.fused_groups,
                      "same": bool(np.allclose(first, second, rtol=1e-5, atol=1e-6))}))
''')


def test_three_processes_share_one_compiling_child(tmp_path):
    env = dict(os.environ, MIXNET_CACHE_DIR=str(tmp_path), MIXNET_COMPILE_BACKGROUND="1", NUMBA_NUM_THREADS="1")
    env.pop("NUMBA_CACHE_DIR", None)
    workers = [subprocess.Popen([sys.executable, "-c", WORKER], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = []
    for w in workers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sum(r["children"] for r in results) == 1, results
    assert all(r["fused"] == 1 and r["same"] for r in results), results


def test_a_compiling_child_does_not_load_the_loops_ahead(monkeypatch):
    """The child compiles or exports with Numba: its import must not start loading an export as well."""
    from mixnet.codegen import precompile
    seen = []

    def fake_run(args, **kwargs):
        seen.append(kwargs["env"])
        return subprocess.CompletedProcess(args, 0)

    monkeypatch.setattr(precompile.subprocess, "run", fake_run)
    monkeypatch.setenv("MIXNET_LOAD_AHEAD", "1")
    assert precompile._run_child(lambda: [{"eager": "float32"}], {"NUMBA_NUM_THREADS": "1"}, 30)
    assert len(seen) == 1 and seen[0]["MIXNET_LOAD_AHEAD"] == "0" and seen[0]["NUMBA_NUM_THREADS"] == "1"


PARENT = textwrap.dedent('''
    import json, os, subprocess, sys
    from mixnet.codegen import Group, Step, compile_kernel, inp, numba_cpu, cache

    jobs = []
    for k in range({n}):
        kernel = compile_kernel(Group([Step("_plus_scalar", "{{0}} + {{scalar}}", (inp(0),), {{"scalar": k + 0.5}}),
                                       Step("tanh", "tanh({{0}})", (numba_cpu.step(0),), {{}})], [1], 1),
                                compile_now=False)
        jobs.append({{"name": cache.kernel_name(kernel.source), "dtype": "float32", "arrays": 2,
                     "variant": "serial"}})
    child = subprocess.Popen([sys.executable, "-m", "mixnet.codegen.precompile",
                              json.dumps({{"parent": os.getpid(), "jobs": jobs}})], env=os.environ)
    print(child.pid, flush=True)
    os._exit(0)                                        # gone at once, as a short script would be
''')


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_child_ends_when_its_parent_is_gone(tmp_path):
    if not os.path.isdir("/proc/self"):
        print("SKIP reason: needs /proc to watch a process it did not start")
        pytest.skip("needs /proc to watch a process it did not start")
    n = 30
    env = dict(os.environ, MIXNET_CACHE_DIR=str(tmp_path), NUMBA_NUM_THREADS="1")
    env.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", PARENT.format(n=n)], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    child = int(done.stdout.split()[0])
    deadline = time.monotonic() + 20                   # a generous bound; compiling all 30 takes longer
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)
    previous = cache.set_cache_dir(tmp_path)           # where numba_cache_files looks
    try:
        compiled = [f for f in kernel_files(tmp_path) if cache.numba_cache_files(os.path.join(tmp_path, f))]
    finally:
        cache.set_cache_dir(previous)
    assert len(kernel_files(tmp_path)) == n and len(compiled) < n


def test_the_child_imports_the_parents_mixnet_whatever_the_current_directory(tmp_path):
    """A parent run from a directory holding another `mixnet` (another checkout) starts a child that imports the
    parent's: `python -m` would put that directory ahead of PYTHONPATH, and the child would compile the other
    checkout's kernels into the other checkout's caches."""
    decoy = tmp_path / "other_checkout"
    (decoy / "mixnet" / "codegen").mkdir(parents=True)
    (decoy / "mixnet" / "__init__.py").write_text("")
    (decoy / "mixnet" / "codegen" / "__init__.py").write_text("")
    ran = tmp_path / "decoy_ran"
    (decoy / "mixnet" / "codegen" / "precompile.py").write_text(f"open({str(ran)!r}, 'w').close()\n")
    script = tmp_path / "parent.py"           # run as a file: the parent itself imports the real mixnet
    script.write_text(textwrap.dedent("""
        import mixnet
        from mixnet.codegen import precompile
        print(mixnet.__file__, precompile._run_child(lambda: [{"refused": True}], {}, 60))
    """))
    env = dict(os.environ, MIXNET_CACHE_DIR=str(tmp_path / "kernels"),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=decoy, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    imported, succeeded = done.stdout.split()
    assert imported == os.path.join(ROOT, "mixnet", "__init__.py")
    assert succeeded == "False"               # the real child refuses the job it does not know
    assert not ran.exists()


@pytest.mark.parametrize("distribution", ["numba", "llvmlite", "numpy"])
def test_installed_version_is_what_importlib_metadata_says(distribution):
    """installed_version reads the .dist-info name beside the package (a cheaper lookup on the first call's path):
    the version is the one importlib.metadata reports, and the package is not imported to find it."""
    import importlib.metadata
    import subprocess
    import sys
    from mixnet.codegen import cache
    cache.installed_version.cache_clear()
    assert cache.installed_version(distribution) == importlib.metadata.version(distribution)
    probe = ("import sys; from mixnet.codegen import cache; cache.installed_version('numba'); "
             "print('numba' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
