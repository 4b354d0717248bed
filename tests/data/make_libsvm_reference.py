"""Writes tests/data/libsvm_reference.json with real MXNet 1.9.1: the batches mx.io.LibSVMIter yields over small
LibSVM files (written here; their text is stored with the batches), for tests/test_io_libsvm.py. It covers labels
from the data file and from a label file, batch sizes that wrap the last batch, reset() after a wrap, comments,
blank lines, CRLF, label weights, qid, and num_parts / part_index over a file and over a directory.

Run with MXNet's Python (not by the tests):
    ~/.venvs/mxref/bin/python tests/data/make_libsvm_reference.py
"""
import json
import os
import random
import tempfile

import mxnet as mx

assert mx.__version__ == "1.9.1", mx.__version__
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libsvm_reference.json")

DOC_DATA = "1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n"
DOC_LABEL = "1.0\n-2.0 0:0.125\n-3.0 2:1.2\n4 1:1.0 2:-1.2\n"


def random_file(seed, rows, width, crlf=False):
    """LibSVM text with rows of random length (some empty), weights, qid, comments and blank lines. (MXNet's
    parser has no comments: it skips tokens that are not numbers, so comments here hold no digits, no e or E.)"""
    rng = random.Random(seed)
    lines = []
    for r in range(rows):
        cols = sorted(rng.sample(range(width), rng.choice([0, 1, 2, 5, rng.randint(0, width // 2)])))
        label = str(rng.randint(-3, 9)) + (":%.2f" % rng.random() if rng.random() < 0.2 else "")
        parts = [label] + (["qid:%d" % rng.randint(0, 5)] if rng.random() < 0.2 else [])
        parts += ["%d:%.4g" % (c, rng.uniform(-10, 10)) for c in cols]
        line = " ".join(parts) + (" # ok" if rng.random() < 0.1 else "")
        lines.append(line)
        if rng.random() < 0.1:
            lines.append("" if rng.random() < 0.5 else "# ok")
    return ("\r\n" if crlf else "\n").join(lines) + ("\r\n" if crlf else "\n")


# name: (files {relative path: text}, LibSVMIter keyword arguments (paths relative), epochs)
CASES = {
    "doc_bs3": ({"d.t": DOC_DATA}, dict(data_libsvm="d.t", data_shape=(3,), batch_size=3), 3),
    "doc_bs1": ({"d.t": DOC_DATA}, dict(data_libsvm="d.t", data_shape=(3,), batch_size=1), 2),
    "doc_bs2": ({"d.t": DOC_DATA}, dict(data_libsvm="d.t", data_shape=(3,), batch_size=2), 2),
    "doc_bs4": ({"d.t": DOC_DATA}, dict(data_libsvm="d.t", data_shape=(3,), batch_size=4), 2),
    "doc_bs7": ({"d.t": DOC_DATA}, dict(data_libsvm="d.t", data_shape=(3,), batch_size=7), 1),
    "doc_label_bs3": ({"d.t": DOC_DATA, "l.t": DOC_LABEL},
                      dict(data_libsvm="d.t", label_libsvm="l.t", data_shape=(3,), label_shape=(3,), batch_size=3),
                      3),
    "random_bs4": ({"r.t": random_file(1, 37, 50)}, dict(data_libsvm="r.t", data_shape=(50,), batch_size=4), 3),
    "random_crlf_bs5": ({"r.t": random_file(2, 23, 20, crlf=True)},
                        dict(data_libsvm="r.t", data_shape=(20,), batch_size=5), 2),
    "random_label_bs6": ({"r.t": random_file(3, 29, 30), "l.t": random_file(4, 29, 7)},
                         dict(data_libsvm="r.t", label_libsvm="l.t", data_shape=(30,), label_shape=(7,),
                              batch_size=6), 2),
    "dir_bs5": ({"dir/a.t": random_file(5, 11, 12), "dir/b.t": random_file(6, 9, 12),
                 "dir/c.t": random_file(7, 4, 12)}, dict(data_libsvm="dir", data_shape=(12,), batch_size=5), 2),
}
for parts in (2, 3, 5):
    for index in range(parts):
        CASES[f"parts{parts}_{index}"] = ({"r.t": random_file(8, 41, 25)},
                                          dict(data_libsvm="r.t", data_shape=(25,), batch_size=3,
                                               num_parts=parts, part_index=index), 2)
        CASES[f"dir_parts{parts}_{index}"] = ({"dir/a.t": random_file(9, 13, 10), "dir/b.t": random_file(10, 17, 10),
                                               "dir/c.t": random_file(11, 6, 10)},
                                              dict(data_libsvm="dir", data_shape=(10,), batch_size=2,
                                                   num_parts=parts, part_index=index), 1)


def csr(arr):
    return {"values": arr.data.asnumpy().tolist(), "indices": arr.indices.asnumpy().tolist(),
            "indptr": arr.indptr.asnumpy().tolist()}


def run(files, kwargs, epochs):
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            path = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", newline="") as f:
                f.write(text)
        kw = dict(kwargs)
        for key in ("data_libsvm", "label_libsvm"):
            if key in kw:
                kw[key] = os.path.join(tmp, kw[key])
        # MXNet reads a directory's files in readdir order (os.listdir's); mixnet in name order
        order = os.listdir(os.path.join(tmp, "dir")) if os.path.isdir(os.path.join(tmp, "dir")) else []
        it = mx.io.LibSVMIter(**kw)
        out = {"provide_data": [[d.name, list(d.shape)] for d in it.provide_data],
               "provide_label": [[d.name, list(d.shape)] for d in it.provide_label], "epochs": []}
        for epoch in range(epochs):
            if epoch:
                it.reset()
            batches = []
            for batch in it:
                label = batch.label[0]
                batches.append({"data": csr(batch.data[0]), "pad": batch.pad, "index": batch.index.tolist(),
                                "label": csr(label) if label.stype == "csr" else label.asnumpy().tolist()})
            out["epochs"].append(batches)
        return out, order


def in_read_order(files, order):
    """`files` with the directory's files renamed so that their name order is the order MXNet read them in."""
    renamed = {}
    for rel, text in files.items():
        name = rel.split("/", 1)[-1]
        renamed[f"dir/{order.index(name)}{name}" if rel.startswith("dir/") else rel] = text
    return renamed


if __name__ == "__main__":
    reference = {}
    for name, (files, kwargs, epochs) in CASES.items():
        expected, order = run(files, kwargs, epochs)
        files = in_read_order(files, order)
        reference[name] = {"files": files, "kwargs": {k: list(v) if isinstance(v, tuple) else v
                                                      for k, v in kwargs.items()},
                           "epochs": epochs, "expected": expected}
    with open(OUT, "w") as f:
        json.dump(reference, f, separators=(",", ":"))
    print("wrote", OUT, len(reference), "cases")
