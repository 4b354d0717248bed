"""What the elementwise kernels (numba_cpu) and the reduction kernels (numba_reduce) share: the rendering of a
group's loop body from the registry's templates (`render_body`, `render_imports`) and the compiled `Kernel`
class, which `numba_reduce.ReduceKernel` extends. numba_cpu's docstring describes the generated code."""
import ast
import threading

import numpy as np

from . import cache, numba_load, templates
from .safe_text import node_comment

# ------------------------------------------------------------------------------------------------ rendering
# Template function -> generated-code function. Bool-valued ones are cast back to the kernel dtype.
_FUNCTIONS = {
    "abs": "np.abs", "acos": "np.arccos", "acosh": "np.arccosh", "asin": "np.arcsin", "asinh": "np.arcsinh",
    "atan": "np.arctan", "atanh": "np.arctanh", "cbrt": "np.cbrt", "ceil": "np.ceil", "cos": "np.cos",
    "cosh": "np.cosh", "exp": "np.exp", "expm1": "np.expm1", "floor": "np.floor", "fmod_floor": "fmod_floor",
    "hypot": "np.hypot", "isfinite": "np.isfinite", "isinf": "np.isinf", "isnan": "np.isnan", "log": "np.log",
    "log10": "np.log10", "log1p": "np.log1p", "log2": "np.log2", "max": "maximum", "min": "minimum",
    "pow": "power", "rint": "np.rint", "sign": "np.sign", "sin": "np.sin", "sinh": "np.sinh", "sqrt": "np.sqrt",
    "tan": "np.tan", "tanh": "np.tanh", "trunc": "np.trunc", "erf": "math.erf", "erfinv": "erfinv",
    "lgamma": "math.lgamma", "tgamma": "math.gamma",
}
_APPROX_F32 = {"exp": "exp_f32", "expm1": "expm1_f32", "log": "log_f32", "log1p": "log1p_f32",
               "tanh": "tanh_f32", "erf": "erf_f32", "sigmoid": "sigmoid_f32"}
_CAST_FUNCS = {"erfinv", "lgamma", "tgamma", "erf"}        # may return float64: cast back


def _function_table(dtype, exact):
    table = dict(_FUNCTIONS)
    table["round"] = "round_half_away_f32" if dtype == "float32" else "round_half_away_f64"
    table["sigmoid"] = "sigmoid_libm32" if dtype == "float32" else "sigmoid_libm64"
    if dtype == "float32" and not exact:
        table.update(_APPROX_F32)
    return table


class _Renderer(ast.NodeTransformer):
    """A parsed template (templates.parse) -> Python: constants in the kernel dtype, functions mapped."""

    def __init__(self, functions, const):
        self.functions, self.const = functions, const
        self.used = set()

    def visit_Constant(self, node):
        return ast.copy_location(self.const(node.value), node)

    def visit_Call(self, node):
        if node.func.id not in self.functions:
            raise ValueError(f"template function {node.func.id!r} has no Numba form")
        target = self.functions[node.func.id]
        self.used.add(target)
        node.args = [self.visit(a) for a in node.args]
        node.func = ast.parse(target, mode="eval").body
        return node


def _render_expr(template, args, attrs, dtype, functions, used):
    """One template -> one expression string, with `args` the variable names of its inputs."""
    np_type = "np.float32" if dtype == "float32" else "np.float64"

    def const(value):
        text = repr(float(value))
        if text in ("inf", "-inf", "nan"):
            text = f"np.{text.lstrip('-')}" if not text.startswith("-") else "-np.inf"
            return ast.parse(f"{np_type}({text})", mode="eval").body
        if dtype == "float32":
            return ast.parse(f"np.float32({text})", mode="eval").body
        return ast.parse(text, mode="eval").body

    tree = templates.parse(template, args, attrs)
    head_is_bool = templates.is_bool(tree)
    head_needs_cast = isinstance(tree, ast.Call) and \
        tree.func.id in _CAST_FUNCS and functions.get(tree.func.id, "").startswith(("math.", "erfinv"))
    renderer = _Renderer(functions, const)
    tree = renderer.visit(tree)
    used |= renderer.used
    text = ast.unparse(tree)
    if head_is_bool or head_needs_cast or (dtype == "float32" and _needs_f32_cast(renderer.used)):
        text = f"{np_type}({text})"
    return text


def _needs_f32_cast(used):
    return bool(used & {"math.erf", "math.lgamma", "math.gamma", "erfinv"})


def render_body(group, exact, tail, locations=True):
    """The loop body of `group`: (dtype, lines, used). Each line is one load (`a<k> = x<k>[i]`) or one node
    (`v<j> = ...`, commented with the op and, with `locations`, the user line); `tail(body, comments)` appends
    what uses the results. `used` names the generated-code functions the body calls (for the imports)."""
    dtype = templates.kernel_dtype(group)
    functions = _function_table(dtype, exact)
    used = set()
    body, comments = [], []
    rows, loaded = templates.step_arguments(group)
    for j, s, args in rows:
        expr = _render_expr(s.template, args, s.attrs, dtype, functions, used)
        body.append(f"v{j} = {expr}")
        comments.append(node_comment(s.op, s.location, locations))
    body = [f"a{k} = x{k}[i]" for k in loaded] + body
    comments = [None] * len(loaded) + comments
    tail(body, comments)
    width = max(len(b) for b in body) + 2
    return dtype, [(b.ljust(width) + "# " + c) if c else b for b, c in zip(body, comments)], used


def render_imports(used, dtype, exact, numba_names="njit, prange"):
    """(import lines, mode text) for a kernel module whose body calls `used`."""
    helpers = sorted(u for u in used if "." not in u)
    imports = ["import numpy as np", f"from numba import {numba_names}"]
    if any(u.startswith("math.") for u in used):
        imports = ["import math", ""] + imports
    if helpers:
        imports.append("from mixnet.codegen.approx import " + ", ".join(helpers))
    mode = "libm transcendentals (exact)" if exact or dtype == "float64" else "approximate transcendentals (approx.py)"
    return imports, mode


# ------------------------------------------------------------------------------------------------ compiling
class Kernel:
    """A compiled group: `kernel(*inputs, out=None)` returns one array (or a tuple, for several outputs).

    Attributes: source (the generated Python, as cached: no user lines), path (its file; None when there is no
    usable cache directory and the kernel compiled in memory), module, serial / parallel (Numba dispatchers),
    parallel_threshold (elements at and above which `parallel` runs), dtype.
    """

    def __init__(self, group, source, parallel_threshold):
        self.group, self.source = group, source
        self.dtype = np.dtype(group.dtype)
        self.n_inputs, self.n_outputs = group.n_inputs, len(group.outputs)
        self.parallel_threshold = parallel_threshold
        self._lock = threading.Lock()
        self._ready = set()
        self.module = cache.load_source(source)
        self.path = getattr(self.module, "__file__", None)

    @property
    def serial(self):
        return self.module.serial

    @property
    def parallel(self):
        return self.module.parallel

    def signature(self):
        return signature(self.dtype, self.n_inputs + self.n_outputs)

    def variant_for(self, n):
        return "parallel" if n >= self.parallel_threshold else "serial"

    def ensure_compiled(self, variant="serial"):
        """Compile (or load from the cache) `variant` for C-contiguous arrays of the kernel's dtype. A cache entry
        Numba cannot read is deleted and the kernel compiled again."""
        if variant in self._ready:
            return getattr(self.module, variant)
        with self._lock:
            if variant not in self._ready:
                try:
                    dispatcher = getattr(self.module, variant)
                    numba_load.load_cached(dispatcher, [self.signature()])     # cached: Numba's compiler not started
                    dispatcher.compile(self.signature())
                except Exception:    # noqa: BLE001 - a broken cache entry: purge, re-import, compile once more
                    if self.path is None:                       # compiled in memory: there is no cache entry
                        raise
                    cache.purge_numba_cache(self.path)
                    self.module = cache.load_source(self.source, fresh=True)
                    self._ready.clear()
                    getattr(self.module, variant).compile(self.signature())
                self._ready.add(variant)
        return getattr(self.module, variant)

    def _launch(self, n, *arrays):
        """Runs the variant for n elements on the flat arrays. Numba's 'workqueue' threading layer (its fallback
        when neither OpenMP nor TBB loads) aborts the whole process when two threads run parallel kernels at once,
        so under it parallel kernels take turns. Which layer Numba uses is known only once its first parallel
        kernel has run, so that first one takes the turn too."""
        variant = self.variant_for(n)
        fn = self.ensure_compiled(variant)
        if variant == "serial" or _PARALLEL_ALONE[0] is False:
            fn(n, *arrays)
            return
        with _PARALLEL_TURN:
            fn(n, *arrays)
            if _PARALLEL_ALONE[0] is None:
                import numba
                _PARALLEL_ALONE[0] = numba.threading_layer() == "workqueue"

    def _flat_inputs(self, inputs):
        if len(inputs) != self.n_inputs:
            raise TypeError(f"kernel takes {self.n_inputs} inputs, got {len(inputs)}")
        arrays = [np.asarray(a) for a in inputs]
        shape = arrays[0].shape if arrays else ()
        if any(a.shape != shape for a in arrays):
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
        flat = []
        for a in arrays:
            if a.dtype != self.dtype:
                a = a.astype(self.dtype)
            if a.shape != shape:
                a = np.broadcast_to(a, shape)
            flat.append(np.ascontiguousarray(a).reshape(-1))
        return shape, flat

    def __call__(self, *inputs, out=None):
        shape, flat = self._flat_inputs(inputs)
        n = flat[0].size if flat else int(np.prod(shape))
        if out is None:
            outs = tuple(np.empty(shape, self.dtype) for _ in range(self.n_outputs))
        else:
            outs = out if isinstance(out, tuple) else (out,)
            if len(outs) != self.n_outputs:
                raise TypeError(f"kernel has {self.n_outputs} outputs, got {len(outs)} in out=")
            for o in outs:
                if o.shape != shape or o.dtype != self.dtype:
                    raise ValueError(f"out= must be {self.dtype} of shape {shape}, got {o.dtype} {o.shape}")
        targets = [o if o.flags.c_contiguous else np.empty(shape, self.dtype) for o in outs]
        self._launch(n, *flat, *(t.reshape(-1) for t in targets))
        for o, t in zip(outs, targets):
            if o is not t:
                o[...] = t
        return outs[0] if self.n_outputs == 1 else outs


_PARALLEL_TURN = threading.Lock()
_PARALLEL_ALONE = [None]     # must parallel kernels run one at a time (Kernel._launch)? None: not known yet


def signature(dtype, n_arrays):
    """The Numba signature of a kernel: the element count, then its C-contiguous 1-d inputs and outputs."""
    from numba import types
    arr = types.Array(types.float32 if np.dtype(dtype) == np.float32 else types.float64, 1, "C")
    return (types.intp,) + (arr,) * n_arrays
