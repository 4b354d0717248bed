"""The eager loops' machine code, loaded without importing Numba.

Why: with a warm cache, a process's first seconds used to share the GIL with a thread that imports Numba and
loads the eager loops' cached code (~0.35 s of CPU). W2's 3-second short run lost ~9% of its mean to that
(benchmarks/README.md, "Where W2's short run loses its time"). Everything those loops need at run time is Numba's
machine code and three of Numba's C extensions, not Numba itself. So:

* `export(dtype)` runs in the child that compiles the loops (codegen/precompile.py), right after, and in a child
  that a process starts once it has loaded the loops through Numba without finding an export; it has Numba.
  Each loop module's `warm_up(dtype)` compiles (or loads) the overloads the fast paths call. Each one's object
  code (what Numba writes to its cache, or, for one loaded from that cache, the object code the cache held,
  kept as Numba loads it: `_keep_cached_objects`; ~0.6 s for all, where compiling them again took ~14 s) is written
  under `<kernel cache>/native-loops/<dtype>/`, with
  Numba's runtime functions (nrt.o) and an index.json: per overload its module, loop, argument types, object
  file and sha256, and the names of its CPython wrapper and environment global. The index carries a key: the loop
  modules' and approx.py's source, the Numba, llvmlite and Python versions, and the CPU name and features (object
  code made for another CPU must not run).
* `load(dtypes)` runs in any process. It loads Numba's C extensions by path (`_helperlib`, `_dynfunc`,
  `_nrt_python`: no `import numba`), registers their helpers with llvmlite as Numba does, loads the objects into
  one MCJIT engine and makes each wrapper a Python function (`_dynfunc.make_function`). It returns, per loop
  module, a namespace of `NativeLoop`s and the module's constants. Anything amiss (another key, a missing or
  altered file, an error) gives None, and the caller loads the loops through Numba as before.

A wrapper does no type dispatch: it trusts its arguments. `NativeLoop` is that dispatch, as Numba's does it in C:
an array's dtype, ndim, layout, writeability and alignment, a scalar's type. Arguments it has no overload for go
to the Numba dispatcher, imported then (a one-time pause of ~0.5 s, or Numba's own compile of a new overload).
Measured (benchmarks/numba_free_load.py): 0.035 s to load every float32 loop against ~0.35 s; a call 0.23 us
against 0.49 us through Numba's dispatcher; outputs bit-identical.
"""
import builtins
import ctypes
import glob
import hashlib
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import threading
import types

import numpy as np

from . import cache

_ndarray = np.ndarray

FORMAT = 1
MODULES = ("_numba_kernels", "_epilogue_kernels", "_rnn_kernels")      # the eager loop modules (ops/)
_OPS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ops")
_APPROX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "approx.py")
# A scalar argument's Numba type -> the Python and numpy types Numba's typeof maps to it
_SCALARS = {"float32": (np.float32,), "float64": (float, np.float64), "int64": (int, np.int64),
            "int32": (np.int32,), "bool": (bool, np.bool_)}

_runtime = None                # (Numba's _dynfunc, llvmlite.binding) once the runtime is started, once per process
_runtime_lock = threading.Lock()


def directory(dtype):
    """Where `dtype`'s export lives, or None where the kernel cache cannot be used safely (cache.usable_dir: a
    directory another user owns or can write could hold machine code of theirs)."""
    base = cache.usable_dir()
    return None if base is None else os.path.join(base, "native-loops", dtype)


def _map_llvm_library():
    """Maps llvmlite's shared library (~180 MB of LLVM) with libc's dlopen, called through ctypes, which lets go of
    the GIL while it runs, so that `import llvmlite.binding` finds it mapped. Its own ctypes.CDLL keeps the GIL
    for the 5-10 ms that the mapping and relocation take: run in the thread that loads the loops, that stalled the
    thread running the user's calls. Best effort (POSIX, the library where llvmlite keeps it); never needed for
    correctness."""
    spec = importlib.util.find_spec("llvmlite")                  # imports nothing
    if os.name != "posix" or spec is None or not spec.submodule_search_locations:
        return
    binding = os.path.join(spec.submodule_search_locations[0], "binding")
    for name in ("libllvmlite.so", "libllvmlite.dylib"):
        path = os.path.join(binding, name)
        if os.path.isfile(path):
            try:
                dlopen = ctypes.CDLL(None).dlopen
            except (OSError, AttributeError):
                return
            dlopen.restype, dlopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
            dlopen(os.fsencode(path), ctypes.DEFAULT_MODE | os.RTLD_NOW)
            return


def key(dtype):
    """What the exported code depends on; an index whose key differs is not loaded."""
    import llvmlite.binding as ll  # lazy: llvmlite only when loops are exported or loaded
    digest = hashlib.sha256()
    for path in [os.path.join(_OPS_DIR, m + ".py") for m in MODULES] + [_APPROX]:
        with open(path, "rb") as f:
            digest.update(f.read())
    return {"format": FORMAT, "dtype": dtype, "sources": digest.hexdigest(),
            "numba": cache.installed_version("numba"), "llvmlite": cache.installed_version("llvmlite"),
            "python": sys.implementation.cache_tag, "cpu": ll.get_host_cpu_name(),
            "features": ll.get_host_cpu_features().flatten()}


def has_export(dtype):
    """Whether an export of `dtype` is there to try: a usable kernel cache (asked quietly: this runs at import,
    where a warning would point at the user's import line) holds its index file. `load` checks the rest."""
    base = cache.usable_dir(quiet=True)
    return base is not None and os.path.isfile(os.path.join(base, "native-loops", dtype, "index.json"))


def is_exported(dtype):
    if directory(dtype) is None:
        return False
    try:
        with open(os.path.join(directory(dtype), "index.json"), encoding="utf-8") as f:
            return json.load(f).get("key") == key(dtype)
    except (OSError, ValueError, AttributeError, importlib.metadata.PackageNotFoundError):
        return False


# ------------------------------------------------------------------------------------------------ export (child)
def _describe(t):
    """A Numba argument type as the index stores it, or None for one NativeLoop cannot check (then the overload
    is not exported)."""
    from numba.core import types as nt
    if isinstance(t, nt.Literal):
        return None
    if isinstance(t, nt.Array) and isinstance(t.dtype, (nt.Float, nt.Integer, nt.Boolean)):
        return {"array": str(np.dtype(str(t.dtype))), "ndim": t.ndim, "layout": t.layout,
                "writeable": bool(t.mutable), "aligned": bool(t.aligned)}
    if str(t) in _SCALARS:
        return {"scalar": str(t)}
    return None


def _constants(module):
    """The module's public constants a caller may read from it (tuples of strings or numbers)."""
    return {name: list(value) for name, value in vars(module).items()
            if not name.startswith("_") and isinstance(value, tuple)
            and all(isinstance(v, (str, int, float)) for v in value)}


def export(dtype):
    """Writes `dtype`'s loops (every overload warm_up compiles) for `load`. Needs Numba; run by the compiling
    child. Replaces the directory as a whole: a reader sees the old export, none, or the new one."""
    target = directory(dtype)
    if target is None:
        return
    import numba
    from numba.core.dispatcher import Dispatcher
    from numba.core.registry import cpu_target
    from numba.core.runtime import rtsys
    cached_objects = _keep_cached_objects()      # before the warm-ups load anything from Numba's cache
    modules = [importlib.import_module(f"mixnet.ops.{name}") for name in MODULES]
    for module in modules:
        module.warm_up(dtype)
    rtsys.initialize(cpu_target.target_context)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    # Exports run one at a time (the child holds the cache's compile lock): a work directory found now is what a
    # child killed mid-export (its parent gone) left behind
    for leftover in glob.glob(os.path.join(glob.escape(os.path.dirname(target)), ".export-*")):
        shutil.rmtree(leftover, ignore_errors=True)
    work = tempfile.mkdtemp(prefix=".export-", dir=os.path.dirname(target))
    try:
        def write(data, name):
            with open(os.path.join(work, name), "wb") as f:
                f.write(data)
            return {"object": name, "sha256": hashlib.sha256(data).hexdigest()}

        overloads = []
        for module in modules:
            for name, dispatcher in vars(module).items():
                if not isinstance(dispatcher, Dispatcher):
                    continue
                options = {k: v for k, v in dispatcher.targetoptions.items() if k not in ("cache", "nopython")}
                for signature in list(dispatcher.overloads):
                    args = [_describe(t) for t in signature]
                    if None in args or not _of_dtype(args, dtype):
                        continue
                    compiled = dispatcher.overloads[signature]
                    kept = cached_objects.get(id(compiled.library))
                    try:                    # what Numba writes to its cache: there when this process compiled it
                        data = compiled.library._get_compiled_object()
                    except (RuntimeError, ValueError):
                        data = None
                    if data is None and kept is not None and kept[0] is compiled.library:
                        data = kept[1]                      # loaded from Numba's cache: the object code it held
                    if data is None:                        # neither: compile it again here
                        fresh = numba.njit(**options)(dispatcher.py_func)
                        fresh.compile(signature)
                        compiled = fresh.overloads[signature]
                        data = compiled.library.codegen._tm.emit_object(compiled.library._final_module)
                    if compiled.environment.consts:         # its wrapper would need Python objects: not exported
                        continue
                    overloads.append({"module": module.__name__.rsplit(".", 1)[1], "loop": name, "args": args,
                                      "wrapper": compiled.fndesc.llvm_cpython_wrapper_name,
                                      "environment": compiled.fndesc.env_name,
                                      **write(data, f"overload{len(overloads)}.o")})
        nrt = rtsys._library
        index = {"key": key(dtype), "nrt": write(nrt.codegen._tm.emit_object(nrt._final_module), "nrt.o"),
                 "overloads": overloads,
                 "constants": {m.__name__.rsplit(".", 1)[1]: _constants(m) for m in modules}}
        with open(os.path.join(work, "index.json"), "w", encoding="utf-8") as f:
            json.dump(index, f)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _keep_cached_objects():
    """{id(library): (library, object code)} for each code library Numba loads from its cache from now on in this
    process (the exporting child). Numba hands a cached library's object code to its JIT engine and keeps no copy
    (CPUCodeLibrary._unserialize), so without this an overload loaded from the cache would be compiled again: ~14 s
    for all the loops, which a child that exits with its parent seldom has after a short script. Numba's private
    API: where it is not as expected, nothing is kept and those overloads compile again."""
    from numba.core.codegen import CPUCodeLibrary
    original = CPUCodeLibrary.__dict__.get("_unserialize")
    if not isinstance(original, classmethod):
        return {}
    if getattr(original.__func__, "_mixnet_keeps", None) is not None:     # an earlier export in this process
        return original.__func__._mixnet_keeps
    kept, unserialize = {}, original.__func__

    def keeping(cls, codegen, state):
        library = unserialize(cls, codegen, state)
        if isinstance(state, tuple) and len(state) == 3 and state[1] == "object" and isinstance(state[2], tuple) \
                and isinstance(state[2][0], bytes):
            kept[id(library)] = (library, state[2][0])
        return library
    keeping._mixnet_keeps = kept
    CPUCodeLibrary._unserialize = classmethod(keeping)
    return kept


def _of_dtype(args, dtype):
    """An overload serves `dtype` when its float arrays and scalars are of it or it has none (a float32 loop may
    take float64 coefficients, as _fastpath._for_dtypes says)."""
    floats = {a.get("array", a.get("scalar")) for a in args} & {"float32", "float64"}
    return not floats or dtype in floats


# ------------------------------------------------------------------------------------------------ load (any process)
def _start_runtime():
    """Numba's C extensions by path and their symbols registered with llvmlite, as Numba's own start does; once."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            numba_dir = os.path.dirname(importlib.util.find_spec("numba").origin)        # imports nothing
            helperlib = _extension("numba._helperlib", numba_dir, "_helperlib*")
            dynfunc = _extension("numba._dynfunc", numba_dir, "_dynfunc*")
            nrt = _extension("numba.core.runtime._nrt_python", numba_dir, os.path.join("core", "runtime",
                                                                                         "_nrt_python*"))
            import llvmlite.binding as ll  # lazy: only where loops load
            ll.initialize_native_target()
            ll.initialize_native_asmprinter()
            ll.add_symbol("_Py_NoneStruct", id(None))
            for helpers in (helperlib.c_helpers, dynfunc.c_helpers):
                for name, address in helpers.items():
                    ll.add_symbol("numba_" + name, address)
            for obj in builtins.__dict__.values():
                if isinstance(obj, type) and issubclass(obj, BaseException):
                    ll.add_symbol("PyExc_" + obj.__name__, id(obj))
            for name, address in nrt.c_helpers.items():
                ll.add_symbol(name if name.startswith("_") else "NRT_" + name, address)
            _runtime = (dynfunc, ll)
    return _runtime


def _extension(name, numba_dir, pattern):
    """A C extension of Numba's, the one already imported if Numba is (the same module either way)."""
    if name in sys.modules:
        return sys.modules[name]
    paths = [p for suffix in importlib.machinery.EXTENSION_SUFFIXES
             for p in glob.glob(os.path.join(glob.escape(numba_dir), pattern.replace("*", "") + suffix))]
    loader = importlib.machinery.ExtensionFileLoader(name, paths[0])
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, paths[0], loader=loader))
    loader.exec_module(module)
    sys.modules[name] = module          # one copy per process: Numba, imported later, finds this one
    return module


def load(dtypes):
    """{module name: namespace} with a NativeLoop per exported loop (its overloads for every dtype in `dtypes`)
    and the module's constants; None if any dtype's export is missing or stale, or loading fails."""
    if any(directory(dtype) is None for dtype in dtypes):
        return None
    try:
        if "llvmlite.binding" not in sys.modules:
            _map_llvm_library()
        indexes = []
        for dtype in dtypes:
            with open(os.path.join(directory(dtype), "index.json"), encoding="utf-8") as f:
                index = json.load(f)
            if index.get("key") != key(dtype):
                return None
            indexes.append((directory(dtype), index))
        dynfunc, ll = _start_runtime()
        machine = ll.Target.from_default_triple().create_target_machine(codemodel="jitdefault")   # one per engine
        engine = ll.create_mcjit_compiler(ll.parse_assembly(""), machine)
        first_dir, first = indexes[0]
        engine.add_object_file(ll.ObjectFileRef.from_data(_read(first_dir, first["nrt"])))
        entries, wrappers = [], set()
        for path, index in indexes:
            for overload in index["overloads"]:
                if overload["module"] not in MODULES or not overload["loop"].isidentifier():
                    raise ValueError(f"native loops: an index entry names {overload['module']!r}, "
                                     f"{overload['loop']!r}")
                if overload["wrapper"] in wrappers:     # a loop with no float argument is in every dtype's export
                    continue
                wrappers.add(overload["wrapper"])
                engine.add_object_file(ll.ObjectFileRef.from_data(_read(path, overload)))
                entries.append(overload)
        engine.finalize_object()
        loops = {}
        for overload in entries:
            module = types.ModuleType(f"mixnet.ops.{overload['module']}")
            environment = dynfunc.Environment(module.__dict__)
            slot = (ctypes.c_void_p * 1).from_address(engine.get_global_value_address(overload["environment"]))
            slot[0] = ctypes.c_void_p(id(environment))
            function = dynfunc.make_function(module, overload["loop"], "", engine.get_function_address(
                overload["wrapper"]), environment, (engine, machine))
            loop = loops.setdefault((overload["module"], overload["loop"]),
                                    NativeLoop(overload["module"], overload["loop"]))
            loop.table[_argument_key(overload["args"])] = function
        namespaces = {name: types.SimpleNamespace(**{k: tuple(v) for k, v in first["constants"][name].items()})
                      for name in MODULES}
        for (module_name, loop_name), loop in loops.items():
            setattr(namespaces[module_name], loop_name, loop)
        return namespaces
    except Exception:       # noqa: BLE001 - any failure: the caller loads through Numba, which reports its own
        return None


def _read(path, entry):
    with open(os.path.join(path, os.path.basename(entry["object"])), "rb") as f:
        data = f.read()
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise ValueError(f"native loops: {entry['object']} was altered")
    return data


# numpy's flag bits (ndarray.flags.num) that Numba's typeof reads: the layout ('C' when C-contiguous, else 'F' when
# Fortran-contiguous, else 'A'), alignment and writeability
_C, _F, _ALIGNED, _WRITEABLE = 0x1, 0x2, 0x100, 0x400
_FLAGS = _C | _F | _ALIGNED | _WRITEABLE
_LAYOUT_BIT = {"C": _C, "F": _F, "A": 0}
# a scalar type -> the one that stands for every type Numba types alike (the first of its _SCALARS entry)
_CANONICAL_SCALAR = {t: types[0] for types in _SCALARS.values() for t in types}


def _argument_key(args):
    """The canonical `_key_of` tuple of these argument types (`_canonical` of each element). Only this one goes
    into a loop's table when it loads: listing every key that Numba types alike (1-d arrays are C and F at once,
    float and np.float64 are both float64, ...) made thousands for a loop of many scalars (~7 ms of the load)."""
    key = []
    for a in args:
        if "array" in a:
            rest = (_ALIGNED if a["aligned"] else 0) | (_WRITEABLE if a["writeable"] else 0)
            key.append((np.dtype(a["array"]), a["ndim"], _LAYOUT_BIT[a["layout"]] | rest))
        else:
            key.append(_SCALARS[a["scalar"]][0])
    return tuple(key)


def _canonical(element):
    """The canonical form of one `_key_of` value: an array's layout bit as Numba's typeof decides it (C when
    C-contiguous, else F when Fortran-contiguous, else none), a scalar's type as _CANONICAL_SCALAR maps it."""
    if type(element) is tuple:
        dtype, ndim, bits = element
        layout = _C if bits & _C else (_F if bits & _F else 0)
        return dtype, ndim, layout | (bits & (_ALIGNED | _WRITEABLE))
    return _CANONICAL_SCALAR.get(element, element)


def _key_of(value):
    """What Numba's typeof reads of an argument, as a hashable key: an array's dtype, ndim and flag bits, a
    scalar's type (NativeLoop.__call__ computes the same in line)."""
    if type(value) is np.ndarray:
        return value.dtype, value.ndim, value.flags.num & _FLAGS
    return type(value)


class NativeLoop:
    """One eager loop, loaded without Numba: calls the overload compiled for its arguments' types, or the Numba
    dispatcher for types it has none for (imported on that first call)."""

    __slots__ = ("module", "name", "table", "_dispatcher")

    def __init__(self, module, name):
        self.module, self.name, self.table, self._dispatcher = module, name, {}, None

    def __call__(self, *args):
        # _key_of of every argument, in line: this runs on every loop call
        key = tuple([(a.dtype, a.ndim, a.flags.num & _FLAGS) if type(a) is _ndarray else type(a) for a in args])
        function = self.table.get(key)
        if function is None:
            function = self._resolve(key)
            if function is None:
                return self.dispatcher()(*args)
        return function(*args)

    def _resolve(self, key):
        """The overload for argument types first seen now: looked up by their canonical key and remembered under
        this key too, so that the next call with these types finds it at once."""
        function = self.table.get(tuple(map(_canonical, key)))
        if function is not None:
            self.table[key] = function
        return function

    def overload_for(self, args):
        """The loaded overload these arguments would call, or None (they would go to Numba)."""
        key = tuple(map(_key_of, args))
        return self.table.get(key) or self._resolve(key)

    def dispatcher(self):
        if self._dispatcher is None:
            from . import numba_load  # lazy: imports Numba, only for arguments no exported overload takes
            dispatcher = getattr(importlib.import_module(f"mixnet.ops.{self.module}"), self.name)
            numba_load.load_cached(dispatcher)
            self._dispatcher = dispatcher
        return self._dispatcher

    def __repr__(self):
        return f"<NativeLoop {self.module}.{self.name}: {len(self.table)} argument types>"
