"""Which generated kernel runs a fused group: Numba for numpy arrays, CUDA through cupy for cupy arrays.

The fusion pass compiles each group for the device it plans for (`compile_for`); the `_fused_elemwise` op asks
`kernel_for(xp, kernel)` at run time, so a plan fused for one device still runs on the other (the same group,
compiled there on first use). Each backend module loads only when its kernels are needed: a CPU process never
imports cupy, and a GPU plan never imports Numba.
"""
import numpy as np

from .. import config

__all__ = ["compile_for", "fuses", "kernel_for"]


def fuses(device):
    """Whether hybridized graphs on `device` ('cpu' or 'gpu') get fused kernels: config.FUSE, and on the CPU also
    config.NUMBA (MIXNET_NUMBA=0: no Numba in the process, the graph runs unfused)."""
    return config.FUSE and (device != "cpu" or config.NUMBA)


def compile_for(device, group, compile_now=True):
    """The kernel of `group` for `device` ('cpu': a Numba Kernel, compiled now unless compile_now=False; 'gpu': a
    cupy_gpu.CudaKernel, compiled per layout at its first launch)."""
    if device == "gpu":
        from .cupy_gpu import compile_kernel  # lazy: only GPU plans load the CUDA backend
        return compile_kernel(group)
    if device != "cpu":
        raise ValueError(f"no fused-kernel backend for device {device!r} (expected 'cpu' or 'gpu')")
    from .numba_cpu import compile_kernel  # lazy: imports numba
    return compile_kernel(group, compile_now=compile_now)


def kernel_for(xp, kernel):
    """The kernel that runs `kernel`'s group on arrays of the module `xp` (numpy or cupy)."""
    from .reduction import FusedReduction  # lazy: loads the CUDA renderer, needed only once kernels run
    if isinstance(kernel, FusedReduction):          # a group ending in a reduction: fused on the CPU only
        if xp is np:
            return kernel
        if getattr(xp, "__name__", None) == "cupy":
            return kernel.on_cupy()
    if xp is np:
        from .numba_cpu import Kernel, compile_kernel  # lazy: imports numba
        return kernel if isinstance(kernel, Kernel) else compile_kernel(kernel.group)
    if getattr(xp, "__name__", None) == "cupy":
        from .cupy_gpu import CudaKernel, compile_kernel  # lazy: only GPU plans load the CUDA backend
        return kernel if isinstance(kernel, CudaKernel) else compile_kernel(kernel.group)
    raise ValueError(f"fused kernels run on numpy (Numba) or cupy (CUDA) arrays, not {getattr(xp, '__name__', xp)}")
