"""Generate the reference NDArray files in tests/data/mxnet/ with real MXNet 1.9.1.

Run it with MXNet 1.9.1's Python (NOT mixnet's), from anywhere:

    ~/.venvs/mxref/bin/python tests/data/make_mxnet_files.py

It is not run by the test suite. It (re)writes small binary files written by
``mx.nd.save`` / ``mx.npx.save`` / ``Block.save_parameters`` and a JSON sidecar,
``expected.json``, that describes what each file holds (names, dtypes, shapes,
flattened values) so that ``tests/test_serialization.py`` needs no MXNet.

Sidecar layout::

    {"mxnet_version": "1.9.1",
     "files": {"<file name>": {
         "version": 2 or 3,          # record magic MXNet wrote
         "names": [...] or null,     # null: a list file (n_names == 0)
         "reencode_identical": bool, # dense files: encode(decode(f)) == f
         "arrays": [{"dtype": "float32", "shape": [2, 3], "stype": "default",
                     "values": [...flat C-order values...],
                     "bits": [...]   # bfloat16 only: the raw uint16 patterns
                    }, ...]}}}

Sparse arrays are described by their dense values (mixnet densifies them).
"""
import json
import os

import numpy as np
import mxnet as mx
from mxnet import gluon

assert mx.__version__ == "1.9.1", mx.__version__

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "mxnet")
os.makedirs(OUT, exist_ok=True)

BF16 = np.dtype([("bfloat16", np.uint16)])  # how MXNet 1.x Python spells bfloat16


def describe(arr):
    """JSON description of an MXNet NDArray (any stype, any np/nd flavour)."""
    stype = getattr(arr, "stype", "default")
    dense = arr.tostype("default") if stype != "default" else arr
    dtype = np.dtype(arr.dtype)
    if dtype == BF16:
        f32 = dense.astype("float32").asnumpy()
        bits = (f32.view(np.uint32) >> 16).astype(np.uint16)  # exact: values are bf16-representable
        return {"dtype": "bfloat16", "shape": list(arr.shape), "stype": stype,
                "values": f32.ravel().tolist(), "bits": bits.ravel().tolist()}
    host = dense.asnumpy()
    return {"dtype": dtype.name, "shape": list(arr.shape), "stype": stype,
            "values": host.ravel().tolist()}


EXPECTED = {}


def record(fname, data, version=2, reencode_identical=True, saver=None):
    """Save ``data`` (list or dict) with MXNet, check it loads back, and note what it holds."""
    path = os.path.join(OUT, fname)
    if saver is None:
        mx.nd.save(path, data)
    else:
        saver(path, data)
    if isinstance(data, dict):
        names, arrays = list(data.keys()), list(data.values())
    elif isinstance(data, (list, tuple)):
        names, arrays = None, list(data)
    else:  # a single array is saved as a list of one
        names, arrays = None, [data]
    EXPECTED[fname] = {"version": version, "names": names,
                       "reencode_identical": reencode_identical,
                       "arrays": [describe(a) for a in arrays]}


def main():
    mx.random.seed(0)

    # 1. The spec's annotated 136-byte example (§2.7).
    record("ndlist.params", [mx.nd.array([[1, 2, 3], [4, 5, 6]], dtype="float32"),
                             mx.nd.array([1, 2], dtype="int32")])

    # 2. A list file with every dtype MXNet 1.9.1 Python can create.
    bf16 = mx.nd.amp_cast(mx.nd.array([1.0, -2.5, 3.0, 0.15625]), dtype=BF16)
    record("list_mixed.nd", [
        mx.nd.array([[1.5, -2.25, 3.0], [4.0, 1e-3, -6.5e7]], dtype="float32"),
        mx.nd.array([np.pi, -1e300], dtype="float64"),
        mx.nd.array([0.5, -1.0, 65504.0], dtype="float16"),
        mx.nd.array([0, 1, 255, 128], dtype="uint8"),
        mx.nd.array([[1, -2], [2147483647, -2147483648]], dtype="int32"),
        mx.nd.array([-128, 0, 127], dtype="int8"),
        mx.nd.array(np.array([2 ** 62 + 1, -(2 ** 40) - 3], dtype=np.int64), dtype="int64"),
        mx.nd.array([True, False, True], dtype=np.bool_),
        bf16,
        mx.nd.arange(24, dtype="float32").reshape((2, 3, 4)),
    ])

    # 3. A dict file, as a checkpoint-style .params, with a non-ASCII name.
    record("dict.params", {
        "arg:dense0_weight": mx.nd.array([[0.25, -0.5], [1.0, 2.0], [3.0, 4.0]]),
        "aux:bn0_running_mean": mx.nd.array([0.0, 1.0, 2.0, 3.0], dtype="float64"),
        "ünï €": mx.nd.array([7], dtype="int32"),
    })

    # 4. Zero-size arrays: the spec's 73-byte example and a list of others.
    # (mx.nd.zeros((0,)) fails in legacy shape mode, where 0 means "unknown";
    # mx.nd.empty / mx.nd.array from an empty numpy array work.)
    record("zero_size.nd", {"s": mx.nd.empty((0,), dtype="float32")})
    record("zero_size_list.nd", [mx.nd.array(np.zeros((0, 4), dtype=np.int32), dtype="int32"),
                                 mx.nd.array(np.zeros((2, 0, 3)), dtype="float64"),
                                 mx.nd.array([1.0])])

    # 5. A single NDArray is written as a list of one.
    record("single.nd", mx.nd.array([[9.0, 8.0]]))

    # 6. Sparse: row_sparse (3, 2) with only row 1 set; csr [[0,1,0],[2,0,3]].
    rs = mx.nd.sparse.row_sparse_array(
        (np.array([[5.0, 6.0]], dtype="float32"), np.array([1])), shape=(3, 2))
    csr = mx.nd.sparse.csr_matrix(
        (np.array([1.0, 2.0, 3.0], dtype="float32"), np.array([1, 0, 2]), np.array([0, 1, 3])),
        shape=(2, 3))
    rs.wait_to_read()  # avoid the stale storage_shape quirk (spec §2.3)
    csr.wait_to_read()
    record("row_sparse.nd", [rs], reencode_identical=False)
    record("csr.nd", {"c": csr, "d": mx.nd.array([1.0, 2.0])}, reencode_identical=False)

    # 7. Gluon save_parameters of a tiny net with fixed weights (structural names).
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(3, in_units=4), gluon.nn.Dense(2, in_units=3))
    net.initialize()
    params = net.collect_params()
    for i, (name, p) in enumerate(sorted(params.items())):
        shape = p.shape
        p.set_data(mx.nd.arange(np.prod(shape), dtype="float32").reshape(shape) * 0.5 - i)
    path = os.path.join(OUT, "gluon_dense.params")
    net.save_parameters(path)
    loaded = mx.nd.load(path)
    EXPECTED["gluon_dense.params"] = {
        "version": 2, "names": list(loaded.keys()), "reencode_identical": True,
        "arrays": [describe(a) for a in loaded.values()]}

    # 8. npx.save (V3 records): 0-d scalars, a zero-size array and ordinary ones.
    mx.npx.set_np()
    try:
        record("npx_v3.nd", {
            "s": mx.np.array(3.5, dtype="float32"),
            "i": mx.np.array(-7, dtype="int32"),
            "z": mx.np.zeros((0, 4), dtype="float32"),
            "v": mx.np.array([1, 2], dtype="int64"),
        }, version=3, saver=mx.npx.save)
        record("npx_v3_list.nd", [mx.np.array(3.5, dtype="float32")], version=3,
               saver=mx.npx.save)
    finally:
        mx.npx.reset_np()

    # Sanity: MXNet reads every file back to what the sidecar says.
    for fname, exp in EXPECTED.items():
        path = os.path.join(OUT, fname)
        if exp["version"] == 3:
            mx.npx.set_np()
            try:
                got = mx.npx.load(path)
            finally:
                mx.npx.reset_np()
        else:
            got = mx.nd.load(path)
        arrays = list(got.values()) if isinstance(got, dict) else got
        assert [describe(a) for a in arrays] == exp["arrays"], fname
        assert (list(got.keys()) if isinstance(got, dict) else None) == exp["names"], fname

    with open(os.path.join(OUT, "expected.json"), "w", encoding="utf-8") as f:
        json.dump({"mxnet_version": mx.__version__, "files": EXPECTED}, f,
                  indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print("wrote %d files, %d bytes in %s" % (len(EXPECTED) + 1, total, OUT))


if __name__ == "__main__":
    main()
