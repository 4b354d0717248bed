"""`python -m mixnet`: the diagnostics report (mixnet/__main__.py), with and without the optional packages."""
import importlib.machinery
import os
import subprocess
import sys
import types

import pytest

from mixnet import __main__ as diagnostics
from mixnet.codegen import cache

OPTIONAL = ("numba", "llvmlite", "cupy", "mpi4py", "tqdm", "graphviz", "threadpoolctl", "IPython")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs the report in a fresh interpreter in which some optional packages are missing (None in sys.modules: both
# importlib.util.find_spec and import then say "not installed") and others are broken (found, but importing them
# raises something other than ImportError, as a half-installed package does).
_BLOCKED_RUN = r"""
import importlib.abc, importlib.machinery, runpy, sys
missing, broken = sys.argv[1].split(","), sys.argv[2].split(",")
for name in missing:
    sys.modules[name] = None

class Broken(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in broken:
            return importlib.machinery.ModuleSpec(fullname, self)
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        raise RuntimeError(f"{module.__name__} is broken\nsecond line")

sys.meta_path.insert(0, Broken())
runpy.run_module("mixnet", run_name="__main__")
assert not set(missing) & {name for name, m in sys.modules.items() if m is not None}
"""


def _run_blocked(missing, broken, tmp_path, **env):
    env = dict(os.environ, MIXNET_CACHE_DIR=str(tmp_path / "kernels"), PYTHONPATH=ROOT, **env)
    done = subprocess.run([sys.executable, "-c", _BLOCKED_RUN, ",".join(missing), ",".join(broken)],
                          capture_output=True, text=True, env=env, timeout=120, cwd=str(tmp_path))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def test_report_without_any_optional_package(tmp_path):
    out = _run_blocked(OPTIONAL, (), tmp_path, MIXNET_FUSE="0")
    lines = out.splitlines()
    assert lines[0].startswith("mixnet 0.1.0 (") and lines[1].startswith("Python 3.")
    for name in OPTIONAL:
        assert any(line.split()[:3] == [name, "not", "installed"] for line in lines), name
    assert "  Numba JIT  unavailable (not installed): ops run their numpy code" in lines
    assert "  CUDA       no (not installed)" in lines
    assert '  MPI        no (mpi4py not installed: pip install "mixnet[dist]")' in lines
    assert "  BLAS       unknown (threadpoolctl: not installed)" in lines
    assert "  contents   not created yet (made at the first fused kernel)" in lines
    flags = lines[lines.index("Flags not at their defaults (mx.config.describe() lists all)") + 1:]
    assert "MIXNET_FUSE" in [line.split()[0] for line in flags]


def test_report_with_broken_optional_packages(tmp_path):
    out = _run_blocked((), ("numba", "cupy", "threadpoolctl"), tmp_path)
    assert "  Numba JIT  unavailable (RuntimeError: numba is broken): ops run their numpy code" in out
    assert "  CUDA       no (RuntimeError: cupy is broken)" in out
    assert "  BLAS       unknown (threadpoolctl: RuntimeError: threadpoolctl is broken)" in out


def test_numba_switched_off_is_not_imported(tmp_path):
    out = _run_blocked((), ("numba",), tmp_path, MIXNET_NUMBA="0")    # importing it would say "broken"
    assert "  Numba JIT  off (MIXNET_NUMBA=0: every op runs its numpy code)" in out


def _fake_cupy(count, names=()):
    def properties(device):
        return {"name": names[device].encode()}

    def device_count():
        if isinstance(count, Exception):
            raise count
        return count
    runtime = types.SimpleNamespace(getDeviceCount=device_count, getDeviceProperties=properties)
    module = types.ModuleType("cupy")
    module.__spec__ = importlib.machinery.ModuleSpec("cupy", None)
    module.__version__ = "13.9.9"
    module.cuda = types.SimpleNamespace(runtime=runtime)
    return module


@pytest.mark.parametrize("count, names, line", [
    (2, ("NVIDIA H100 80GB HBM3", "NVIDIA A10"), "yes, 2 GPU(s): gpu(0) NVIDIA H100 80GB HBM3; gpu(1) NVIDIA A10"),
    (0, (), "no (cupy 13.9.9 finds no GPU)"),
    (RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient"), (),
     "no (cupy 13.9.9 finds no usable GPU: RuntimeError: cudaErrorInsufficientDriver: CUDA driver version is "
     "insufficient)"),
])
def test_cuda_line_names_the_gpus(monkeypatch, count, names, line):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(count, names))
    assert f"  CUDA       {line}" in diagnostics.report().splitlines()


def test_cache_directory_size_and_usability(tmp_path):
    (tmp_path / "mx_0123456789abcdef.py").write_text("x" * 1000)
    (tmp_path / "mx_fedcba9876543210.cu").write_text("y" * 1000)
    (tmp_path / "numba").mkdir()
    (tmp_path / "numba" / "mx_0123456789abcdef.nbi").write_bytes(b"z" * (1 << 20))
    previous = cache.set_cache_dir(tmp_path)
    try:
        lines = diagnostics._cache_lines()
        assert lines[0] == f"  directory  {tmp_path}"
        assert lines[1] == "  contents   2 kernel(s), 1.0 MiB of 512 MiB (MIXNET_CACHE_MAX_MB)"
        assert lines[2] == "  usable     yes"
        os.chmod(tmp_path, 0o777)                        # others may write: refused, as the cache itself would
        assert diagnostics._cache_lines()[2].startswith("  usable     no: it is writable by other users")
    finally:
        os.chmod(tmp_path, 0o700)
        cache.set_cache_dir(previous)


def test_module_runs_as_a_script():
    done = subprocess.run([sys.executable, "-m", "mixnet"], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr
    sections = [line for line in done.stdout.splitlines() if line and not line.startswith(" ")]
    assert sections[3:] == ["Packages", "Features", "Kernel cache", "Threads",
                            "Flags not at their defaults (mx.config.describe() lists all)"]
