"""Block reprs and summary() against MXNet 1.9.1.

The expected strings below were printed by MXNet 1.9.1 (`~/.venvs/mxref/bin/python`, `repr(layer)`) for the same
constructor calls, and are hard-coded here. Two deliberate deviations are marked where they occur: MXNet prints
`in_channels / groups` as the input size of a grouped convolution and swaps the two sizes of a transposed
convolution (`Conv2DTranspose(6 -> 3, ...)` for 3 input and 6 output channels); mixnet prints the real sizes.
"""
import re

import pytest

import mixnet as mx
from mixnet.gluon import nn
from mixnet.gluon.contrib import nn as cnn

MXNET_REPRS = [
    (lambda: nn.Dense(10, in_units=5), "Dense(5 -> 10, linear)"),
    (lambda: nn.Dense(4, activation="relu"), "Dense(None -> 4, Activation(relu))"),
    (lambda: nn.Dense(3, use_bias=False, flatten=False, in_units=2), "Dense(2 -> 3, linear)"),
    (lambda: nn.Activation("tanh"), "Activation(tanh)"),
    (lambda: nn.Dropout(0.3), "Dropout(p = 0.3, axes=())"),
    (lambda: nn.Dropout(0.5, axes=(1,)), "Dropout(p = 0.5, axes=(1,))"),
    (lambda: nn.BatchNorm(),
     "BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, use_global_stats=False, in_channels=None)"),
    (lambda: nn.BatchNorm(axis=-1, momentum=0.8, epsilon=1e-3, scale=False, in_channels=4),
     "BatchNorm(axis=-1, eps=0.001, momentum=0.8, fix_gamma=True, use_global_stats=False, in_channels=4)"),
    (lambda: nn.InstanceNorm(in_channels=3),
     "InstanceNorm(eps=1e-05, axis=1, center=True, scale=False, in_channels=3)"),
    (lambda: nn.LayerNorm(), "LayerNorm(eps=1e-05, axis=-1, center=True, scale=True, in_channels=0)"),
    (lambda: nn.GroupNorm(num_groups=2), "GroupNorm(eps=1e-05, num_groups=2, center=True, scale=True)"),
    (lambda: nn.Embedding(100, 8), "Embedding(100 -> 8, float32)"),
    (lambda: nn.Flatten(), "Flatten"),
    (lambda: nn.Conv1D(8, 3), "Conv1D(None -> 8, kernel_size=(3,), stride=(1,))"),
    (lambda: nn.Conv2D(16, (3, 3), strides=2, padding=1, in_channels=3),
     "Conv2D(3 -> 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))"),
    (lambda: nn.Conv3D(4, 2, in_channels=2), "Conv3D(2 -> 4, kernel_size=(2, 2, 2), stride=(1, 1, 1))"),
    (lambda: nn.MaxPool2D(),
     "MaxPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), ceil_mode=False, global_pool=False, pool_type=max, "
     "layout=NCHW)"),
    (lambda: nn.MaxPool1D(3, 2, 1, ceil_mode=True),
     "MaxPool1D(size=(3,), stride=(2,), padding=(1,), ceil_mode=True, global_pool=False, pool_type=max, "
     "layout=NCW)"),
    (lambda: nn.AvgPool2D(3, 1, 1, count_include_pad=False),
     "AvgPool2D(size=(3, 3), stride=(1, 1), padding=(1, 1), ceil_mode=False, global_pool=False, pool_type=avg, "
     "layout=NCHW)"),
    (lambda: nn.AvgPool3D(),
     "AvgPool3D(size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0), ceil_mode=False, global_pool=False, "
     "pool_type=avg, layout=NCDHW)"),
    (lambda: nn.GlobalAvgPool2D(),
     "GlobalAvgPool2D(size=(1, 1), stride=(1, 1), padding=(0, 0), ceil_mode=True, global_pool=True, "
     "pool_type=avg, layout=NCHW)"),
    (lambda: nn.GlobalMaxPool1D(),
     "GlobalMaxPool1D(size=(1,), stride=(1,), padding=(0,), ceil_mode=True, global_pool=True, pool_type=max, "
     "layout=NCW)"),
    (lambda: nn.ReflectionPad2D(2), "ReflectionPad2D(\n\n)"),
    (lambda: nn.LeakyReLU(0.1), "LeakyReLU(0.1)"),
    (lambda: nn.PReLU(), "PReLU(\n\n)"),
    (lambda: nn.ELU(), "ELU(\n\n)"),
    (lambda: nn.SELU(), "SELU(\n\n)"),
    (lambda: nn.Swish(), "Swish(\n\n)"),
    (lambda: nn.GELU(), "GELU(\n\n)"),
    (lambda: cnn.Identity(), "Identity(\n\n)"),
    (lambda: cnn.PixelShuffle2D(2), "PixelShuffle2D((2, 2))"),
    (lambda: nn.Lambda("tanh"), "Lambda(tanh)"),
    (lambda: nn.HybridLambda("relu"), "HybridLambda(relu)"),
]


@pytest.mark.parametrize("make, expected", MXNET_REPRS, ids=[e.split("(")[0] + str(i)
                                                          for i, (_, e) in enumerate(MXNET_REPRS)])
def test_layer_repr_equals_mxnet(make, expected):
    assert repr(make()) == expected


def test_conv_repr_deviations_print_real_channel_counts():
    # MXNet 1.9.1: 'Conv2D(2 -> 8, ..., groups=2, ...)' (in_channels / groups): mixnet prints the real 4 inputs.
    assert repr(nn.Conv2D(8, 3, dilation=2, groups=2, use_bias=False, activation="relu", in_channels=4)) == \
        "Conv2D(4 -> 8, kernel_size=(3, 3), stride=(1, 1), dilation=(2, 2), groups=2, bias=False, Activation(relu))"
    # MXNet 1.9.1: 'Conv2DTranspose(6 -> 3, ...)' and 'Conv1DTranspose(2 -> 0, ...)' (sizes swapped).
    assert repr(nn.Conv2DTranspose(6, 4, strides=2, padding=1, output_padding=1, in_channels=3)) == \
        "Conv2DTranspose(3 -> 6, kernel_size=(4, 4), stride=(2, 2), padding=(1, 1))"
    assert repr(nn.Conv1DTranspose(2, 3)) == "Conv1DTranspose(None -> 2, kernel_size=(3,), stride=(1,))"


def _nested_net():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, padding=1, in_channels=1), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D())
        body = nn.HybridSequential()
        with body.name_scope():
            body.add(nn.Dense(16, activation="relu"), nn.Dropout(0.5))
        net.add(nn.Flatten(), body, nn.Dense(3))
    return net


# printed by MXNet 1.9.1 for _nested_net()
NESTED_REPR = (
    "HybridSequential(\n"
    "  (0): Conv2D(1 -> 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
    "  (1): BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, use_global_stats=False, in_channels=None)\n"
    "  (2): Activation(relu)\n"
    "  (3): MaxPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), ceil_mode=False, global_pool=False, "
    "pool_type=max, layout=NCHW)\n"
    "  (4): Flatten\n"
    "  (5): HybridSequential(\n"
    "    (0): Dense(None -> 16, Activation(relu))\n"
    "    (1): Dropout(p = 0.5, axes=())\n"
    "  )\n"
    "  (6): Dense(None -> 3, linear)\n"
    ")")


def test_nested_repr_equals_mxnet_and_updates_after_inference():
    net = _nested_net()
    assert repr(net) == NESTED_REPR
    net.initialize()
    net(mx.nd.ones((2, 1, 8, 8)))
    after = NESTED_REPR.replace("in_channels=None", "in_channels=8").replace("None -> 16", "128 -> 16") \
        .replace("None -> 3", "16 -> 3")
    assert repr(net) == after


def test_other_container_reprs_equal_mxnet():
    seq = nn.Sequential()
    with seq.name_scope():
        seq.add(nn.Dense(5, in_units=3), nn.Lambda(lambda x: x))
    assert repr(seq) == "Sequential(\n  (0): Dense(3 -> 5, linear)\n  (1): Lambda(<lambda>)\n)"
    conc = cnn.HybridConcurrent(axis=1)
    conc.add(nn.Dense(2), cnn.Identity())
    assert repr(conc) == "HybridConcurrent(\n  (0): Dense(None -> 2, linear)\n  (1): Identity(\n  \n  )\n)"
    seq2 = nn.Sequential()
    with seq2.name_scope():
        seq2.add(nn.Embedding(50, 8), nn.LayerNorm(), nn.Dense(6, flatten=False, activation="tanh"), nn.PReLU(),
                 nn.GroupNorm(num_groups=2), nn.Dense(2))
    assert repr(seq2) == (
        "Sequential(\n  (0): Embedding(50 -> 8, float32)\n"
        "  (1): LayerNorm(eps=1e-05, axis=-1, center=True, scale=True, in_channels=0)\n"
        "  (2): Dense(None -> 6, Activation(tanh))\n  (3): PReLU(\n  \n  )\n"
        "  (4): GroupNorm(eps=1e-05, num_groups=2, center=True, scale=True)\n  (5): Dense(None -> 2, linear)\n)")


# ---------------------------------------------------------------------------------------------- summary
def _summary(net, capsys, *inputs):
    net.summary(*inputs)
    text = capsys.readouterr().out
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+) \((\w+)\)\s+(.*?)\s+(\d+\??)$", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    patterns = {"in total": r"^Parameters in total: (\d+\??)$", "Trainable": r"^Trainable parameters: (\d+\??)$",
                "Non-trainable": r"^Non-trainable parameters: (\d+\??)$"}
    totals = {key: re.search(pattern, text, re.M).group(1) for key, pattern in patterns.items()}
    return text, rows, totals


def test_summary_before_initialization_shows_unknowns(capsys):
    net = _nested_net()
    text, rows, totals = _summary(net, capsys)
    assert rows["net_conv0"] == ("Conv2D", "(8, 1, 3, 3), (8,)", "80")           # fully declared
    assert rows["net_batchnorm0"][1] == "(?,), (?,), (?,), (?,)" and rows["net_batchnorm0"][2] == "0?"
    assert rows["net_hybridsequential0_dense0"][1:] == ("(16, ?), (16,)", "16?")
    assert rows["net_dense0"][1:] == ("(3, ?), (3,)", "3?")
    assert totals == {"in total": "99?", "Trainable": "99?", "Non-trainable": "0?"}
    net.initialize()                                   # still deferred: same picture
    assert _summary(net, capsys)[1:] == (rows, totals)


# MXNet 1.9.1's net.summary(mx.nd.ones((2, 1, 8, 8))) for _nested_net(): per-layer 'Output Shape' and 'Param #'
# (Conv2D-1 (2, 8, 8, 8) 80, BatchNorm-2 (2, 8, 8, 8) 32, MaxPool2D-4 (2, 8, 4, 4), Flatten-5 (2, 128),
# Dense-8 (2, 16) 2064, Dense-10 (2, 3) 51) and "Total params: 2227, Trainable params: 2211, Non-trainable
# params: 16".
NESTED_SUMMARY = {
    "net_conv0": ("Conv2D", "(2, 8, 8, 8)", "80"),
    "net_batchnorm0": ("BatchNorm", "(2, 8, 8, 8)", "32"),
    "net_relu0": ("Activation", "(2, 8, 8, 8)", "0"),
    "net_pool0": ("MaxPool2D", "(2, 8, 4, 4)", "0"),
    "net_flatten0": ("Flatten", "(2, 128)", "0"),
    "net_hybridsequential0_dense0_relu": ("Activation", "(2, 16)", "0"),
    "net_hybridsequential0_dense0": ("Dense", "(2, 16)", "2064"),
    "net_hybridsequential0_dropout0": ("Dropout", "(2, 16)", "0"),
    "net_hybridsequential0": ("HybridSequential", "(2, 16)", "0"),
    "net_dense0": ("Dense", "(2, 3)", "51"),
    "net": ("HybridSequential", "(2, 3)", "0"),
}
NESTED_TOTALS = {"in total": "2227", "Trainable": "2211", "Non-trainable": "16"}


def test_summary_refuses_hybridized_block_as_mxnet():
    net = _nested_net()
    net.initialize()
    net.hybridize()
    with pytest.raises(AssertionError, match="must not be hybridized to print summary"):
        net.summary(mx.nd.ones((2, 1, 8, 8)))


def test_summary_after_forward_matches_mxnet_counts(capsys):
    net = _nested_net()
    net.initialize()
    _, rows, totals = _summary(net, capsys, mx.nd.ones((2, 1, 8, 8)))
    assert rows == NESTED_SUMMARY
    assert totals == NESTED_TOTALS
    # without inputs, after the shapes are known: parameter shapes and the same counts
    _, rows, totals = _summary(net, capsys)
    assert totals == NESTED_TOTALS
    assert rows["net_hybridsequential0_dense0"][1:] == ("(16, 128), (16,)", "2064")
    assert rows["net_batchnorm0"][1:] == ("(8,), (8,), (8,), (8,)", "32")


def test_summary_second_net_matches_mxnet_totals(capsys):
    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Embedding(50, 8), nn.LayerNorm(), nn.Dense(6, flatten=False, activation="tanh"), nn.PReLU(),
                nn.GroupNorm(num_groups=2), nn.Dense(2))
    net.initialize()
    _, rows, totals = _summary(net, capsys, mx.nd.ones((4, 6)))
    # MXNet 1.9.1: Embedding-1 (4, 6, 8) 400, LayerNorm-2 16, Dense-5 (4, 6, 6) 54, PReLU-6 1, GroupNorm-7 4,
    # Dense-8 (4, 2) 74; Total params: 549, Trainable 549, Non-trainable 0
    counts = {name: (shape, n) for name, (_, shape, n) in rows.items()}
    assert counts["sequential0_embedding0".replace("sequential0", net.name)] == ("(4, 6, 8)", "400")
    assert [n for _, _, n in rows.values()] == ["400", "16", "0", "54", "1", "4", "74", "0"]
    assert totals == {"in total": "549", "Trainable": "549", "Non-trainable": "0"}


def test_summary_counts_shared_parameters_once(capsys):
    net = nn.HybridSequential()
    with net.name_scope():
        first = nn.Dense(4, in_units=4)
        net.add(first, nn.Dense(4, in_units=4, params=first.params))
    net.initialize()
    _, rows, totals = _summary(net, capsys, mx.nd.ones((1, 4)))
    assert totals["in total"] == "20"
    assert sorted(n for _, _, n in rows.values()) == ["0", "0", "20"]
