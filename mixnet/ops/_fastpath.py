"""When the CPU kernels take their Numba fast paths, and the scratch buffers those paths reuse.

* `numba_kernels(xp, *arrays, load=True)`: the module of hand-written Numba loops (`_numba_kernels`), imported on
  first use, when every array is a numpy float32/float64 array of one dtype and `ENABLED` is true; otherwise None
  and the caller runs its generic xp code (cupy, integer dtypes, mixed dtypes). Tests set `ENABLED = False` to
  compare the two paths. The first use of the module in a process costs Numba's import and start-up (~1.5 s
  here with a warm cache; compiling a cold cache took ~10 s for all the kernels under load), which the
  convolution and max-pool loops repay within tens of steps. Kernels that gain only a fraction of a millisecond
  (ReLU's backward, the SGD update) pass `load=False`: they use the loops once something else has loaded them
  and numpy before, with the same results either way.
* `workspace(slot, shape, dtype)`: an uninitialised C-contiguous array from a per-thread buffer that is kept
  between calls. A convolution's im2col columns and GEMM output are several megabytes and live only inside one
  kernel call; allocating them fresh each call costs one page fault per 4 KiB page, which on this VM was more
  than the copy itself (conv1 of LeNet: 2300 faults, ~8 ms of a 3 ms kernel). Each slot keeps its largest size
  up to WORKSPACE_LIMIT bytes; larger requests get a fresh array. The convolutions use five slots, so at most
  5 * WORKSPACE_LIMIT stays allocated per thread (a few MiB for LeNet). A workspace view must not escape the
  kernel that asked for it: the next call of any kernel overwrites it.
"""
import threading

import numpy as np

ENABLED = True
WORKSPACE_LIMIT = 64 << 20

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_module = None
_local = threading.local()


def numba_kernels(xp, *arrays, load=True):
    global _module
    if not ENABLED or xp is not np or (_module is None and not load):
        return None
    dtype = arrays[0].dtype
    if dtype not in _FLOATS:
        return None
    for a in arrays[1:]:
        if a.dtype != dtype:
            return None
    if _module is None:
        from . import _numba_kernels
        _module = _numba_kernels
    return _module


def workspace(slot, shape, dtype):
    dtype = np.dtype(dtype)
    size = 1
    for s in shape:
        size *= s
    nbytes = size * dtype.itemsize
    if nbytes > WORKSPACE_LIMIT:
        return np.empty(shape, dtype)
    buffers = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = {}
    buf = buffers.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = buffers[slot] = np.empty(nbytes, np.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)
