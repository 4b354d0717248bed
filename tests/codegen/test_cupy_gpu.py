"""CUDA code generation (mixnet/codegen/cupy_gpu.py), checked at every depth a machine allows (the GPU tests
skip without a GPU, so the depths below keep CUDA code-generation errors from landing unnoticed):

1. everywhere: every fusible op's template is rendered for float32 and float64 and flat/broadcast layouts, and the
   source is checked structurally (float32 stays float32, one commented line per node, the layout's indexing);
2. with a C++ compiler: the same kernels compile as C++ through a CPU shim (cuda_cpu_shim.h) and run through
   ctypes, against the ops' own numpy kernels and a numpy chain, over broadcast shapes and launch geometries;
3. with cupy and NVRTC (not project dependencies): every kernel compiles to cubin for sm_80 and sm_90, and a
   compile error names the fused node;
4. with a GPU (cupy.is_available()): the kernels run on the device against numpy, alone and as the fused op.
"""
import ctypes
import dataclasses
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import mixnet as mx
from mixnet.codegen import cupy_gpu as cg
from mixnet.codegen.ir import Group, Step, inp, step
from mixnet.codegen.templates import FUNCTIONS
from mixnet.ops import registry

HERE = "tests/codegen/test_cupy_gpu.py"
SHIM = os.path.join(os.path.dirname(__file__), "cuda_cpu_shim.h")
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0]
FUSIBLE = [op for op in registry.all_ops() if op.scalar is not None]


# ------------------------------------------------------------------------------------------------ the cases
def _arity(template):
    return 1 + max(int(k) for k in re.findall(r"\{(\d+)\}", template))


def _op_attrs(op, dtype):
    """The op's test attribute sets that fuse at `dtype` (a Cast fuses only to its own dtype)."""
    sets = list(op.test.recipe_attrs) if op.test else [{}]
    if op.name == "Cast":
        return [{"dtype": dtype}]
    return sets


def _inputs(shapes, domain, seed, specials=True):
    """Arrays of `shapes` in `domain`: half continuous, half on a 0.25 grid (so comparisons meet equal values),
    with nan/inf/0/-0 at the front of the first array (numpy and the kernel must agree on those too)."""
    rng = np.random.default_rng(seed)
    out = []
    for k, shape in enumerate(shapes):
        x = rng.uniform(*domain, size=shape)
        flat = x.reshape(-1)
        flat[1::2] = np.clip(np.round(flat[1::2] * 4) / 4, *domain)
        if specials and k == 0 and flat.size >= len(SPECIALS):
            flat[:len(SPECIALS)] = SPECIALS
        out.append(x)
    return out


@dataclasses.dataclass
class Case:
    """One kernel launch: a group, numpy inputs (any strides), the expected outputs, a tolerance."""
    id: str
    group: Group
    inputs: list
    expected: list
    rtol: float
    atol: float
    wide: bool = False                # force 64-bit indices
    grid: int = 3                     # a small grid: the grid-stride loop wraps around several times
    block: int = 5

    def plan(self):
        """(shape, layout, scalars) as CudaKernel plans its launch (cupy_gpu.launch_plan)."""
        shape = np.broadcast_shapes(*(a.shape for a in self.inputs))
        item = np.dtype(self.group.dtype).itemsize
        layout, scalars = cg.launch_plan(shape, [(a.shape, [s // item for s in a.strides]) for a in self.inputs])
        if self.wide:
            layout = dataclasses.replace(layout, wide=True)
        return shape, layout, scalars


def _tolerance(dtype):
    return (1e-5, 1e-6) if dtype == "float32" else (1e-12, 1e-13)


# mixnet's eager gamma gives nan at +-0 and inf at -inf where MXNet (C's tgamma, as the kernels) gives +-inf and
# nan: an eager deviation, so the specials are left out of gamma's comparison.
NO_SPECIALS = {"gamma"}


def _op_step(op, attrs, inputs):
    numeric = {k: v for k, v in attrs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return Step(op.name, op.scalar, tuple(inp(k) for k in inputs), numeric, f"{HERE}:{op.name}")


OP_SHAPES = {"flat": ([(4, 6)], [(4, 6), (4, 6)]), "view": ([(6, 4)], [(6, 4), (4, 6)]),
             "bcast": ([(4, 6)], [(4, 6), (6,)]), "outer": ([(4, 6)], [(4, 1), (1, 6)])}


def op_cases():
    """Every registry op with a scalar template in one kernel per dtype x attribute set x layout (one kernel per op
    would cost a compile each), each op reading its own inputs drawn from its test domain; every step is an
    output, compared with the op's own numpy kernel. Layouts: flat; input 0 transposed ("view"); the second input
    broadcast along rows ("bcast"); an outer broadcast ("outer")."""
    cases = []
    for dtype in ("float32", "float64"):
        for a in range(max(len(_op_attrs(op, dtype)) for op in FUSIBLE)):
            ops = [(op, _op_attrs(op, dtype)[a]) for op in FUSIBLE if a < len(_op_attrs(op, dtype))]
            for layout in OP_SHAPES if a == 0 else ["flat"]:
                steps, arrays, expected = [], [], []
                for seed, (op, attrs) in enumerate(ops):
                    n, parsed = _arity(op.scalar), op.parse(attrs)
                    domain = op.test.domain if op.test else (-2.0, 2.0)
                    xs = [x.astype(dtype) for x in _inputs(OP_SHAPES[layout][n - 1], domain, seed,
                                                           op.name not in NO_SPECIALS)]
                    if layout == "view":
                        xs[0] = xs[0].T
                    with np.errstate(all="ignore"):         # elemwise_* want equal shapes: give them copies
                        expected.append(op.kernel(np, *[b.copy() for b in np.broadcast_arrays(*xs)], **parsed))
                    steps.append(_op_step(op, parsed, range(len(arrays), len(arrays) + n)))
                    arrays += xs
                group = Group(steps, list(range(len(steps))), len(arrays), dtype)
                cases.append(Case(f"ops-{dtype}-attrs{a}-{layout}", group, arrays, expected, *_tolerance(dtype)))
    return cases


def chain_group(dtype):
    """Two inputs, two outputs; the W1 chain on input 0, broadcasting binaries, comparisons, max/min, an
    attribute, negative constants."""
    return Group([
        Step("_mul_scalar", "{0} * {scalar}", (inp(0),), {"scalar": 0.5}, HERE + ":1"),
        Step("_plus_scalar", "{0} + {scalar}", (step(0),), {"scalar": 1.0}, HERE + ":1"),
        Step("tanh", "tanh({0})", (step(1),), {}, HERE + ":1"),
        Step("sigmoid", "1 / (1 + exp(-{0}))", (inp(0),), {}, HERE + ":2"),
        Step("elemwise_mul", "{0} * {1}", (step(2), step(3)), {}, HERE + ":2"),
        Step("square", "{0} * {0}", (inp(0),), {}, HERE + ":3"),
        Step("_div_scalar", "{0} / {scalar}", (step(5),), {"scalar": 3}, HERE + ":3"),
        Step("elemwise_sub", "{0} - {1}", (step(4), step(6)), {}, HERE + ":3"),
        Step("broadcast_mul", "{0} * {1}", (step(7), inp(1)), {}, HERE + ":4"),
        Step("hard_sigmoid", "min(max({0} * {alpha} + {beta}, 0), 1)", (inp(1),), {"alpha": 0.2, "beta": -0.5},
             HERE + ":5"),
        Step("_greater_scalar", "({0} > {scalar})", (inp(0),), {"scalar": -0.25}, HERE + ":6"),
        Step("broadcast_add", "{0} + {1}", (step(8), step(10)), {}, HERE + ":6"),
        Step("broadcast_maximum", "max({0}, {1})", (step(9), inp(0)), {}, HERE + ":7"),
    ], outputs=[11, 12], n_inputs=2, dtype=dtype)


def chain_numpy(x, b):
    y = (np.tanh(x * 0.5 + 1) * (1 / (1 + np.exp(-x))) - x * x / 3) * b
    return y + (x > -0.25), np.maximum(np.minimum(np.maximum(b * 0.2 - 0.5, 0), 1), x)


def _view(kind, shape, rng, dtype):
    """An input of `shape`: a contiguous array, a transposed view ("T") or a reversed view ("rev")."""
    if kind == "T":
        return rng.uniform(-3, 3, shape[::-1]).astype(dtype).T
    if kind == "rev":
        return rng.uniform(-3, 3, shape).astype(dtype)[..., ::-1]
    return rng.uniform(-3, 3, shape).astype(dtype)


CHAIN_SHAPES = [((5,), (5,)), ((3, 4), (4,)), ((4, 1), (1, 5)), ((2, 3, 4), (3, 1)), ((), (3, 4)),
                ((2, 1, 4), (1, 3, 1)), ((0, 3), (3,)), ((1,), (1,)), ((), ()), ((2, 3, 4, 5), (1, 3, 1, 5)),
                ((37,), ())]
CHAIN_VIEWS = [("T", (6, 5), "", (6, 5)), ("rev", (3, 8), "", (8,)), ("", (4, 6), "T", (4, 6))]


def chain_cases():
    cases = []
    rng = np.random.default_rng(11)
    for dtype in ("float32", "float64"):
        rtol, atol = _tolerance(dtype)
        rtol, atol = rtol * 3, atol * 3                                # a 13-node chain rounds 13 times
        specs = [("", s0, "", s1) for s0, s1 in CHAIN_SHAPES] + CHAIN_VIEWS
        for k0, s0, k1, s1 in specs:
            x, b = _view(k0, s0, rng, dtype), _view(k1, s1, rng, dtype)
            expected = [e.astype(dtype) for e in np.broadcast_arrays(*chain_numpy(x.astype(np.float64),
                                                                                  b.astype(np.float64)))]
            for wide in (False, True) if s0 == (2, 3, 4) else (False,):
                cases.append(Case(f"chain-{dtype}-{k0}{s0}-{k1}{s1}" + ("-wide" if wide else ""),
                                  chain_group(dtype), [x, b], expected, rtol, atol, wide=wide))
    return cases


OP_CASES = op_cases()
CHAIN_CASES = chain_cases()
ALL_CASES = OP_CASES + CHAIN_CASES


def _sources(cases):
    """The distinct rendered kernels of `cases`, {text: CudaSource}."""
    out = {}
    for case in cases:
        source = cg.render_kernel(case.group, case.plan()[1])
        out.setdefault(source.text, source)
    return out


# ------------------------------------------------------------------------------------------------ 1. structure
FLOAT_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+)(f?)(?![\w.])")
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
C_KEYWORDS = {"for", "if", "return", "void", "float", "double", "int", "long", "extern", "const"}


def _check_structure(source, group):
    text, dtype = source.text, source.dtype
    code = "\n".join(ln.split("//")[0] for ln in text.splitlines())
    other = "double" if dtype == "float32" else "float"
    assert code.count('extern "C" __global__ void mx_fused(') == 1
    assert code.count("{") == code.count("}") and code.count("(") == code.count(")")
    assert not re.search(rf"\b{other}\b", code), f"{dtype} kernel mentions {other}"
    for number, suffix in FLOAT_LITERAL.findall(code):
        assert (suffix == "f") == (dtype == "float32"), f"literal {number}{suffix} in a {dtype} kernel"
    for name in set(CALL.findall(code)) - C_KEYWORDS:
        if dtype == "float32" and not name.startswith(("mx_", "is", "__int_as_float")):
            assert name.endswith("f"), f"double-precision function {name} in a float32 kernel"
        if dtype == "float64":
            assert not name.startswith("__int_as_float")
    # one line per node, in order, each with its op and user line
    body = [ln for ln in text.splitlines() if re.match(r"\s+const \w+ v\d+ = ", ln)]
    assert len(body) == len(group.steps)
    for j, (line, s) in enumerate(zip(body, group.steps)):
        assert line.strip().startswith(f"const {'float' if dtype == 'float32' else 'double'} v{j} = ")
        assert line.rstrip().endswith(f"// {s.op:<14} {s.location}" if s.location else f"// {s.op}")
    assert [source.step_lines[ln] for ln in sorted(source.step_lines)] == list(range(len(group.steps)))
    for line, j in source.step_lines.items():
        assert f" v{j} = " in text.splitlines()[line - 1]
    # the layout's indexing: strided inputs through coordinates, the others at i
    for k in range(group.n_inputs):
        read = re.search(rf"a{k} = x{k}\[(.*)\];", text)
        if read is None:
            continue
        if k in source.layout.strided:
            assert read.group(1) == " + ".join(f"c{d} * x{k}_s{d}" for d in range(source.layout.ndim))
        else:
            assert read.group(1) == "i"
    for o, j in enumerate(group.outputs):
        assert f"out{o}[i] = v{j};" in text
    idx = "long long" if source.layout.wide else "int"
    assert f"for ({idx} i = " in text and f"const {idx} n" in text


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_rendered_source_is_well_formed(case):
    source = cg.render_kernel(case.group, case.plan()[1])
    _check_structure(source, case.group)


def test_every_fusible_op_and_template_function_is_covered():
    fusible = {op.name for op in FUSIBLE}
    for dtype in ("float32", "float64"):
        covered = {s.op for c in OP_CASES if c.id.startswith(f"ops-{dtype}") for s in c.group.steps}
        assert fusible == covered and len(fusible) > 80
    # every function of the template language has a CUDA form (the chain and ops cover all but `sigmoid`, which
    # only numba_cpu's float32 override template calls)
    group = Group([Step(f, f"{f}({', '.join('{0}' for _ in range(n))})", (inp(0),)) for f, n in FUNCTIONS.items()],
                  list(range(len(FUNCTIONS))), 1, "float32")
    for dtype in ("float32", "float64"):
        group.dtype = dtype
        _check_structure(cg.render_kernel(group), dataclasses.replace(group))


def test_w1_source_reads_like_the_numba_kernel():
    from mixnet.codegen.numba_cpu import render_kernel as render_numba
    group = chain_group("float32")
    cuda, numba_src = cg.render_kernel(group).text, render_numba(group)
    comments = lambda text, mark: [ln.split(mark, 1)[1].strip() for ln in text.splitlines()  # noqa: E731
                                   if re.search(r"\bv\d+ = ", ln) and mark in ln]
    assert comments(cuda, "//") == comments(numba_src, "#")[:len(group.steps)]
    assert "const float v0 = a0 * 0.5f;" in cuda and "const float v2 = tanhf(v1);" in cuda
    assert "1.0f / (1.0f + expf(-a0))" in cuda
    assert "const float v10 = (float)(a0 > -0.25f);" in cuda
    assert "mx_min(mx_max(a1 * 0.2f + -0.5f, 0.0f), 1.0f)" in cuda
    assert "__device__ __forceinline__ float mx_max(float a, float b)" in cuda


@pytest.mark.parametrize("value,f32,f64", [
    (0.1, "0.1f", "0.1"), (3, "3.0f", "3.0"), (-1.5, "-1.5f", "-1.5"), (1e-30, "1e-30f", "1e-30"),
    (1e40, "__int_as_float(0x7f800000)", "1e+40"), (float("-inf"), "-__int_as_float(0x7f800000)",
                                                     "-__longlong_as_double(0x7ff0000000000000LL)"),
    (float("nan"), "__int_as_float(0x7fc00000)", "__longlong_as_double(0x7ff8000000000000LL)"),
    (np.float32(0.7), "0.7f", "0.699999988079071"),
])
def test_constants_keep_the_kernel_dtype(value, f32, f64):
    assert cg._constant(value, "float32") == f32
    assert cg._constant(value, "float64") == f64
    if f32.endswith("f"):                      # the literal parses back to exactly the float32 value
        assert np.float32(f32[:-1]) == np.float32(value)


@pytest.mark.parametrize("template,expected", [
    ("{0} - ({1} - {0})", "a0 - (a1 - a0)"),
    ("({0} - {1}) - {0}", "a0 - a1 - a0"),
    ("{0} / ({1} * {0})", "a0 / (a1 * a0)"),
    ("-({0} + {1})", "-(a0 + a1)"),
    ("-(-{0})", "-(-a0)"),
    ("{0} * -2", "a0 * -2.0f"),
    ("(({0} != 0) & ({1} != 0))", "(float)((a0 != 0.0f) & (a1 != 0.0f))"),
    ("(({0} < 1) | ({1} >= 0)) ^ ({0} == {1})", "(float)(((a0 < 1.0f) | (a1 >= 0.0f)) ^ (a0 == a1))"),
    ("not {0}", "(float)(!a0)"),
    ("pow({0}, 2) * hypot({0}, {1})", "powf(a0, 2.0f) * hypotf(a0, a1)"),
])
def test_expressions_keep_their_meaning_in_c(template, expected):
    emitter = cg._Emitter("float32")
    assert emitter.expression(template, ["a0", "a1"], {}) == expected


def test_bad_groups_are_explained():
    with pytest.raises(ValueError, match="unknown template function"):
        cg.render_kernel(Group([Step("x", "frobnicate({0})", (inp(0),))], [0], 1))
    with pytest.raises(ValueError, match="needs attribute"):
        cg.render_kernel(Group([Step("x", "{0} * {scalar}", (inp(0),))], [0], 1))
    with pytest.raises(ValueError, match="not an earlier step"):
        cg.render_kernel(Group([Step("x", "{0}", (step(0),))], [0], 1))
    with pytest.raises(ValueError, match="unsupported operator"):
        cg.render_kernel(Group([Step("x", "{0} ** 2", (inp(0),))], [0], 1))
    with pytest.raises(ValueError, match="float32 and float64"):
        cg.render_kernel(Group([Step("x", "{0}", (inp(0),))], [0], 1, "int32"))


@pytest.mark.parametrize("shape,inputs,layout,dims,strides", [
    ((4, 5), [((4, 5), (5, 1)), ((4, 5), (5, 1))], cg.Layout(0, ()), (20,), {}),
    ((4, 5), [((4, 5), (5, 1)), ((5,), (1,))], cg.Layout(2, (1,)), (4, 5), {1: (0, 1)}),
    ((4, 5), [((4, 1), (1, 1)), ((1, 5), (5, 1))], cg.Layout(2, (0, 1)), (4, 5), {0: (1, 0), 1: (0, 1)}),
    ((2, 3, 4), [((2, 3, 4), (12, 4, 1)), ((4,), (1,))], cg.Layout(2, (1,)), (6, 4), {1: (0, 1)}),  # merged
    ((2, 3, 4), [((2, 3, 4), (1, 2, 6))], cg.Layout(3, (0,)), (2, 3, 4), {0: (1, 2, 6)}),             # transposed
    ((3, 1, 4), [((3, 1, 4), (4, 4, 1)), ((3, 1, 1), (1, 1, 1))], cg.Layout(2, (1,)), (3, 4), {1: (1, 0)}),
    ((3, 4), [((), ())], cg.Layout(1, (0,)), (12,), {0: (0,)}),                                      # 0-d input
    ((), [((), ()), ((), ())], cg.Layout(0, ()), (), {}),
    ((2**31,), [((2**31,), (1,))], cg.Layout(0, (), True), (2**31,), {}),
    ((4, 2**29), [((4, 2**29), (2**29 + 64, 1))], cg.Layout(2, (0,), True), (4, 2**29), {0: (2**29 + 64, 1)}),
])
def test_layouts_collapse_dims_and_find_strided_inputs(shape, inputs, layout, dims, strides):
    assert cg.plan_layout(shape, inputs) == (layout, dims, strides)


def test_launch_plan_passes_n_dims_and_strides_in_the_index_type():
    layout, scalars = cg.launch_plan((3, 4, 5), [((3, 4, 5), (20, 5, 1)), ((4, 1), (1, 1))])
    assert layout == cg.Layout(3, (1,)) and scalars == [60, 4, 5, 0, 1, 0]   # n, d1, d2, x1's strides
    assert all(type(v) is np.int32 for v in scalars)
    layout, scalars = cg.launch_plan((2**31,), [((2**31,), (1,))])
    assert layout.wide and scalars == [2**31] and type(scalars[0]) is np.int64


def test_a_kernels_launch_plans_are_kept_per_input_geometry_and_bounded():
    kernel = cg.CudaKernel(Group([Step("elemwise_add", "{0} + {1}", (inp(0), inp(1)))], [0], 2))
    geometry = (((3, 4, 5), (80, 20, 4)), ((4, 1), (4, 4)))      # float32: byte strides
    shape, n, layout, scalars = kernel.plan(geometry)
    assert (shape, n) == ((3, 4, 5), 60)
    assert (layout, scalars) == cg.launch_plan((3, 4, 5), [((3, 4, 5), (20, 5, 1)), ((4, 1), (1, 1))])
    assert kernel.plan(geometry) is kernel.plan(geometry)          # worked out once
    assert kernel.plan((((0, 2), (8, 4)), ((2,), (4,)))) == ((0, 2), 0, None, None)   # nothing to launch
    for k in range(cg._PLANS_KEPT + 3):
        kernel.plan((((k + 1,), (4,)), ((1,), (4,))))
    assert 0 < len(kernel._plans) <= cg._PLANS_KEPT


def test_import_mixnet_and_rendering_leave_cupy_unimported(tmp_path):
    code = ("import sys, mixnet as mx\n"
            "from mixnet.codegen import cupy_gpu\n"
            "from mixnet.codegen.ir import Group, Step, inp\n"
            "cupy_gpu.compile_kernel(Group([Step('exp', 'exp({0})', (inp(0),))], [0], 1)).prepare(cupy_gpu.FLAT)\n"
            "assert 'cupy' not in sys.modules and 'numba' not in sys.modules, sorted(sys.modules)\n")
    env = dict(os.environ, MIXNET_CACHE_DIR=str(tmp_path))
    env.pop("MIXNET_SHOW_CODE", None)
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=os.getcwd())


def test_show_code_logs_each_layout_once_and_stores_the_source(kernel_dir, monkeypatch, caplog):
    monkeypatch.setenv("MIXNET_SHOW_CODE", "1")
    kernel = cg.CudaKernel(chain_group("float64"))
    source, path = kernel.prepare(cg.Layout(2, (1,)))
    kernel.prepare(cg.Layout(2, (1,)))
    err = "\n".join(caplog.messages)
    # logged with the user's lines; stored and compiled without them (the same math on any line: one kernel)
    located = cg.render_kernel(chain_group("float64"), cg.Layout(2, (1,))).text
    assert err.count("// ---- mixnet kernel") == 1 and path in err and located in err and HERE in located
    assert source.text == cg.render_kernel(chain_group("float64"), cg.Layout(2, (1,)), locations=False).text
    assert HERE not in source.text and source.text.count("// tanh") == 1
    assert os.path.dirname(path) == str(kernel_dir) and path.endswith(".cu")
    with open(path) as f:
        assert f.read() == source.text
    assert cg.compile_kernel(chain_group("float64")) is cg.compile_kernel(chain_group("float64"))


# ------------------------------------------------------------------------------------------------ 2. CPU shim
def _cxx():
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")


_CTYPES = {"const int": ctypes.c_int32, "const long long": ctypes.c_int64}


def _combined(sources, wrappers):
    """One translation unit holding every kernel, each in its own namespace under its own name; with `wrappers`,
    an extern "C" launch_<k>(grid, block, params...) per kernel that runs it through the shim's mx_launch."""
    parts = []
    for k, source in enumerate(sources):
        parts += [f"namespace k{k} {{", f"#define {source.name} {source.name}_{k}", source.text,
                  f"#undef {source.name}", "}"]
        if wrappers:
            params = ", ".join(f"{ct} {name}" for ct, name in source.params)
            names = ", ".join(name for _, name in source.params)
            parts.append(f'extern "C" void launch_{k}(unsigned grid, unsigned block, {params}) '
                         f"{{ mx_launch(k{k}::{source.name}_{k}, grid, block, {names}); }}")
    return "\n".join(parts)


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    """Every case's kernel, compiled into one shared library with the CPU shim; {source text: launcher}."""
    cxx = _cxx()
    if cxx is None:
        print("SKIP reason: no C++ compiler (g++/clang++ or $CXX) to build the CUDA CPU shim")
        pytest.skip("no C++ compiler (g++/clang++ or $CXX) to build the CUDA CPU shim")
    sources = list(_sources(ALL_CASES).values())
    directory = tmp_path_factory.mktemp("shim")
    cu, so = directory / "kernels.cpp", directory / "kernels.so"
    cu.write_text(f'#include "{SHIM}"\n' + _combined(sources, wrappers=True))
    subprocess.run([cxx, "-std=c++17", "-O0", "-shared", "-fPIC", "-o", str(so), str(cu)], check=True)
    lib = ctypes.CDLL(str(so))
    launchers = {}
    for k, source in enumerate(sources):
        fn = getattr(lib, f"launch_{k}")
        fn.restype = None
        fn.argtypes = [ctypes.c_uint, ctypes.c_uint] + [_CTYPES.get(ct, ctypes.c_void_p) for ct, _ in source.params]
        launchers[source.text] = fn
    return launchers


def _run_on_shim(shim, case):
    """Launch `case` through the shim exactly as CudaKernel launches on cupy: the same layout planning, the same
    argument order; outputs allocated C-contiguous."""
    shape, layout, scalars = case.plan()
    source = cg.render_kernel(case.group, layout)
    dtype = np.dtype(case.group.dtype)
    outs = [np.full(shape, -7.0, dtype) for _ in case.group.outputs]
    if math.prod(shape):
        pointers = [a.ctypes.data for a in case.inputs] + [o.ctypes.data for o in outs]
        args = [int(scalars[0])] + pointers + [int(v) for v in scalars[1:]]
        shim[source.text](case.grid, case.block, *args)
    return outs


def _compare(case, got, slack=1):
    """Every output against its expected value; one failure lists every op that disagrees."""
    failures = []
    for j, g, e in zip(case.group.outputs, got, case.expected):
        assert g.dtype == np.dtype(case.group.dtype) and g.shape == e.shape
        try:
            np.testing.assert_allclose(g, e, rtol=case.rtol * slack, atol=case.atol * slack, equal_nan=True)
        except AssertionError as err:
            failures.append(f"{case.group.steps[j].op}: {err}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_kernels_on_the_cpu_shim_match_numpy(shim, case):
    _compare(case, _run_on_shim(shim, case))


def test_grid_geometry_does_not_change_results(shim):
    case = next(c for c in CHAIN_CASES if c.id.startswith("chain-float32-(2, 3, 4, 5)"))
    results = [_run_on_shim(shim, dataclasses.replace(case, grid=g, block=b)) for g, b in [(1, 1), (2, 32), (64, 7)]]
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------------------------------ 3. NVRTC
def _nvrtc():
    """cupy's NVRTC bindings, or None with the reason printed."""
    try:
        from cupy.cuda import nvrtc
        nvrtc.getVersion()
        return nvrtc
    except Exception as e:  # noqa: BLE001 - no cupy, or cupy without the NVRTC library: both mean skip
        print(f"SKIP reason: cupy with NVRTC is not importable ({type(e).__name__}: {e}); "
              'pip install cupy-cuda13x "cuda-toolkit[nvrtc]==13.*" to compile the kernels to cubin')
        return None


@pytest.fixture(scope="module")
def nvrtc():
    module = _nvrtc()
    if module is None:
        pytest.skip("cupy with NVRTC is not importable (not a project dependency)")
    return module


def _compile_all(nvrtc, sources, arch):
    """All `sources` in one NVRTC program (one compile of ~0.1 s per kernel would take minutes for the matrix);
    if that fails, each is compiled alone so that the error names its node."""
    program = nvrtc.createProgram(_combined(sources, wrappers=False), "all.cu", [], [])
    try:
        nvrtc.compileProgram(program, [f"-arch={arch}"])
        return nvrtc.getCUBIN(program)
    except nvrtc.NVRTCError:
        for source in sources:
            cg.compile_cubin(source, arch)                    # raises KernelCompileError naming the node
        raise
    finally:
        nvrtc.destroyProgram(program)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_template_and_layout_compiles_to_cubin(nvrtc, arch):
    """The kernel holding every fusible op, per dtype, compiled alone through compile_cubin (the path users and
    CI call), and the chain kernels of every broadcast case (every layout: strided, collapsed, 0-d, wide)."""
    for case in OP_CASES:
        if case.id.endswith("attrs0-flat"):
            cubin = cg.compile_cubin(cg.render_kernel(case.group, case.plan()[1]), arch)
            assert cubin[:4] == b"\x7fELF"
    assert _compile_all(nvrtc, list(_sources(CHAIN_CASES).values()), arch)[:4] == b"\x7fELF"


MATRIX = os.environ.get("MIXNET_TEST_CUBIN_MATRIX", "") not in ("", "0")


@pytest.mark.slow
@pytest.mark.skipif(not MATRIX, reason="set MIXNET_TEST_CUBIN_MATRIX=1 to compile every case's kernel "
                                       "(~25 s per arch); the test above covers every template and layout")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_case_kernel_compiles_to_cubin(nvrtc, arch):
    sources = list(_sources(ALL_CASES).values())
    assert _compile_all(nvrtc, sources, arch)[:4] == b"\x7fELF"


def test_a_compile_error_names_the_node(nvrtc):
    source = cg.render_kernel(chain_group("float32"))
    line = next(ln for ln, j in source.step_lines.items() if source.group.steps[j].op == "tanh")
    lines = source.text.splitlines()
    lines[line - 1] = lines[line - 1].replace("tanhf(v1)", "tanhf(v1, undefined_name)")
    broken = dataclasses.replace(source, text="\n".join(lines))
    with pytest.raises(cg.KernelCompileError, match=rf"at node tanh \({HERE}:1\)") as info:
        cg.compile_cubin(broken, "sm_90")
    assert isinstance(info.value, mx.base.MXNetError) and "undefined_name" in str(info.value)


# ------------------------------------------------------------------------------------------------ 4. a GPU
def _gpu_reason():
    try:
        import cupy
    except ImportError:
        return "cupy is not installed"
    if not cupy.is_available():
        return "cupy finds no usable GPU (cupy.is_available() is False)"
    return None


GPU_REASON = _gpu_reason()
if GPU_REASON:
    print(f"SKIP reason (GPU tests in {HERE}): {GPU_REASON}")
needs_gpu = pytest.mark.skipif(GPU_REASON is not None, reason=f"needs a GPU: {GPU_REASON}")


@needs_gpu
@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_kernels_on_the_gpu_match_numpy(case):
    import cupy
    kernel = cg.compile_kernel(case.group)
    got = kernel(*[cupy.asarray(a) if a.flags.c_contiguous else _device_view(a) for a in case.inputs])
    got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    # the device's libm differs from glibc's by a few ulp, and fma contraction is on by default
    _compare(case, [cupy.asnumpy(g) for g in got], slack=4)


def _device_view(a):
    """The same strided view on the device (the kernel reads it without a copy)."""
    import cupy
    base = a
    while base.base is not None and isinstance(base.base, np.ndarray):
        base = base.base
    device = cupy.asarray(np.ascontiguousarray(base))
    offset = a.ctypes.data - base.ctypes.data
    return cupy.ndarray(a.shape, a.dtype, device.data + offset, a.strides)


@needs_gpu
def test_fused_op_runs_on_the_gpu_and_out_is_filled():
    import cupy
    from mixnet.symbol.fuse import fuse
    x = mx.sym.var("x")
    y = mx.sym.tanh(x * 0.5 + 1) * mx.sym.sigmoid(x) - x * x / 3
    fused, groups = fuse(y, {"x": (1000,)}, {"x": np.float32}, device="gpu")
    node = next(n for n in fused._nodes() if n.op is not None)
    assert groups == 1 and isinstance(node.attrs["kernel"], cg.CudaKernel)
    xs = np.linspace(-4, 4, 1000, dtype=np.float32)
    got = fused.eval(x=mx.nd.array(xs, ctx=mx.gpu(0)))[0]
    expected = np.tanh(xs * 0.5 + 1) / (1 + np.exp(-xs)) - xs * xs / 3
    np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    out = cupy.empty((10, 20), np.float32)[:, ::2]                       # non-contiguous out=
    kernel = node.attrs["kernel"]
    assert kernel(cupy.asarray(xs[:100].reshape(10, 10)), out=out) is out
    np.testing.assert_allclose(cupy.asnumpy(out), expected[:100].reshape(10, 10), rtol=1e-5, atol=1e-6)
