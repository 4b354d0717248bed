"""`python -m mixnet`: a diagnostics report to paste into a bug report.

    python -m mixnet

Versions (mixnet, Python, the platform, the packages mixnet uses or can use), features (Numba JIT, CUDA through
cupy and the GPUs' names, MPI), the kernel cache directory and its size, thread settings, and the MIXNET_* flags
that are not at their defaults. It compiles nothing and starts no MPI; each part that cannot be determined (a
package missing or broken, no driver) says so in its line instead of failing the report.
"""
import functools
import importlib
import importlib.metadata
import importlib.util
import os
import platform
import shutil
import sys

import mixnet
from mixnet import config
from mixnet.codegen import cache

__all__ = ["report", "main"]

# (module, what it is for) in the order shown.
PACKAGES = (("numpy", "arrays on the CPU"), ("numba", "fused CPU kernels and eager loops"),
            ("llvmlite", "Numba's compiler"), ("cupy", "GPU arrays and kernels"),
            ("mpi4py", "distributed training"), ("tqdm", "progress bars"), ("graphviz", "graph pictures"),
            ("threadpoolctl", "BLAS thread limits"), ("IPython", "notebook display"))
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
                    "NUMBA_THREADING_LAYER")


def _describe_error(err):
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}".rstrip(": ")[:160]


def _version(module):
    """The installed version of `module` (from its distribution's metadata, without importing it), or None when
    it is not installed."""
    try:
        if importlib.util.find_spec(module) is None:
            return None
    except (ImportError, ValueError):
        return None
    loaded = sys.modules.get(module)
    if getattr(loaded, "__version__", None):
        return str(loaded.__version__)
    try:
        return importlib.metadata.version(module)
    except importlib.metadata.PackageNotFoundError:     # another distribution name (cupy-cuda12x): look it up
        pass
    for name in _distributions().get(module, ()):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "installed (version unknown)"


@functools.lru_cache(maxsize=None)
def _distributions():
    return importlib.metadata.packages_distributions()      # ~0.3 s: reads every installed distribution's files


def _import(module):
    """(module, None) or (None, why it cannot be imported)."""
    try:
        return importlib.import_module(module), None
    except ImportError as err:
        return None, "not installed" if importlib.util.find_spec(module) is None else _describe_error(err)
    except Exception as err:        # a broken install raises anything: the report says so and goes on
        return None, _describe_error(err)


def _numba_line():
    if not config.NUMBA:
        return "off (MIXNET_NUMBA=0: every op runs its numpy code)"
    numba, why = _import("numba")
    if numba is None:
        return f"unavailable ({why}): ops run their numpy code"
    return f"available (Numba {numba.__version__}, {numba.config.NUMBA_NUM_THREADS} threads)"


def _cuda_line():
    cupy, why = _import("cupy")
    if cupy is None:
        return f"no ({why})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:         # no driver, or no device: cupy raises its own CUDARuntimeError
        return f"no (cupy {cupy.__version__} finds no usable GPU: {_describe_error(err)})"
    if count == 0:
        return f"no (cupy {cupy.__version__} finds no GPU)"
    names = []
    for device in range(count):
        try:
            name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
            names.append(f"gpu({device}) {name.decode() if isinstance(name, bytes) else name}")
        except Exception as err:
            names.append(f"gpu({device}) ({_describe_error(err)})")
    return f"yes, {count} GPU(s): " + "; ".join(names)


def _mpi_line():
    version = _version("mpi4py")
    if version is None:
        return "no (mpi4py not installed: pip install \"mixnet[dist]\")"
    from mixnet.tools.launch import mpiexec_path   # the launcher's own search (next to this Python, then PATH)
    mpiexec = mpiexec_path()
    where = f"mpiexec at {mpiexec}" if mpiexec else "no mpiexec found (install the mpich wheel or an MPI)"
    return f"mpi4py {version}, {where}"


def _cache_lines():
    path = cache.cache_dir()
    lines = [f"  directory  {path}" + ("  (MIXNET_CACHE_DIR)" if config.CACHE_DIR else "")]
    if not os.path.isdir(path):
        lines.append("  contents   not created yet (made at the first fused kernel)")
        return lines
    kernels, size = 0, 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                size += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
            kernels += name.startswith("mx_") and name.endswith((".py", ".cu")) and folder == path
    lines.append(f"  contents   {kernels} kernel(s), {size / (1 << 20):.1f} MiB of {config.CACHE_MAX_MB:g} MiB "
                 "(MIXNET_CACHE_MAX_MB)")
    problem = cache._problem(path)
    lines.append("  usable     " + ("yes" if problem is None else f"no: it {problem}"))
    return lines


def _thread_lines():
    cpus = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cpus
    lines = [f"  CPUs       {cpus} ({usable} usable by this process)"]
    for name in THREAD_VARIABLES:
        lines.append(f"  {name:<22} {os.environ.get(name, 'unset')}")
    threadpoolctl, why = _import("threadpoolctl")
    if threadpoolctl is None:
        lines.append(f"  BLAS       unknown (threadpoolctl: {why})")
        return lines
    try:
        pools = threadpoolctl.threadpool_info()
    except Exception as err:
        pools, why = [], _describe_error(err)
    for pool in pools:
        lines.append(f"  {pool.get('user_api', '?'):<10} {pool.get('internal_api', '?')} "
                     f"{pool.get('version') or ''}, {pool.get('num_threads')} threads".replace(" ,", ","))
    if not pools:
        lines.append(f"  BLAS       no thread pool reported{f' ({why})' if why else ''}")
    return lines


def report():
    """The report as text."""
    lines = [f"mixnet {mixnet.__version__} ({os.path.dirname(mixnet.__file__)})",
             f"Python {platform.python_version()} ({platform.python_implementation()}, {sys.executable})",
             f"Platform {platform.platform()} ({platform.machine()})", "", "Packages"]
    for module, purpose in PACKAGES:
        version = _version(module)
        if module == "graphviz" and version is not None:
            purpose += f"; the dot program: {shutil.which('dot') or 'not found (pictures fall back to text)'}"
        lines.append(f"  {module:<14} {version or 'not installed':<14} {purpose}")
    lines += ["", "Features", f"  Numba JIT  {_numba_line()}", f"  CUDA       {_cuda_line()}",
              f"  MPI        {_mpi_line()}", "", "Kernel cache"] + _cache_lines()
    lines += ["", "Threads"] + _thread_lines()
    changed = config.describe(changed_only=True)
    lines += ["", "Flags not at their defaults (mx.config.describe() lists all)"]
    lines += ["  " + line for line in changed.splitlines()]
    return "\n".join(lines)


def main():
    print(report())


if __name__ == "__main__":
    main()
