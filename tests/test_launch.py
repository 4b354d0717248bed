"""python -m mixnet.tools.launch: the mpiexec command lines it builds (no MPI needed), the MXNet launch.py options it
refuses, and one real 2-process run."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mixnet.tools import launch

REPO = Path(__file__).resolve().parents[1]
FAKE = "/opt/mpi/bin/mpiexec"


def cmd(*argv):
    return launch.build_command(["--mpiexec", FAKE, *argv])


def test_dry_run_command_lines(tmp_path, monkeypatch):
    assert cmd("-n", "4", "--", "python", "train.py", "--lr", "0.1") == \
        [FAKE, "-disable-auto-cleanup", "-n", "4", "python", "train.py", "--lr", "0.1"]
    hosts = tmp_path / "hosts"
    hosts.write_text("node1:2\nnode2:2\n")
    monkeypatch.setenv("MY_SETTING", "from shell")
    assert cmd("--num-workers", "4", "-H", str(hosts), "--launcher", "mpi", "--env", "OMP_NUM_THREADS:2",
               "--env", "A=b=c", "--env", "MY_SETTING", "--env-worker", "X:1", "python", "t.py") == \
        [FAKE, "-disable-auto-cleanup", "-n", "4", "-f", str(hosts), "-genv", "OMP_NUM_THREADS", "2",
         "-genv", "A", "b=c", "-genv", "MY_SETTING", "from shell", "-genv", "X", "1", "python", "t.py"]
    assert cmd("-n", "2", "-s", "0", "--launcher", "local", "--", "python", "t.py", "--dry-run")[-1] == "--dry-run"


@pytest.mark.parametrize("argv, message", [
    (["-n", "2", "-s", "2", "--", "python", "t.py"], "no parameter servers"),
    (["-n", "2", "--env-server", "A:1", "--", "python", "t.py"], "no parameter servers"),
    (["-n", "2", "--launcher", "ssh", "--", "python", "t.py"], "-H HOSTFILE"),
    (["-n", "2", "--sync-dst-dir", "/x", "--", "python", "t.py"], "same path"),
    (["-n", "0", "--", "python", "t.py"], "at least 1"),
    (["-n", "2", "--"], "no command"),
    (["-n", "2", "-H", "/no/such/hostfile", "--", "python", "t.py"], "no such file"),
    (["-n", "2", "--env", "UNSET_IN_THIS_SHELL_12345", "--", "python", "t.py"], "not set"),
    (["-n", "2", "--env", "1BAD=x", "--", "python", "t.py"], "not an environment variable name"),
])
def test_refused_options_explain(argv, message):
    with pytest.raises(launch.LaunchError, match=message):
        cmd(*argv)


def _launch(*argv, timeout=60):
    env = dict(os.environ, PYTHONPATH=str(REPO), MIXNET_NUMBA="0")
    return subprocess.run([sys.executable, "-m", "mixnet.tools.launch", *argv], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_main_prints_the_dry_run_and_reports_errors():
    proc = _launch("--mpiexec", FAKE, "-n", "3", "--dry-run", "--", "python", "my script.py")
    assert proc.returncode == 0 and proc.stdout.strip() == \
        f"{FAKE} -disable-auto-cleanup -n 3 python 'my script.py'"
    proc = _launch("-n", "2", "-s", "1", "--", "python", "t.py")
    assert proc.returncode == 2 and "no parameter servers" in proc.stderr


def test_real_two_process_run():
    from tests.distributed._mpirun import skip_reason
    if skip_reason():
        pytest.skip(skip_reason())
    # one write per line: the two ranks share mpiexec's stdout
    script = "import os, sys; from mixnet.distributed import world; w = world(); " \
             "sys.stdout.write(f'rank {w.rank} of {w.size} {os.environ[\"LAUNCH_CHECK\"]}\\n')"
    proc = _launch("-n", "2", "--env", "LAUNCH_CHECK=yes", "--", sys.executable, "-c", script)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == sorted("rank 0 of 2 yes rank 1 of 2 yes".split())
