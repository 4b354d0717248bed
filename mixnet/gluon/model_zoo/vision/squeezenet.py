"""SqueezeNet 1.0 and 1.1 ("SqueezeNet: AlexNet-level accuracy with 50x fewer parameters"), MXNet 1.x's
layout."""
from ...block import HybridBlock
from ... import nn
from ...contrib.nn import HybridConcurrent
from ..model_store import load_pretrained

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


def _fire_conv(channels, kernel_size, padding=0):
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size, padding=padding), nn.Activation("relu"))
    return out


def _fire(squeeze, expand1x1, expand3x3):
    """Squeeze 1x1, then 1x1 and 3x3 expansions concatenated along channels."""
    out = nn.HybridSequential(prefix="")
    out.add(_fire_conv(squeeze, 1))
    paths = HybridConcurrent(axis=1, prefix="")
    paths.add(_fire_conv(expand1x1, 1), _fire_conv(expand3x3, 3, 1))
    out.add(paths)
    return out


def _pool():
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


# Per version: the stem convolution (channels, kernel size) and the sequence after the first pool, where
# "pool" is a 3x3/2 max-pool and a pair (s, e) a fire module squeezing to s and expanding to e + e.
_SPEC = {"1.0": ((96, 7), [(16, 64), (16, 64), (32, 128), "pool", (32, 128), (48, 192), (48, 192), (64, 256),
                           "pool", (64, 256)]),
         "1.1": ((64, 3), [(16, 64), (16, 64), "pool", (32, 128), (32, 128), "pool", (48, 192), (48, 192),
                           (64, 256), (64, 256)])}


class SqueezeNet(HybridBlock):
    """SqueezeNet `version` ('1.0' or '1.1'); a 1x1 convolution to `classes` and a 13x13 average pool
    (so inputs are 224x224)."""

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        if version not in _SPEC:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1.0 or 1.1 expected")
        (stem_channels, stem_kernel), body = _SPEC[version]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(stem_channels, kernel_size=stem_kernel, strides=2), nn.Activation("relu"),
                              _pool())
            for item in body:
                self.features.add(_pool() if item == "pool" else _fire(item[0], item[1], item[1]))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"), nn.AvgPool2D(13),
                            nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=None, root=None, **kwargs):
    """SqueezeNet `version`; `pretrained` loads MXNet's weights from `root` (default $MXNET_HOME/models)."""
    net = SqueezeNet(version, **kwargs)
    return load_pretrained(net, f"squeezenet{version}", ctx, root) if pretrained else net


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0; kwargs as get_squeezenet's."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1; kwargs as get_squeezenet's."""
    return get_squeezenet("1.1", **kwargs)
