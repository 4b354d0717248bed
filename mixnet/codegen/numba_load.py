"""Loading Numba's cached machine code without starting Numba's compiler.

A Numba dispatcher loads a cached overload through `Dispatcher.compile`, which first readies the whole compiler:
`target_context.refresh()` imports and registers every lowering Numba has (numpy, linalg, random, typed
containers, ... and, through numba.np.linalg, scipy.linalg). Measured on the 2-vCPU machine, loading the eager
loops with a warm cache: `import numba` 0.46-0.53 s (+51 MB RSS), that refresh 0.58-0.61 s (+48 MB) plus scipy
0.32-0.36 s (+14 MB), then the cache loads themselves 0.25 s (+8 MB) for all 37 loops. None of the refresh is
needed to run machine code that is already compiled: rebuilding a cached overload needs the code generator (the
LLVM JIT), Numba's runtime symbols (NRT) and the function's own reload hooks (a parallel kernel's starts the
threading layer). `load_cached` does only that, so a process whose kernels are all cached never pays for the
compiler; anything not in the cache still compiles through Numba's usual path, which refreshes then.

It uses three names private to Numba (`Dispatcher._cache`, `Cache._load_overload`, `IndexDataCacheFile.
_load_index`): where they are missing or fail (another Numba version, a broken cache entry), `load_cached`
loads nothing and says so, and the caller's usual `compile` (or first call) does the work as before.
"""
import threading

__all__ = ["load_cached"]

_failed = threading.Event()       # set once this Numba cannot be driven this way: stop trying


def load_cached(dispatcher, signatures=None, select=None):
    """Adds to `dispatcher` the overloads its disk cache holds (those of `signatures`, or every one in the cache's
    index for which `select(signature)` is true, default all) without readying Numba's compiler. Returns how many of them the dispatcher now has (0: none, also
    when this Numba cannot be driven this way, or at an entry it cannot read: Numba's own path then meets it)."""
    if _failed.is_set():
        return 0
    from numba.core import caching, sigutils
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.runtime import rtsys
    have = 0
    try:
        cache = dispatcher._cache
        if isinstance(cache, caching.NullCache):      # cache=False (no usable cache directory): nothing to load
            return 0
        target = dispatcher.targetctx
        with global_compiler_lock:
            if signatures is None:
                signatures = [key[0] for key in cache._cache_file._load_index() if select is None or select(key[0])]
            for sig in signatures:
                args, _ = sigutils.normalize_signature(sig)
                if tuple(args) not in dispatcher.overloads:
                    rtsys.initialize(target)
                    cres = cache._load_overload(sig, target)
                    if cres is None:
                        continue
                    if not cres.objectmode:
                        target.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
                    dispatcher.add_overload(cres)
                    dispatcher._cache_hits[sig] += 1
                have += 1
    except (AttributeError, TypeError):     # not this Numba's internals: stop trying, compile as Numba does
        _failed.set()
    except Exception:     # noqa: BLE001, S110 - an unreadable cache entry: the caller's compile path deals with it
        pass
    return have
