"""mx.kv.create('dist_sync*') over 3 processes: every method's semantics (kv_job.py records what each rank saw),
and the errors a single process gets without mpiexec."""
import json
from pathlib import Path

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.distributed import comm

from ._mpirun import run

JOB = Path(__file__).with_name("kv_job.py")
N = 3


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    out = tmp_path_factory.mktemp("kv")
    run(JOB, N, args=[out], timeout=120, check=True)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(N)]


def _every_rank(seen, name):
    values = [s[name] for s in seen]
    for r, v in enumerate(values[1:], 1):
        assert v == values[0], f"{name}: rank {r} saw {v}, rank 0 saw {values[0]}"
    return values[0]


def test_properties(seen):
    for r, s in enumerate(seen):
        assert s["props"] == ["dist_sync_device", r, N, 0, True]
        assert s["props_end"] == [0]


def test_init_broadcasts_rank0_and_push_sums_devices_and_workers(seen):
    assert _every_rank(seen, "init") == [np.ones((2, 3)).tolist(), [0, 5, 10, 15]]
    total = sum(r + 1 + 1 for r in range(N))            # rank r pushes (r + 1) and 1 from two devices
    for r, s in enumerate(seen):
        assert s["push"][:2] == [np.full((2, 3), total).tolist()] * 2
        assert s["push"][2] == np.full((2, 3), r + 1).tolist()    # the pushed array itself is unchanged


def test_pushpull_broadcast_and_buckets(seen):
    assert _every_rank(seen, "pushpull") == [[11 * sum(range(N))] * 4] * 2 + [np.full((2, 3), N).tolist()]
    assert _every_rank(seen, "broadcast") == [0, 1]
    expected = [["float64" if i % 3 == 0 else "float32", (i + 1) * 5 * sum(r + i for r in range(N))]
                for i in range(7)]
    assert _every_rank(seen, "buckets") == expected


def test_optimizer_runs_on_every_worker_and_states_round_trip(seen):
    w, mom = 11.0 * sum(range(N)), 0.0
    for grad in [sum(r + 1 for r in range(N)), N, N]:     # SGD, lr 0.1, momentum 0.9, three pushes
        mom = 0.9 * mom - 0.1 * grad
        w += mom
    np.testing.assert_allclose(_every_rank(seen, "optimizer_after_load"), [w] * 4, rtol=1e-6)
    assert _every_rank(seen, "after_nan") == seen[0]["optimizer_after_load"]     # the NaN push changed nothing


def test_errors_name_what_and_where(seen):
    for name in ("compression", "async", "sparse", "push_keys", "nan"):
        assert [s[name][0] for s in seen] == ["DistError"] * N, name
    assert "'2bit' is not supported over MPI" in seen[0]["compression"][1]
    assert "use 'dist_sync'" in seen[0]["async"][1]
    assert "row_sparse" in seen[0]["sparse"][1]
    assert _every_rank(seen, "init_shape") == [
        "DistError", "KVStore.init: key 'z' has shape (2, 2) float32 on rank 0 but (2, 3) float32 on rank 1: every "
        "rank must build the same model"]
    assert "already initialized" in _every_rank(seen, "init_again")[1]
    assert "ranks [2] differ from rank 0" in seen[0]["push_keys"][1]
    for r, s in enumerate(seen):
        assert s["nan"][1] == f"KVStore.push on rank {r}: a gradient holds NaN or inf (nothing was updated): key " \
                              "'w': ranks [1]"


def test_without_mpiexec(monkeypatch):
    for var in comm._LAUNCHER_VARS:
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(MXNetError, match="not started by an MPI launcher.*mpiexec -n N"):
        mx.kv.create("dist_sync")
    with pytest.raises(MXNetError, match="asynchronous.*use 'dist_sync'"):
        mx.kv.create("dist_async")
    with pytest.raises(MXNetError, match="use one of"):
        mx.kv.create("dist_bogus")
    assert isinstance(mx.kv.create("local"), mx.kvstore.KVStore)


def test_bucket_plan():
    arrays = [np.zeros(10, np.float32), np.zeros(3, np.float64), np.zeros(20, np.float32), np.zeros(0, np.float32),
              np.zeros(5, np.float32), np.zeros(2, np.float64)]
    plan = comm._plan_buckets(arrays, bucket_bytes=60)
    assert [(d.name, idx) for d, idx in plan] == [("float32", [0]), ("float32", [2]), ("float32", [4]),
                                                  ("float64", [1, 5])]
    plan = comm._plan_buckets(arrays, bucket_bytes=1000)
    assert [(d.name, idx) for d, idx in plan] == [("float32", [0, 2, 4]), ("float64", [1, 5])]
