"""Sums and means fused into the elementwise group they read: which reductions qualify (`plan`), and the
kernel object of such a fused node (`FusedReduction`).

A reduction qualifies when, on C-order data of the group's shape, the axes it removes are all of them, a
leading run or a trailing run once size-1 axes are dropped: then the reduced values are rows or columns of the
flat array and the generated kernel (codegen/numba_reduce.py) needs no index arithmetic. Anything else (middle
axes, interleaved axes) keeps the unfused path: the group writes its result and the reduction reads it.

One compiled kernel serves every shape of its layout, so the per-node facts (the reduced shape, the elementwise
size that picks the serial or parallel variant) live in a `FusedReduction` per fused node.
"""
import math

import numpy as np
from .cupy_gpu import compile_kernel

__all__ = ["plan", "FusedReduction"]


def plan(shape, axes):
    """'trailing' or 'leading' (see ir.Reduction) for reducing `axes` of a C-order array of `shape`, or None
    when the reduction is not one of those layouts or adds nothing up (only size-1 axes reduced)."""
    reduced = [a in axes for a, d in enumerate(shape) if d != 1]
    if not any(reduced):
        return None
    if reduced == sorted(reduced):                  # kept..., reduced...: rows (all axes: a single row)
        return "trailing"
    if reduced == sorted(reduced, reverse=True):    # reduced..., kept...: columns
        return "leading"
    return None


class FusedReduction:
    """The `kernel` attribute of a fused node whose group ends in a reduction: `self(*inputs, out=None)` returns
    the reduced array of `out_shape` (numpy; codegen/numba_reduce.ReduceKernel does the work). `size` is the
    number of elementwise values, which picks the kernel variant. The attributes the compiled-graph machinery
    reads from a Numba Kernel (dtype, path, source, ensure_compiled, ...) are the kernel's."""

    def __init__(self, kernel, out_shape, size):
        self.kernel, self.out_shape, self.size = kernel, tuple(out_shape), int(size)
        self.group, self.dtype, self.source = kernel.group, kernel.dtype, kernel.source
        self.n_inputs, self.n_outputs = kernel.n_inputs, 1

    @property
    def path(self):
        return self.kernel.path

    @property
    def parallel_threshold(self):
        return self.kernel.parallel_threshold

    def variant_for(self, n=None):
        """The variant the node runs. `n` (what callers know: the output's size) is ignored: the elementwise
        size decides, as it does for the elementwise kernels."""
        return self.kernel.variant_for(self.size)

    def ensure_compiled(self, variant="serial"):
        return self.kernel.ensure_compiled(variant)

    def __call__(self, *inputs, out=None):
        if out is None:
            out = np.empty(self.out_shape, self.dtype)
        return self.kernel(*inputs, out=out)

    def on_cupy(self):
        """For a plan fused on the CPU that runs on cupy arrays: the group's elementwise kernel for CUDA
        (cupy_gpu), then cupy's own sum over the same rows or columns. The reduction is not rendered for CUDA
        (the fusion pass does not fuse reductions in GPU plans)."""
        from dataclasses import replace

        elementwise = compile_kernel(replace(self.group, reduce=None))
        red = self.group.reduce
        m = math.prod(self.out_shape)

        def run(*inputs, out=None):
            values = elementwise(*inputs).reshape(-1)
            rows = values.reshape(m, -1) if red.layout == "trailing" else values.reshape(-1, m)
            axis = 1 if red.layout == "trailing" else 0
            result = rows.sum(axis=axis) if red.kind == "sum" else rows.mean(axis=axis)
            result = result.astype(self.dtype, copy=False).reshape(self.out_shape)
            if out is None:
                return result
            out[...] = result
            return out
        return run
