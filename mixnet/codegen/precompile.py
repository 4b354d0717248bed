"""Compiling Numba kernels in a separate process, so a hybridized block's or an eager op's first calls are not
slowed down.

Numba's compiler is Python code: in a thread of the training process it holds the GIL for seconds and every
numpy call of the training loop waits for it. A child process (`python -m mixnet.codegen.precompile`) compiles
the kernels into the shared on-disk cache instead; the training process then only loads them (~0.15 s each). A
child whose parent has exited still finishes, so the next run starts warm. At most one child compiles for a
process at a time (the machines have few cores); a second request waits for the first child to end.

Two kinds of kernels:
* fused kernels (`compile_elsewhere`, `is_cached`): generated files in mixnet's kernel cache, compiled by path and
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
import subprocess
import sys
import threading

from .._atomic import write_atomic
from . import cache

__all__ = ["compile_elsewhere", "is_cached", "compile_eager_elsewhere", "eager_is_cached"]

_ONE_CHILD = threading.Lock()
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_EAGER_DIR = os.path.join(_PACKAGE_ROOT, "mixnet", "ops")
EAGER_MODULES = ("_numba_kernels", "_epilogue_kernels")      # in _EAGER_DIR, compiled and checked together


def is_cached(kernel):
    """Numba has cache files for this kernel's file (from this or an earlier process)."""
    return bool(cache.numba_cache_files(kernel.path))


def compile_elsewhere(jobs, timeout=600):
    """jobs: [(Kernel, variant)]. Compiles them in a child process into the cache; returns True on success (the
    caller then loads them with Kernel.ensure_compiled, and compiles itself when this returned False)."""
    spec = [{"path": k.path, "dtype": k.dtype.name, "arrays": k.n_inputs + k.n_outputs, "variant": v}
            for k, v in jobs]
    return _run_child(spec, {"MIXNET_CACHE_DIR": cache.cache_dir(), "NUMBA_CACHE_DIR": cache.numba_cache_dir()},
                      timeout)


def compile_eager_elsewhere(dtypes, timeout=600):
    """Compiles the eager loops for each dtype name ('float32', 'float64') in a child process into Numba's cache
    (where this process's Numba looks: the same NUMBA_CACHE_DIR); True on success."""
    return _run_child([{"eager": d} for d in dtypes], {}, timeout)


def _run_child(spec, env, timeout):
    # The child imports the mixnet this module belongs to (also when the parent found it through sys.path edits),
    # so its Numba cache keys match. Its output is not kept: it may outlive this process and its pipes.
    path = os.environ.get("PYTHONPATH")
    env = dict(os.environ, PYTHONPATH=_PACKAGE_ROOT + (os.pathsep + path if path else ""), **env)
    with _ONE_CHILD:
        try:
            done = subprocess.run([sys.executable, "-m", "mixnet.codegen.precompile", json.dumps(spec)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout,
                                  check=False)
        except (OSError, subprocess.SubprocessError):
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
    return {"source": [st.st_mtime_ns, st.st_size], "numba": importlib.metadata.version("numba"),
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


def _main(spec):
    from .numba_cpu import signature
    if any("eager" in job for job in spec) and hasattr(os, "nice"):
        # The parent keeps training on the generic path meanwhile: on a machine with few cores it should not
        # have to share its core with the compiler.
        os.nice(10)
    if any("eager" in job for job in spec):
        drop_stale_eager_cache()
    for job in spec:
        if "eager" in job:
            for name in EAGER_MODULES:
                kernels = importlib.import_module(f"..ops.{name}", __package__)
                kernels.warm_up(job["eager"])
                _write_eager_marker(job["eager"], kernels)
            continue
        with open(job["path"], encoding="utf-8") as f:
            module = cache.load_source(f.read())
        getattr(module, job["variant"]).compile(signature(job["dtype"], job["arrays"]))


if __name__ == "__main__":
    _main(json.loads(sys.argv[1]))
