"""Compiling Numba kernels in a separate process, so a hybridized block's or an eager op's first calls are not
slowed down.

Numba's compiler is Python code: in a thread of the training process it holds the GIL for seconds and every
numpy call of the training loop waits for it. A child process (this module run as a script, `_CHILD`) compiles
the kernels into the shared on-disk cache instead; the training process then only loads them (~0.15 s each).

One compiling child per cache directory, across processes. Several scripts started together with a cold cache
want the same kernels; each would start a child and they would compile the same kernels side by side on a machine
with few cores. So a process takes the cache directory's lock file (cache.compile_lock, fcntl.flock) before it
starts a child, and only then looks at what is still missing: a process that finds the lock taken waits for it in
its background thread (its calls run unfused, or on the generic path, meanwhile), and usually then finds that the
holder's child compiled everything and starts none. The child inherits the locked file, so the lock is held until
it exits. Within a process, one child at a time (`_ONE_CHILD`). Without a usable cache directory there is nothing
to share: fused kernels compile in memory in the process itself (no child), and the eager loops, which Numba
caches elsewhere, compile in an unlocked child.

A child's work is for the process that started it: it checks every 0.2 s that its parent is still there
(os.getppid()) and exits at once when it is not, so no child runs on after short scripts have ended. Its
argument is JSON that names kernels by their cache name (`mx_<16 hex>`, a file in the cache directory whose
content must hash to that name), dtypes and variants from fixed sets, and array counts; anything else is refused.

Two kinds of kernels:
* fused kernels (`compile_elsewhere`, `is_cached`): generated files in mixnet's kernel cache, compiled by name and
  signature.
* the eager fast-path loops of `mixnet/ops/_numba_kernels.py` and the GEMM epilogue loops of
  `mixnet/ops/_epilogue_kernels.py` (`compile_eager_elsewhere`, `eager_is_cached`), per dtype: the child runs each
  module's `warm_up(dtype)`, which calls each loop once on tiny arrays with the argument types the fast paths
  pass. Numba's cache index says which signatures are cached, but it is a pickle; so the child then writes a
  small JSON marker per module beside it, naming the index files, the source file's stamp and the
  Numba and Python versions, and `eager_is_cached` checks that marker (without importing Numba). A cache in a
  place the marker check does not know (Numba's fallbacks for a read-only install) just reads as not cached: each
  process then starts a child, which finds Numba's cache and ends after its ~2 s of start-up.
"""
import glob
import hashlib
import importlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import threading
import time

from .._atomic import write_atomic
from . import cache, native_loops

__all__ = ["compile_elsewhere", "is_cached", "compile_eager_elsewhere", "eager_is_cached", "export_native_elsewhere"]

_ONE_CHILD = threading.Lock()
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_EAGER_DIR = os.path.join(_PACKAGE_ROOT, "mixnet", "ops")
EAGER_MODULES = native_loops.MODULES         # in _EAGER_DIR, compiled, checked and exported together
_DTYPES = ("float32", "float64")
_VARIANTS = ("serial", "parallel")
_KERNEL_NAME = re.compile(r"mx_[0-9a-f]{16}")
_PARENT_POLL = 0.2                                           # seconds between the child's checks on its parent
_CHILD = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "       # the child: argv = [root, argument]
          "runpy.run_module('mixnet.codegen.precompile', run_name='__main__', alter_sys=True)")


def _quietly(fn):
    try:
        fn()
    except Exception:      # noqa: BLE001, S110 - only for the next process: this one has its loops already
        pass


def is_cached(kernel):
    """Numba has cache files for this kernel's file (from this or an earlier process); False for a kernel compiled
    in memory."""
    return kernel.path is not None and bool(cache.numba_cache_files(kernel.path))


def compile_elsewhere(jobs, timeout=600):
    """jobs: [(Kernel, variant)]. Compiles those not in the cache yet in a child process into the cache; returns
    True when that worked (the caller then loads them with Kernel.ensure_compiled, which compiles in the process
    what is still missing). Kernels compiled in memory (no usable cache directory) are left to the caller."""
    jobs = [(k, v) for k, v in jobs if k.path is not None]
    if not jobs:
        return False

    def pending():
        return [{"name": cache.kernel_name(k.source), "dtype": k.dtype.name, "arrays": k.n_inputs + k.n_outputs,
                 "variant": v} for k, v in jobs if not is_cached(k)]
    return _run_child(pending, {"MIXNET_CACHE_DIR": cache.cache_dir(), "NUMBA_CACHE_DIR": cache.numba_cache_dir()},
                      timeout)


def compile_eager_elsewhere(dtypes, timeout=600):
    """Compiles the eager loops for each dtype name ('float32', 'float64') not cached yet in a child process into
    Numba's cache (where this process's Numba looks: the same NUMBA_CACHE_DIR); True on success."""
    return _run_child(lambda: [{"eager": d} for d in dtypes if not eager_is_cached(d)], {}, timeout)


def export_native_elsewhere(dtypes):
    """In a daemon thread, a child that exports `dtypes`' loops for loading without Numba (native_loops.export)
    where they are compiled into Numba's cache but not exported yet: for the next process, as this one has
    loaded them through Numba already."""
    def pending():
        return [{"native": d} for d in dtypes if d in _DTYPES and eager_is_cached(d)
                and not native_loops.is_exported(d)]

    threading.Thread(target=_quietly, args=(lambda: _run_child(pending, {}, 600),), daemon=True,
                     name="mixnet-native-export").start()


def _run_child(pending, env, timeout):
    """Under the cache directory's lock, one child for the jobs `pending()` still lists (none: nothing to do)."""
    # The child imports the mixnet this module belongs to (also when the parent found it through sys.path edits,
    # or runs in a directory that holds another checkout), so that it compiles these kernels into this checkout's
    # caches: _CHILD puts _PACKAGE_ROOT first on sys.path, ahead of the current directory that `python -m` and
    # `-c` put there (and that PYTHONPATH does not precede). Its output is not kept.
    deadline = time.monotonic() + timeout
    with _ONE_CHILD:
        try:
            with cache.compile_lock(timeout) as lock:
                jobs = pending()
                if not jobs:
                    return True
                argument = json.dumps({"parent": os.getpid(), "jobs": jobs})
                # MIXNET_LOAD_AHEAD=0: the child compiles or exports with Numba; loading an export at its import
                # would be work for nothing
                done = subprocess.run([sys.executable, "-c", _CHILD, _PACKAGE_ROOT, argument],
                                      env=dict(os.environ, MIXNET_LOAD_AHEAD="0", **env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                                      timeout=max(1.0, deadline - time.monotonic()),
                                      pass_fds=() if lock is None else (lock,))
        except (OSError, subprocess.SubprocessError, TimeoutError):
            return False
    return done.returncode == 0


def _eager_cache_dir():
    """Where Numba caches the eager loops with its two usual locators: under $NUMBA_CACHE_DIR (a directory named
    after the source directory and the sha1 of its path), else `__pycache__` beside the source file."""
    source_dir = _EAGER_DIR
    root = os.environ.get("NUMBA_CACHE_DIR")
    if root:
        digest = hashlib.sha1(source_dir.encode()).hexdigest()
        return os.path.join(root, os.path.basename(source_dir) + "_" + digest)
    return os.path.join(source_dir, "__pycache__")


def drop_stale_eager_cache():
    """Numba's cache checks only the stamp of the file that defines a cached function, not of the functions it
    inlines: the eager loops inline codegen/approx.py (softmax's exp), so after approx.py changes their cached
    machine code would still load. A stamp file per module records approx.py's fingerprint; when it differs (or is
    missing) the module's cache files are deleted, so the loops compile again. Called before the eager modules are
    imported, in this process and in the compiling child."""
    fingerprint = _approx_fingerprint()
    directory = _eager_cache_dir()
    for module in EAGER_MODULES:
        stamp = os.path.join(directory, f"{module}.mixnet-approx")
        try:
            with open(stamp, encoding="utf-8") as f:
                if f.read() == fingerprint:
                    continue
        except OSError:
            pass
        try:
            for name in glob.glob(os.path.join(glob.escape(directory), f"{module}.*")):
                if name.endswith((".nbi", ".nbc")) or ".mixnet-" in name:
                    os.remove(name)
            os.makedirs(directory, exist_ok=True)
            write_atomic(stamp, fingerprint)
        except OSError:        # a read-only cache: Numba then compiles in memory every process, nothing to drop
            pass


def _eager_marker(dtype, module="_numba_kernels"):
    return os.path.join(_eager_cache_dir(), f"{module}.mixnet-{dtype}.json")


def _approx_fingerprint():
    """approx.SOURCE_FINGERPRINT, read from the file: importing approx.py would import Numba (~0.3 s), which a call
    that only asks whether the loops are cached must not pay."""
    global _APPROX
    if _APPROX is None:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "approx.py"), "rb") as f:
            _APPROX = hashlib.sha1(f.read()).hexdigest()[:12]
    return _APPROX


_APPROX = None


def _eager_stamp(module):
    st = os.stat(os.path.join(_EAGER_DIR, module + ".py"))
    return {"source": [st.st_mtime_ns, st.st_size], "numba": cache.installed_version("numba"),
            "python": sys.implementation.cache_tag, "approx": _approx_fingerprint()}


def eager_is_cached(dtype):
    """The eager loops for `dtype` were compiled into Numba's cache from the current source (a marker per module
    written after a successful compile, whose index files are all still there)."""
    return all(_module_is_cached(dtype, module) for module in EAGER_MODULES)


def _module_is_cached(dtype, module):
    try:
        with open(_eager_marker(dtype, module), encoding="utf-8") as f:
            marker = json.load(f)
        stamp = _eager_stamp(module)
    except (OSError, ValueError, importlib.metadata.PackageNotFoundError):
        return False
    if not isinstance(marker, dict) or not isinstance(marker.get("index"), list) or not marker["index"]:
        return False
    if any(marker.get(key) != value for key, value in stamp.items()):
        return False
    directory = _eager_cache_dir()
    return all(isinstance(name, str) and os.path.isfile(os.path.join(directory, os.path.basename(name)))
               for name in marker["index"])


def _write_eager_marker(dtype, kernels):
    """After kernels.warm_up(dtype): the marker, if every loop has its index file where eager_is_cached looks."""
    directory = _eager_cache_dir()
    module = kernels.__name__.rsplit(".", 1)[-1]
    index = []
    for loop in kernels.loops():
        code = loop.py_func.__code__
        pattern = f"{module}.{glob.escape(loop.py_func.__qualname__)}-{code.co_firstlineno}.*.nbi"
        found = glob.glob(os.path.join(glob.escape(directory), pattern))
        if not found:
            return False
        index += sorted(os.path.basename(f) for f in found)
    write_atomic(_eager_marker(dtype, module), json.dumps({**_eager_stamp(module), "index": index}))
    return True


def _checked(job):
    """One job of the child's argument, checked field by field: it names a file to run and a function to call."""
    if isinstance(job, dict) and len(job) == 1 and job.get("eager", job.get("native")) in _DTYPES:
        return job
    if (isinstance(job, dict) and set(job) == {"name", "dtype", "arrays", "variant"}
            and isinstance(job["name"], str) and _KERNEL_NAME.fullmatch(job["name"])
            and job["dtype"] in _DTYPES and job["variant"] in _VARIANTS
            and type(job["arrays"]) is int and 0 < job["arrays"] <= 4096):
        return job
    raise ValueError(f"precompile: malformed job {job!r}")


def _exit_with_parent(parent):
    """The child's watchdog: ends the child as soon as the process that started it is gone."""
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL)
    os._exit(3)


def _main(argument):
    spec = json.loads(argument)
    if not isinstance(spec, dict) or type(spec.get("parent")) is not int or not isinstance(spec.get("jobs"), list):
        raise ValueError("precompile: the argument is {'parent': pid, 'jobs': [...]}")
    jobs = [_checked(job) for job in spec["jobs"]]
    threading.Thread(target=_exit_with_parent, args=(spec["parent"],), daemon=True).start()
    from .numba_common import signature                       # imports Numba (~1 s): after the watchdog starts
    eager = any("eager" in job or "native" in job for job in jobs)
    if eager and hasattr(os, "nice"):
        # The parent keeps training on the generic path meanwhile: on a machine with few cores it should not
        # have to share its core with the compiler.
        os.nice(10)
    if eager:
        drop_stale_eager_cache()
    for job in jobs:
        if "eager" in job:
            for name in EAGER_MODULES:
                kernels = importlib.import_module(f"..ops.{name}", __package__)
                kernels.warm_up(job["eager"])
                _write_eager_marker(job["eager"], kernels)
        if "eager" in job or "native" in job:      # the loops just compiled are exported as they are (~1 s)
            try:
                native_loops.export(job.get("eager") or job["native"])
            except Exception:      # noqa: BLE001, S110 - no export: the next process loads through Numba, as before
                pass
            continue
        directory = cache.usable_dir()
        if directory is None:
            sys.exit(2)
        with open(os.path.join(directory, job["name"] + ".py"), encoding="utf-8") as f:
            source = f.read()
        if cache.kernel_name(source) != job["name"]:       # changed since the parent wrote it: not what it asked
            sys.exit(2)
        module = cache.load_source(source)
        getattr(module, job["variant"]).compile(signature(job["dtype"], job["arrays"]))


if __name__ == "__main__":
    _main(sys.argv[1])
