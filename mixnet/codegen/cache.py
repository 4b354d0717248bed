"""On-disk cache of generated kernel source, so that a second process starts warm.

Each kernel is a plain `.py` file named by the sha1 of its content, `mx_<sha1[:16]>.py`, in a mixnet-owned
directory (default `~/.cache/mixnet/kernels`, or `$MIXNET_CACHE_DIR`). The content is the kernel's structure: ops
and constants, never the user's file:line (the renderers leave locations out of the cached form), so the same
math written on any line of any script is one file. Its functions are `@njit(cache=True)`, so Numba stores the
compiled machine code beside it (in `<dir>/numba`), keyed on the file: a later process that generates the same
source gets a Numba cache hit (~0.15 s instead of ~0.5 s per kernel; Numba cannot cache a function exec'd from
a string, hence real files). CUDA sources are stored the same way as `.cu` files (`store_source`), for people to open.

Rules that make this safe:
* What runs is the source this process rendered: `load_source` compiles the string it was given (with the file's
  path as its file name, which is what Numba's cache locates by), never the file's bytes. The file is there for
  Numba and for people.
* The directory must be the user's own: it (and Numba's cache directory) must be owned by the user and not
  writable by group or others unless sticky (`usable_dir`). Numba's index files are pickles, so a directory others
  can write is a code-execution hole. An unsafe directory, or one that cannot be used (a file, read-only, cannot
  be created), gives one `CacheWarning` (pointing at the user's line) and mixnet runs without the disk cache:
  kernels compile in memory in each process (`cache=False`), as they would with no cache at all.
* Files are written atomically (a temporary file, then `os.replace`: mixnet/_atomic.py), so a reader never sees half a file, and
  several processes may write the same kernel at once. A file whose content does not hash to its name
  (truncated, edited) or that another user owns is rewritten; Numba cache files that cannot be read (garbage
  index or data) are deleted and the kernel recompiled (`purge_numba_cache`, called by numba_cpu when a compile
  fails). None of it ever reaches the user as a crash.
* The module is registered in `sys.modules` before it runs. Without that, Numba pickles the module name
  `'<dynamic>'` into the cache of parallel kernels and every later process fails to load it.

Size. The directory is capped at MIXNET_CACHE_MAX_MB (config.py, default 512): after a new file is written, the
least recently used kernels (their source file and Numba's files) are deleted until the rest fit. Loading a
kernel sets its source file's access time (only that: Numba < 0.61 stamps its cache with the file's mtime).

Compiling children. `compile_lock()` holds `<dir>/.compile.lock` (fcntl.flock), so that one process at a time
runs a compiling child for this directory (codegen/precompile.py).

Numba's cache directory: Numba reads `NUMBA_CACHE_DIR` into `numba.config.CACHE_DIR` once, when it is imported,
and each `cache=True` function picks its directory from `numba.config.CACHE_DIR` when it is decorated. So this
module sets `numba.config.CACHE_DIR` only around running a kernel module and restores it afterwards: the user's
own `cache=True` functions are unaffected. A user who sets `NUMBA_CACHE_DIR` keeps it: kernels are then cached
there too (and it is checked like the kernel directory).
"""
import contextlib
import functools
import glob
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import stat
import sys
import threading
import time
import types

from .. import config
from .._atomic import write_atomic
from ..base import MXNetWarning
from .._source import warn

__all__ = ["cache_dir", "set_cache_dir", "usable_dir", "kernel_name", "load_source", "store_source",
           "purge_numba_cache", "numba_cache_dir", "numba_cache_files", "compile_lock", "CacheWarning"]

_lock = threading.RLock()
_override = None
_verdicts = {}                  # (kernel dir, numba dir) -> usable, decided once per process
_KERNEL_FILE = re.compile(r"(mx_[0-9a-f]{16})\.(?:py|cu)")
_STEM = re.compile(r"mx_[0-9a-f]{16}")
LOCK_FILE = ".compile.lock"
# Header lines of every generated kernel file on what it holds (after the renderer's comment mark).
CACHED_FORM = ("the file is named by the hash of its content; it names ops but not the user's lines, so the same",
               "math written anywhere is one file (MIXNET_SHOW_CODE=1 prints it with the lines).")


class CacheWarning(MXNetWarning):
    """The kernel cache directory cannot be used, or is not safe to use: kernels compile in memory instead."""


def cache_dir():
    """Where kernel files live: set_cache_dir(), else $MIXNET_CACHE_DIR, else ~/.cache/mixnet/kernels."""
    path = _override or config.CACHE_DIR or os.path.join("~", ".cache", "mixnet", "kernels")
    return os.path.abspath(os.path.expanduser(path))


def set_cache_dir(path):
    """Use `path` for kernels from now on (None: back to the environment/default). Returns the previous override."""
    global _override
    previous, _override = _override, (None if path is None else os.fspath(path))
    return previous


def numba_cache_dir():
    """Numba's cache directory for kernels: the user's NUMBA_CACHE_DIR if they set one, else <cache_dir>/numba."""
    return os.environ.get("NUMBA_CACHE_DIR") or os.path.join(cache_dir(), "numba")


@functools.lru_cache(maxsize=None)
def installed_version(distribution):
    """A distribution's installed version (numba, llvmlite), looked up once per process: what cached machine code
    is keyed on. These lookups are on the first hybridized call's path, where importlib.metadata costs ~3 ms
    (it scans sys.path and parses the metadata file): the version is read off the name of the `.dist-info`
    directory beside the package that an import would load (found without importing it), and importlib.metadata
    is asked only where there is none."""
    spec = importlib.util.find_spec(distribution)
    if spec is not None and spec.origin is not None:
        site = os.path.dirname(os.path.dirname(spec.origin))
        prefix = distribution.lower() + "-"
        try:
            found = [name for name in os.listdir(site)
                     if name.endswith(".dist-info") and name.lower().startswith(prefix)]
        except OSError:
            found = []
        if len(found) == 1:
            return found[0][len(prefix):-len(".dist-info")]
    return importlib.metadata.version(distribution)


def kernel_name(source):
    return "mx_" + hashlib.sha1(source.encode("utf-8")).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ the directory
def _problem(path):
    """Why `path` cannot serve as a cache directory (creating it if missing), or None."""
    try:
        if not os.path.lexists(path):
            os.makedirs(path, mode=0o700)
        st = os.stat(path)
    except OSError as err:
        return f"cannot be created or used ({type(err).__name__}: {err.strerror or err})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if os.name == "posix":
        if st.st_uid != os.getuid():
            return f"is owned by another user (uid {st.st_uid}); Numba's cache files in it are pickles"
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return (f"is writable by other users (mode {stat.S_IMODE(st.st_mode):o}); Numba's cache files in it "
                    "are pickles")
    # the mode bits, not only access(): root passes access() on a directory without write permission
    if not st.st_mode & stat.S_IWUSR or not os.access(path, os.W_OK | os.X_OK):
        return "is not writable"
    return None


def usable_dir(quiet=False):
    """The kernel directory if it (and Numba's cache directory) can be used safely, else None: then one
    CacheWarning per directory and process says why, and kernels compile in memory. quiet: a look ahead (the
    loops' load at import) that neither warns nor decides: the warning waits for a call of the user's, to point
    at it."""
    key = (cache_dir(), numba_cache_dir())
    verdict = _verdicts.get(key)
    if verdict is None:
        with _lock:
            if key not in _verdicts:
                problem = next(((p, why) for p in dict.fromkeys(key) if (why := _problem(p))), None)
                if problem is not None:
                    if quiet:
                        return None
                    _warn(*problem)
                _verdicts[key] = problem is None
            verdict = _verdicts[key]
    return key[0] if verdict else None


def _give_up(err):
    """A write or read in a directory that passed usable_dir() failed (full disk, a file another user owns in
    a sticky directory): warn once and compile in memory from now on."""
    key = (cache_dir(), numba_cache_dir())
    with _lock:
        if _verdicts.get(key) is not False:
            _verdicts[key] = False
            _warn(key[0], f"failed ({type(err).__name__}: {err})")


def _warn(path, why):
    message = (f"mixnet: the kernel cache directory {path!r} {why}. Kernels compile in memory in this process "
               "and are not cached on disk; set MIXNET_CACHE_DIR to a directory of your own that only you can "
               "write.")
    warn(message, CacheWarning)


# ------------------------------------------------------------------------------------------------ files
def _file_is_valid(path, name):
    """The file is this process user's and its content hashes to its name."""
    try:
        with open(path, "rb") as f:
            if os.name == "posix" and os.fstat(f.fileno()).st_uid != os.getuid():
                return False
            data = f.read()
    except OSError:
        return False
    return "mx_" + hashlib.sha1(data).hexdigest()[:16] == name


def _touch(path):
    """Marks a kernel file used now (its access time; the mtime stays, Numba may stamp its cache with it)."""
    with contextlib.suppress(OSError):
        os.utime(path, ns=(time.time_ns(), os.stat(path).st_mtime_ns))


def _ensure_file(directory, name, suffix, source):
    """<directory>/<name><suffix> holding `source`, written unless an intact copy is there; returns its path."""
    path = os.path.join(directory, name + suffix)
    if _file_is_valid(path, name):
        _touch(path)
        return path
    if suffix == ".py" and os.path.exists(path):     # corrupt or edited: its Numba cache is not to be trusted
        purge_numba_cache(path)
    write_atomic(path, source)
    _evict(directory, keep=name)
    return path


def store_source(source, suffix):
    """Write `source` to `<cache_dir>/mx_<sha1><suffix>` unless an intact copy is there; returns the path, or None
    without a usable cache directory. For kernels another compiler caches itself (CUDA sources: cupy keeps
    their cubins), so people can open them."""
    with _lock:
        directory = usable_dir()
        if directory is None:
            return None
        try:
            return _ensure_file(directory, kernel_name(source), suffix, source)
        except OSError as err:
            _give_up(err)
            return None


@contextlib.contextmanager
def _numba_cache_dir_set():
    import numba
    previous = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = numba_cache_dir()
    try:
        yield
    finally:
        numba.config.CACHE_DIR = previous


def load_source(source, fresh=False):
    """The kernel module of `source` (registered in sys.modules under its kernel name): compiled from `source`
    with `<cache_dir>/mx_<sha1>.py` (written unless an intact copy is there) as its file, so Numba caches its
    machine code; without a usable cache directory, compiled in memory with Numba's caching off (the module then
    has no `__file__`). `fresh=True` runs it again (new Numba dispatchers), for recovery after a purge."""
    name = kernel_name(source)
    with _lock:
        if not fresh and name in sys.modules:
            return sys.modules[name]
        directory = usable_dir()
        path = None
        if directory is not None:
            try:
                path = _ensure_file(directory, name, ".py", source)
            except OSError as err:
                _give_up(err)
        module = types.ModuleType(name)
        if path is None:
            code = compile(_without_disk_cache(source), f"<mixnet kernel {name}>", "exec")
        else:
            module.__file__ = path
            code = compile(source, path, "exec")
        sys.modules[name] = module
        try:
            with _numba_cache_dir_set():
                exec(code, module.__dict__)            # noqa: S102 - the source this process generated
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module


def _without_disk_cache(source):
    """The kernel source with Numba's on-disk caching off: the renderers decorate with `@njit(cache=True, ...)`,
    and a module that has no file has nowhere to cache to."""
    return source.replace("@njit(cache=True", "@njit(cache=False")


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


# ------------------------------------------------------------------------------------------------ size cap
def _evict(directory, keep):
    """Deletes least recently used kernels (source file and Numba's files) until the cache fits in
    config.CACHE_MAX_MB; never `keep`. Numba files whose source file is gone count as the oldest."""
    limit = config.CACHE_MAX_MB * (1 << 20)
    kernels = {}                                      # stem -> [last use (ns), bytes, paths]
    try:
        for entry in os.scandir(directory):
            match = _KERNEL_FILE.fullmatch(entry.name)
            if match and entry.is_file(follow_symlinks=False):
                st = entry.stat(follow_symlinks=False)
                k = kernels.setdefault(match.group(1), [0, 0, []])
                k[0], k[1] = max(k[0], st.st_atime_ns), k[1] + st.st_size
                k[2].append(entry.path)
        for root, _, files in os.walk(numba_cache_dir()):
            for f in files:
                stem = f.split(".", 1)[0]
                if _STEM.fullmatch(stem) and f.endswith((".nbi", ".nbc")):
                    path = os.path.join(root, f)
                    k = kernels.setdefault(stem, [0, 0, []])
                    k[1] += os.stat(path).st_size
                    k[2].append(path)
    except OSError:                                   # another process deleting at the same time: next write
        return
    total = sum(k[1] for k in kernels.values())
    for stem, (_, size, paths) in sorted(kernels.items(), key=lambda item: item[1][0]):
        if total <= limit:
            break
        if stem == keep:
            continue
        for path in paths:
            with contextlib.suppress(OSError):
                os.unlink(path)
        total -= size


# ------------------------------------------------------------------------------------------------ one compiler
@contextlib.contextmanager
def compile_lock(timeout):
    """Holds `<cache_dir>/.compile.lock` (fcntl.flock, across processes) while the block runs, polling for it up
    to `timeout` seconds (then TimeoutError). Yields the lock file's descriptor (a child given it keeps the lock
    held until it exits too), or None where there is nothing to lock: no usable cache directory, or no flock
    (Windows)."""
    try:
        import fcntl
    except ImportError:
        yield None
        return
    directory = usable_dir()
    if directory is None:
        yield None
        return
    fd = os.open(os.path.join(directory, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another process held {LOCK_FILE} in {directory} for {timeout} s") from None
                time.sleep(0.1)
        yield fd
    finally:
        os.close(fd)
