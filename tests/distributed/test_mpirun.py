"""The mpiexec runner the multi-process tests share: ranks start, see COMM_WORLD and leave no process behind."""
import uuid

from ._mpirun import leftovers, run

SCRIPT = """
import sys
from mixnet.distributed import world
w = world()
with open(f"{sys.argv[1]}/rank{w.rank}", "w") as f:
    f.write(f"{w.rank} {w.size} {w.local_rank} {sys.argv[2]}")
"""


def test_two_ranks_start_and_exit(tmp_path):
    marker = f"mpirun-{uuid.uuid4().hex}"
    run(SCRIPT, 2, args=[tmp_path, marker], timeout=60, check=True)
    assert [(tmp_path / f"rank{r}").read_text() for r in range(2)] == [f"0 2 0 {marker}", f"1 2 1 {marker}"]
    assert leftovers(marker) == []
