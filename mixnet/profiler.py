"""`mx.profiler`: MXNet 1.x's profiler API, timing every operator call.

    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename="profile.json")
    mx.profiler.set_state("run")
    ... train ...
    mx.profiler.set_state("stop")
    print(mx.profiler.dumps())     # per-op count, total, min, max, avg in ms (MXNet's table layout)
    mx.profiler.dump()             # profile.json for chrome://tracing or ui.perfetto.dev

How it records: while the profiler runs (state 'run', not paused) the one dispatch door
(`mixnet.ops.dispatch.apply`) sees a recorder in `dispatch.PROFILER` and times each eager op; a hybridized
graph (symbol/compile.py) runs a copy of its code whose kernels are timed one by one. When the profiler is
off, both cost a single `is None` check. Times are wall times at the call: on a GPU (cupy launches kernels
asynchronously) an op's time is its launch, not its execution.

With profile_memory, the bytes of every array an eager op allocates count as in use on its device from the
op until the array is freed; each change is a "Memory: <device>" counter event in the trace and a row of the
"Device Storage" table (kB), as MXNet's storage profiler shows.

User objects - Task, Frame, Event (durations), Counter (values), Marker (instants) - appear in the trace and,
except markers, in the table, under the category MXNet uses: the domain's name, "<domain>,frame", "event",
"<domain>,instant_marker". Everything is kept in memory until `dump()`: a long run profiled whole holds one
small record per op call.

Deliberate differences from MXNet 1.9.1 (docs/compatibility.md): mixnet has no C API and no storage manager,
so `profile_api` is accepted but records nothing (no "MXNET_C_API" section), and memory counts the
arrays ops make (not a pool's reservations, nor hybridized graphs' internal buffers); `dump()` always writes a complete JSON file (MXNet's `finished=False` leaves it unterminated); a
counter's table row holds its values (count of updates, last, min, max, mean), not times; a memory row's
average is the mean of the in-use values (MXNet prints half the max-min range).
"""
import atexit
import contextlib
import contextvars
import json
import os
import threading
import time
import weakref

from ._source import warn
from ._atomic import atomic_open
from .base import MXNetError
from .ops import dispatch

__all__ = ["set_config", "set_state", "dump", "dumps", "pause", "resume", "scope", "Domain", "Task", "Frame",
           "Event", "Counter", "Marker", "profiler_set_config", "profiler_set_state", "dump_profile"]

# set_config's keys and MXNet's defaults for them (a set_config call resets the keys it does not name).
_DEFAULTS = {"profile_all": False, "profile_symbolic": True, "profile_imperative": True, "profile_memory": True,
             "profile_api": True, "filename": "profile.json", "continuous_dump": True, "dump_period": 1.0,
             "aggregate_stats": False, "profile_process": "worker"}
_SORT_KEYS = ("total", "avg", "min", "max", "count")
_MARKER_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}
_TABLE_HEAD = "\nProfile Statistics:\n\tNote the difference in units for different entries.\n"
_STORAGE = "Device Storage"

_scope = contextvars.ContextVar("mixnet_profiler_scope", default="<unk>:")


def _now():
    return time.perf_counter_ns()


def _flag(key, value):
    """A boolean config value; MXNet passes them as str(value), so "True"/"0" are accepted too."""
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise MXNetError(f"profiler.set_config: {key} must be a boolean, got {value!r}")
    return bool(value)


class _Stat:
    """Aggregate of one name in one category: durations in nanoseconds, or a counter's values."""
    __slots__ = ("count", "total", "min", "max", "last", "counter")

    def __init__(self, counter=False):
        self.count, self.total, self.min, self.max, self.last = 0, 0.0, float("inf"), float("-inf"), 0.0
        self.counter = counter

    def add(self, value):
        self.count += 1
        self.total += value
        self.last = value
        self.min = min(self.min, value)
        self.max = max(self.max, value)

    def row(self):
        """(count, total, min, max, avg) as shown: ms for durations, the values themselves for a counter."""
        if self.counter:
            return self.count, self.last, self.min, self.max, self.total / self.count
        ms = 1e-6
        return self.count, self.total * ms, self.min * ms, self.max * ms, self.total * ms / self.count


class _Profiler:
    """The process's profiler: its config, state, trace events and aggregates, guarded by one lock."""

    def __init__(self):
        self.lock = threading.RLock()
        self.config = dict(_DEFAULTS)
        self.running = False
        self.paused = False
        self.output_pending = False    # ran since the last finished dump: the exit hook writes the file
        self.events = []               # Chrome trace events (dicts), in record order
        self.stats = {}                # category -> {name: _Stat}, only with aggregate_stats
        self.local = threading.local()
        self.imperative = self.symbolic = self.memory = True
        self.in_use = {}               # device name -> bytes of live arrays counted by the memory profiler

    # -- configuration and state -------------------------------------------------------------------------
    def set_config(self, kwargs):
        unknown = sorted(set(kwargs) - set(_DEFAULTS))
        if unknown:
            raise MXNetError(f"profiler.set_config: unknown argument(s) {unknown}; possible arguments: "
                             f"{sorted(_DEFAULTS)}")
        config = dict(_DEFAULTS)
        for key, value in kwargs.items():
            if key == "filename":
                value = os.fspath(value)
            elif key == "dump_period":
                value = float(value)
            elif key == "profile_process":
                value = self._process(value)
            else:
                value = _flag(key, value)
            config[key] = value
        with self.lock:
            self.config = config
            every = config["profile_all"]
            self.imperative = every or config["profile_imperative"]
            self.symbolic = every or config["profile_symbolic"]
            self.memory = every or config["profile_memory"]
            if not config["aggregate_stats"]:
                self.stats = {}
            self._publish()

    @staticmethod
    def _process(profile_process):
        if profile_process == "worker":
            return profile_process
        if profile_process == "server":
            raise MXNetError("profiler: profile_process='server' profiles a distributed kvstore's server; "
                             "mixnet's kvstores have no server process")
        raise MXNetError(f"profiler: profile_process must be 'worker' or 'server', got {profile_process!r}")

    def set_state(self, state):
        if state not in ("run", "stop"):
            raise MXNetError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
        with self.lock:
            self.running = state == "run"
            self.paused = False
            if self.running:
                self.output_pending = True
            self._publish()

    def set_paused(self, paused):
        with self.lock:
            self.paused = paused
            self._publish()

    def active(self):
        return self.running and not self.paused

    def _publish(self):
        """Shows the recorder to the dispatch door only while ops are to be timed."""
        on = self.active() and (self.imperative or self.symbolic)
        dispatch.PROFILER = self if on else None

    # -- recording -----------------------------------------------------------------------------------------
    def wants(self, op):
        """Called by dispatch.apply: whether to time this call. The call `time_op` makes back into apply
        consumes a one-shot token, so it runs the op instead of timing it again; ops nested inside it (a
        control-flow body, a custom op) are timed on their own."""
        local = self.local
        if getattr(local, "reentry", False):
            local.reentry = False
            return False
        return self.imperative

    def time_op(self, op, apply, inputs, attrs):
        self.local.reentry = True
        start = _now()
        try:
            result = apply(op, inputs, attrs)
        finally:
            self.local.reentry = False
            self.duration("operator", op.name, start, _now())
        if self.memory:
            held = {id(_root(x._data)) for x in inputs}
            for out in result if type(result) is tuple else (result,):
                self._track(out, held)
        return result

    def _track(self, array, held):
        """Counts `array`'s bytes as in use until the array is freed, unless it views an input's buffer."""
        data = array._data
        if id(_root(data)) in held or not getattr(data, "nbytes", 0):
            return
        device = f"Memory: {array._ctx.device_type}/{array._ctx.device_id}"
        self._storage(device, data.nbytes)
        weakref.finalize(array, self._storage, device, -data.nbytes).atexit = False

    def _storage(self, device, change):
        with self.lock:
            used = self.in_use[device] = self.in_use.get(device, 0) + change
        self.counter(_STORAGE, device, used)

    def timed_kernel(self, name, kernel):
        """`kernel` timed under `name` while the profiler runs with symbolic profiling (compiled graphs)."""
        def timed(*args, **kwargs):
            prof = dispatch.PROFILER
            if prof is None or not prof.symbolic:
                return kernel(*args, **kwargs)
            start = _now()
            try:
                return kernel(*args, **kwargs)
            finally:
                prof.duration("operator", name, start, _now())
        return timed

    def duration(self, category, name, start, end):
        event = {"name": name, "cat": category, "ph": "X", "ts": start / 1000, "dur": (end - start) / 1000,
                 "pid": os.getpid(), "tid": threading.get_ident()}
        scope_name = _scope.get()
        if scope_name != "<unk>:":
            event["args"] = {"scope": scope_name}
        with self.lock:
            if not self.active():
                return
            self.events.append(event)
            if self.config["aggregate_stats"]:
                self._stat(category, name).add(end - start)

    def counter(self, category, name, value):
        with self.lock:
            if not self.active():
                return
            self.events.append({"name": name, "cat": category, "ph": "C", "ts": _now() / 1000,
                                "args": {name: value}, "pid": os.getpid(), "tid": threading.get_ident()})
            if self.config["aggregate_stats"]:
                self._stat(category, name, counter=True).add(value)

    def instant(self, category, name, scope_code):
        with self.lock:
            if not self.active():
                return
            self.events.append({"name": name, "cat": category, "ph": "i", "s": scope_code, "ts": _now() / 1000,
                                "pid": os.getpid(), "tid": threading.get_ident()})
            if self.config["aggregate_stats"]:
                self.stats.setdefault(category, {})    # MXNet lists a marker's category, with no rows

    def _stat(self, category, name, counter=False):
        table = self.stats.setdefault(category, {})
        stat = table.get(name)
        if stat is None:
            stat = table[name] = _Stat(counter)
        return stat

    # -- output ----------------------------------------------------------------------------------------------
    def dump(self, finished):
        with self.lock:
            if not self.output_pending:
                return
            events = list(self.events)
            filename = self.config["filename"]
            if finished:
                self.events = []
                self.output_pending = False
                self.running = False
                self._publish()
        pid = os.getpid()
        meta = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"mixnet (pid {pid})"}}]
        meta += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}
                 for tid, name in _thread_names({e["tid"] for e in events})]
        with atomic_open(filename, "w") as f:
            json.dump({"traceEvents": meta + events, "displayTimeUnit": "ms"}, f)
            f.write("\n")

    def dumps(self, reset, fmt, sort_by, ascending):
        if fmt not in ("table", "json"):
            raise MXNetError(f"profiler.dumps: format must be 'table' or 'json', got {fmt!r}")
        if sort_by not in _SORT_KEYS:
            raise MXNetError(f"profiler.dumps: sort_by must be one of {list(_SORT_KEYS)}, got {sort_by!r}")
        if not isinstance(ascending, bool) or not isinstance(reset, bool):
            raise MXNetError(f"profiler.dumps: reset and ascending must be True or False, got "
                             f"reset={reset!r}, ascending={ascending!r}")
        with self.lock:
            if not self.config["aggregate_stats"]:
                return ""
            tables = {cat: _sorted_rows(rows, sort_by, ascending) for cat, rows in sorted(self.stats.items())}
            if reset:
                self.stats = {}
        return _table(tables) if fmt == "table" else _json(tables)


def _root(data):
    """The buffer that owns `data`'s memory (numpy and cupy views chain through .base)."""
    while getattr(data, "base", None) is not None:
        data = data.base
    return data


def _thread_names(tids):
    names = {t.ident: t.name for t in threading.enumerate()}
    return [(tid, names.get(tid, f"thread {tid}")) for tid in sorted(tids)]


def _sorted_rows(rows, sort_by, ascending):
    """[(name, (count, total, min, max, avg))] in MXNet's order: by the key, largest first (smallest with
    ascending); equal keys by name, last first (MXNet pops a max-heap of (key, name) pairs)."""
    column = {"count": 0, "total": 1, "min": 2, "max": 3, "avg": 4}[sort_by]
    shown = [(name, stat.row()) for name, stat in rows.items()]
    sign = -1 if ascending else 1
    return sorted(shown, key=lambda item: (sign * item[1][column], item[0]), reverse=True)


def _table(tables):
    lines = [_TABLE_HEAD]
    for category, rows in tables.items():
        lines.append(f"{category}\n=================\n")
        if category == _STORAGE:         # MXNet's memory table: no total column, kB
            lines.append(f"{'Name':<25}{'Total Count':>16} {'Min Use  (kB)':>16} {'Max Use  (kB)':>16} "
                         f"{'Avg Use  (kB)':>16}\n")
            lines.append(f"{'----':<25}{'-----------':>16} {'-------------':>16} {'-------------':>16} "
                         f"{'-------------':>16}\n")
            for name, (count, _, low, high, avg) in rows:
                lines.append(f"{name:<25}{count:>16} {low / 1000:>16.4f} {high / 1000:>16.4f} "
                             f"{avg / 1000:>16.4f}\n")
        else:
            lines.append(f"{'Name':<25}{'Total Count':>16} {'Time (ms)':>16} {'Min Time (ms)':>16} "
                         f"{'Max Time (ms)':>16} {'Avg Time (ms)':>16}\n")
            lines.append(f"{'----':<25}{'-----------':>16} {'---------':>16} {'-------------':>16} "
                         f"{'-------------':>16} {'-------------':>16}\n")
            for name, (count, total, low, high, avg) in rows:
                lines.append(f"{name:<25}{count:>16} {total:>16.4f} {low:>16.4f} {high:>16.4f} {avg:>16.4f}\n")
        lines.append("\n")
    return "".join(lines)


def _json(tables):
    def four(value):             # MXNet prints 4 significant digits
        return float(f"{value:.4g}")
    times = {category: {name: {"Count": count, "Total": four(total), "Min": four(low), "Max": four(high),
                               "Avg": four(avg)}
                        for name, (count, total, low, high, avg) in rows}
             for category, rows in tables.items() if category != _STORAGE}
    memory = {category: {name: {"Count": count, "Min": four(low / 1000), "Max": four(high / 1000),
                                "Avg": four(avg / 1000)}
                         for name, (count, _, low, high, avg) in rows}
              for category, rows in tables.items() if category == _STORAGE}
    return json.dumps({"Time": times, "Memory": memory, "Unit": {"Time": "ms", "Memory": "kB"}}, indent=4)


_PROFILER = _Profiler()


@atexit.register
def _dump_at_exit():
    """MXNet writes the trace when the process ends if the profiler ran since the last finished dump."""
    try:
        _PROFILER.dump(finished=True)
    except OSError as err:
        warn(f"mixnet profiler: could not write {_PROFILER.config['filename']!r} at exit: {err}")


# ---- the module-level API (MXNet 1.9.1's names and signatures) ---------------------------------------------

def set_config(**kwargs):
    """Configures the profiler (keywords only): filename, profile_all, profile_symbolic, profile_imperative,
    profile_memory, profile_api, continuous_dump, dump_period, aggregate_stats, profile_process. Keys not
    given take MXNet's defaults again."""
    _PROFILER.set_config(kwargs)


def set_state(state="stop", profile_process="worker"):
    """'run' starts recording, 'stop' stops it (what was recorded is kept for dump/dumps)."""
    _PROFILER._process(profile_process)
    _PROFILER.set_state(state)


def pause(profile_process="worker"):
    """Stops recording until `resume()`; the profiler stays in state 'run'."""
    _PROFILER._process(profile_process)
    _PROFILER.set_paused(True)


def resume(profile_process="worker"):
    _PROFILER._process(profile_process)
    _PROFILER.set_paused(False)


def dump(finished=True, profile_process="worker"):
    """Writes the trace recorded so far to the configured filename (Chrome trace JSON, written atomically).
    finished=True also stops the profiler and starts the next run's trace afresh; finished=False keeps
    recording, and a later dump writes everything again."""
    _PROFILER._process(profile_process)
    _PROFILER.dump(finished is True)


def dumps(reset=False, format="table", sort_by="total", ascending=False):  # noqa: A002 - MXNet's name
    """The aggregate statistics (needs set_config(aggregate_stats=True)) as MXNet's table or JSON; sort_by is
    'total', 'avg', 'min', 'max' or 'count'; reset clears them after printing."""
    return _PROFILER.dumps(reset, format, sort_by, ascending)


def profiler_set_config(mode="symbolic", filename="profile.json"):
    """Deprecated MXNet form of set_config: mode 'symbolic' or 'all'."""
    warn("profiler.profiler_set_config() is deprecated. Please use profiler.set_config() instead")
    if mode not in ("symbolic", "all"):
        raise MXNetError(f"profiler.profiler_set_config: mode must be 'symbolic' or 'all', got {mode!r}")
    set_config(**{"profile_" + mode: True, "filename": filename})


def profiler_set_state(state="stop"):
    warn("profiler.profiler_set_state() is deprecated. Please use profiler.set_state() instead")
    set_state(state)


def dump_profile():
    warn("profiler.dump_profile() is deprecated. Please use profiler.dump() instead")
    dump(True)


@contextlib.contextmanager
def scope(name="<unk>:", append_mode=True):
    """Names the ops run inside (MXNet 2.x): their trace events carry args {"scope": name}. With
    append_mode, an enclosing scope's name comes first ("outer:inner:")."""
    name = name if name.endswith(":") else name + ":"
    outer = _scope.get()
    if append_mode and outer != "<unk>:":
        name = outer + name
    token = _scope.set(name)
    try:
        yield name
    finally:
        _scope.reset(token)


class Domain:
    """A category grouping tasks, frames, counters and markers (the trace's "cat")."""

    def __init__(self, name):
        self.name = str(name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)


class _Duration:
    """start()/stop() around a region; the stop records it if the profiler is running then. Also a context
    manager. One start time per object (and per thread), as an object marks one region at a time."""
    _category = None

    def __init__(self, name):
        self.name = str(name)
        self._starts = threading.local()

    def start(self):
        self._starts.value = _now()

    def stop(self):
        start = getattr(self._starts, "value", None)
        if start is None:
            raise MXNetError(f"profiler {type(self).__name__} {self.name!r}: stop() without start()")
        self._starts.value = None
        _PROFILER.duration(self._category, self.name, start, _now())

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def __str__(self):
        return self.name


class Task(_Duration):
    """A logical unit of work; all passes through it are aggregated together (category: the domain)."""

    def __init__(self, domain, name):
        super().__init__(name)
        self.domain = domain
        self._category = domain.name


class Frame(_Duration):
    """A frame (e.g. one training step), shown on its own track (category "<domain>,frame")."""

    def __init__(self, domain, name):
        super().__init__(name)
        self.domain = domain
        self._category = f"{domain.name},frame"


class Event(_Duration):
    """A named region of code (category "event")."""
    _category = "event"


class Counter:
    """A value tracked over time; every change is a counter event in the trace."""

    def __init__(self, domain, name, value=None):
        self.domain = domain
        self.name = str(name)
        self._lock = threading.Lock()
        self._value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value):
        with self._lock:
            self._value = int(value)
            _PROFILER.counter(self.domain.name, self.name, self._value)

    def increment(self, delta=1):
        with self._lock:
            self._value += int(delta)
            _PROFILER.counter(self.domain.name, self.name, self._value)

    def decrement(self, delta=1):
        self.increment(-int(delta))

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


class Marker:
    """An instant in time; scope is 'global', 'process', 'thread', 'task' or 'marker'."""

    def __init__(self, domain, name):
        self.domain = domain
        self.name = str(name)

    def mark(self, scope="process"):  # noqa: F811 - MXNet's parameter name
        try:
            code = _MARKER_SCOPES[scope]
        except KeyError:
            raise MXNetError(f"profiler Marker {self.name!r}: scope must be one of {list(_MARKER_SCOPES)}, "
                             f"got {scope!r}") from None
        _PROFILER.instant(f"{self.domain.name},instant_marker", self.name, code)
