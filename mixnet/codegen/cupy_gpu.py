"""Render a fused elementwise group (the fusion IR, codegen/ir.py) as CUDA C, and launch it through cupy.

The GPU twin of numba_cpu: the same `Group`, parsed by the same `templates` module, becomes one `__global__`
function with a grid-stride loop over the output's flat index, one line per node, each with a comment naming the
op and the user's line. For example (y = tanh(x*0.5 + 1) * sigmoid(x) - x*x/3, float32):

    extern "C" __global__ void mx_fused(const int n, const float* x0, float* out0)
    {
        const int stride = (int)gridDim.x * (int)blockDim.x;
        for (int i = (int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x; i < n; i += stride) {
            const float a0 = x0[i];
            const float v0 = a0 * 0.5f;                         // _mul_scalar    model.py:12
            const float v1 = v0 + 1.0f;                         // _plus_scalar   model.py:12
            const float v2 = tanhf(v1);                         // tanh           model.py:12
            ...
            out0[i] = v7;
        }
    }

Rules of the generated code:
* float32 stays float32: constants are `f`-suffixed literals of the float32 value, functions are the float
  versions (`expf`, `tanhf`), so nothing is promoted to double. float64 kernels use `double` and `exp`, `tanh`.
  CUDA's libm is accurate to a few ulp, so no approximations are needed here (numba_cpu needs approx.py only
  because its LLVM has no vector libm).
* Boolean-valued nodes (comparisons, logic, isnan) are cast back to the kernel's type (MXNet's 0/1).
* Broadcasting is index arithmetic, not copies: a `Layout` says which inputs are read through per-dimension
  element strides (0 on broadcast dimensions) over the output's collapsed dimensions; the others are read at the
  flat index. Dimensions are collapsed first (adjacent ones every input walks contiguously merge), so a
  (64, 128) + (128,) add has one coordinate split, and non-contiguous inputs (transposed views) need no copy
  either. Sizes and strides are kernel arguments: one compiled kernel serves every shape of a layout.
  Indices are 32-bit unless the array (or a strided input's extent) is beyond 2**30 elements (`Layout.wide`).
* No `__restrict__`: a memory planner may hand an input's buffer to the kernel as its output (in place), which
  is safe for an elementwise loop that reads element i before writing it, but not under a no-alias promise.

`compile_kernel(group)` returns a `CudaKernel`, called as `kernel(*inputs, out=None)` with cupy arrays. It renders
and compiles one kernel per layout on first use (cupy.RawKernel; cupy caches the cubin on disk, keyed by the
source), writes the source to the kernel cache directory as `mx_<sha1>.cu` (codegen/cache.py), and prints it under
MIXNET_SHOW_CODE=1, as numba_cpu does. As there, the compiled source names ops but not the user's lines
(`render_kernel(group, layout, locations=False)`), so the same math on any line is one kernel and one cubin; the
printed source has the lines. Outside text reaches the source only in `//` comments through
safe_text.comment_text (no backslash, which would continue the comment onto the next line, no `?`, no line
break of any kind, no non-ASCII); constants are rendered from parsed numbers. A compile error is raised as
`KernelCompileError` naming the op and user line of the node whose line the compiler rejected.
`compile_cubin(source, arch)` compiles a rendered kernel with NVRTC directly through `cupy.cuda.nvrtc`, which works
without a GPU or driver (cupy's own compile helpers query the device first and fail there): CI's check of the
generated code (tests/codegen/test_gpu_compile.py).

Nothing here imports cupy until a kernel is launched or compiled.
"""
import ast
import math
import logging
import re
import threading
from dataclasses import dataclass, field

import numpy as np

from .. import _logging, config
from ..base import MXNetError
from . import cache, templates
from .safe_text import node_comment

_LOG = logging.getLogger(__name__)     # MIXNET_SHOW_CODE: each kernel's source at DEBUG

__all__ = ["Layout", "FLAT", "CudaSource", "render_kernel", "plan_layout", "launch_plan", "CudaKernel",
           "compile_kernel", "compile_cubin", "KernelCompileError", "BLOCK"]

KERNEL_NAME = "mx_fused"
BLOCK = 256                     # threads per block; the grid is capped (see _grid) and the loop strides over it
_WIDE = 1 << 30                 # beyond this many elements (or element offsets) indices are 64-bit


class KernelCompileError(MXNetError):
    """The CUDA compiler rejected a generated kernel; the message names the node (op and user line)."""


# ------------------------------------------------------------------------------------------------ functions
# Template function -> CUDA function for double; float kernels add the `f` suffix (expf), except for helpers
# (mx_*, overloaded for float and double) and the classification functions (overloaded by CUDA and C++).
_LIBM = {
    "abs": "fabs", "acos": "acos", "acosh": "acosh", "asin": "asin", "asinh": "asinh", "atan": "atan",
    "atanh": "atanh", "cbrt": "cbrt", "ceil": "ceil", "cos": "cos", "cosh": "cosh", "erf": "erf",
    "erfinv": "erfinv", "exp": "exp", "expm1": "expm1", "floor": "floor", "hypot": "hypot", "lgamma": "lgamma",
    "log": "log", "log10": "log10", "log1p": "log1p", "log2": "log2", "pow": "pow", "rint": "rint",
    "round": "round",            # C's round rounds halves away from zero: MXNet's round
    "sin": "sin", "sinh": "sinh", "sqrt": "sqrt", "tan": "tan", "tanh": "tanh", "tgamma": "tgamma",
    "trunc": "trunc",
}
_OVERLOADED = {"isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite"}
# numpy semantics the C library lacks: np.maximum/np.minimum propagate nan (fmax does not), np.sign(nan) is nan,
# np.mod takes the divisor's sign; sigmoid evaluates exp(-|x|) only, so it cannot overflow.
_HELPERS = {
    "max": ("mx_max", "{T} mx_max({T} a, {T} b) {{ return (a >= b || a != a) ? a : b; }}"),
    "min": ("mx_min", "{T} mx_min({T} a, {T} b) {{ return (a <= b || a != a) ? a : b; }}"),
    "sign": ("mx_sign", "{T} mx_sign({T} x) {{ return x > {zero} ? {one} : (x < {zero} ? -{one} : x); }}"),
    "fmod_floor": ("mx_fmod_floor",
                   "{T} mx_fmod_floor({T} a, {T} b) {{\n    const {T} r = fmod{f}(a, b);\n"
                   "    return (r != {zero} && ((r < {zero}) != (b < {zero}))) ? r + b : r;\n}}"),
    "sigmoid": ("mx_sigmoid",
                "{T} mx_sigmoid({T} x) {{\n    const {T} e = exp{f}(-fabs{f}(x));\n"
                "    return x >= {zero} ? {one} / ({one} + e) : e / ({one} + e);\n}}"),
}
assert set(_LIBM) | set(_OVERLOADED) | set(_HELPERS) == set(templates.FUNCTIONS), "a template function has no CUDA form"


def _ctype(dtype):
    return "float" if dtype == "float32" else "double"


def _constant(value, dtype):
    """A C literal of `value` in the kernel dtype: the float32 value's shortest decimal with an `f` suffix (it
    parses back to exactly that float), or the double's repr; inf/nan as bit patterns (no header needed)."""
    with np.errstate(over="ignore"):
        v = np.float32(value) if dtype == "float32" else np.float64(value)
    if np.isnan(v):
        return "__int_as_float(0x7fc00000)" if dtype == "float32" else "__longlong_as_double(0x7ff8000000000000LL)"
    if np.isinf(v):
        inf = "__int_as_float(0x7f800000)" if dtype == "float32" else "__longlong_as_double(0x7ff0000000000000LL)"
        return inf if v > 0 else "-" + inf
    if dtype == "float64":
        return repr(float(v))
    text = str(v)
    return (text if ("." in text or "e" in text) else text + ".0") + "f"


# ------------------------------------------------------------------------------------------------ expressions
# C precedence (higher binds tighter). The ast is unambiguous; parentheses are added where C needs them, and
# around comparisons inside & | ^ (C would not need them there, but people do).
_PREC = {ast.Mult: 13, ast.Div: 13, ast.Add: 12, ast.Sub: 12, ast.Lt: 10, ast.LtE: 10, ast.Gt: 10, ast.GtE: 10,
         ast.Eq: 9, ast.NotEq: 9, ast.BitAnd: 8, ast.BitXor: 7, ast.BitOr: 6}
_SYMBOL = {ast.Mult: "*", ast.Div: "/", ast.Add: "+", ast.Sub: "-", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
           ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.BitAnd: "&", ast.BitXor: "^", ast.BitOr: "|"}
_UNARY_PREC, _ATOM = 14, 16


class _Emitter:
    def __init__(self, dtype):
        self.dtype, self.used = dtype, set()

    def function(self, name):
        if name in _HELPERS:
            self.used.add(name)
            return _HELPERS[name][0]
        if name in _OVERLOADED:
            return _OVERLOADED[name]
        return _LIBM[name] + ("f" if self.dtype == "float32" else "")

    def emit(self, node):
        """(C text, precedence) of a parsed template expression."""
        if isinstance(node, ast.Constant):
            text = _constant(node.value, self.dtype)
            return text, (_UNARY_PREC if text.startswith("-") else _ATOM)
        if isinstance(node, ast.Name):
            return node.id, _ATOM
        if isinstance(node, ast.Call):
            args = ", ".join(self.emit(a)[0] for a in node.args)
            return f"{self.function(node.func.id)}({args})", _ATOM
        if isinstance(node, ast.UnaryOp):
            text, prec = self.emit(node.operand)
            if prec < _UNARY_PREC or text.startswith(("-", "+")):
                text = f"({text})"
            op = {ast.USub: "-", ast.UAdd: "+", ast.Not: "!"}[type(node.op)]
            return op + text, _UNARY_PREC
        if isinstance(node, ast.BinOp):
            op, left, right = type(node.op), node.left, node.right
        else:                                                       # a single comparison (templates.parse)
            op, left, right = type(node.ops[0]), node.left, node.comparators[0]
        prec, bitwise = _PREC[op], op in (ast.BitAnd, ast.BitXor, ast.BitOr)
        lt, lp = self.emit(left)
        rt, rp = self.emit(right)
        if lp < prec or (bitwise and lp < _UNARY_PREC):
            lt = f"({lt})"
        if rp <= prec or (bitwise and rp < _UNARY_PREC):
            rt = f"({rt})"
        return f"{lt} {_SYMBOL[op]} {rt}", prec

    def expression(self, template, args, attrs):
        tree = templates.parse(template, args, attrs)
        text, _ = self.emit(tree)
        return f"({_ctype(self.dtype)})({text})" if templates.is_bool(tree) else text

    def helpers(self):
        t = _ctype(self.dtype)
        one, zero = _constant(1.0, self.dtype), _constant(0.0, self.dtype)
        f = "f" if self.dtype == "float32" else ""
        return ["__device__ __forceinline__ " + _HELPERS[name][1].format(T=t, one=one, zero=zero, f=f)
                for name in sorted(self.used)]


# ------------------------------------------------------------------------------------------------ layouts
@dataclass(frozen=True)
class Layout:
    """How a kernel reads its inputs. Inputs in `strided` are read at `sum(c[d] * stride[d])` over `ndim`
    (collapsed) output coordinates, with per-dimension element strides passed as arguments (0 on a broadcast
    dimension); every other input is C-contiguous in the output's shape and read at the flat index. `wide`:
    64-bit index arithmetic."""
    ndim: int = 0
    strided: tuple = ()
    wide: bool = False


FLAT = Layout()


def plan_layout(shape, inputs):
    """The Layout for an output of `shape` and inputs given as (shape, element strides), numpy broadcasting.
    Returns (layout, dims, strides): the collapsed output dims and, per strided input, its strides on them."""
    nd = len(shape)
    n = math.prod(shape)
    aligned = []
    for in_shape, in_strides in inputs:
        pad = nd - len(in_shape)
        aligned.append([0] * pad + [0 if (in_shape[d] == 1 or shape[pad + d] == 1) else in_strides[d]
                                    for d in range(len(in_shape))])
    # Drop size-1 dims, then merge d into d+1 wherever every input steps over both as over one dimension.
    keep = [d for d in range(nd) if shape[d] != 1]
    dims, strides = [], [[] for _ in inputs]
    for d in keep:
        if dims and all(st[-1] == s[d] * shape[d] for st, s in zip(strides, aligned)):
            dims[-1] *= shape[d]
            for st, s in zip(strides, aligned):
                st[-1] = s[d]
        else:
            dims.append(shape[d])
            for st, s in zip(strides, aligned):
                st.append(s[d])
    contiguous = [math.prod(dims[d + 1:]) for d in range(len(dims))]
    strided = tuple(k for k, st in enumerate(strides) if st != contiguous)
    extent = max([sum((dim - 1) * abs(s) for dim, s in zip(dims, strides[k])) for k in strided], default=0)
    wide = n > _WIDE or extent > _WIDE
    if not strided:
        return Layout(0, (), wide), tuple(dims), {}
    return Layout(len(dims), strided, wide), tuple(dims), {k: tuple(strides[k]) for k in strided}


def launch_plan(shape, inputs):
    """(layout, scalars) for a launch: `scalars` are n followed by the arguments after the pointers (the dims
    d1.., then each strided input's strides), as numpy integers of the layout's index type."""
    layout, dims, strides = plan_layout(shape, inputs)
    index = np.int64 if layout.wide else np.int32
    scalars = [index(math.prod(shape))] + ([index(d) for d in dims[1:]] if layout.strided else [])
    return layout, scalars + [index(s) for k in layout.strided for s in strides[k]]


# ------------------------------------------------------------------------------------------------ rendering
@dataclass
class CudaSource:
    """A rendered kernel: `text` (the .cu source), `name` (the extern "C" function), `params` ((C type, name) in
    argument order), and `step_lines` ({1-based line: step index}, to explain a compile error)."""
    text: str
    name: str
    params: list
    layout: Layout
    dtype: str
    group: object = field(repr=False)
    step_lines: dict = field(default_factory=dict, repr=False)

    def node_at(self, line):
        """'op (file:line)' of the step rendered on `line` of the source, or None."""
        j = self.step_lines.get(line)
        if j is None:
            return None
        s = self.group.steps[j]
        return f"{s.op} ({s.location})" if s.location else s.op


def render_kernel(group, layout=FLAT, locations=True):
    """The CUDA source of the kernel for `group` reading its inputs as `layout` says (see the module docstring).
    locations=False names ops only in the comments: the form that is stored and compiled, so the same math
    written on any line is one kernel (and one cubin in cupy's cache)."""
    dtype = templates.kernel_dtype(group)
    rows, loaded = templates.step_arguments(group)
    if any(not 0 <= k < group.n_inputs for k in layout.strided):
        raise ValueError(f"layout reads input(s) {layout.strided}; the group has {group.n_inputs}")
    t, idx = _ctype(dtype), ("long long" if layout.wide else "int")
    emitter = _Emitter(dtype)
    body = []                                           # (code, comment or None, step index or None)
    strided = [k for k in loaded if k in layout.strided]
    if strided:
        nd = layout.ndim
        if nd == 1:
            body.append((f"const {idx} c0 = i;", None, None))
        else:
            body.append((f"{idx} r = i;", "flat index -> coordinates", None))
            for d in range(nd - 1, 0, -1):
                body.append((f"const {idx} c{d} = r % d{d};  r /= d{d};", None, None))
            body.append((f"const {idx} c0 = r;", None, None))
    for k in loaded:
        if k in layout.strided:
            offset = " + ".join(f"c{d} * x{k}_s{d}" for d in range(layout.ndim))
            body.append((f"const {t} a{k} = x{k}[{offset}];", "strided (broadcast) input", None))
        else:
            body.append((f"const {t} a{k} = x{k}[i];", None, None))
    for j, s, args in rows:
        expr = emitter.expression(s.template, args, s.attrs)
        body.append((f"const {t} v{j} = {expr};", node_comment(s.op, s.location, locations), j))
    for o, j in enumerate(group.outputs):
        body.append((f"out{o}[i] = v{j};", None, None))

    groups = [[(f"const {idx}", "n")],                                  # parameters, by role
              [(f"const {t}*", f"x{k}") for k in range(group.n_inputs)],
              [(f"{t}*", f"out{o}") for o in range(len(group.outputs))],
              [(f"const {idx}", f"d{d}") for d in range(1, layout.ndim)] if strided else []]
    groups += [[(f"const {idx}", f"x{k}_s{d}") for d in range(layout.ndim)] for k in strided]
    params = [p for g in groups for p in g]

    if strided:
        reads = f"input{'s' if len(strided) > 1 else ''} {_ranges(strided)} through strides over " \
                f"{layout.ndim} collapsed dims, the others at the flat index"
    else:
        reads = "every input at the flat index"
    lines = [
        f"// mixnet fused kernel: {len(group.steps)} ops, {group.n_inputs} inputs, {len(group.outputs)} outputs, "
        f"{dtype} ({t}), {idx} indices.",
        f"// Layout: {reads}.",
        "// Generated by mixnet.codegen.cupy_gpu from the fusion group numba_cpu renders for the CPU. Do not edit:",
        *("// " + line for line in cache.CACHED_FORM),
        "",
    ]
    helpers = emitter.helpers()
    if helpers:
        lines += "\n".join(helpers).split("\n") + [""]
    head = f'extern "C" __global__ void {KERNEL_NAME}('
    lines += (head + _wrap([[f"{ct} {name}" for ct, name in g] for g in groups if g], len(head)) +
              ")").split("\n") + ["{"]
    lines.append(f"    const {idx} stride = ({idx})gridDim.x * ({idx})blockDim.x;")
    first = f"({idx})blockIdx.x * ({idx})blockDim.x + ({idx})threadIdx.x"
    lines.append(f"    for ({idx} i = {first}; i < n; i += stride) {{")
    width = max(len(code) for code, _, _ in body) + 2
    step_lines = {}
    for code, comment, j in body:
        if j is not None:
            step_lines[len(lines) + 1] = j
        lines.append("        " + (code.ljust(width) + "// " + comment if comment else code))
    lines += ["    }", "}", ""]
    return CudaSource("\n".join(lines), KERNEL_NAME, params, layout, dtype, group, step_lines)


def _wrap(groups, indent, width=116):
    """Parameter groups comma-joined, a new line (indented by `indent`) where a line would get long; a group that
    fits on a line of its own starts one."""
    lines = [""]
    for group in groups:
        if lines[-1] and indent + len(lines[-1]) + 2 + len(", ".join(group)) > width:
            lines.append("")
        for item in group:
            if lines[-1] and indent + len(lines[-1]) + 2 + len(item) > width:
                lines.append("")
            lines[-1] += (", " if lines[-1] else "") + item
    return (",\n" + " " * indent).join(lines)


def _ranges(indices):
    """[1, 3, 4, 5] -> '1, 3-5'."""
    runs = []
    for k in indices:
        if runs and k == runs[-1][1] + 1:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


# ------------------------------------------------------------------------------------------------ errors
_ERROR_LINE = re.compile(r"\((\d+)\): (?:catastrophic )?error")


def _explain(source, log, path=None):
    """A KernelCompileError naming the node(s) on the lines the compiler's log complains about."""
    nodes = []
    for match in _ERROR_LINE.finditer(log):
        node = source.node_at(int(match.group(1)))
        if node and node not in nodes:
            nodes.append(node)
    where = f"at node {', '.join(nodes)}" if nodes else "outside the nodes' lines"
    ops = "+".join(s.op for s in source.group.steps)
    kept = f" (source: {path})" if path else ""
    return KernelCompileError(f"CUDA compile of the fused kernel {ops} ({source.dtype}) failed {where}{kept}:\n"
                              f"{log.strip()}")


def compile_cubin(source, arch="sm_90"):
    """Compile a rendered kernel (a CudaSource) to a cubin for `arch` with NVRTC through cupy's low-level
    bindings, which need no GPU or driver. Returns the cubin bytes; raises KernelCompileError naming the node
    the compiler rejected. Needs cupy and NVRTC (e.g. pip install cupy-cuda13x "cuda-toolkit[nvrtc]==13.*")."""
    from cupy.cuda import nvrtc
    program = nvrtc.createProgram(source.text, "fused.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(program, [f"-arch={arch}"])
        except nvrtc.NVRTCError:
            raise _explain(source, nvrtc.getProgramLog(program)) from None
        return nvrtc.getCUBIN(program)
    finally:
        nvrtc.destroyProgram(program)


# ------------------------------------------------------------------------------------------------ launching
class CudaKernel:
    """A group compiled for cupy: `kernel(*inputs, out=None)` returns one cupy array (or a tuple, for several
    outputs) of the broadcast shape. Attributes: group, dtype, source (the flat layout's CUDA source as it is
    compiled: ops named, no user lines; `render(layout)` gives any layout's), sources ({layout: CudaSource}
    compiled so far)."""

    def __init__(self, group):
        self.group = group
        self.dtype = np.dtype(templates.kernel_dtype(group))
        self.n_inputs, self.n_outputs = group.n_inputs, len(group.outputs)
        self.source = render_kernel(group, locations=False).text
        self.sources, self.paths = {}, {}
        self._functions = {}
        self._plans = {}
        self._lock = threading.Lock()

    def render(self, layout=FLAT, locations=False):
        return render_kernel(self.group, layout, locations)

    def prepare(self, layout):
        """Render `layout`'s kernel, store it in the cache directory (path None without a usable one) and print it
        with the user's lines under MIXNET_SHOW_CODE=1 (once per layout); returns (CudaSource, path). Needs no
        cupy."""
        with self._lock:
            if layout not in self.sources:
                source = self.render(layout)
                path = cache.store_source(source.text, ".cu")
                switch = config.SHOW_CODE
                if _logging.debug_wanted(_LOG, switch):
                    _logging.debug(_LOG, switch, "// ---- mixnet kernel %s\n%s",
                                   path or "(not stored: no usable cache directory)",
                                   self.render(layout, locations=True).text)
                self.sources[layout], self.paths[layout] = source, path
            return self.sources[layout], self.paths[layout]

    def function(self, layout):
        """The cupy.RawKernel for `layout` (cupy compiles it at its first launch)."""
        fn = self._functions.get(layout)
        if fn is None:
            import cupy
            source, _ = self.prepare(layout)
            fn = self._functions.setdefault(layout, cupy.RawKernel(source.text, source.name))
        return fn

    def __call__(self, *inputs, out=None):
        import cupy
        if len(inputs) != self.n_inputs:
            raise TypeError(f"kernel takes {self.n_inputs} inputs, got {len(inputs)}")
        arrays = [cupy.asarray(a) for a in inputs]
        arrays = [a if a.dtype == self.dtype else a.astype(self.dtype) for a in arrays]
        item = self.dtype.itemsize
        arrays = [a if all(s % item == 0 for s in a.strides) else cupy.ascontiguousarray(a) for a in arrays]
        shape, n, layout, scalars = self.plan(tuple((a.shape, a.strides) for a in arrays))
        outs = self._outputs(shape, out)
        targets = [o if o.flags.c_contiguous else cupy.empty(shape, self.dtype) for o in outs]
        if n:
            fn = self.function(layout)
            try:
                fn((_grid(n),), (BLOCK,), (scalars[0], *arrays, *targets, *scalars[1:]))
            except cupy.cuda.compiler.CompileException as e:
                raise _explain(self.sources[layout], str(e), self.paths[layout]) from None
        for o, t in zip(outs, targets):
            if o is not t:
                o[...] = t
        return outs[0] if self.n_outputs == 1 else tuple(outs)

    def plan(self, geometry):
        """(shape, n, layout, scalars) of a launch on inputs of `geometry` ((shape, byte strides) per input),
        memoized: working them out costs ~20 us of Python a call, as much as a small kernel runs on the device
        (benchmarks/README.md, "On a GPU"). At most _PLANS_KEPT geometries are kept per kernel."""
        plan = self._plans.get(geometry)
        if plan is None:
            item = self.dtype.itemsize
            shape = np.broadcast_shapes(*(g[0] for g in geometry)) if geometry else ()
            n = math.prod(shape)
            layout, scalars = launch_plan(shape, [(g[0], [s // item for s in g[1]]) for g in geometry]) if n else \
                (None, None)
            if len(self._plans) >= _PLANS_KEPT:
                self._plans.clear()
            plan = self._plans[geometry] = (shape, n, layout, scalars)
        return plan

    def _outputs(self, shape, out):
        import cupy
        if out is None:
            return [cupy.empty(shape, self.dtype) for _ in range(self.n_outputs)]
        outs = list(out) if isinstance(out, tuple) else [out]
        if len(outs) != self.n_outputs:
            raise TypeError(f"kernel has {self.n_outputs} outputs, got {len(outs)} in out=")
        for o in outs:
            if o.shape != shape or o.dtype != self.dtype:
                raise ValueError(f"out= must be {self.dtype} of shape {shape}, got {o.dtype} {o.shape}")
        return outs


_max_blocks = None
_PLANS_KEPT = 64


def _grid(n):
    """Blocks for n elements: enough for every thread to have one, capped at 32 per multiprocessor (the loop
    strides over the rest), so huge arrays do not pay for launching millions of blocks."""
    global _max_blocks
    if _max_blocks is None:
        import cupy
        _max_blocks = 32 * cupy.cuda.Device().attributes["MultiProcessorCount"]
    return max(1, min(-(-n // BLOCK), _max_blocks))


_kernels = {}
_kernels_lock = threading.Lock()


def compile_kernel(group):
    """A CudaKernel for `group`, memoized per source in this process. Compiling happens per layout at the first
    launch (cupy compiles lazily), so this needs no GPU."""
    key = render_kernel(group, locations=False).text
    with _kernels_lock:
        kernel = _kernels.get(key)
        if kernel is None:
            kernel = _kernels[key] = CudaKernel(group)
    return kernel
