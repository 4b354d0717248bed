"""Compiling fused kernels in a separate process, so a hybridized block's first calls are not slowed down.

Numba's compiler is Python code: in a thread of the training process it holds the GIL for seconds and every
numpy call of the training loop waits for it. A child process (`python -m mixnet.codegen.precompile`) compiles
the kernels into the shared on-disk cache instead; the training process then only loads them (~0.15 s each). A
child whose parent has exited still finishes, so the next run starts warm.
"""
import json
import os
import subprocess
import sys

from . import cache

__all__ = ["compile_elsewhere", "is_cached"]


def is_cached(kernel):
    """Numba has cache files for this kernel's file (from this or an earlier process)."""
    return bool(cache.numba_cache_files(kernel.path))


def compile_elsewhere(jobs, timeout=600):
    """jobs: [(Kernel, variant)]. Compiles them in a child process into the cache; returns True on success (the
    caller then loads them with Kernel.ensure_compiled, and compiles itself when this returned False)."""
    spec = [{"path": k.path, "dtype": k.dtype.name, "arrays": k.n_inputs + k.n_outputs, "variant": v}
            for k, v in jobs]
    env = dict(os.environ, MIXNET_CACHE_DIR=cache.cache_dir(), NUMBA_CACHE_DIR=cache.numba_cache_dir())
    try:
        done = subprocess.run([sys.executable, "-m", "mixnet.codegen.precompile", json.dumps(spec)], env=env,
                              capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _main(spec):
    from .numba_cpu import signature
    for job in spec:
        with open(job["path"], encoding="utf-8") as f:
            module = cache.load_source(f.read())
        getattr(module, job["variant"]).compile(signature(job["dtype"], job["arrays"]))


if __name__ == "__main__":
    _main(json.loads(sys.argv[1]))
