"""Environment flags. Each flag is documented here and read here only, and every read is at call time: a
notebook can set `os.environ["MIXNET_LOG_COMPILES"] = "1"` (or `mx.config.set(LOG_COMPILES=True)`) and the next
hybridize trace logs, with no restart. A flag takes effect where it is used: FUSE, EPILOGUE, INPLACE and
FUSE_MIN_SIZE when a hybridized block builds a plan (its first call per signature), LOG_COMPILES at each trace,
DEBUG_ERRORS when an op fails, and so on. Switches are on for any value except "", 0, false, no and off (any case).

At run time (names as below, with or without the MIXNET_ prefix, in any case):
    mx.config.set(FUSE=False, FUSE_MIN_SIZE=1000)   # checked by the flag's parser; None: back to the environment
    mx.config.get("FUSE")                           # or mx.config.FUSE
    with mx.config.override(MIXNET_FUSE=False): ... # the previous state comes back on exit
    print(mx.config.describe())                     # each flag, its value and where it came from (default/env/set)
A value set so (or assigned, `config.FUSE = False`) overrides the environment until `del config.FUSE`,
`set(FUSE=None)` or until the environment variable changes (whichever was set last wins). Settings are
process-wide, not per thread: a background kernel compile or a DataLoader thread sees them too, and an `override`
block in one thread changes the flag for every thread while it runs.

Logging. mixnet logs through `logging.getLogger("mixnet")` and its children, named by module
(`mixnet.gluon.cached_graph`, `mixnet.codegen.numba_cpu`, `mixnet.lr_scheduler`, ...); the library adds only a
NullHandler and never configures logging. LOG_COMPILES and SHOW_CODE are DEBUG records forced out by their switch:
with the switch on they reach your handlers whatever the loggers' levels, or stderr when your program configured no
logging; with it off, they appear only where you set a mixnet logger to DEBUG yourself (mixnet/_logging.py).

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
MIXNET_LOG_COMPILES=1   log every hybridize trace: the block, how many graphs it has, and why it traced again
                        (first call, new shapes, dtypes, argument structure, device or training mode; logger
                        mixnet.gluon.cached_graph).
MIXNET_EPILOGUE=0       hybridized graphs run without the GEMM epilogue pass (symbol/epilogue.py: a Dense layer's bias
                        and activation fused into its GEMM's node, an activation's backward and the bias gradient
                        into one pass); results are the same within float rounding either way.
MIXNET_HYBRIDIZE_CHECK=1
                        every hybridize() checks its first calls as hybridize(check=True) does.
MIXNET_SHOW_CODE=1      log the straight-line Python of every compiled graph (and every fused kernel's source;
                        loggers mixnet.symbol.compile, mixnet.codegen.numba_cpu and mixnet.codegen.cupy_gpu).
MIXNET_VERIFY=1         verify graphs structurally after every graph pass.
MIXNET_FUSE_MIN_SIZE=N  elementwise groups whose result has fewer than N elements are not fused (default 16384:
                        below that a fused kernel's call overhead costs more than the memory passes it saves).
MIXNET_COMPILE_BACKGROUND=0
                        compile fused kernels before a hybridized block's first call returns. By default (1) the
                        first calls run the unfused compiled graph while the kernels compile in a background
                        thread, and later calls switch to the fused graph once it is ready.
MIXNET_LOAD_AHEAD=0     do not start loading the eager loops at `import mixnet`. By default (1), where the kernel cache
                        holds them exported for loading without Numba (a process on this machine ran them before),
                        a background thread loads them from the import on (~0.04 s of CPU, ~50 MB of memory), so
                        the first calls find them in; without an export, nothing happens until a kernel asks.
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
import contextlib
import numbers
import os
import sys
import types

from ._source import warn
from .base import MXNetError

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


# What each parser accepts, for the error of a value that is not one.
_EXPECTED = {_switch: "a switch: True/False, 1/0, or a string such as '1', 'off'", _count: "a whole number",
             _positive_count: "a positive whole number", float: "a number", str: "a path"}


class ConfigError(MXNetError, ValueError):
    """An unknown flag name, or a value the flag's parser refuses (mx.config.set / override / assignment)."""


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
            warn(f"{self.env}={raw!r} is not a positive number; using {self.default}")
            return self.default

    def coerce(self, value):
        """`value` as this flag holds it: a string goes through the flag's parser (as the environment's text
        would, except that a value the parser refuses is an error, never the default); a bool, number or path
        must be one the parser could have given. Raises ConfigError."""
        try:
            if isinstance(value, str):
                if self.parse is not _switch and self.parse is not str and not value.strip():
                    raise ValueError("is empty")
                try:
                    return self.parse(value)
                except ValueError as err:     # float()'s own message would name float, not the flag's type
                    raise ValueError(err if self.parse is _positive_count else "is not a number") from None
            if self.parse is _switch:
                if isinstance(value, numbers.Integral) and value in (0, 1):
                    return bool(value)
            elif self.parse is str:
                if isinstance(value, os.PathLike):
                    return os.fspath(value)
            elif isinstance(value, numbers.Real) and not isinstance(value, bool):
                if self.parse is float:
                    return float(value)
                if not float(value).is_integer():
                    raise ValueError("is not a whole number")
                if self.parse is _positive_count and value < 1:
                    raise ValueError("is not a positive number")
                return int(value)
            raise ValueError(f"is of type {type(value).__name__}")
        except (ValueError, OverflowError) as err:
            raise ConfigError(f"mx.config: {self.name} ({self.env}) = {value!r:.80}: {err}; expected "
                              f"{_EXPECTED[self.parse]}") from None

    def raw(self):
        """The environment variable's text, or None when unset."""
        return os.environ.get(self.env)

    def source(self):
        """Where the value read now comes from: 'set' (mx.config.set, override or an assignment), 'env' or
        'default' (an environment variable set to an empty string counts as unset)."""
        entry = _overrides.get(self.name)
        raw = _ENVIRON.get(self._key) if _ENVIRON is not None else os.environ.get(self.env)
        if entry is not None and entry[1] == raw:
            return "set"
        text = self.raw()
        return "default" if text is None or (self.parse is not _switch and not text.strip()) else "env"

    def __set__(self, module, value):
        # Whichever was set last wins: the assignment holds until the environment variable changes. So a saved
        # value put back (`old = config.FUSE; ...; config.FUSE = old`), or pytest's monkeypatch undoing a setattr
        # and a setenv in either order, leaves the flag following the environment again instead of freezing it.
        # Assigning the environment's own value is no override at all, and None puts the flag back to it.
        value = None if value is None else self.coerce(value)
        _overrides.pop(self.name, None)
        if value is not None and value != self.__get__(module):
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
    LOAD_AHEAD = _Flag("MIXNET_LOAD_AHEAD", _switch, True)
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


def _flags():
    return [flag for flag in vars(_Config).values() if isinstance(flag, _Flag)]


def _flag(name):
    """The flag called `name`: its attribute name or its environment variable's, in any case."""
    key = str(name).upper()
    for flag in _flags():
        if key in (flag.name, flag.env):
            return flag
    known = ", ".join(flag.name for flag in _flags())
    raise ConfigError(f"mx.config: no flag named {name!r:.80}; the flags are {known} (each also by its "
                      "environment variable's name, e.g. MIXNET_FUSE)")


def _module():
    return sys.modules[__name__]


def set(**flags):     # shadows the builtin in this module, which uses none: `mx.config.set(...)` reads best
    """Sets flags for this process: `mx.config.set(FUSE=False, MIXNET_FUSE_MIN_SIZE=1000)`. Every name and value is
    checked before any is set (ConfigError naming the valid flags or the expected value); a value of None puts the
    flag back to its environment variable or default. Process-wide, as an assignment `config.FUSE = False` is."""
    checked = [(flag, None if value is None else flag.coerce(value))
               for flag, value in ((_flag(name), value) for name, value in flags.items())]
    for flag, value in checked:
        flag.__set__(_module(), value)


def get(name):
    """The value of flag `name` now (`mx.config.get("FUSE")` is `mx.config.FUSE`)."""
    return _flag(name).__get__(_module())


@contextlib.contextmanager
def override(**flags):
    """`with mx.config.override(FUSE=False): ...` sets the flags as `set` does, and on exit puts back exactly what
    was there before (an earlier setting, or following the environment). Process-wide, not per thread: other
    threads see the overridden values while the block runs. Nested blocks unwind in order."""
    names = [_flag(name).name for name in flags]
    saved = {name: _overrides.get(name) for name in names}
    set(**flags)
    try:
        yield
    finally:
        for name, entry in saved.items():
            if entry is None:
                _overrides.pop(name, None)
            else:
                _overrides[name] = entry


def flag_table():
    """One dict per flag: name, env (its variable), value, default, source ('default', 'env' or 'set') and raw
    (the variable's text, None when unset)."""
    module = _module()
    return [{"name": flag.name, "env": flag.env, "value": flag.__get__(module), "default": flag.default,
             "source": flag.source(), "raw": flag.raw()} for flag in _flags()]


def describe(changed_only=False):
    """A table of the flags: variable, value, where the value comes from (default; env: the environment variable;
    set: mx.config.set, override or an assignment) and the default. `changed_only`: the flags not at their
    default source."""
    rows = [row for row in flag_table() if not changed_only or row["source"] != "default"]
    if not rows:
        return "every flag at its default"
    cells = [(row["env"], repr(row["value"]), repr(row["default"]),
              f"env {row['raw']!r:.60}" if row["source"] == "env" else row["source"]) for row in rows]
    widths = [max(len(text) for text in column) for column in zip(("flag", "value", "default", ""), *cells)]
    return "\n".join("  ".join(text.ljust(w) for text, w in zip(line, widths)).rstrip()
                     for line in [("flag", "value", "default", "from")] + cells)


_overrides = {}
sys.modules[__name__].__class__ = _Config
