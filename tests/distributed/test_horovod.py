"""mixnet.horovod under mpiexec: collectives on 1, 2 and 3 ranks, training equivalence with one process on the
global batch, and a Horovod MXNet example-style script. The rank programs check themselves (see their docstrings)
and print 'OK rank R'."""
import json
from pathlib import Path

import pytest

from ._mpirun import run

HERE = Path(__file__).parent


def _all_ok(proc, n):
    assert proc.returncode == 0, f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    for r in range(n):
        assert f"OK rank {r}" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("n", [1, 2, 3])
def test_collectives_and_broadcast_parameters(n):
    _all_ok(run(HERE / "_hvd_collectives_job.py", n, timeout=120, args=[n]), n)


def test_training_averages_like_one_process_on_the_global_batch():
    _all_ok(run(HERE / "_hvd_training_job.py", 2, timeout=180), 2)


def test_mnist_style_example_runs_with_only_the_imports_changed(tmp_path):
    out = tmp_path / "result.json"
    proc = run(HERE / "hvd_mnist_example.py", 2, timeout=180, args=["--epochs", "2", "--out", out])
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["size"] == 2
    assert result["val_acc"] > 0.9
    assert result["param_sums"][0] == result["param_sums"][1]      # identical parameters on both ranks
