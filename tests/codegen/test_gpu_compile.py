"""Every CUDA kernel the code generator emits for the test suite's models compiles with NVRTC, on machines without
a GPU or driver (CI installs `.[gpu-compile]`: cupy and NVRTC from pip).

The models are hybridized and run one training step and one prediction on the CPU, with every graph a plan would
fuse recorded instead of fused (so the step runs the unfused compiled graph and nothing compiles with Numba). Each
recorded graph is then fused as a GPU plan fuses it (device="gpu", every group whatever its size), and, for the
groups ending in a reduction that a CPU plan fuses, as such a plan's kernel runs on cupy arrays (the elementwise
part in CUDA, codegen/reduction.py). Each kernel is rendered for the flat layout and for the layout of the shapes
the graph gives its inputs, and all are compiled to cubin for sm_80 and sm_90 in one NVRTC program per arch.
"""
import dataclasses
import sys

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, config, gluon, nd
from mixnet.codegen import cupy_gpu as cg
from mixnet.codegen.reduction import FusedReduction
from mixnet.gluon import nn
from mixnet.symbol import fuse as fuse_module
from mixnet.symbol.autodiff import exact_types
from mixnet.symbol.graph import graph_types

from .test_cupy_gpu import _compile_all, _nvrtc

try:                                          # the models of the hybridize tests (tests/ is on sys.path)
    from gluon.test_hybridize_models import Forward20, TextClassifier, _mlp, _resnet
except ImportError:                           # run from elsewhere: tests/ as a package
    from tests.gluon.test_hybridize_models import Forward20, TextClassifier, _mlp, _resnet


class Chain(gluon.HybridBlock):
    """W1: y = tanh(x*0.5+1) * sigmoid(x) - x*x/3."""

    def hybrid_forward(self, F, x):
        return F.tanh(x * 0.5 + 1) * F.sigmoid(x) - x * x / 3


class Normalized(gluon.HybridBlock):
    """LayerNorm, softmax and a sum over the batch: groups ending in reductions (forward and backward)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.norm = nn.LayerNorm(in_channels=6)
            self.dense = nn.Dense(6, in_units=6)

    def hybrid_forward(self, F, x):
        h = self.norm(F.exp(x * 0.1) - x)
        return F.softmax(self.dense(h)) + F.sum(F.tanh(h) ** 2, axis=0, keepdims=True)


def _lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 5, activation="relu"), nn.MaxPool2D(2), nn.Conv2D(6, 3, activation="relu"),
            nn.MaxPool2D(2), nn.Dense(16, activation="relu"), nn.Dense(10))
    return net


def _models():
    """(name, block, inputs, labels); labels feed softmax cross-entropy. The small models in float32 and float64,
    the larger ones in float32 (float64 adds the same kernels with `double`)."""
    rng = np.random.RandomState(0)
    out = []
    for dtype in ("float32", "float64"):
        def arr(*shape):
            return nd.array(rng.randn(*shape), dtype=dtype)
        out += [("w1", Chain(), [arr(4, 8)], None),
                ("mlp", _mlp(), [arr(4, 5)], nd.array([0, 1, 2, 1], dtype=dtype)),
                ("normalized", Normalized(), [arr(4, 6)], None)]
    arr = lambda *shape: nd.array(rng.randn(*shape), dtype="float32")   # noqa: E731 - the larger models: float32
    tokens, lengths = nd.array(rng.randint(0, 12, size=(3, 5))), nd.array([5, 2, 4])
    out += [("lenet", _lenet(), [arr(2, 1, 16, 16)], nd.array([3, 7])),
            ("resnet", _resnet(), [arr(2, 3, 8, 8)], nd.array([0, 2])),
            ("text", TextClassifier(), [tokens, lengths], nd.array([0, 1, 2])),
            ("forward20", Forward20(), [arr(2, 3)], None)]
    return out


def _recorded_graphs(monkeypatch):
    """Runs every model (a training step and a prediction) and returns the graphs its plans asked to fuse, as
    (symbol, shapes, dtypes)."""
    real, recorded = fuse_module.fuse, []

    def record(symbol, shapes=None, dtypes=None, *args, **kwargs):
        # The compiler's graphs are typed (shapes None): their nodes carry their types.
        recorded.append((symbol, shapes and dict(shapes), dtypes and dict(dtypes)))
        return symbol, 0                                # nothing fused: the plan runs its compiled graph
    monkeypatch.setattr(config, "COMPILE_BACKGROUND", False)   # plans ask for fusion before their first call returns
    for module in list(sys.modules.values()):           # wherever a plan holds the fusion pass
        if getattr(module, "__name__", "").startswith("mixnet") and getattr(module, "fuse", None) is real:
            monkeypatch.setattr(module, "fuse", record)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for name, net, inputs, labels in _models():
        if name != "text":                              # its inputs are tokens and lengths
            inputs[0].attach_grad()                     # (w1 has no parameters: this is its gradient)
        net.initialize(mx.init.Normal(0.5))
        net.cast(inputs[0].dtype)
        net.hybridize(static_alloc=True)
        for _ in range(2):                              # a first call with deferred shapes runs eagerly
            with autograd.record():
                out = net(*inputs)
                loss = loss_fn(out, labels) if labels is not None else (out * out).sum()
            loss.backward()
        net(*inputs).wait_to_read()                    # predict mode: its own plan
    return recorded


def _kernels(recorded):
    """({source text: CudaSource}, {the texts from reductions' elementwise parts}) of every kernel the recorded
    graphs give, each group in the flat layout and in the layout of its inputs' shapes (C-contiguous)."""
    sources, from_reductions = {}, set()

    def add(group, input_shapes, reduction=False):
        shape = np.broadcast_shapes(*input_shapes) if input_shapes else ()
        strides = [[int(np.prod(s[d + 1:], dtype=np.int64)) for d in range(len(s))] for s in input_shapes]
        layout, _, _ = cg.plan_layout(shape, list(zip(input_shapes, strides)))
        for lay in {cg.FLAT, layout}:
            source = cg.render_kernel(group, lay, locations=False)
            sources.setdefault(source.text, source)
            if reduction:
                from_reductions.add(source.text)

    for symbol, shapes, dtypes in recorded:
        for device in ("gpu", "cpu"):
            fused, groups = fuse_module.fuse(symbol, shapes, dtypes, device=device, min_size=0, compile_now=False)
            if not groups:
                continue
            eshape = exact_types(fused, shapes, dtypes)[0] if shapes else graph_types(fused._outputs)[0]
            for node in fused._nodes():
                if node.op is None or node.op.name != "_fused_elemwise":
                    continue
                kernel = node.attrs["kernel"]
                input_shapes = [tuple(eshape[(id(n), i)]) for n, i in node.inputs]
                if device == "gpu":
                    assert isinstance(kernel, cg.CudaKernel)
                    add(kernel.group, input_shapes)
                elif isinstance(kernel, FusedReduction):    # run on cupy arrays: the elementwise part in CUDA
                    add(dataclasses.replace(kernel.group, reduce=None), input_shapes, reduction=True)
    return sources, from_reductions


@pytest.fixture(scope="module")
def nvrtc():
    module = _nvrtc()
    if module is None:
        pytest.skip('cupy with NVRTC is not importable: pip install -e ".[gpu-compile]"')
    return module


@pytest.fixture(scope="module")
def model_kernels(tmp_path_factory):
    from mixnet.codegen import cache
    previous = cache.set_cache_dir(tmp_path_factory.mktemp("gpu-kernels"))
    monkeypatch = pytest.MonkeyPatch()
    try:
        recorded = _recorded_graphs(monkeypatch)
        monkeypatch.undo()
        return _kernels(recorded)
    finally:
        monkeypatch.undo()
        cache.set_cache_dir(previous)


def test_the_models_give_fused_and_reduction_kernels(model_kernels):
    """The recording sees what the plans fuse: forward and backward kernels of both dtypes, strided layouts, and
    the elementwise parts of fused reductions."""
    sources, from_reductions = model_kernels
    assert len(sources) >= 20 and from_reductions
    kernels = list(sources.values())
    assert {s.dtype for s in kernels} == {"float32", "float64"}
    assert any(s.layout.strided for s in kernels)
    ops = {step.op for s in kernels for step in s.group.steps}
    assert {"tanh", "sigmoid", "exp", "relu", "_relu_bwd"} <= ops


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_model_kernel_compiles_to_cubin(nvrtc, model_kernels, arch):
    sources, _ = model_kernels
    assert _compile_all(nvrtc, list(sources.values()), arch)[:4] == b"\x7fELF"
