"""Generated kernels (mixnet/codegen/numba_cpu.py) against the same chain evaluated with numpy ops."""
import io
import math
import re

import numba

import numpy as np
import pytest

from mixnet.codegen import Group, Step, compile_kernel, inp, render_kernel, step

HERE = "tests/codegen/test_numba_cpu.py"


def w1_group(dtype="float32"):
    """y = tanh(x*0.5 + 1) * sigmoid(x) - x*x/3."""
    return Group([
        Step("_mul_scalar", "{0} * {scalar}", (inp(0),), {"scalar": 0.5}, HERE + ":1"),
        Step("_plus_scalar", "{0} + {scalar}", (step(0),), {"scalar": 1.0}, HERE + ":1"),
        Step("tanh", "tanh({0})", (step(1),), {}, HERE + ":1"),
        Step("sigmoid", "1 / (1 + exp(-{0}))", (inp(0),), {}, HERE + ":2"),
        Step("elemwise_mul", "{0} * {1}", (step(2), step(3)), {}, HERE + ":2"),
        Step("square", "{0} * {0}", (inp(0),), {}, HERE + ":3"),
        Step("_div_scalar", "{0} / {scalar}", (step(5),), {"scalar": 3}, HERE + ":3"),
        Step("elemwise_sub", "{0} - {1}", (step(4), step(6)), {}, HERE + ":3"),
    ], outputs=[7], n_inputs=1, dtype=dtype)


def w1_numpy(x):
    return np.tanh(x * 0.5 + 1) * (1 / (1 + np.exp(-x))) - x * x / 3


def mixed_group(dtype):
    """Two inputs, two outputs; comparisons, max/min, log/exp/erf, an attribute, a bool-valued node."""
    return Group([
        Step("broadcast_mul", "{0} * {1}", (inp(0), inp(1)), {}),
        Step("relu", "max({0}, 0)", (step(0),), {}),
        Step("hard_sigmoid", "min(max({0} * {alpha} + {beta}, 0), 1)", (inp(1),), {"alpha": 0.2, "beta": 0.5}),
        Step("_greater_scalar", "({0} > {scalar})", (inp(0),), {"scalar": 0.25}),
        Step("log1p", "log1p({0})", (step(1),), {}),
        Step("elemwise_add", "{0} + {1}", (step(4), step(3)), {}),
        Step("exp", "exp({0})", (step(2),), {}),
        Step("erf", "erf({0})", (inp(1),), {}),
        Step("elemwise_mul", "{0} * {1}", (step(6), step(7)), {}),
    ], outputs=[5, 8], n_inputs=2, dtype=dtype)


def mixed_numpy(a, b):
    erf = np.vectorize(math.erf, otypes=[np.float64])
    r = np.log1p(np.maximum(a * b, 0)) + (a > 0.25)
    return r, np.exp(np.minimum(np.maximum(b * 0.2 + 0.5, 0), 1)) * erf(b)


@pytest.fixture(scope="session")
def kernels(kernel_dir):
    return {
        "w1": compile_kernel(w1_group(), parallel_threshold=64),
        "mixed32": compile_kernel(mixed_group("float32"), parallel_threshold=64),
        "mixed64": compile_kernel(mixed_group("float64"), parallel_threshold=64),
    }


SHAPES = [(0,), (1,), (), (7,), (3, 5), (63,), (64,), (2, 3, 17), (1000,)]   # 64 and up: the parallel variant


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_w1_matches_numpy(kernels, shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 4
    got = kernels["w1"](x)
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_allclose(got, w1_numpy(x.astype(np.float64)), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-6), ("float64", 1e-12)])
@pytest.mark.parametrize("shape", [(0,), (1,), (5, 4), (300,)], ids=str)
def test_mixed_matches_numpy(kernels, dtype, tol, shape):
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    k = kernels["mixed32" if dtype == "float32" else "mixed64"]
    r0, r1 = k(a, b)
    e0, e1 = mixed_numpy(a.astype(np.float64), b.astype(np.float64))
    assert r0.dtype == r1.dtype == np.dtype(dtype)
    np.testing.assert_allclose(r0, e0, rtol=tol, atol=tol)
    np.testing.assert_allclose(r1, e1, rtol=tol, atol=tol)


def test_broadcasting_and_out(kernels):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 1, 6)).astype(np.float32)
    b = rng.standard_normal((3, 1)).astype(np.float32)
    r0, r1 = kernels["mixed32"](a, b)
    e0, e1 = mixed_numpy(a.astype(np.float64), b.astype(np.float64))
    assert r0.shape == (4, 3, 6)
    np.testing.assert_allclose(r0, e0, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(r1, np.broadcast_to(e1, r0.shape), rtol=2e-6, atol=2e-6)   # outputs: full shape
    x = rng.standard_normal((10, 10)).astype(np.float32)
    out = np.empty((10, 20), np.float32)[:, ::2]          # a non-contiguous out= is filled too
    assert kernels["w1"](x, out=out) is out
    np.testing.assert_allclose(out, w1_numpy(x.astype(np.float64)), rtol=2e-6, atol=2e-6)


def test_float32_stays_float32(kernels):
    for name in ("w1", "mixed32"):
        k = kernels[name]
        k(*[np.ones(100, np.float32)] * k.n_inputs)                 # both variants compiled
        for variant in (k.serial, k.parallel):
            for sig in variant.signatures:
                assert all(str(t) == "int64" or getattr(t, "dtype", None) == numba.float32 for t in sig), sig
            buf = io.StringIO()
            variant.inspect_types(file=buf)
            # the literal inside np.float32(0.5) is typed float64 (folded by LLVM); any other float64 is a leak
            body = [line for line in buf.getvalue().splitlines() if " = " in line and "::" in line
                    and "const(float" not in line and "(float64,) -> float32" not in line]
            assert body and not any("float64" in line for line in body), \
                [line for line in body if "float64" in line][:3]


def test_source_is_readable(kernels):
    src = render_kernel(w1_group())                     # for people: each node with its op and user line
    body = src[src.index("def serial"):src.index("@njit", src.index("def serial"))]
    for s in w1_group().steps:
        assert re.search(rf"v\d+ = .*# {re.escape(s.op)}\s+{re.escape(s.location)}$", body, re.M), s.op
    assert len(re.findall(r"^\s+v\d+ = ", body, re.M)) == len(w1_group().steps)    # one line per node
    assert "np.float32(0.5)" in body and "tanh_f32(" in body and "np.tanh" not in body
    assert re.search(r"for i in prange\(n\)", src)
    # what is cached and compiled: the same lines, ops named, no user lines
    cached = kernels["w1"].source
    assert cached == render_kernel(w1_group(), locations=False)
    assert [ln.split("#")[0] for ln in cached.splitlines()] == [ln.split("#")[0] for ln in src.splitlines()]
    assert "test_numba_cpu.py" not in cached and "# tanh" in cached
    with open(kernels["w1"].path) as f:
        assert f.read() == cached


def test_exact_switch_uses_libm(kernel_dir):
    src = render_kernel(w1_group(), exact=True)
    assert "np.tanh(" in src and "np.exp(" in src and "_f32" not in src
    k = compile_kernel(w1_group(), exact=True)
    x = np.linspace(-20, 20, 1001, dtype=np.float32)
    np.testing.assert_allclose(k(x), w1_numpy(x), rtol=1e-6, atol=1e-6)
    assert "np.float64" not in render_kernel(w1_group("float64")) and "np.float32" not in \
        render_kernel(w1_group("float64"))


def test_bad_groups_are_explained():
    with pytest.raises(ValueError, match="unknown template function"):
        render_kernel(Group([Step("x", "frobnicate({0})", (inp(0),))], [0], 1))
    with pytest.raises(ValueError, match="needs attribute"):
        render_kernel(Group([Step("x", "{0} * {scalar}", (inp(0),))], [0], 1))
    with pytest.raises(ValueError, match="not an earlier step"):
        render_kernel(Group([Step("x", "{0}", (step(0),))], [0], 1))
