"""The eager Numba loops in a process that never imports Numba (codegen/native_loops.py), measured.

W2's short run lost ~9% to the background thread that imported Numba and loaded the eager loops (~0.35 s of CPU;
benchmarks/README.md, "Where W2's short run loses its time"). codegen/native_loops.py loads them without Numba.
This measures it for every float32 loop of `ops/_numba_kernels.py`, `ops/_epilogue_kernels.py` and
`ops/_rnn_kernels.py`:

1. export (a child that imports Numba, with a temporary kernel cache): `native_loops.export('float32')`, then each
   module's `warm_up('float32')` again with every loop recorded (its arguments before the call, its array
   arguments after it, its return value: Numba's results), written as .npy files and JSON (no pickle);
2. load (a fresh child): `native_loops.load(['float32'])`, timed; then the recorded calls replayed through the
   loaded NativeLoops, every output compared with Numba's bit for bit, and a call of `bias_relu` on small arrays
   timed (the export child timed Numba's dispatcher on the same call).

Prints one JSON line: whether Numba was imported, the calls, the mismatches (none expected), the load time and
the microseconds per call of both.

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

    from mixnet.codegen import native_loops
    native_loops.export("float32")
    modules = [importlib.import_module(f"mixnet.ops.{name}") for name in MODULES]
    calls, dispatchers = [], {}

    def recorder(module, name, dispatcher):
        def record(*args):
            before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            writeable = [a.flags.writeable if isinstance(a, np.ndarray) else None for a in args]
            result = dispatcher(*args)
            after = [a.copy() if isinstance(a, np.ndarray) else None for a in args]
            calls.append((module.__name__.rsplit(".", 1)[1], name, before, writeable, after, result))
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
    entries = []
    for i, (module_name, name, before, writeable, after, result) in enumerate(calls):
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
        entries.append({"module": module_name, "loop": name, "args": args, "outputs": outputs,
                        "returns": repr(result)})
    small = (np.zeros(8, np.float32), np.zeros(8, np.float32), np.float32(0))
    bias_relu = dispatchers[(f"mixnet.ops.{MODULES[1]}", "bias_relu")]
    with open(os.path.join(out, "calls.json"), "w", encoding="utf-8") as f:
        json.dump({"calls": entries, "numba_dispatcher_call_us": round(_time_call(bias_relu, small), 3),
                   "numba": numba.__version__}, f)


def load(out):
    import time

    start = time.perf_counter()
    import numpy as np

    from mixnet.codegen import native_loops
    imported = time.perf_counter()
    loops = native_loops.load(["float32"])
    loaded = time.perf_counter()
    if loops is None:
        return {"benchmark": "numba-free load", "error": "native_loops.load returned None"}
    with open(os.path.join(out, "calls.json"), encoding="utf-8") as f:
        recorded = json.load(f)
    mismatches, through_numba = [], 0
    for call in recorded["calls"]:
        args = []
        for spec in call["args"]:
            if "array" in spec:
                array = np.load(os.path.join(out, spec["array"]), allow_pickle=False)
                array.flags.writeable = spec["writeable"]
                args.append(array)
            else:
                args.append(_unscalar(spec))
        loop = getattr(loops[call["module"]], call["loop"])
        through_numba += loop.overload_for(args) is None
        result = loop(*args)
        for j, name in call["outputs"]:
            if not np.array_equal(args[j], np.load(os.path.join(out, name), allow_pickle=False), equal_nan=True):
                mismatches.append(f"{call['loop']} argument {j}")
        if repr(result) != call["returns"]:
            mismatches.append(f"{call['loop']} returned {result!r}, Numba {call['returns']}")
    small = (np.zeros(8, np.float32), np.zeros(8, np.float32), np.float32(0))
    return {"benchmark": "numba-free load", "loops": "every float32 loop call the warm-ups make",
            "numba_imported": "numba" in sys.modules, "calls": len(recorded["calls"]),
            "calls_through_numba": through_numba, "mismatches": mismatches,
            "import_numpy_and_mixnet_s": round(imported - start, 4), "load_s": round(loaded - imported, 4),
            "loaded_call_us": round(_time_call(loops["_epilogue_kernels"].bias_relu, small), 3),
            "numba_dispatcher_call_us": recorded["numba_dispatcher_call_us"]}


def main():
    if sys.argv[1:2] == ["--export"]:
        export(sys.argv[2])
        return
    if sys.argv[1:2] == ["--load"]:
        print(json.dumps(load(sys.argv[2])), flush=True)
        return
    with tempfile.TemporaryDirectory(prefix="mixnet-numba-free-") as out:
        env = {**os.environ, "PYTHONPATH": ROOT, "MIXNET_CACHE_DIR": out}
        subprocess.run([sys.executable, os.path.abspath(__file__), "--export", out], env=env, check=True,
                       stderr=subprocess.DEVNULL)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--load", out], env=env, check=True,
                              capture_output=True, text=True)
        print(proc.stdout.strip())


if __name__ == "__main__":
    main()
