"""Generated code never runs text from a model file or a user's program (both are untrusted input): hostile node names,
op names, locations and attribute values go through every code generator (compiled graph code, Numba fused and
reduction kernels, CUDA source, the compiling child's arguments), and nothing runs while the results stay right.

The payloads would run (or break the code) if pasted into a comment as they are: a newline, `\\r` or `\\r\\n`
followed by a statement at the indentation of the graph code (4 spaces) or of a kernel loop (8), a backslash that
continues a `//` comment over the next line, `*/`, quotes, NUL, unicode line separators, a lone surrogate.
"""
import ast
import builtins
import ctypes
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tokenize

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mixnet as mx
from mixnet import autograd, config, gluon
from mixnet.codegen import cache, cupy_gpu, numba_cpu, precompile
from mixnet.codegen.ir import Group, Reduction, Step, inp, step
from mixnet.codegen.safe_text import LIMIT, comment_text

SENTINEL = "MIXNET_INJECTED"


def payload(indent, newline="\n"):
    pad = " " * indent
    return f"n{newline}{pad}__import__('builtins').{SENTINEL} = 1{newline}{pad}#"


HOSTILE = [
    payload(4), payload(8), payload(0), payload(4, "\r"), payload(8, "\r\n"),
    "a\u2028b\u2029c\x0cd\x0be\x85f\x00g",
    "q ' \" \"\"\" ''' q",
    "back slash \\",
    "c */ int x; /* d",
    "// # ??/",
    "\u00e9 \u2713 \u4e2d\u6587",
    "lone \ud800 surrogate",
    "x" * 5000,
]
# What a -symbol.json can carry: its loader refuses lone surrogates (not Unicode text; tests/symbol/test_json_fuzz.py),
# so files get an astral character and a right-to-left override in that slot instead.
IN_FILE = [text if text != "lone \ud800 surrogate" else "astral \U0001f600 rtl \u202e end" for text in HOSTILE]
# A name that can be written to a .params file (UTF-8: no lone surrogate)
HOSTILE_PARAM = payload(4)
# CUDA-specific: a // comment continued over the next line, a statement on a line of its own, a block comment
CUDA_HOSTILE = ["k \\", "k\n        out0[i] = 42;\n//", "k\r        out0[i] = 42; //", "*/ out0[i] = 42; /*",
                "??/", "k\u2028out0[i] = 42;"]


@pytest.fixture(autouse=True)
def nothing_runs():
    assert not hasattr(builtins, SENTINEL)
    yield
    injected = hasattr(builtins, SENTINEL)
    if injected:
        delattr(builtins, SENTINEL)
    assert not injected, "text from a name or a location ran as code"


# ------------------------------------------------------------------------------------------------ the helper
def is_safe(text):
    """Printable ASCII without `\\` and `?`, and no `/*` or `*/`: nothing in it can end or extend a comment."""
    return all(" " <= c <= "~" and c not in "\\?" for c in text) and "*/" not in text and "/*" not in text


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=300))
def test_comment_text_cannot_leave_a_comment(text):
    safe = comment_text(text)
    assert is_safe(safe) and len(safe) <= LIMIT + 3
    tree = ast.parse(f"x = 1  # {safe}\ny = 2\n")
    assert [type(s) for s in tree.body] == [ast.Assign, ast.Assign]
    if is_safe(text) and len(text) <= LIMIT:
        assert safe == text                                   # ordinary names and paths are kept as they are


# ------------------------------------------------------------------------------------------------ graph code
def hostile_chain(F, x):
    """The chain every graph below computes, one op per hostile name."""
    for k in range(len(HOSTILE)):
        x = [lambda v: F.tanh(v), lambda v: v * 0.9, lambda v: v + 0.1][k % 3](x)
    return x


def hostile_model(tmp_path):
    """A -symbol.json of data * w, then hostile_chain, with every op node named by a hostile string and the
    parameter variable too; and its .params file."""
    data, w = mx.sym.var("data"), mx.sym.var("w")
    js = json.loads(hostile_chain(mx.sym, mx.sym.broadcast_mul(data, w)).tojson())
    ops = [n for n in js["nodes"] if n["op"] != "null"]
    assert len(ops) == len(HOSTILE) + 1
    for k, node in enumerate(ops):
        node["name"] = IN_FILE[k % len(IN_FILE)] + f"#{k}"
    next(n for n in js["nodes"] if n["name"] == "w")["name"] = HOSTILE_PARAM
    symbol_file, params_file = tmp_path / "hostile-symbol.json", tmp_path / "hostile-0000.params"
    symbol_file.write_text(json.dumps(js))
    w_value = mx.nd.array(np.linspace(0.5, 1.5, 32, dtype=np.float32).reshape(1, 32))
    mx.nd.save(str(params_file), {"arg:" + HOSTILE_PARAM: w_value})
    return str(symbol_file), str(params_file), w_value


def reference(x, w):
    """Forward and d(sum)/dx of the model, eagerly."""
    x = x.copy()
    x.attach_grad()
    with autograd.record():
        y = hostile_chain(mx.nd, mx.nd.broadcast_mul(x, w))
    y.backward()
    return y.asnumpy(), x.grad.asnumpy()


def _inputs():
    return mx.nd.array(np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32))


def _check_forward_and_backward(net, x, expected, expected_grad):
    for _ in range(2):                                        # the first call traces, the second reuses
        np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    xg = x.copy()
    xg.attach_grad()
    with autograd.record():
        y = net(xg)
    y.backward()
    np.testing.assert_allclose(xg.grad.asnumpy(), expected_grad, rtol=1e-4, atol=1e-5)


def assert_only_expected_statements(plan):
    """A plan's graph code is `def graph(...)` holding one kernel call per op node, `del`s and one return, and
    every comment stays on its line."""
    source = plan.compiled.source
    n_ops = sum(1 for n in plan.symbol._nodes() if n.op is not None)
    tree = ast.parse(source)
    assert len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef) and tree.body[0].name == "graph"
    calls = 0
    for statement in tree.body[0].body:
        if isinstance(statement, ast.Assign):
            assert isinstance(statement.value, ast.Call) and re.fullmatch(r"K\d+", statement.value.func.id)
            calls += 1
        else:
            assert isinstance(statement, (ast.Delete, ast.Return)), ast.dump(statement)
    assert calls == n_ops
    comments = [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    assert len(comments) == n_ops and all(is_safe(c) for c in comments)


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
def test_symbolblock_imports_of_hostile_names(tmp_path, monkeypatch, fuse):
    monkeypatch.setattr(config, "FUSE", fuse)
    symbol_file, params_file, w = hostile_model(tmp_path)
    net = gluon.SymbolBlock.imports(symbol_file, ["data"], params_file)
    x = _inputs()
    _check_forward_and_backward(net, x, *reference(x, w))
    graph = next(iter(net._cached_graphs.values()))
    assert (graph.inference.fused_groups > 0) == fuse
    assert_only_expected_statements(graph.inference)


class FromFile(gluon.HybridBlock):
    """Runs a loaded symbol whose one input is `data` (the name a traced single input gets), hybridized."""

    def __init__(self, symbol, **kwargs):
        super().__init__(**kwargs)
        self.symbol = symbol

    def forward(self, x):
        if isinstance(x, mx.sym.Symbol):
            return self.symbol
        return self.symbol.eval(data=x)[0]


@pytest.mark.parametrize("static_alloc", [False, True], ids=["dynamic", "static_alloc"])
@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
def test_hybridized_graph_of_hostile_names(tmp_path, monkeypatch, fuse, static_alloc):
    monkeypatch.setattr(config, "FUSE", fuse)
    js = json.loads(hostile_chain(mx.sym, mx.sym.var("data")).tojson())
    for k, node in enumerate(n for n in js["nodes"] if n["op"] != "null"):
        node["name"] = IN_FILE[k] + f"#{k}"
    net = FromFile(mx.sym.load_json(json.dumps(js)))
    net.hybridize(static_alloc=static_alloc)
    x = _inputs()
    _check_forward_and_backward(net, x, *reference(x, mx.nd.ones((1, 32))))
    assert (net._last_graph.inference.fused_groups > 0) == fuse
    assert_only_expected_statements(net._last_graph.inference)


def test_a_hostile_attribute_value_is_refused_at_load():
    js = json.loads((mx.sym.var("data") * 2).tojson())
    js["nodes"][1]["attrs"]["scalar"] = "1)\n    " + payload(4)
    with pytest.raises(mx.base.MXNetError, match="expected a number"):
        mx.sym.load_json(json.dumps(js))


BLOCK_MODULE = '''
from mixnet import gluon


class Chain(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        y = F.tanh(x * 0.5 + 1)
        return y * F.sigmoid(x) - x * x / 3
'''


def test_traced_block_from_a_path_with_a_newline(tmp_path, monkeypatch, caplog):
    """The user's file:line of every node is a path with a payload in it: graph code comments, the kernels' printed
    (MIXNET_SHOW_CODE) form, and the backward graph all carry it."""
    directory = tmp_path / f"pkg{payload(4)}"
    directory.mkdir()
    (directory / "hostile_path_block.py").write_text(BLOCK_MODULE)
    monkeypatch.syspath_prepend(str(directory))
    monkeypatch.setattr(config, "SHOW_CODE", True)
    monkeypatch.setenv("MIXNET_SHOW_CODE", "1")
    sys.modules.pop("hostile_path_block", None)
    import hostile_path_block
    net = hostile_path_block.Chain()
    net.hybridize(static_alloc=True)
    x = _inputs()
    xn = x.asnumpy()
    expected = np.tanh(xn * 0.5 + 1) / (1 + np.exp(-xn)) - xn * xn / 3
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5, atol=1e-5)
    xg = x.copy()
    xg.attach_grad()
    with autograd.record():
        y = net(xg)
    y.backward()
    assert np.isfinite(xg.grad.asnumpy()).all()
    compiled = net._last_graph.inference
    assert compiled.fused_groups > 0
    shown = "\n".join(caplog.messages)                          # MIXNET_SHOW_CODE logs the graphs and kernels
    assert "__import__" in shown                              # the lines are shown, inside comments only
    for line in shown.splitlines():
        if "__import__" in line:
            assert line.index("__import__") > line.index("#")
    assert_only_expected_statements(compiled)
    sys.modules.pop("hostile_path_block", None)


# ------------------------------------------------------------------------------------------------ Numba kernels
def hostile_group(dtype="float32", names=HOSTILE, reduce=None):
    """A chain with one step per hostile string, each used as the op name and as the location."""
    steps = []
    for k, text in enumerate(names):
        src = inp(k % 2) if k < 2 else step(k - 1)
        template, attrs = [("tanh({0})", {}), ("{0} * {scalar}", {"scalar": 0.9}), ("{0} + {1}", {})][k % 3]
        refs = (src, inp(1)) if "{1}" in template else (src,)
        steps.append(Step(text, template, refs, attrs, text))
    return Group(steps, [len(steps) - 1], 2, dtype, reduce)


def hostile_numpy(a, b):
    x = None
    for k in range(len(HOSTILE)):
        src = (a, b)[k % 2] if k < 2 else x
        x = [np.tanh(src), src * np.float32(0.9), src + b][k % 3]
    return x


def _statements(function):
    loop = function.body[0] if isinstance(function.body[0], ast.For) else None
    return (loop.body if loop else function.body)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_kernel_of_hostile_names_and_locations(kernel_dir, dtype):
    group = hostile_group(dtype)
    a, b = (np.random.default_rng(k).standard_normal(1000).astype(dtype) for k in (1, 2))
    expected = hostile_numpy(a, b)
    for located in (False, True):                     # the cached form, and the printed one (run here too)
        source = numba_cpu.render_kernel(group, locations=located)
        tree = ast.parse(source)
        functions = [s for s in tree.body if isinstance(s, ast.FunctionDef)]
        assert [f.name for f in functions] == ["serial", "parallel"]
        assert all(isinstance(s, (ast.Import, ast.ImportFrom, ast.FunctionDef)) for s in tree.body)
        for f in functions:
            body = _statements(f)
            assert len(f.body) == 1 and all(isinstance(s, ast.Assign) for s in body)
            assert len(body) == 2 + len(HOSTILE) + 1      # two loads, one line per node, one store
        module = cache.load_source(source)
        out = np.empty_like(a)
        module.serial(a.size, a, b, out)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    kernel = numba_cpu.compile_kernel(group)
    np.testing.assert_allclose(kernel(a, b), expected, rtol=1e-5, atol=1e-6)


def test_reduction_kernel_of_hostile_names_and_locations(kernel_dir):
    layout = "trailing"                 # the leading layout writes the same element() and reduction comments
    group = hostile_group(reduce=Reduction("sum", layout, HOSTILE[0], HOSTILE[1]))
    a, b = (np.random.default_rng(k).standard_normal((40, 50)).astype(np.float32) for k in (3, 4))
    values = hostile_numpy(a, b).astype(np.float64)
    expected = values.sum(axis=1 if layout == "trailing" else 0)
    for located in (False, True):
        source = numba_cpu.render_kernel(group, locations=located)
        tree = ast.parse(source)
        element = next(s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "element")
        assert all(isinstance(s, ast.Assign) for s in element.body[:-1]) and isinstance(element.body[-1], ast.Return)
        assert len(element.body) == 2 + len(HOSTILE) + 1
        assert all(isinstance(s, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign)) for s in tree.body)
    module = cache.load_source(source)                  # the form with the hostile locations, run
    out = np.zeros(expected.shape, np.float32)
    module.serial(a.size, a.reshape(-1), b.reshape(-1), out)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------------------------ CUDA source
def _cxx():
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")


def test_cuda_source_of_hostile_names_and_locations(tmp_path):
    names = HOSTILE + CUDA_HOSTILE
    group = hostile_group("float32", names)
    sources = [cupy_gpu.render_kernel(group, layout, located)
               for layout in (cupy_gpu.FLAT, cupy_gpu.Layout(2, (1,))) for located in (False, True)]
    for source in sources:
        lines = source.text.splitlines()
        steps = [ln for ln in lines if re.match(r"\s+const float v\d+ = ", ln)]
        assert len(steps) == len(names)                   # one line per node, none added or swallowed
        for ln in lines:
            assert all(" " <= c <= "~" for c in ln) and not ln.endswith("\\") and "??" not in ln
            code = ln.split("//")[0]
            assert "/*" not in code and "*/" not in code and "42" not in code
    cxx = _cxx()
    if cxx is None:
        print("SKIP reason: no C++ compiler (g++/clang++ or $CXX) to build the CUDA CPU shim")
        pytest.skip("no C++ compiler (g++/clang++ or $CXX) to build the CUDA CPU shim")
    shim = os.path.join(os.path.dirname(__file__), "cuda_cpu_shim.h")
    located = sources[1]                                    # the flat layout, with the hostile locations
    params = ", ".join(f"{ct} {name}" for ct, name in located.params)
    names_ = ", ".join(name for _, name in located.params)
    unit = tmp_path / "hostile.cpp"
    unit.write_text(f'#include "{shim}"\n{located.text}\n'
                    f'extern "C" void launch(unsigned grid, unsigned block, {params}) '
                    f"{{ mx_launch({located.name}, grid, block, {names_}); }}\n")
    lib = tmp_path / "hostile.so"
    subprocess.run([cxx, "-std=c++17", "-O0", "-shared", "-fPIC", "-o", str(lib), str(unit)], check=True,
                   timeout=120)
    launch = ctypes.CDLL(str(lib)).launch
    launch.restype = None
    launch.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_int32] + [ctypes.c_void_p] * 3
    a, b = (np.random.default_rng(k).standard_normal(100).astype(np.float32) for k in (5, 6))
    out = np.full(100, -7.0, np.float32)
    launch(2, 8, 100, a.ctypes.data, b.ctypes.data, out.ctypes.data)
    x = hostile_numpy(a, b)
    for k in range(len(HOSTILE), len(names)):
        x = [np.tanh(x), x * np.float32(0.9), x + b][k % 3]
    np.testing.assert_allclose(out, x, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------------ the child
@pytest.mark.parametrize("job", [
    {"name": "../../tmp/x", "dtype": "float32", "arrays": 2, "variant": "serial"},
    {"name": "mx_0123456789abcdef", "dtype": "float32; import os", "arrays": 2, "variant": "serial"},
    {"name": "mx_0123456789abcdef", "dtype": "float32", "arrays": "2", "variant": "serial"},
    {"name": "mx_0123456789abcdef", "dtype": "float32", "arrays": 2, "variant": "__init__"},
    {"name": "mx_0123456789abcdef", "dtype": "float32", "arrays": 2, "variant": "serial", "path": "/x.py"},
    {"eager": "float32\nimport os"},
])
def test_the_compiling_child_refuses_malformed_jobs(job):
    with pytest.raises(ValueError, match="malformed job"):
        precompile._main(json.dumps({"parent": os.getppid(), "jobs": [job]}))


def test_the_compiling_child_runs_only_files_whose_content_is_their_name(tmp_path):
    name = "mx_0123456789abcdef"
    marker = tmp_path / "ran"
    (tmp_path / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').close()\nserial = None\n")
    argument = json.dumps({"parent": os.getpid(),
                           "jobs": [{"name": name, "dtype": "float32", "arrays": 2, "variant": "serial"}]})
    env = dict(os.environ, MIXNET_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-m", "mixnet.codegen.precompile", argument], env=env, cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert not marker.exists()
