"""Can the eager Numba loops run in a process that never imports Numba? A measurement for issue 13's warm start.

W2's short run loses ~9% to the background thread that imports Numba and loads the eager loops (~0.35 s of CPU;
benchmarks/README.md, "Where W2's short run loses its time"). This measures the alternative for every float32
loop of `ops/_numba_kernels.py`, `ops/_epilogue_kernels.py` and `ops/_rnn_kernels.py`:

1. export (a child that imports Numba): runs each module's `warm_up('float32')` once to compile, then again with
   every loop recorded (its arguments before the call, its array arguments after it, its return value: Numba's
   results). It compiles each overload those calls used, and Numba's runtime functions (NRT), in memory, and
   writes their object code, with the names of each overload's CPython wrapper and of its environment global, to
   a temporary directory (raw object files, .npy files and a JSON index; no pickle);
2. load (a fresh child that must not import Numba): loads Numba's C extensions (`_helperlib`, `_dynfunc`,
   `_nrt_python`) by path, registers their helpers with llvmlite as Numba does, loads every object file into one
   MCJIT engine, sets each wrapper's environment and makes it a Python function with `_dynfunc.make_function`.
   It then replays the recorded calls, compares every output with Numba's bit for bit, and times a call of
   `bias_relu` on small arrays (the export child timed Numba's dispatcher on the same call).

Prints one JSON line: whether Numba was imported, the overloads and calls, the mismatches (none expected), the
load's parts in seconds and the microseconds per call of both. The loaded wrappers do no type dispatch (they trust
their arguments' dtypes and layouts), so a loader built on this needs a guard in front of them.

    python3 benchmarks/numba_free_load.py
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODULES = ("_numba_kernels", "_epilogue_kernels", "_rnn_kernels")
SCALARS = {"bool": bool, "int": int, "float": float}          # Python scalar types; numpy ones by their name


def _scalar(value):
    kind = type(value).__name__ if type(value) in SCALARS.values() else "numpy." + type(value).__name__
    return {"scalar": kind, "value": value.item() if hasattr(value, "item") else value}


def _unscalar(spec):
    import numpy as np
    kind = spec["scalar"]
    return SCALARS[kind](spec["value"]) if kind in SCALARS else getattr(np, kind.split(".", 1)[1])(spec["value"])


def _time_call(fn, args, number=100000):
    import timeit
    fn(*args)
    return min(timeit.repeat(lambda: fn(*args), number=number, repeat=5)) / number * 1e6


def export(out):
    import importlib

    import numba
    import numpy as np
    from numba.core.dispatcher import Dispatcher
    from numba.core.registry import cpu_target
    from numba.core.runtime import rtsys

    modules = [importlib.import_module(f"mixnet.ops.{name}") for name in MODULES]
    for module in modules:
        module.warm_up("float32")                  # compiled (or loaded from Numba's cache) before recording
    calls, dispatchers = [], {}

    def recorder(module, name, dispatcher):
        def record(*args):
            before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            writeable = [a.flags.writeable if isinstance(a, np.ndarray) else None for a in args]
            signature = tuple(numba.typeof(a) for a in args)
            result = dispatcher(*args)
            after = [a.copy() if isinstance(a, np.ndarray) else None for a in args]
            calls.append((module.__name__, name, signature, before, writeable, after, result))
            return result
        return record

    for module in modules:         # the warm-up calls the loops by their module names: record those calls
        for name, value in list(vars(module).items()):
            if isinstance(value, Dispatcher):
                dispatchers[(module.__name__, name)] = value
                setattr(module, name, recorder(module, name, value))
    try:
        for module in modules:
            module.warm_up("float32")
    finally:
        for (module_name, name), dispatcher in dispatchers.items():
            setattr(sys.modules[module_name], name, dispatcher)
    rtsys.initialize(cpu_target.target_context)
    with open(os.path.join(out, "nrt.o"), "wb") as f:
        f.write(rtsys._library.codegen._tm.emit_object(rtsys._library._final_module))
    overloads, entries = {}, []
    for i, (module_name, name, signature, before, writeable, after, result) in enumerate(calls):
        key = (module_name, name, signature)
        if key not in overloads:        # compiled again here, in memory, where its object code can be emitted
            original = dispatchers[(module_name, name)]
            options = {k: v for k, v in original.targetoptions.items() if k not in ("cache", "nopython")}
            fresh = numba.njit(**options)(original.py_func)
            fresh.compile(signature)
            compiled = fresh.overloads[signature]
            obj = f"overload{len(overloads)}.o"
            with open(os.path.join(out, obj), "wb") as f:
                f.write(compiled.library.codegen._tm.emit_object(compiled.library._final_module))
            overloads[key] = {"id": len(overloads), "module": module_name, "name": name, "object": obj,
                              "signature": [str(t) for t in signature],
                              "wrapper": compiled.fndesc.llvm_cpython_wrapper_name,
                              "environment": compiled.fndesc.env_name,
                              "environment_constants": len(compiled.environment.consts)}
        args, outputs = [], []
        for j, (value, flag) in enumerate(zip(before, writeable)):
            if isinstance(value, np.ndarray):
                np.save(os.path.join(out, f"call{i}_in{j}.npy"), value, allow_pickle=False)
                args.append({"array": f"call{i}_in{j}.npy", "writeable": flag})
            else:
                args.append(_scalar(value))
        for j, value in enumerate(after):
            if value is not None:
                np.save(os.path.join(out, f"call{i}_out{j}.npy"), value, allow_pickle=False)
                outputs.append([j, f"call{i}_out{j}.npy"])
        entries.append({"overload": overloads[key]["id"], "args": args, "outputs": outputs, "returns": repr(result)})
    small = (np.zeros(8, np.float32), np.zeros(8, np.float32), np.float32(0))
    index = {"overloads": list(overloads.values()), "calls": entries,
             "numba_dispatcher_call_us": round(_time_call(dispatchers[(f"mixnet.ops.{MODULES[1]}", "bias_relu")],
                                                          small), 3)}
    with open(os.path.join(out, "index.json"), "w", encoding="utf-8") as f:
        json.dump(index, f)


def load(out):
    import builtins
    import ctypes
    import glob
    import importlib.machinery
    import importlib.util
    import time
    import types

    start = time.perf_counter()
    import numpy as np
    numba_dir = os.path.dirname(importlib.util.find_spec("numba").origin)        # finding it imports nothing

    def extension(name, pattern):
        path = glob.glob(os.path.join(glob.escape(numba_dir), pattern))[0]
        loader = importlib.machinery.ExtensionFileLoader(name, path)
        module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path, loader=loader))
        loader.exec_module(module)
        return module

    numpy_done = time.perf_counter()
    helperlib = extension("numba._helperlib", "_helperlib*.so")
    dynfunc = extension("numba._dynfunc", "_dynfunc*.so")
    nrt = extension("numba.core.runtime._nrt_python", os.path.join("core", "runtime", "_nrt_python*.so"))
    import llvmlite.binding as ll
    extensions_done = time.perf_counter()
    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    ll.add_symbol("_Py_NoneStruct", id(None))                  # the symbols Numba registers before any load
    for helpers in (helperlib.c_helpers, dynfunc.c_helpers):
        for name, address in helpers.items():
            ll.add_symbol("numba_" + name, address)
    for obj in builtins.__dict__.values():
        if isinstance(obj, type) and issubclass(obj, BaseException):
            ll.add_symbol("PyExc_" + obj.__name__, id(obj))
    for name, address in nrt.c_helpers.items():
        ll.add_symbol(name if name.startswith("_") else "NRT_" + name, address)
    with open(os.path.join(out, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    machine = ll.Target.from_default_triple().create_target_machine(codemodel="jitdefault")
    engine = ll.create_mcjit_compiler(ll.parse_assembly(""), machine)
    for name in ["nrt.o"] + [o["object"] for o in index["overloads"]]:
        with open(os.path.join(out, name), "rb") as f:
            engine.add_object_file(ll.ObjectFileRef.from_data(f.read()))
    engine.finalize_object()
    objects_done = time.perf_counter()
    loops = {}
    for overload in index["overloads"]:
        module = types.ModuleType(overload["module"])
        environment = dynfunc.Environment(module.__dict__)
        slot = (ctypes.c_void_p * 1).from_address(engine.get_global_value_address(overload["environment"]))
        slot[0] = ctypes.c_void_p(id(environment))
        loops[overload["id"]] = dynfunc.make_function(module, overload["name"], "loaded without Numba",
                                                      engine.get_function_address(overload["wrapper"]), environment,
                                                      (engine, machine))
    wrapped = time.perf_counter()
    mismatches = []
    for call in index["calls"]:
        args = []
        for spec in call["args"]:
            if "array" in spec:
                array = np.load(os.path.join(out, spec["array"]), allow_pickle=False)
                array.flags.writeable = spec["writeable"]
                args.append(array)
            else:
                args.append(_unscalar(spec))
        overload = index["overloads"][call["overload"]]
        result = loops[call["overload"]](*args)
        for j, name in call["outputs"]:
            if not np.array_equal(args[j], np.load(os.path.join(out, name), allow_pickle=False), equal_nan=True):
                mismatches.append(f"{overload['name']} argument {j}")
        if repr(result) != call["returns"]:
            mismatches.append(f"{overload['name']} returned {result!r}, Numba {call['returns']}")
    bias_relu = next(loops[o["id"]] for o in index["overloads"] if o["name"] == "bias_relu")
    small = (np.zeros(8, np.float32), np.zeros(8, np.float32), np.float32(0))
    return {"benchmark": "numba-free load", "loops": "every float32 loop the warm-ups call",
            "numba_imported": "numba" in sys.modules, "overloads": len(loops), "calls": len(index["calls"]),
            "mismatches": mismatches,
            "environment_constants": sum(o["environment_constants"] for o in index["overloads"]),
            "import_numpy_s": round(numpy_done - start, 4),
            "extensions_and_llvmlite_s": round(extensions_done - numpy_done, 4),
            "engine_and_objects_s": round(objects_done - extensions_done, 4), "wrap_s": round(wrapped - objects_done, 5),
            "loaded_call_us": round(_time_call(bias_relu, small), 3),
            "numba_dispatcher_call_us": index["numba_dispatcher_call_us"]}


def main():
    if sys.argv[1:2] == ["--export"]:
        export(sys.argv[2])
        return
    if sys.argv[1:2] == ["--load"]:
        print(json.dumps(load(sys.argv[2])), flush=True)
        return
    env = {**os.environ, "PYTHONPATH": ROOT}
    with tempfile.TemporaryDirectory(prefix="mixnet-numba-free-") as out:
        subprocess.run([sys.executable, os.path.abspath(__file__), "--export", out], env=env, check=True,
                       stderr=subprocess.DEVNULL)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--load", out], env=env, check=True,
                              capture_output=True, text=True)
        print(proc.stdout.strip())


if __name__ == "__main__":
    main()
