"""Code generation for fused elementwise kernels (DESIGN.md, "Generated code is for people too").

* `approx`     — vectorizable float32 approximations of exp, expm1, log, log1p, tanh, sigmoid, erf.
* `numba_cpu`  — `render_kernel(group)` (readable Python source, one line per node) and `compile_kernel(group)`.
* `cache`      — content-hashed kernel files in ~/.cache/mixnet/kernels ($MIXNET_CACHE_DIR) with Numba's cache
  beside them, so a second process starts warm.

`import mixnet` does not import this package (nor Numba); the fusion pass imports it when it runs.
"""
from .numba_cpu import (Group, Kernel, Ref, Step, compile_kernel, group_from_nodes, inp, render_kernel,  # noqa
                        step)

__all__ = ["Group", "Step", "Ref", "inp", "step", "render_kernel", "compile_kernel", "Kernel", "group_from_nodes"]
