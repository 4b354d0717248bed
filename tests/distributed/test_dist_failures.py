"""A rank that dies or hangs never hangs the job: the others raise an MXNetError (DistTimeoutError naming their
rank and the collective) within MIXNET_DIST_TIMEOUT, and mpiexec then ends with no process of the job left behind.

What MPICH's hydra does (5.0.2, measured): under plain mpiexec a rank that dies (signal or non-zero exit) ends the
whole job at once; under `mpiexec -disable-auto-cleanup` a rank that exits is reported by every survivor at its
deadline (they then call MPI_Abort, which ends the job), while a rank killed by a signal still makes hydra kill the
job, usually before the survivors reach their deadline."""
import json
import time
import uuid

import pytest

from ._mpirun import leftovers, run

JOB = """
import json, os, signal, sys, time
import mixnet as mx
from mixnet.base import MXNetError

out, mode = sys.argv[1], sys.argv[2]          # argv[3]: the test's marker, for pgrep
kv = mx.kv.create("dist_sync")
kv.init(0, mx.nd.zeros(3))
kv.push(0, mx.nd.ones(3))                     # a step that every rank completes
if kv.rank == 1:
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "exit":
        os._exit(3)                           # dies without a word (no MPI_Finalize, no abort)
    time.sleep(3600)                          # hangs
try:
    kv.push(0, mx.nd.ones(3))
except MXNetError as err:
    with open(f"{out}/rank{kv.rank}.json", "w") as f:
        json.dump([type(err).__name__, str(err)], f)
    raise
"""


def _no_leftovers(marker):
    deadline = time.monotonic() + 10           # mpiexec has exited; its processes may take a moment to go
    while leftovers(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert leftovers(marker) == []


def _check_report(path, rank, n, stderr):
    kind, message = json.loads(path.read_text())
    assert kind == "DistTimeoutError"
    assert message.startswith(f"rank {rank} of {n}: KVStore.push")
    assert "within 5 s (MIXNET_DIST_TIMEOUT)" in message and "another rank died, hangs" in message
    assert f"mixnet.distributed: rank {rank} of {n}:" in stderr


@pytest.mark.parametrize("mode, n, mpiexec_args", [("exit", 3, ["-disable-auto-cleanup"]), ("hang", 2, []),
                                                   ("kill", 2, ["-disable-auto-cleanup"])])
def test_dead_or_hung_rank_is_reported_and_job_ends(tmp_path, mode, n, mpiexec_args):
    marker = f"distfail-{uuid.uuid4().hex}"
    try:
        proc = run(JOB, n, env={"MIXNET_DIST_TIMEOUT": "5"}, timeout=90, args=[tmp_path, mode, marker],
                   mpiexec_args=mpiexec_args)
        assert proc.returncode != 0
        assert not (tmp_path / "rank1.json").exists()
        for r in range(n):
            if r == 1:
                continue
            report = tmp_path / f"rank{r}.json"
            if mode == "kill" and not report.exists():
                continue            # hydra killed the survivor with the dead rank: the job ended all the same
            _check_report(report, r, n, proc.stderr)
    finally:
        _no_leftovers(marker)
