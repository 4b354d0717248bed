"""Code generation for fused elementwise kernels. Generated code is for people too: each kernel is a real file,
one line per node with a comment naming the op and the user's line, that can be printed and opened.

* `ir`         — the fusion IR both backends render: `Group`, `Step`, `inp`, `step`, `group_from_nodes`.
* `templates`  — the registry's scalar templates, parsed and checked once for both backends.
* `approx`     — vectorizable float32 approximations of exp, expm1, log, log1p, tanh, sigmoid, erf.
* `numba_cpu`  — `render_kernel(group)` (readable Python source, one line per node) and `compile_kernel(group)`;
  `numba_reduce` renders the groups ending in a sum or mean, `numba_common` holds what both share (`Kernel`).
* `cupy_gpu`   — the same group as CUDA C (`render_kernel(group, layout)`), launched through cupy.
* `backend`    — `kernel_for(xp, kernel)`: the fused op's kernel for numpy (Numba) or cupy (CUDA).
* `cache`      — content-hashed kernel files in ~/.cache/mixnet/kernels ($MIXNET_CACHE_DIR) with Numba's cache
  beside them, so a second process starts warm.

`import mixnet` does not import this package (nor Numba, nor cupy); the fusion pass imports it when it runs, and
the names below load their module on first use, so a GPU-only process never imports Numba.
"""
import importlib

_EXPORTS = {"Group": "ir", "Step": "ir", "Ref": "ir", "inp": "ir", "step": "ir", "group_from_nodes": "ir",
            "render_kernel": "numba_cpu", "compile_kernel": "numba_cpu", "Kernel": "numba_cpu"}

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
