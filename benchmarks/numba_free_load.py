"""Can an eager Numba loop run in a process that never imports Numba? A measurement for issue 13's warm start.

W2's short run loses ~9% to the background thread that imports Numba and loads the eager loops (~0.35 s of CPU;
benchmarks/README.md, "Where W2's short run loses its time"). This measures the alternative, for one loop
(`_epilogue_kernels.bias_relu`, float32):

1. export (a child that imports Numba): compiles the loop and Numba's runtime functions (NRT) in memory and writes
   their object code, with the names of the loop's CPython wrapper and of its environment global, to a
   temporary directory (no pickle: raw object files and a JSON index);
2. load (a fresh child that must not import Numba): loads Numba's C extensions (`_helperlib`, `_dynfunc`,
   `_nrt_python`) by path, registers their helpers with llvmlite as Numba does, loads both object files into an
   MCJIT engine, sets the wrapper's environment and makes it a Python function with `_dynfunc.make_function`;
   then checks the result against numpy and times a call (small arrays), next to the Numba dispatcher's call in
   the export child.

Prints one JSON line: the load's parts in seconds, whether Numba was imported, the result check, and the
microseconds per call of the loaded wrapper and of Numba's dispatcher. The wrapper does no type dispatch (it
trusts its arguments' dtypes and layouts), so a loader built on this needs a guard in front of it.

    python3 benchmarks/numba_free_load.py
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def export(out):
    import timeit

    import numba
    import numpy as np
    from numba import types
    from numba.core.registry import cpu_target
    from numba.core.runtime import rtsys

    from mixnet.ops import _epilogue_kernels
    loop = numba.njit(_epilogue_kernels.bias_relu.py_func)        # compiled here, in memory: its object code
    signature = (types.float32[::1], types.float32[::1], types.float32)
    loop.compile(signature)
    result = loop.overloads[signature]
    library = result.library
    rtsys.initialize(cpu_target.target_context)
    with open(os.path.join(out, "loop.o"), "wb") as f:
        f.write(library.codegen._tm.emit_object(library._final_module))
    with open(os.path.join(out, "nrt.o"), "wb") as f:
        f.write(rtsys._library.codegen._tm.emit_object(rtsys._library._final_module))
    small, bias, zero = np.zeros(8, np.float32), np.zeros(8, np.float32), np.float32(0)
    loop(small, bias, zero)
    call_us = min(timeit.repeat(lambda: loop(small, bias, zero), number=100000, repeat=5)) / 100000 * 1e6
    index = {"wrapper": result.fndesc.llvm_cpython_wrapper_name, "environment": result.fndesc.env_name,
             "module": result.fndesc.modname, "name": result.fndesc.qualname.split(".")[-1],
             "environment_constants": len(result.environment.consts), "numba_dispatcher_call_us": round(call_us, 3)}
    with open(os.path.join(out, "index.json"), "w", encoding="utf-8") as f:
        json.dump(index, f)


def load(out):
    import builtins
    import ctypes
    import glob
    import importlib.machinery
    import importlib.util
    import time
    import timeit
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
    for name in ("nrt.o", "loop.o"):
        with open(os.path.join(out, name), "rb") as f:
            engine.add_object_file(ll.ObjectFileRef.from_data(f.read()))
    engine.finalize_object()
    objects_done = time.perf_counter()
    module = types.ModuleType(index["module"])
    environment = dynfunc.Environment(module.__dict__)
    slot = (ctypes.c_void_p * 1).from_address(engine.get_global_value_address(index["environment"]))
    slot[0] = ctypes.c_void_p(id(environment))
    loop = dynfunc.make_function(module, index["name"], "loaded without Numba",
                                 engine.get_function_address(index["wrapper"]), environment, (engine, machine))
    wrapped = time.perf_counter()
    rng = np.random.default_rng(0)
    y, b = rng.standard_normal(128 * 512).astype(np.float32), rng.standard_normal(512).astype(np.float32)
    expected = np.maximum(y.reshape(128, 512) + b, 0).reshape(-1)
    loop(y, b, np.float32(0))
    small, bias, zero = np.zeros(8, np.float32), np.zeros(8, np.float32), np.float32(0)
    call_us = min(timeit.repeat(lambda: loop(small, bias, zero), number=100000, repeat=5)) / 100000 * 1e6
    return {"benchmark": "numba-free load", "loop": f"{index['module']}.{index['name']} (float32)",
            "numba_imported": "numba" in sys.modules, "equals_numpy": bool(np.array_equal(y, expected)),
            "import_numpy_s": round(numpy_done - start, 4), "extensions_and_llvmlite_s": round(extensions_done -
                                                                                               numpy_done, 4),
            "engine_and_objects_s": round(objects_done - extensions_done, 4),
            "wrap_s": round(wrapped - objects_done, 5), "loaded_call_us": round(call_us, 3),
            "numba_dispatcher_call_us": index["numba_dispatcher_call_us"],
            "environment_constants": index["environment_constants"]}


def main():
    if sys.argv[1:2] == ["--export"]:
        export(sys.argv[2])
        return
    if sys.argv[1:2] == ["--load"]:
        print(json.dumps(load(sys.argv[2])), flush=True)
        return
    env = {**os.environ, "PYTHONPATH": ROOT}
    with tempfile.TemporaryDirectory(prefix="mixnet-numba-free-") as out:
        subprocess.run([sys.executable, os.path.abspath(__file__), "--export", out], env=env, check=True)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--load", out], env=env, check=True,
                              capture_output=True, text=True)
        print(proc.stdout.strip())


if __name__ == "__main__":
    main()
