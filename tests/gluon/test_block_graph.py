"""HybridBlock.graph() / explain() and mx.viz on hybridized blocks: the traced graph with output types and the
user's lines, the report (why each signature was traced, fused kernels, unfused ops and why, generated code),
fused kernels drawn as clusters, and the errors before hybridize() and a first call."""
import pickle
import re

import pytest

import mixnet as mx
from mixnet import autograd, config, gluon, nd
from mixnet.base import MXNetError
from mixnet.gluon import nn
from mixnet.symbol import Symbol, draw

graphviz = pytest.importorskip("graphviz", reason="plot_network draws with the graphviz package")


class Net(gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.fc1 = nn.Dense(16, in_units=8)
            self.fc2 = nn.Dense(4, in_units=16)

    def hybrid_forward(self, F, x):
        h = self.fc1(x)
        h = F.tanh(h * 0.5 + 1) * F.sigmoid(h)          # FUSED LINE: one kernel
        h = self.fc2(h)
        return F.exp(h)                                  # LONE LINE: a single elementwise op stays unfused


def _line(marker):
    with open(__file__) as f:
        return next(k for k, text in enumerate(f, 1) if marker in text and "def _line" not in text
                    and "_line(" not in text)


@pytest.fixture
def fused(monkeypatch):
    monkeypatch.setattr(config, "FUSE_MIN_SIZE", 1)    # fuse these small arrays
    net = Net()
    net.initialize()
    net.hybridize()
    net(nd.ones((2, 8)))
    return net


def test_graph_and_explain_say_what_to_do_before_a_traced_call():
    net = Net()
    net.initialize()
    with pytest.raises(MXNetError, match=r"not hybridized: call net.hybridize\(\), then net\(x\) once"):
        net.graph()
    with pytest.raises(MXNetError, match="not hybridized"):
        net.explain()
    with pytest.raises(MXNetError, match="not hybridized"):
        mx.viz.plot_network(net)
    net.hybridize()
    with pytest.raises(MXNetError, match=r"no traced graph yet.*call it once \(net\(x\)\) or precompile"):
        net.graph()
    with pytest.raises(MXNetError, match="no traced graph yet"):
        net.explain(code=True)
    net(nd.ones((2, 8)))
    with pytest.raises(MXNetError, match=r"no traced graph for inputs of shapes \(5x8\); traced: \(2x8\)"):
        net.graph((5, 8))


def test_graph_is_a_symbol_with_types_and_source_lines(fused):
    g = fused.graph()
    assert isinstance(g, Symbol) and g.input_shapes == {"data": (2, 8)} and not g.train_mode
    assert g.list_arguments()[0] == "data" and len(g.parameters) == 4
    text = str(g)
    assert text.startswith("traced graph of Net 'net")
    fused_line = f"test_block_graph.py:{_line('FUSED LINE')}"
    assert re.search(r"_tanh0 = tanh\(\S+\)  -> 2x16 float32\s+# \S*" + re.escape(fused_line), text)
    assert re.search(r"_exp0 = exp\(\S+\)  -> 2x4 float32\s+# \S*test_block_graph.py:" +
                     str(_line("LONE LINE")), text)
    assert re.search(r"kernel 0: 5 ops \(_mul_scalar, _plus_scalar, tanh, sigmoid, broadcast_mul\) -> 2x16 "
                     r"float32  # \S*" + re.escape(fused_line), text)
    restored = pickle.loads(pickle.dumps(g))              # pickles as the plain Symbol
    assert type(restored) is Symbol and restored.tojson() == g.tojson()


def test_graph_selects_a_signature_by_input_shapes(fused):
    fused(nd.ones((3, 8)))
    assert fused.graph().input_shapes == {"data": (3, 8)}            # the most recent by default
    assert fused.graph((2, 8)).input_shapes == {"data": (2, 8)}
    assert fused.graph([(3, 8)]).input_shapes == {"data": (3, 8)}


def test_explain_reports_traces_kernels_and_unfused_ops(fused):
    fused(nd.ones((3, 8)))
    x = nd.ones((3, 8))
    with autograd.record():
        fused(x).backward()
    report = fused.explain()
    text = str(report)
    assert "3 signature(s) traced" in text and "A call re-traces" in text
    sections = text.split("\n\nsignature ")
    assert "why traced: first call" in sections[1]
    assert "why traced: new shapes or dtypes (input 0: (2, 8) float32 -> (3, 8) float32)" in sections[2]
    assert "new training mode (False -> True)" in sections[3]
    assert "inference plan: 1 fused kernel(s); ops with kernels of their own: _fc_epilogue" not in sections[1]
    assert re.search(r"inference plan: 1 fused kernel\(s\); ops with kernels of their own: FullyConnected x2",
                     sections[1])
    assert re.search(r"unfused \S+_exp0 \(exp\): no fusible neighbour of the same shape .*test_block_graph.py:" +
                     str(_line("LONE LINE")), sections[1])
    assert "training forward plan" in sections[3] and "training backward plan" in sections[3]
    assert "explain(code=True) adds" in text and "def graph(" not in text
    html = report._repr_html_()
    assert html.startswith("<div>") and "<b>signature 0</b>" in html


def test_explain_code_shows_the_compiled_graph_and_kernels_with_source_lines(fused):
    text = str(fused.explain(code=True))
    assert "signature 0, inference plan: compiled graph code\ndef graph(xp, is_train, rng" in text
    kernel = text.split("signature 0, inference plan: fused kernel 0\n")[1]
    assert "@njit" in kernel and re.search(r"tanh\S*\(v\d\)\s+# tanh\s+\S*test_block_graph.py:" +
                                           str(_line("FUSED LINE")), kernel)
    assert "<details><summary>signature 0, inference plan: fused kernel 0</summary>" in \
        fused.explain(code=True)._repr_html_()


def test_explain_names_small_groups_and_fusion_off(monkeypatch):
    monkeypatch.setattr(config, "FUSE_MIN_SIZE", 64)
    net = Net()
    net.initialize()
    net.hybridize()
    net(nd.ones((2, 8)))                               # 32 elements, below the minimum size
    assert re.search(r"unfused \S+_tanh0 \(tanh\): 32 elements, below MIXNET_FUSE_MIN_SIZE=64",
                     str(net.explain()))
    monkeypatch.setattr(config, "FUSE", False)
    net.hybridize()
    net(nd.ones((2, 8)))
    assert "unfused" in str(net.explain()) and "fusion is off (MIXNET_FUSE=0" in str(net.explain())


def test_plot_network_draws_fused_kernels_as_clusters(fused, monkeypatch):
    dot = mx.viz.plot_network(fused)
    src = dot.source
    clusters = re.findall(r"subgraph cluster(\d+) \{(.*?)\n\t\}", src, flags=re.S)
    assert [c for c, _ in clusters] == ["0"]
    inside = clusters[0][1]
    assert re.findall(r"\[label=\"?(\w+)", inside) == ["_mul_scalar", "_plus_scalar", "tanh", "sigmoid",
                                                       "broadcast_mul"]
    assert 'label="fused kernel 0: 5 ops, ' in inside and "style=dashed" in inside
    assert f"test_block_graph.py:{_line('FUSED LINE')}" in inside                 # tooltips: the user's line
    assert "_weight" not in src and "_bias" not in src                           # the block's parameters
    assert re.search(r'label="?16"? arrowtail', src)                             # a plan is typed: shapes drawn
    assert "_weight" in mx.viz.plot_network(fused, hide_weights=False).source
    assert dot._repr_mimebundle_()["text/plain"].startswith("traced graph of Net")   # no `dot` here: text
    monkeypatch.setattr(draw.shutil, "which", lambda name: None)
    html = fused.graph()._repr_html_()
    assert html.startswith("<div><pre") and "fused kernels (1, in the graph that runs)" in html


def test_print_summary_of_a_block_counts_its_parameters(fused, capsys):
    mx.viz.print_summary(fused)
    out = capsys.readouterr().out
    assert re.search(r"\S+_dense0_fwd\(FullyConnected\)\s+16\s+144\s+data", out)
    assert "Total params: 212" in out                    # 8*16+16 + 16*4+4
    assert re.search(r"data\(null\)\s+8\s+0", out)


class SameOpsElsewhere(gluon.HybridBlock):
    """Net's fused chain written on another line: the fused kernel is shared (cached by its ops), its lines not."""

    def hybrid_forward(self, F, x):
        return F.tanh(x * 0.5 + 1) * F.sigmoid(x)      # OTHER LINE: the same five ops as Net's


def test_a_shared_kernel_shows_each_graphs_own_source_lines(monkeypatch):
    monkeypatch.setattr(config, "FUSE_MIN_SIZE", 1)
    first = SameOpsElsewhere()
    first.hybridize()
    first(nd.ones((2, 16)))                           # compiles (or loads) the kernel for these ops first
    net = Net()
    net.initialize()
    net.hybridize()
    net(nd.ones((2, 8)))
    mine, other = f"test_block_graph.py:{_line('FUSED LINE')}", f"test_block_graph.py:{_line('OTHER LINE')}"
    for text in (str(net.graph()), str(net.explain(code=True)), mx.viz.plot_network(net).source):
        assert mine in text and other not in text
    assert other in str(first.graph()) and mine not in str(first.graph())
