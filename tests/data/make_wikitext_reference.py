"""Writes tests/data/wikitext/wikitext_mxnet.json with real MXNet 1.9.1: what gluon.contrib.data.text.WikiText2
makes of the small tokens files next to it (vocabulary, samples, frequencies), and IntervalSampler's orders, so
tests/gluon/test_contrib_data.py can check mixnet's against them. MXNet checks the files' SHA-1 against the
real WikiText-2 and would download on a mismatch; the check is switched off here to read the local files.

Run with MXNet's Python (not by the tests):
    ~/.venvs/mxref/bin/python tests/data/make_wikitext_reference.py
"""
import json
import os

import mxnet as mx
import mxnet.gluon.contrib.data.text as wikitext
from mxnet.gluon import contrib

assert mx.__version__ == "1.9.1", mx.__version__
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wikitext")


def main():
    wikitext.check_sha1 = lambda path, sha1: True
    train = contrib.data.text.WikiText2(root=HERE, segment="train", seq_len=7)
    valid = contrib.data.text.WikiText2(root=HERE, segment="validation", vocab=train.vocabulary, seq_len=3)
    out = {
        "train_len": len(train),
        "vocab": train.vocabulary.idx_to_token,
        "train": [[a.asnumpy().tolist() for a in train[i]] for i in range(len(train))],
        "dtype": str(train[0][0].dtype),
        "valid": [[a.asnumpy().tolist() for a in valid[i]] for i in range(len(valid))],
        "frequencies": sorted(train.frequencies.items()),
        "interval": {f"{n},{k},{r}": list(contrib.data.IntervalSampler(n, k, rollover=r))
                     for n, k in ((10, 3), (13, 3), (5, 5), (7, 1)) for r in (True, False)},
    }
    with open(os.path.join(HERE, "wikitext_mxnet.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
