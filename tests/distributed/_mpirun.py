"""Runs a Python script under `mpiexec -n N` for the multi-process tests (kvstore, Trainer, Horovod API, failures).

    from ._mpirun import run, leftovers      # in a test module under tests/distributed/
    proc = run(SCRIPT_TEXT, 2, env={"MIXNET_DIST_TIMEOUT": "5"}, timeout=60, args=[str(tmp_path)])
    assert proc.returncode == 0, proc.stderr

`run` skips the calling test (pytest.skip, whose reason `-rs` prints) when mpi4py or mpiexec is missing. The job
runs in its own session (process group): on timeout the whole group (mpiexec, hydra's proxy, every rank) is killed
and the test fails with what the ranks printed. The ranks import this checkout's mixnet (PYTHONPATH), run with one
BLAS/OpenMP thread and MIXNET_NUMBA=0 (Numba's start-up is not what these tests check) unless `env` says otherwise.

mpiexec (MPICH's hydra) interleaves the ranks' output, often inside a line (one rank's text, another's, then both
newlines), even with whole-line flushed writes: ranks write what a test checks to files (pass tmp_path in `args`),
and stdout/stderr serve as diagnostics or for substring checks where one rank writes.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# What every rank gets unless the caller's env overrides it: small jobs on a 2-core machine, so one thread each.
DEFAULT_ENV = {
    "MIXNET_NUMBA": "0",
    "MIXNET_DIST_TIMEOUT": "30",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}



def mpiexec_path():
    """The mpiexec next to this Python (the mpich wheel installs it in the venv's bin), else the one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    return shutil.which("mpiexec")


def skip_reason():
    """Why multi-process tests cannot run here, or None."""
    import importlib.util
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install -e \".[dist]\")"
    if mpiexec_path() is None:
        return "mpiexec not found (pip install -e \".[dist]\" installs the mpich wheel's)"
    return None


def require_mpi():
    """Skips the calling test with the reason when MPI is not available."""
    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)


def run(script, n, env=None, timeout=60, args=(), mpiexec_args=(), check=False):
    """Runs `script` (Python source text, or a pathlib.Path to a .py file) on n ranks; returns the
    CompletedProcess (text stdout/stderr of all ranks). `args` go to the script's argv (put a unique marker there
    to find its processes with `leftovers`); `mpiexec_args` go before `-n` (e.g. ["-disable-auto-cleanup"]).
    A job still running after `timeout` seconds is killed, process group and all, and the test fails."""
    require_mpi()
    full_env = dict(os.environ)
    full_env.update(DEFAULT_ENV)
    full_env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    full_env.update(env or {})
    with tempfile.TemporaryDirectory(prefix="mixnet-mpirun-") as tmp:
        if isinstance(script, Path):
            path = script
        else:
            path = Path(tmp) / "job.py"
            path.write_text(script)
        cmd = [mpiexec_path(), *mpiexec_args, "-n", str(n), sys.executable, str(path), *map(str, args)]
        proc = subprocess.Popen(cmd, env=full_env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            out, err = proc.communicate()
            pytest.fail(f"mpiexec -n {n} did not finish within {timeout} s\n--- stdout\n{out}\n--- stderr\n{err}")
    result = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if check and result.returncode != 0:
        pytest.fail(f"mpiexec -n {n} exited with {result.returncode}\n--- stdout\n{out}\n--- stderr\n{err}")
    return result


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def leftovers(marker):
    """Command lines of live processes whose argv contains `marker` (none after a job that cleaned up)."""
    found = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True)
    return [line for line in found.stdout.splitlines() if line.strip() and "pgrep" not in line]
