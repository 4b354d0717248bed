"""Inception V3 ("Rethinking the Inception Architecture for Computer Vision"), MXNet 1.x's layout
(299x299 inputs)."""
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent
from ..model_store import load_pretrained

__all__ = ["Inception3", "inception_v3"]


def _basic_conv(**kwargs):
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(use_bias=False, **kwargs), nn.BatchNorm(epsilon=0.001), nn.Activation("relu"))
    return out


def _branch(pool, *convs):
    """An optional pool ('avg': 3x3/1 padded, 'max': 3x3/2) then basic convolutions, each given as
    (channels, kernel_size, strides, padding) with None for "the default"."""
    out = nn.HybridSequential(prefix="")
    if pool == "avg":
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in convs:
        kwargs = {k: v for k, v in zip(("channels", "kernel_size", "strides", "padding"), setting) if v is not None}
        out.add(_basic_conv(**kwargs))
    return out


def _concurrent(prefix, *branches):
    """Branches (built by the callables, inside the block's name scope) concatenated along channels."""
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for make in branches:
            out.add(make())
    return out


def _make_A(pool_features, prefix):
    return _concurrent(prefix,
                       lambda: _branch(None, (64, 1, None, None)),
                       lambda: _branch(None, (48, 1, None, None), (64, 5, None, 2)),
                       lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)),
                       lambda: _branch("avg", (pool_features, 1, None, None)))


def _make_B(prefix):
    return _concurrent(prefix,
                       lambda: _branch(None, (384, 3, 2, None)),
                       lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)),
                       lambda: _branch("max"))


def _make_C(c7, prefix):
    return _concurrent(prefix,
                       lambda: _branch(None, (192, 1, None, None)),
                       lambda: _branch(None, (c7, 1, None, None), (c7, (1, 7), None, (0, 3)),
                                       (192, (7, 1), None, (3, 0))),
                       lambda: _branch(None, (c7, 1, None, None), (c7, (7, 1), None, (3, 0)),
                                       (c7, (1, 7), None, (0, 3)), (c7, (7, 1), None, (3, 0)),
                                       (192, (1, 7), None, (0, 3))),
                       lambda: _branch("avg", (192, 1, None, None)))


def _make_D(prefix):
    return _concurrent(prefix,
                       lambda: _branch(None, (192, 1, None, None), (320, 3, 2, None)),
                       lambda: _branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                                       (192, (7, 1), None, (3, 0)), (192, 3, 2, None)),
                       lambda: _branch("max"))


def _split_3x3(head):
    """`head` followed by parallel 1x3 and 3x1 convolutions (384 each), concatenated."""
    out = nn.HybridSequential(prefix="")
    out.add(head)
    split = HybridConcurrent(axis=1, prefix="")
    split.add(_branch(None, (384, (1, 3), None, (0, 1))), _branch(None, (384, (3, 1), None, (1, 0))))
    out.add(split)
    return out


def _make_E(prefix):
    return _concurrent(prefix,
                       lambda: _branch(None, (320, 1, None, None)),
                       lambda: _split_3x3(_branch(None, (384, 1, None, None))),
                       lambda: _split_3x3(_branch(None, (448, 1, None, None), (384, 3, None, 1))),
                       lambda: _branch("avg", (192, 1, None, None)))


class Inception3(HybridBlock):
    """Inception V3 without the auxiliary classifier; `classes` outputs."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(_basic_conv(channels=32, kernel_size=3, strides=2),
                              _basic_conv(channels=32, kernel_size=3),
                              _basic_conv(channels=64, kernel_size=3, padding=1),
                              nn.MaxPool2D(pool_size=3, strides=2),
                              _basic_conv(channels=80, kernel_size=1),
                              _basic_conv(channels=192, kernel_size=3),
                              nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_make_A(32, "A1_"), _make_A(64, "A2_"), _make_A(64, "A3_"), _make_B("B_"))
            self.features.add(_make_C(128, "C1_"), _make_C(160, "C2_"), _make_C(160, "C3_"), _make_C(192, "C4_"))
            self.features.add(_make_D("D_"), _make_E("E1_"), _make_E("E2_"))
            self.features.add(nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=None, root=None, **kwargs):
    """Inception V3; `pretrained` loads MXNet's weights from `root` (default $MXNET_HOME/models) onto `ctx`."""
    net = Inception3(**kwargs)
    return load_pretrained(net, "inceptionv3", ctx, root) if pretrained else net
