"""codegen/backend.py: the fused op's kernel follows the arrays' module (numpy -> Numba, cupy -> CUDA), whichever
device the plan was fused for."""
import types

import numpy as np
import pytest

import mixnet as mx
from mixnet import nd
from mixnet.codegen import cupy_gpu, numba_cpu
from mixnet.codegen.backend import compile_for, kernel_for
from mixnet.codegen.ir import Group, Step, inp, step
from mixnet.symbol.fuse import fuse


def _group():
    return Group([Step("exp", "exp({0})", (inp(0),)), Step("_mul_scalar", "{0} * {scalar}", (step(0),),
                                                            {"scalar": 2.0})], [1], 1)


def test_each_device_gets_its_backend_and_the_other_follows_the_arrays(kernel_dir):
    cpu, gpu = compile_for("cpu", _group()), compile_for("gpu", _group())
    assert isinstance(cpu, numba_cpu.Kernel) and isinstance(gpu, cupy_gpu.CudaKernel)
    assert kernel_for(np, cpu) is cpu
    from_gpu = kernel_for(np, gpu)                       # a GPU plan run on numpy arrays: Numba, same group
    assert isinstance(from_gpu, numba_cpu.Kernel) and from_gpu.source == cpu.source
    fake_cupy = types.ModuleType("cupy")                 # only the module's name decides; nothing is launched
    from_cpu = kernel_for(fake_cupy, cpu)
    assert isinstance(from_cpu, cupy_gpu.CudaKernel) and from_cpu.source == gpu.source


def test_unknown_backends_are_explained(kernel_dir):
    with pytest.raises(ValueError, match="no fused-kernel backend for device 'tpu'"):
        compile_for("tpu", _group())
    with pytest.raises(ValueError, match="not jax"):
        kernel_for(types.ModuleType("jax"), compile_for("gpu", _group()))


def test_a_plan_fused_for_the_gpu_runs_on_the_cpu(kernel_dir):
    x = mx.sym.var("x")
    y = mx.sym.tanh(x * 0.5 + 1) * mx.sym.sigmoid(x)
    fused, groups = fuse(y, {"x": (3, 4)}, {"x": np.float32}, device="gpu")
    node = next(n for n in fused._nodes() if n.op is not None)
    assert groups == 1 and isinstance(node.attrs["kernel"], cupy_gpu.CudaKernel)
    xs = nd.array(np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_allclose(fused.eval(x=xs)[0].asnumpy(), y.eval(x=xs)[0].asnumpy(), rtol=2e-6, atol=2e-6)
