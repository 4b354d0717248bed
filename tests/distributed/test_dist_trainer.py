"""gluon.Trainer with a 'dist_sync' KVStore over 2 and 3 processes trains exactly like one process on the same
global batch (MXNet's semantics: N workers calling step(b) == one process summing the loss over N*b examples and
calling step(b)), for SGD with momentum and Adam, hybridized or not, updating on the store or on the workers, with
one or two contexts per process; every rank ends with identical parameters and optimizer states."""
from pathlib import Path

import numpy as np
import pytest

from ._mpirun import run

JOB = Path(__file__).with_name("train_job.py")
CONFIGS = ["sgd", "sgd-hyb", "adam", "adam-hyb-local", "sgd-2ctx-local", "adam-2ctx"]


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
