"""mx.viz: print_summary's table (numbers checked against MXNet 1.9.1), plot_network's DOT text (nodes, edges,
shapes, hidden weights), names from a file that cannot change the DOT text, and the fallbacks: no `dot`
program (this machine has none) and no graphviz package. Hybridized blocks: tests/gluon/test_block_graph.py."""
import re
import sys
import warnings

import pytest

import mixnet as mx
from mixnet.base import MXNetError
from mixnet.symbol import draw

graphviz = pytest.importorskip("graphviz", reason="plot_network draws with the graphviz package")


def conv_net():
    data = mx.sym.var("data")
    c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, pad=(1, 1), name="conv1")
    b = mx.sym.BatchNorm(c, name="bn1")
    r = mx.sym.Activation(b, act_type="relu", name="relu1")
    p = mx.sym.Pooling(r, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    f = mx.sym.Flatten(p, name="flat")
    return mx.sym.FullyConnected(f, num_hidden=10, name="fc")


def mlp():
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=128, name="fc1")
    a1 = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(a1, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


# Printed by MXNet 1.9.1's mx.viz.print_summary(conv_net(), shape={'data': (2, 3, 8, 8)}, line_length=80,
# positions=[30, 50, 60, 80]), character for character.
CONV_TABLE_MXNET_1_9_1 = """\
________________________________________________________________________________
Layer (type)                  Output Shape        Param #   Previous Layer      
================================================================================
data(null)                    3x8x8               0                             
________________________________________________________________________________
conv1(Convolution)            8x8x8               224       data                
________________________________________________________________________________
bn1(BatchNorm)                8x8x8               16        conv1               
________________________________________________________________________________
relu1(Activation)             8x8x8               0         bn1                 
________________________________________________________________________________
pool1(Pooling)                8x4x4               0         relu1               
________________________________________________________________________________
flat(Flatten)                 128                 0         pool1               
________________________________________________________________________________
fc(FullyConnected)            10                  1290      flat                
================================================================================
Total params: 1530
________________________________________________________________________________
"""  # noqa: W291 - the table pads every row to the line length, as MXNet's does


def test_print_summary_of_a_conv_net_is_mxnets_table(capsys):
    mx.viz.print_summary(conv_net(), shape={"data": (2, 3, 8, 8)}, line_length=80, positions=[30, 50, 60, 80])
    assert capsys.readouterr().out == CONV_TABLE_MXNET_1_9_1


def test_print_summary_default_layout_and_mlp_numbers(capsys):
    mx.viz.print_summary(mlp(), shape={"data": (32, 784)})
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line) == 120 for line in lines[:-2])         # 120 columns, edges at .44/.64/.74 of them
    assert lines[1].index("Output Shape") == 52 and lines[1].index("Param #") == 76
    rows = {line.split("(")[0]: line.split() for line in lines if "(" in line and "Layer" not in line}
    # MXNet 1.9.1 prints these rows: output shapes without the batch axis, parameter counts, previous layer
    assert rows["data"] == ["data(null)", "784", "0"]
    assert rows["fc1"] == ["fc1(FullyConnected)", "128", "100480", "data"]
    assert rows["relu1"] == ["relu1(Activation)", "128", "0", "fc1"]
    assert rows["fc2"] == ["fc2(FullyConnected)", "10", "1290", "relu1"]
    assert rows["softmax"] == ["softmax(SoftmaxOutput)", "10", "0", "fc2"]
    assert "Total params: 101770" in lines                   # MXNet 1.9.1's total for this MLP


def test_print_summary_counts_real_parameter_shapes_where_mxnet_guessed(capsys):
    # MXNet 1.9.1 prints 90 for this FullyConnected (it multiplies by the previous layer's channel count, 8, not
    # the 512 values the layer reads) and 314 in all; the layer has 512 * 10 + 10 parameters.
    data = mx.sym.var("data")
    c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, pad=(1, 1), name="conv1")
    mx.viz.print_summary(mx.sym.FullyConnected(c, num_hidden=10, name="fc"), shape={"data": (2, 3, 8, 8)})
    out = capsys.readouterr().out
    assert re.search(r"fc\(FullyConnected\)\s+10\s+5130\s+conv1", out)
    assert "Total params: 5354" in out
    # Embedding: 1600 in MXNet 1.9.1 too
    mx.viz.print_summary(mx.sym.Embedding(data, input_dim=100, output_dim=16, name="emb"), shape={"data": (2, 5)})
    out = capsys.readouterr().out
    assert re.search(r"emb\(Embedding\)\s+5x16\s+1600\s+data", out) and "Total params: 1600" in out


def test_print_summary_without_shapes_marks_unknown_counts(capsys):
    mx.viz.print_summary(mlp())
    out = capsys.readouterr().out
    assert re.search(r"fc1\(FullyConnected\)\s+\?\s+data", out)
    assert "Total params: ? (0 in the layers counted" in out
    declared = mx.sym.FullyConnected(mx.sym.var("x"), mx.sym.var("w", shape=(4, 3)), mx.sym.var("b", shape=(4,)),
                                     num_hidden=4, name="fc")
    mx.viz.print_summary(declared)               # declared parameter shapes are counted without input shapes
    assert "Total params: 16" in capsys.readouterr().out


def test_print_summary_errors():
    with pytest.raises(TypeError, match="Symbol"):
        mx.viz.print_summary("not a symbol")
    with pytest.raises(ValueError, match="incomplete"):
        mx.viz.print_summary(mx.sym.concat(mx.sym.var("data"), mx.sym.var("other"), dim=1), shape={"data": (2, 4)})


def _statements(source):
    """The DOT text with every quoted string taken out: what is left is syntax the drawing wrote."""
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', source, flags=re.S)


def test_plot_network_returns_a_digraph_with_mxnets_nodes_and_edges():
    dot = mx.viz.plot_network(conv_net(), shape={"data": (2, 3, 8, 8)})
    assert isinstance(dot, graphviz.Digraph) and dot.name == "plot" and dot.format == "pdf"
    src = dot.source
    labels = re.findall(r'^\tn\d+ \[label=("(?:[^"\\]|\\.)*"|\w+)', src, flags=re.M)
    assert labels == ["data", '"Convolution\n3x3/1, 8"', "bn1", '"Activation\nrelu"', '"Pooling\nmax, 2x2/2x2"',
                      "flat", '"FullyConnected\n10"']
    edges = re.findall(r"(n\d+) -> (n\d+) \[label=(\S+)", src)
    # as MXNet 1.9.1 draws this net: consumer -> producer (dir=back), shapes without the batch axis
    assert edges == [("n1", "n0", '"3x8x8"'), ("n2", "n1", '"8x8x8"'), ("n3", "n2", '"8x8x8"'),
                     ("n4", "n3", '"8x8x8"'), ("n5", "n4", '"8x4x4"'), ("n6", "n5", "128")]
    assert src.count("dir=back") == 6 and "shape=oval" in src
    assert 'tooltip="conv1 (Convolution)' in src and "test_visualization.py:" in src   # the user's line


def test_plot_network_hide_weights_and_options():
    shown = mx.viz.plot_network(conv_net(), hide_weights=False, node_attrs={"shape": "oval"}, title="net",
                                save_format="svg")
    names = re.findall(r"\[label=(\w+) fillcolor=\"#8dd3c7\"", shown.source)
    assert names == ["data", "conv1_weight", "conv1_bias", "bn1_gamma", "bn1_beta", "bn1_moving_mean",
                     "bn1_moving_var", "fc_weight", "fc_bias"]
    assert shown.source.count("->") == 14 and shown.name == "net" and shown.format == "svg"
    assert "shape=box" not in shown.source                       # node_attrs over the defaults
    hidden = mx.viz.plot_network(conv_net())
    assert "_weight" not in hidden.source and hidden.source.count("->") == 6
    typed = mx.viz.plot_network(conv_net(), shape={"data": (2, 3, 8, 8)}, dtype={"data": "float16"})
    assert 'label="3x8x8(float16)"' in typed.source


HOSTILE = ['a" -> b [x', "<b>bold</b>", "ends\\", 'x\\" -> y', "two\nlines", "\\N \\G", "cluster0 }"]


def test_names_from_a_file_cannot_change_the_dot_text():
    out = mx.sym.var(HOSTILE[0])
    for k, name in enumerate(HOSTILE[1:]):
        out = mx.sym.broadcast_add(out, mx.sym.var(name), name=name + str(k))
    json = out.tojson()                                      # as if loaded from a downloaded -symbol.json
    with warnings.catch_warnings():
        warnings.simplefilter("error")                       # graphviz warns about strings it cannot quote
        dot = mx.viz.plot_network(mx.sym.load_json(json), title=HOSTILE[0])
    src = dot.source
    syntax = _statements(src)
    assert syntax.count("->") == 2 * (len(HOSTILE) - 1)       # each broadcast_add: two edges, nothing more
    assert set(re.findall(r"[A-Za-z_]\w*", syntax)) <= {"digraph", "n" + "", "label", "fillcolor", "fixedsize",
                                                       "height", "shape", "style", "tooltip", "width", "dir",
                                                       "arrowtail", "true", "filled", "oval", "box", "back", "open"} \
        | {f"n{k}" for k in range(40)}
    assert "<b>" not in syntax                               # never an HTML label
    assert '"ends\\\\"' in src                               # the backslash doubled: a literal one for dot


def test_without_dot_the_digraph_and_symbol_show_text(monkeypatch):
    monkeypatch.setattr(draw.shutil, "which", lambda name: None)
    sym = mlp()
    dot = mx.viz.plot_network(sym)
    bundle = dot._repr_mimebundle_()
    assert "fc1 = FullyConnected(data, fc1_weight, fc1_bias, num_hidden=128)" in bundle["text/plain"]
    assert "`dot` program is not installed" in bundle["text/plain"] and "<pre" in bundle["text/html"]
    assert sym._repr_svg_() is None
    html = sym._repr_html_()
    assert html.startswith("<div><pre") and "fc2 = FullyConnected(" in html and "apt install graphviz" in html
    assert "test_visualization.py:" in html                  # the text graph names the user's lines


def test_with_dot_the_symbol_shows_its_picture(monkeypatch):
    monkeypatch.setattr(draw.shutil, "which", lambda name: "/usr/bin/dot")
    drawn = []
    monkeypatch.setattr(graphviz.Digraph, "pipe", lambda self, format=None, **kw: drawn.append(self.source) or
                        b"<svg>picture</svg>")
    sym = mlp()
    assert sym._repr_svg_() == "<svg>picture</svg>" and "FullyConnected" in drawn[-1]
    html = sym._repr_html_()
    assert html.startswith("<div><svg>picture</svg><details>") and "fc1 = FullyConnected(" in html


def test_ipython_display_formatter_gives_html_and_text(monkeypatch):
    formatters = pytest.importorskip("IPython.core.formatters", reason="IPython is not installed")
    monkeypatch.setattr(draw.shutil, "which", lambda name: None)
    data, _ = formatters.DisplayFormatter().format(mlp())
    assert "text/html" in data and "image/svg+xml" not in data and data["text/plain"] == "<Symbol softmax>"


def test_without_the_graphviz_package(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "graphviz", None)       # `import graphviz` raises ImportError
    with pytest.raises(MXNetError, match="pip install graphviz"):
        mx.viz.plot_network(mlp())
    assert mlp()._repr_svg_() is None and "<pre" in mlp()._repr_html_()
    mx.viz.print_summary(mlp(), shape={"data": (1, 784)})   # needs nothing
    assert "Total params: 101770" in capsys.readouterr().out


def test_mx_visualization_is_mx_viz():
    assert mx.visualization is mx.viz and mx.viz.plot_network and mx.viz.print_summary


def test_plot_network_warns_about_repeated_names_and_keeps_the_nodes_apart():
    net = mx.sym.FullyConnected(mx.sym.var("data"), name="fc", num_hidden=8)
    net = mx.sym.FullyConnected(net, name="fc", num_hidden=4)
    with pytest.warns(RuntimeWarning, match=r"multiple variables with the same name in your graph: 'fc_weight', "
                                            r"'fc_bias', 'fc'") as caught:
        dot = mx.viz.plot_network(net, shape={"data": (2, 3)})
    assert caught[0].filename == __file__                    # points at the caller's line
    assert re.findall(r"(n\d+) -> (n\d+)", dot.source) == [("n1", "n0"), ("n2", "n1")]   # no cycle


def test_print_summary_of_a_multi_output_layer(capsys):
    sliced = mx.sym.SliceChannel(mx.sym.var("data"), num_outputs=4, name="slice")
    mx.viz.print_summary(sliced, shape={"data": (2, 8)})
    assert re.search(r"slice\(SliceChannel\)\s+2 \(x4 outputs\)\s+0\s+data", capsys.readouterr().out)
