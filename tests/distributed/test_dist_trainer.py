"""gluon.Trainer with a 'dist_sync' KVStore over 2 and 3 processes trains exactly like one process on the same
global batch (MXNet's semantics: N workers calling step(b) == one process summing the loss over N*b examples and
calling step(b)), for SGD with momentum and Adam, hybridized or not, updating on the store or on the workers, with
one or two contexts per process, step() or allreduce_grads() and update(); every rank ends with identical
parameters and optimizer states."""
from pathlib import Path

import numpy as np
import pytest

from ._mpirun import run

JOB = Path(__file__).with_name("train_job.py")
CONFIGS = ["sgd", "sgd-hyb", "adam", "adam-hyb-local", "sgd-2ctx-local", "adam-2ctx", "sgd-split"]


def _arrays(path):
    with np.load(path) as f:
        return [f[f"arr_{i}"] for i in range(len(f.files))]


@pytest.mark.parametrize("n", [2, 3])
def test_dist_sync_matches_single_process(tmp_path, n):
    import mixnet as mx
    run(JOB, n, args=[tmp_path], timeout=120, check=True)
    for name in CONFIGS:
        reference = _arrays(tmp_path / f"{name}-reference.npz")
        ranks = [_arrays(tmp_path / f"{name}-rank{r}.npz") for r in range(n)]
        per_param = len(ranks[0]) // len(reference)       # one copy per context
        for i, value in enumerate(ranks[0]):
            np.testing.assert_allclose(value, reference[i // per_param], rtol=1e-5, atol=1e-6,
                                       err_msg=f"{name}: parameter copy {i} differs from one-process training")
        for r in range(1, n):
            for a, b in zip(ranks[0], ranks[r]):
                np.testing.assert_array_equal(a, b, err_msg=f"{name}: rank {r}'s parameters differ from rank 0's")
        states = [mx.nd.load(str(tmp_path / f"{name}-rank{r}.states")) for r in range(n)]
        for r in range(1, n):
            assert sorted(states[r]) == sorted(states[0])
            for key in states[0]:
                np.testing.assert_array_equal(states[r][key].asnumpy(), states[0][key].asnumpy(),
                                              err_msg=f"{name}: rank {r}'s optimizer state {key} differs")


ERRORS = """
import json, sys
import numpy as np
import mixnet as mx
from mixnet import autograd, gluon
from mixnet.base import MXNetError

out = sys.argv[1]
kv = mx.kv.create("dist_sync")
r = kv.rank
seen = {}
units = 4 if r == 0 else 5                    # rank 1 builds a different model
bad = gluon.nn.Dense(units, in_units=3, prefix="mismatch_")
bad.initialize()
try:
    gluon.Trainer(bad.collect_params(), "sgd", kvstore="dist_sync")
except MXNetError as err:
    seen["shapes"] = [type(err).__name__, str(err)]
for on_kv in (True, False):
    net = gluon.nn.Dense(2, in_units=3, prefix=f"net{int(on_kv)}_")
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", kvstore="dist_sync", update_on_kvstore=on_kv)
    x = mx.nd.ones((2, 3))
    if r == 1:
        x[1, 2] = np.inf
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    try:
        trainer.step(2)
    except MXNetError as err:
        seen[f"nan{int(on_kv)}"] = [type(err).__name__, str(err)]
with open(f"{out}/rank{r}.json", "w") as f:
    json.dump(seen, f)
"""


def test_shape_mismatch_and_nonfinite_gradients_are_named(tmp_path):
    import json
    run(ERRORS, 2, args=[tmp_path], timeout=60, check=True)
    for r in range(2):
        seen = json.loads((tmp_path / f"rank{r}.json").read_text())
        assert seen["shapes"] == [
            "DistError", "KVStore.init: key 0 (parameter 'mismatch_weight') has shape (4, 3) float32 on rank 0 but "
            "(5, 3) float32 on rank 1: every rank must build the same model"]
        for on_kv in (1, 0):
            kind, message = seen[f"nan{on_kv}"]
            assert kind == "DistError"
            assert "NaN or inf" in message and "(parameter 'net%d_weight'): ranks [1]" % on_kv in message
