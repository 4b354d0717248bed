"""The mpiexec runner the multi-process tests share: ranks start, see COMM_WORLD and leave no process behind."""
import uuid

from ._mpirun import leftovers, run

SCRIPT = """
import sys
from mixnet.distributed import world
w = world()
print(f"rank {w.rank} of {w.size} local {w.local_rank} marker {sys.argv[1]}")
"""


def test_two_ranks_start_and_exit():
    marker = f"mpirun-{uuid.uuid4().hex}"
    proc = run(SCRIPT, 2, args=[marker], timeout=60, check=True)
    lines = sorted(line for line in proc.stdout.splitlines() if line.startswith("rank"))
    assert lines == [f"rank 0 of 2 local 0 marker {marker}", f"rank 1 of 2 local 1 marker {marker}"]
    assert leftovers(marker) == []
