"""On-disk cache of generated kernel source, so that a second process starts warm.

Each kernel is a plain `.py` file named by the sha1 of its content, `mx_<sha1[:16]>.py`, in a mixnet-owned
directory (default `~/.cache/mixnet/kernels`, or `$MIXNET_CACHE_DIR`). The content is the kernel's structure: ops
and constants, never the user's file:line (the renderers leave locations out of the cached form), so the same
math written on any line of any script is one file. Its functions are `@njit(cache=True)`, so
Numba stores the compiled machine code beside it (in `<dir>/numba`), keyed on a hash of the file's content:
a later process that generates the same source imports the same file and gets a Numba cache hit (~0.15 s
instead of ~0.5 s per kernel; reference/performance.md §4.4).

Rules that make this safe:
* Files are written atomically (a temporary file, then `os.replace`), so a reader never sees half a file, and
  several processes may write the same kernel at once.
* The module is registered in `sys.modules` before it runs. Without that, Numba pickles the module name
  `'<dynamic>'` into the cache of parallel kernels and every later process fails to load it.
* A file whose content does not hash to its name (truncated, edited) is rewritten; Numba cache files that cannot
  be read (garbage index or data) are deleted and the kernel recompiled (`purge_numba_cache`, called by
  numba_cpu when a compile fails). Neither ever reaches the user as a crash.

Numba's cache directory: Numba reads `NUMBA_CACHE_DIR` into `numba.config.CACHE_DIR` once, when it is imported,
and each `cache=True` function picks its directory from `numba.config.CACHE_DIR` when it is decorated. So this
module sets `numba.config.CACHE_DIR` only around the import of a kernel file and restores it afterwards: the
user's own `cache=True` functions are unaffected. A user who sets `NUMBA_CACHE_DIR` keeps it: kernels are then
cached there too.
"""
import contextlib
import glob
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading

__all__ = ["cache_dir", "set_cache_dir", "kernel_name", "load_source", "store_source", "purge_numba_cache",
           "numba_cache_dir"]

_lock = threading.RLock()
_override = None
# Header lines of every generated kernel file on what it holds (after the renderer's comment mark).
CACHED_FORM = ("the file is named by the hash of its content; it names ops but not the user's lines, so the same",
               "math written anywhere is one file (MIXNET_SHOW_CODE=1 prints it with the lines).")


def cache_dir():
    """Where kernel files live: set_cache_dir(), else $MIXNET_CACHE_DIR, else ~/.cache/mixnet/kernels."""
    path = _override or os.environ.get("MIXNET_CACHE_DIR") or os.path.join("~", ".cache", "mixnet", "kernels")
    return os.path.abspath(os.path.expanduser(path))


def set_cache_dir(path):
    """Use `path` for kernels from now on (None: back to the environment/default). Returns the previous override."""
    global _override
    previous, _override = _override, (None if path is None else os.fspath(path))
    return previous


def numba_cache_dir():
    """Numba's cache directory for kernels: the user's NUMBA_CACHE_DIR if they set one, else <cache_dir>/numba."""
    return os.environ.get("NUMBA_CACHE_DIR") or os.path.join(cache_dir(), "numba")


def kernel_name(source):
    return "mx_" + hashlib.sha1(source.encode("utf-8")).hexdigest()[:16]


def _write_atomic(path, text):
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".py", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _file_is_valid(path, name):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return "mx_" + hashlib.sha1(data).hexdigest()[:16] == name


@contextlib.contextmanager
def _numba_cache_dir_set():
    import numba
    previous = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = numba_cache_dir()
    try:
        yield
    finally:
        numba.config.CACHE_DIR = previous


def store_source(source, suffix):
    """Write `source` to `<cache_dir>/mx_<sha1><suffix>` unless an intact copy is there; returns the path. For
    kernels another compiler caches itself (CUDA sources: cupy keeps their cubins), so people can open them."""
    name = kernel_name(source)
    with _lock:
        directory = cache_dir()
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, name + suffix)
        if not _file_is_valid(path, name):
            _write_atomic(path, source)
        return path


def load_source(source, fresh=False):
    """Write `source` to `<cache_dir>/mx_<sha1>.py` unless an intact copy is there, import it as a module
    registered in sys.modules, and return the module. `fresh=True` re-imports it (new Numba dispatchers), for
    recovery after a purge."""
    name = kernel_name(source)
    with _lock:
        if not fresh and name in sys.modules:
            return sys.modules[name]
        directory = cache_dir()
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, name + ".py")
        if not _file_is_valid(path, name):
            if os.path.exists(path):                 # corrupt or edited: its Numba cache is not to be trusted
                purge_numba_cache(path)
            _write_atomic(path, source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            with _numba_cache_dir_set():
                spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module


def numba_cache_files(path):
    """Numba's index (.nbi) and data (.nbc) files for the kernel file `path`: under Numba's cache directory
    (which mirrors the source file's directory below it) or, without one, in `__pycache__` beside the file."""
    stem = glob.escape(os.path.splitext(os.path.basename(path))[0])
    found = glob.glob(os.path.join(glob.escape(os.path.dirname(path)), "__pycache__", stem + ".*.nb[ic]"))
    root = numba_cache_dir()
    if os.path.isdir(root):
        found += glob.glob(os.path.join(glob.escape(root), "**", stem + ".*.nb[ic]"), recursive=True)
    return sorted(set(found))


def purge_numba_cache(path):
    """Delete Numba's cache files for the kernel file `path` (they will be rebuilt)."""
    for f in numba_cache_files(path):
        with contextlib.suppress(OSError):
            os.unlink(f)
