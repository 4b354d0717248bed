"""ResNet V1 ("Deep Residual Learning for Image Recognition") and V2 ("Identity Mappings in Deep Residual
Networks"), 18 to 152 layers, with MXNet 1.x's block structure and parameter names."""
from ...block import HybridBlock
from ... import nn
from ..model_store import load_pretrained

__all__ = ["ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1", "BottleneckV2",
           "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1",
           "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2", "get_resnet"]


def _conv3x3(channels, stride, in_channels):
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False, in_channels=in_channels)


def _shortcut_v1(channels, stride, in_channels):
    """1x1 strided convolution + BatchNorm that brings the residual to the block's output shape."""
    path = nn.HybridSequential(prefix="")
    path.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False, in_channels=in_channels))
    path.add(nn.BatchNorm())
    return path


class _ResidualV1(HybridBlock):
    """relu(body(x) + shortcut(x)); the shortcut is the identity unless `downsample`."""

    def __init__(self, body_layers, channels, stride, downsample, in_channels, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(*body_layers)
        self.downsample = _shortcut_v1(channels, stride, in_channels) if downsample else None

    _residual_first = False      # the operand order of the sum, as in MXNet's graphs

    def hybrid_forward(self, F, x):
        out = self.body(x)         # before the shortcut, so that graph nodes come in MXNet's order
        residual = self.downsample(x) if self.downsample is not None else x
        return F.Activation(residual + out if self._residual_first else out + residual, act_type="relu")


class BasicBlockV1(_ResidualV1):
    """Two 3x3 convolutions (ResNet V1 18/34)."""

    _residual_first = True

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        layers = [_conv3x3(channels, stride, in_channels), nn.BatchNorm(), nn.Activation("relu"),
                  _conv3x3(channels, 1, channels), nn.BatchNorm()]
        super().__init__(layers, channels, stride, downsample, in_channels, **kwargs)


class BottleneckV1(_ResidualV1):
    """1x1 reduce (strided), 3x3, 1x1 expand to `channels` (ResNet V1 50/101/152)."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        mid = channels // 4
        layers = [nn.Conv2D(mid, kernel_size=1, strides=stride), nn.BatchNorm(), nn.Activation("relu"),
                  _conv3x3(mid, 1, mid), nn.BatchNorm(), nn.Activation("relu"),
                  nn.Conv2D(channels, kernel_size=1, strides=1), nn.BatchNorm()]
        super().__init__(layers, channels, stride, downsample, in_channels, **kwargs)


class _ResidualV2(HybridBlock):
    """Pre-activation residual: conv<k> is preceded by bn<k> + relu; the shortcut (when `downsample`) is a
    1x1 convolution of the first pre-activation. Convolutions are created before the shortcut, as in MXNet,
    so that the automatic names (conv0, conv1, ...) match."""

    def __init__(self, convs, channels, stride, downsample, in_channels, **kwargs):
        super().__init__(**kwargs)
        self._n_convs = len(convs)
        for k, conv in enumerate(convs, 1):
            setattr(self, f"bn{k}", nn.BatchNorm())
            setattr(self, f"conv{k}", conv)
        self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels) \
            if downsample else None

    def hybrid_forward(self, F, x):
        residual = x
        for k in range(1, self._n_convs + 1):
            x = F.Activation(getattr(self, f"bn{k}")(x), act_type="relu")
            if k == 1 and self.downsample is not None:
                residual = self.downsample(x)
            x = getattr(self, f"conv{k}")(x)
        return x + residual


class BasicBlockV2(_ResidualV2):
    """Two pre-activated 3x3 convolutions (ResNet V2 18/34)."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        convs = [_conv3x3(channels, stride, in_channels), _conv3x3(channels, 1, channels)]
        super().__init__(convs, channels, stride, downsample, in_channels, **kwargs)


class BottleneckV2(_ResidualV2):
    """Pre-activated 1x1 reduce, 3x3 (strided), 1x1 expand (ResNet V2 50/101/152)."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        mid = channels // 4
        convs = [nn.Conv2D(mid, kernel_size=1, strides=1, use_bias=False), _conv3x3(mid, stride, mid),
                 nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)]
        super().__init__(convs, channels, stride, downsample, in_channels, **kwargs)


def _make_stage(block, num_blocks, channels, stride, stage_index, in_channels):
    stage = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels, prefix=""))
        for _ in range(num_blocks - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


def _add_stem(features, channels, thumbnail):
    """A 3x3 convolution for small (thumbnail) images, else 7x7/2 conv + BN + relu + 3x3/2 max-pool."""
    if thumbnail:
        features.add(_conv3x3(channels, 1, 0))
    else:
        features.add(nn.Conv2D(channels, 7, 2, 3, use_bias=False), nn.BatchNorm(), nn.Activation("relu"),
                     nn.MaxPool2D(3, 2, 1))


class ResNetV1(HybridBlock):
    """ResNet V1: `layers[i]` blocks of class `block` in stage i+1 with `channels[i+1]` outputs."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise ValueError(f"ResNetV1: channels needs one entry more than layers, got {layers} and {channels}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            _add_stem(self.features, channels[0], thumbnail)
            for i, num_blocks in enumerate(layers):
                self.features.add(_make_stage(block, num_blocks, channels[i + 1], 1 if i == 0 else 2, i + 1,
                                              channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV2(HybridBlock):
    """ResNet V2: input BatchNorm (no scale/shift), pre-activation stages, final BN + relu."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise ValueError(f"ResNetV2: channels needs one entry more than layers, got {layers} and {channels}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            _add_stem(self.features, channels[0], thumbnail)
            for i, num_blocks in enumerate(layers):
                self.features.add(_make_stage(block, num_blocks, channels[i + 1], 1 if i == 0 else 2, i + 1,
                                              channels[i]))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


resnet_spec = {18: ("basic_block", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ("basic_block", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ("bottle_neck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ("bottle_neck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ("bottle_neck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [{"basic_block": BasicBlockV1, "bottle_neck": BottleneckV1},
                         {"basic_block": BasicBlockV2, "bottle_neck": BottleneckV2}]


def get_resnet(version, num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """ResNet `version` (1 or 2) with `num_layers` (18, 34, 50, 101, 152) layers; `pretrained` loads
    MXNet's weights from `root` (default $MXNET_HOME/models) onto `ctx`."""
    if num_layers not in resnet_spec:
        raise ValueError(f"Invalid number of layers: {num_layers}. Options are {sorted(resnet_spec)}")
    if version not in (1, 2):
        raise ValueError(f"Invalid resnet version: {version}. Options are 1 and 2.")
    block_type, layers, channels = resnet_spec[num_layers]
    net = resnet_net_versions[version - 1](resnet_block_versions[version - 1][block_type], layers, channels,
                                           **kwargs)
    if pretrained:
        load_pretrained(net, f"resnet{num_layers}_v{version}", ctx, root)
    return net


def _constructor(version, num_layers):
    def make(**kwargs):
        return get_resnet(version, num_layers, **kwargs)
    make.__name__ = f"resnet{num_layers}_v{version}"
    make.__doc__ = f"ResNet-{num_layers} V{version}; kwargs as get_resnet's (pretrained, ctx, root, classes, ...)."
    return make


resnet18_v1, resnet34_v1, resnet50_v1, resnet101_v1, resnet152_v1 = (_constructor(1, n) for n in resnet_spec)
resnet18_v2, resnet34_v2, resnet50_v2, resnet101_v2, resnet152_v2 = (_constructor(2, n) for n in resnet_spec)
