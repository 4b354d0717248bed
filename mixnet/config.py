"""Environment flags. Each flag is documented here and read here only, and every read is at call time: a
notebook can set `os.environ["MIXNET_LOG_COMPILES"] = "1"` (or `mx.config.LOG_COMPILES = True`) and the next
hybridize trace logs, with no restart. Read as attributes, `config.FUSE`; assigning one (`config.FUSE = False`)
overrides the environment for this process until `del config.FUSE` or until the environment variable changes
(whichever was set last wins). A flag takes effect where it is used: FUSE,
EPILOGUE, INPLACE and FUSE_MIN_SIZE when a hybridized block builds a plan (its first call per signature),
LOG_COMPILES at each trace, DEBUG_ERRORS when an op fails, and so on. Switches are on for any value except "",
0, false, no and off (any case).

MIXNET_DEBUG_ERRORS=1   keep the underlying numpy/cupy exception chained under mixnet's operator errors
                        (by default the OpError alone is shown: it names the op, shapes, dtypes and your line).
MIXNET_FULL_TRACEBACK=1 tracebacks of mixnet's errors keep mixnet's own frames (by default an error reaching your code
                        from an op call, a Block call or backward() shows only your frames and one line of mixnet's;
                        _source.hide_internals). For debugging mixnet itself.
MIXNET_FUSE=0           hybridized graphs run without elementwise fusion (the debug switch; results are within the
                        fused kernels' stated ulp bounds of each other).
MIXNET_FUSE_REDUCE=0    an elementwise group read only by a sum, mean or _sum_to over all, leading or trailing axes
                        is not fused with it (by default the kernel adds its values into the reduced result
                        instead of writing them; symbol/fuse.py). Results agree within float rounding.
MIXNET_INPLACE=0        compiled graphs never write an elementwise result over an input that dies with it (the
                        debug switch for in-place reuse; results are identical either way).
MIXNET_LOG_COMPILES=1   print every hybridize trace: the block, how many graphs it has, and why it traced again
                        (first call, new shapes, dtypes, argument structure, device or training mode).
MIXNET_EPILOGUE=0       hybridized graphs run without the GEMM epilogue pass (symbol/epilogue.py: a Dense layer's bias
                        and activation fused into its GEMM's node, an activation's backward and the bias gradient
                        into one pass); results are the same within float rounding either way.
MIXNET_HYBRIDIZE_CHECK=1
                        every hybridize() checks its first calls as hybridize(check=True) does.
MIXNET_SHOW_CODE=1      print the straight-line Python of every compiled graph (and every fused kernel's source).
MIXNET_VERIFY=1         verify graphs structurally after every graph pass.
MIXNET_FUSE_MIN_SIZE=N  elementwise groups whose result has fewer than N elements are not fused (default 16384:
                        below that a fused kernel's call overhead costs more than the memory passes it saves).
MIXNET_COMPILE_BACKGROUND=0
                        compile fused kernels before a hybridized block's first call returns. By default (1) the
                        first calls run the unfused compiled graph while the kernels compile in a background
                        thread, and later calls switch to the fused graph once it is ready.
MIXNET_NUMBA=0          never import Numba (~100 MB of memory and ~1 s of start-up): no fused CPU kernels and no
                        eager Numba loops (convolution, pooling, norms, softmax, RNN steps, optimizer updates); every
                        op runs its generic numpy code, with the same results as MIXNET_FUSE=0 with the fast paths
                        off. For inference-only scripts. contrib.Proposal's NMS loop still uses Numba (no numpy
                        version). Fusion on GPUs (CUDA through cupy) is unaffected.
MIXNET_CACHE_DIR=path   where generated kernels and their Numba cache live (default ~/.cache/mixnet/kernels). It
                        must be your own and writable by you only (or sticky): otherwise one warning, and kernels
                        compile in memory without a disk cache (codegen/cache.py).
MIXNET_PARALLEL_THRESHOLD=N
                        fused CPU kernels run their serial variant below N elements (default 1e5) and the parallel
                        one from N on (codegen/numba_cpu.py).
MIXNET_CODEGEN_EXACT=1  fused CPU kernels call libm through numpy's scalar functions instead of the vectorizable
                        approximations (codegen/approx.py), bit-for-bit with numpy at some speed.
MIXNET_CACHE_MAX_MB=N   size cap of that directory in MiB (default 512): the least recently used kernels are
                        deleted when a new one would pass it.
MIXNET_MAX_ELEMENTS=N   the most elements one array may have (default 2**40, about 10**12). Shape inference refuses a
                        larger (or negative) shape with an MXNetError naming the op and the shape, and so do the ops
                        that allocate an array of a shape taken from attributes (zeros, ones, full, arange, tile,
                        repeat, broadcast_to, one_hot, ...), before allocating anything.
MIXNET_DIST_BUCKET_MB=N  a distributed KVStore's push/pushpull of several keys sums them over the ranks in flat
                        buckets of at most N MiB, one MPI Allreduce each (default 25; distributed/comm.py).
MXNET_ELIMINATE_COMMON_EXPR=0
                        MXNet's switch: Symbol.bind/simple_bind do not merge identical subexpressions (read at
                        bind, as MXNet's graph executor reads it).
MXNET_BACKWARD_DO_MIRROR=1
                        MXNet's mirror option, for every hybridized block (per block: hybridize(mirror=True)):
                        elementwise results are recomputed in the backward pass instead of kept from the
                        forward, trading one more pass over memory for less training memory.

One flag is read elsewhere: MIXNET_MXNET_ALIAS=0 (no `import mxnet` alias) is read by _mxnet_alias_finder.py,
which runs from a .pth file at interpreter start-up, before (and without) importing mixnet.
"""
import os
import sys
import types

_FALSE = ("", "0", "false", "no", "off")


def _switch(text):
    return text.strip().lower() not in _FALSE


def _count(text):
    return int(float(text))


def _positive_count(text):
    try:
        value = int(float(text))
    except (ValueError, OverflowError):
        value = -1
    if value < 1:
        raise ValueError("is not a positive number")
    return value


# The dict behind os.environ (CPython keeps every os.environ write in it, monkeypatch.setenv included), read
# directly: os.environ.get of an unset name raises and catches a KeyError inside, ~1-5 us, too slow for flags
# read on every op (MAX_ELEMENTS); a dict lookup is ~50 ns. Elsewhere, os.environ.get.
_ENVIRON = getattr(os.environ, "_data", None)
if _ENVIRON is None or not hasattr(os.environ, "encodekey") or not hasattr(os.environ, "decodevalue"):
    _ENVIRON = None


class _Flag:
    """One flag: parsed from the environment at each read (the parse is memoized per raw value, so a read costs one
    dict lookup), unless the program assigned it. `warn`: a value that does not parse warns once and gives the
    default; otherwise the parse error is raised."""

    def __init__(self, env, parse, default, warn=False):
        self.env, self.parse, self.default, self.warn = env, parse, default, warn
        self._key = os.environ.encodekey(env) if _ENVIRON is not None else env
        self._raw, self._value = None, default

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, module, owner=None):
        if module is None:
            return self
        raw = _ENVIRON.get(self._key) if _ENVIRON is not None else os.environ.get(self.env)
        if _overrides and self.name in _overrides:
            value, raw_then = _overrides[self.name]
            if raw == raw_then:
                return value
            _overrides.pop(self.name, None)           # the environment changed since: it was set last
        if raw is None:
            return self.default
        if raw != self._raw:
            text = os.environ.decodevalue(raw) if _ENVIRON is not None else raw
            self._value, self._raw = self._parsed(text), raw
        return self._value

    def _parsed(self, raw):
        if self.parse is not _switch and not raw.strip():     # set but empty: as if unset
            return self.default
        if not self.warn:
            return self.parse(raw)
        try:
            return self.parse(raw)
        except ValueError:
            from ._source import warn   # local: _source reads flags from this module
            warn(f"{self.env}={raw!r} is not a positive number; using {self.default}")
            return self.default

    def __set__(self, module, value):
        # Whichever was set last wins: the assignment holds until the environment variable changes. So a saved
        # value put back (`old = config.FUSE; ...; config.FUSE = old`), or pytest's monkeypatch undoing a setattr
        # and a setenv in either order, leaves the flag following the environment again instead of freezing it.
        # Assigning the environment's own value is no override at all.
        _overrides.pop(self.name, None)
        if value != self.__get__(module):
            raw = _ENVIRON.get(self._key) if _ENVIRON is not None else os.environ.get(self.env)
            _overrides[self.name] = (value, raw)

    def __delete__(self, module):
        _overrides.pop(self.name, None)


class _Config(types.ModuleType):
    DEBUG_ERRORS = _Flag("MIXNET_DEBUG_ERRORS", _switch, False)
    FULL_TRACEBACK = _Flag("MIXNET_FULL_TRACEBACK", _switch, False)
    FUSE = _Flag("MIXNET_FUSE", _switch, True)
    FUSE_REDUCE = _Flag("MIXNET_FUSE_REDUCE", _switch, True)
    INPLACE = _Flag("MIXNET_INPLACE", _switch, True)
    EPILOGUE = _Flag("MIXNET_EPILOGUE", _switch, True)
    LOG_COMPILES = _Flag("MIXNET_LOG_COMPILES", _switch, False)
    HYBRIDIZE_CHECK = _Flag("MIXNET_HYBRIDIZE_CHECK", _switch, False)
    SHOW_CODE = _Flag("MIXNET_SHOW_CODE", _switch, False)
    VERIFY = _Flag("MIXNET_VERIFY", _switch, False)
    FUSE_MIN_SIZE = _Flag("MIXNET_FUSE_MIN_SIZE", _count, 16384)
    COMPILE_BACKGROUND = _Flag("MIXNET_COMPILE_BACKGROUND", _switch, True)
    NUMBA = _Flag("MIXNET_NUMBA", _switch, True)
    PARALLEL_THRESHOLD = _Flag("MIXNET_PARALLEL_THRESHOLD", _count, 100_000)
    CODEGEN_EXACT = _Flag("MIXNET_CODEGEN_EXACT", _switch, False)
    CACHE_DIR = _Flag("MIXNET_CACHE_DIR", str, None)
    CACHE_MAX_MB = _Flag("MIXNET_CACHE_MAX_MB", float, 512.0)
    DIST_BUCKET_MB = _Flag("MIXNET_DIST_BUCKET_MB", float, 25.0)
    MAX_ELEMENTS = _Flag("MIXNET_MAX_ELEMENTS", _positive_count, 2 ** 40, warn=True)
    ELIMINATE_COMMON_EXPR = _Flag("MXNET_ELIMINATE_COMMON_EXPR", _switch, True)
    MIRROR = _Flag("MXNET_BACKWARD_DO_MIRROR", _switch, False)


def _max_elements():
    """MIXNET_MAX_ELEMENTS parsed now, not memoized (a value that is not a positive number warns each time)."""
    flag = _Config.MAX_ELEMENTS
    raw = os.environ.get(flag.env)
    return flag.default if raw is None else flag._parsed(raw)


_overrides = {}
sys.modules[__name__].__class__ = _Config
