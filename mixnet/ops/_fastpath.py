"""When the CPU kernels take their Numba fast paths, and the scratch buffers those paths reuse.

* `numba_kernels(xp, *arrays, load=True)`: the module of hand-written Numba loops (`_numba_kernels`), imported on
  first use, when every array is a numpy float32/float64 array of one dtype, `ENABLED` is true and the loops for
  that dtype are ready; otherwise None and the caller runs its generic xp code (cupy, integer dtypes, mixed
  dtypes), which gives the same results. Tests set `ENABLED = False` to compare the two paths; MIXNET_NUMBA=0
  (config.NUMBA) turns them off for a process that should never import Numba. Kernels that gain
  only a fraction of a millisecond (ReLU's backward, the SGD update) pass `load=False`: they use the loops once
  something else has loaded them, and numpy before.
* Compile latency. Compiling the loops for one dtype takes ~10 s on this machine (Numba's compiler holds the GIL),
  which used to land inside the first LeNet step. By default (config.COMPILE_BACKGROUND) a dtype whose loops are
  not in Numba's on-disk cache yet keeps the generic path while one child process compiles them into that cache
  (codegen/precompile.py: one compiling child at a time per kernel cache directory, across processes, for these
  and the fused kernels; it ends when this process does). Once a dtype's loops are in the cache, a background
  thread loads their machine code, so that no call waits for it; calls keep the generic path until it is done.
  Where the kernel cache holds the loops exported for loading without Numba (codegen/native_loops.py: a
  child exports them after a process has loaded them through Numba), that takes ~0.04 s and the process never imports Numba; otherwise the thread
  imports the modules and loads their code through Numba (~0.35 s: Numba's import and the cache loads, which
  skip Numba's compiler: codegen/numba_load.py) and starts that child, for the next process. The loops
  are then `_module` (`_numba_kernels` or its NativeLoop namespace) and `loops_of(name)` for the others. With MIXNET_COMPILE_BACKGROUND=0 the module
  is imported on first use and the loops compile on their first call, as Numba does by default.
  `wait_compiled()` blocks until the child and the loading are done (benchmarks, tests).
* Loading ahead. Where the kernel cache holds float32's export, `import mixnet` starts that ~0.04 s load at once
  (`load_ahead`, config.LOAD_AHEAD), while the rest of mixnet imports and the user's script builds its model, so
  the first call finds the loops in: they no longer share its GIL (W2's first call 30-36 -> 16-21 ms). It never
  imports Numba: without an export it does nothing, and a load that fails leaves the loading to the first call.
* `workspace(slot, shape, dtype)`: an uninitialised C-contiguous array from a per-thread buffer that is kept
  between calls. A convolution's im2col columns and GEMM output are several megabytes and live only inside one
  kernel call; allocating them fresh each call costs one page fault per 4 KiB page, which on this VM was more
  than the copy itself (conv1 of LeNet: 2300 faults, ~8 ms of a 3 ms kernel). Each slot keeps its largest size
  up to WORKSPACE_LIMIT bytes; larger requests get a fresh array. The convolutions use five slots, so at most
  5 * WORKSPACE_LIMIT stays allocated per thread (a few MiB for LeNet). A workspace view must not escape the
  kernel that asked for it: the next call of any kernel overwrites it.
"""
import atexit
import os
import threading

import numpy as np

from .. import config
from ..codegen import cache, precompile

ENABLED = True
WORKSPACE_LIMIT = 64 << 20

_FLOATS = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}     # the dtypes with loops, by name
_module = None
_modules = None         # {loop module name: the module, or its NativeLoop namespace}, set before _module
_ready = set()          # dtype names whose loops are compiled or in the on-disk cache
_pending = set()        # dtype names waiting for a compiling child
_compiling = None       # the thread waiting on the child, and the dtypes it compiles
_loading = None         # the thread importing the modules and loading their cached loops
_state_lock = threading.Lock()
_local = threading.local()


def numba_kernels(xp, *arrays, load=True):
    if xp is not np or not ENABLED or not config.NUMBA:
        return None
    dtype = arrays[0].dtype
    for a in arrays[1:]:
        if a.dtype is not dtype and a.dtype != dtype:
            return None
    name = _FLOATS.get(dtype)          # one dict lookup: this runs before every eager loop call
    if name is None:
        return None
    if _module is not None and name in _ready:
        return _module
    if not load and _module is None:
        return None
    with _state_lock:
        return _prepare(name, load)


def _prepare(dtype, load):
    """The module if `dtype`'s loops can run now, else None; starts or checks on their compilation."""
    _collect()
    waiting = dtype in _pending or (_compiling is not None and dtype in _compiling[1])
    if dtype not in _ready and load and not waiting:        # decided once per dtype
        if not config.COMPILE_BACKGROUND:
            _ready.update(_FLOATS.values())      # every loop compiles on its first use, as before
        elif precompile.eager_is_cached(dtype):
            _ready.add(dtype)                           # loads the cached machine code on first use
        else:
            _pending.add(dtype)
    _launch()
    if dtype not in _ready:
        return None
    if _module is None:
        if config.COMPILE_BACKGROUND:
            _start_loading()
            return None
        _load(())
    return _module


def load_ahead(dtype="float32"):
    """At import (config.LOAD_AHEAD): where the kernel cache holds `dtype`'s loops exported for loading without
    Numba (codegen/native_loops.py) and their Numba cache is current, starts loading them in a background thread
    now, so that they are in by the first call instead of sharing its first ~40 ms (W2's short run). Nothing
    happens where no export is there: without one, loading means importing Numba (~0.35 s, ~40 MB), which waits
    until a kernel asks for the loops, as before. A failed load leaves the state as it was, for the first call."""
    global _loading
    if not (ENABLED and config.NUMBA and config.COMPILE_BACKGROUND and config.LOAD_AHEAD):
        return
    from ..codegen import native_loops  # lazy: only when loops may load
    if not native_loops.has_export(dtype):                   # a file test: nothing imported, nothing parsed
        return
    with _state_lock:
        if _loading is None and _module is None:
            _loading = threading.Thread(target=_load_ahead, args=(dtype,), daemon=True, name="mixnet-eager-load")
            _loading.start()
            # a script that ends at once must not tear the interpreter down under a thread still in LLVM's code
            atexit.register(_loading.join, 10)


def _load_ahead(dtype):
    global _module, _modules, _loading
    from ..codegen import native_loops  # lazy: only when loops load
    native = native_loops.load([dtype]) if precompile.eager_is_cached(dtype) else None
    with _state_lock:
        if native is not None:
            _ready.add(dtype)
            _modules = native
            _module = native["_numba_kernels"]
        else:
            _loading = None          # the first call that wants the loops starts loading them its own way


def _start_loading():
    global _loading
    if _loading is None:
        _loading = threading.Thread(target=_load, args=(sorted(_ready),), daemon=True, name="mixnet-eager-load")
        _loading.start()


def _after_fork_in_child():
    """A forked child has none of the parent's threads: a load under way there is not running here, and the lock
    such a thread held would stay held. The child starts its own load when a kernel asks."""
    global _state_lock, _loading
    _state_lock = threading.Lock()
    if _module is None:
        _loading = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def loops_of(name):
    """The loop module `name` ('_numba_kernels', '_epilogue_kernels', '_rnn_kernels') as loaded: for a kernel
    to which numba_kernels() returned a module."""
    return _modules[name]


def _load(dtypes):
    """Publishes the loop modules for `dtypes`: their machine code loaded without Numba where the kernel cache
    holds it (codegen/native_loops.py, ~0.04 s), else the modules imported and their cached code loaded through
    Numba (~0.35 s; the code is then exported for the next process)."""
    global _module, _modules
    from ..codegen import native_loops  # lazy: only when loops load
    native = native_loops.load(dtypes) if dtypes else None
    if native is None:
        native = _load_through_numba(dtypes)
        if dtypes:
            precompile.export_native_elsewhere(dtypes)
    _modules = native
    _module = native["_numba_kernels"]


def _load_through_numba(dtypes):
    """Imports the loop modules and loads the cached machine code of `dtypes`' loops (their warm-up calls find
    everything in Numba's cache)."""
    from ..codegen import numba_load  # lazy: numba_load only when the loops load
    import importlib
    precompile.drop_stale_eager_cache()
    modules = {name: importlib.import_module(f".{name}", __package__) for name in precompile.EAGER_MODULES}
    try:
        for module in modules.values():
            for loop in module.loops():       # the cached machine code, without starting Numba's compiler
                numba_load.load_cached(loop, select=lambda sig: _for_dtypes(sig, dtypes))
            for dtype in dtypes:
                if precompile.eager_is_cached(dtype):
                    module.warm_up(dtype)
    except Exception:         # noqa: BLE001 - a loop that fails to load here compiles on its first call instead
        pass
    return modules


def _for_dtypes(signature, dtypes):
    """Whether a loop's Numba signature may serve one of `dtypes`: it has a float of one of them (a float32 loop
    may take float64 scalars or coefficients: warm_up) or no float at all."""
    floats = {str(getattr(t, "dtype", t)) for t in signature} & {"float32", "float64"}
    return not floats or bool(floats & set(dtypes))


def _collect():
    """A finished child's dtypes become ready. If it failed (no interpreter to start, a crash), they are ready all
    the same: their loops then compile on first use in this process, as with background compilation off."""
    global _compiling
    if _compiling is not None and not _compiling[0].is_alive():
        _ready.update(_compiling[1])
        _compiling = None


def _launch():
    """One child at a time, for every dtype waiting; a dtype asked for while one runs waits for the next."""
    global _compiling
    if _compiling is not None or not _pending:
        return
    cache.usable_dir()        # the child locks it: checked here, so that a warning about it points at the user's call
    dtypes = sorted(_pending)
    _pending.clear()
    thread = threading.Thread(target=precompile.compile_eager_elsewhere, args=(dtypes,), daemon=True,
                              name="mixnet-eager-compile")
    _compiling = (thread, dtypes)
    thread.start()


def wait_compiled():
    """Blocks until no child compiles loops for this process (including dtypes queued behind one), and until the
    loops that are ready are loaded."""
    while True:
        with _state_lock:
            _collect()
            _launch()
            current = _compiling
            if current is None and _ready and _module is None and config.COMPILE_BACKGROUND:
                _start_loading()
            loading = _loading
        if current is not None:
            current[0].join()
        elif loading is not None and loading.is_alive():
            loading.join()       # and look again: a load ahead that failed leaves the loading to start here
        else:
            return


def workspace(slot, shape, dtype):
    dtype = np.dtype(dtype)
    size = 1
    for s in shape:
        size *= s
    nbytes = size * dtype.itemsize
    if nbytes > WORKSPACE_LIMIT:
        return np.empty(shape, dtype)
    buffers = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = {}
    buf = buffers.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = buffers[slot] = np.empty(nbytes, np.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)
