"""VGG 11/13/16/19 ("Very Deep Convolutional Networks for Large-Scale Image Recognition"), with or without
BatchNorm, MXNet 1.x's layout and initializers."""
from ....initializer import Xavier
from ...block import HybridBlock
from ... import nn
from ..model_store import load_pretrained

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn", "get_vgg"]


class VGG(HybridBlock):
    """`layers[i]` 3x3 convolutions with `filters[i]` channels then a 2x2 max-pool, per group; two
    4096-unit Dense layers with dropout; `classes` outputs."""

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError(f"VGG: layers and filters must have the same length, got {layers} and {filters}")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            for num, channels in zip(layers, filters):
                for _ in range(num):
                    self.features.add(nn.Conv2D(channels, kernel_size=3, padding=1, bias_initializer="zeros",
                                                weight_initializer=Xavier(rnd_type="gaussian", factor_type="out",
                                                                          magnitude=2)))
                    if batch_norm:
                        self.features.add(nn.BatchNorm())
                    self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(strides=2))
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                           bias_initializer="zeros"), nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal", bias_initializer="zeros")

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """VGG with `num_layers` (11, 13, 16, 19) layers (`batch_norm=True` for the _bn variants); `pretrained`
    loads MXNet's weights from `root` (default $MXNET_HOME/models) onto `ctx`."""
    if num_layers not in vgg_spec:
        raise ValueError(f"Invalid number of layers: {num_layers}. Options are {sorted(vgg_spec)}")
    net = VGG(*vgg_spec[num_layers], **kwargs)
    if pretrained:
        load_pretrained(net, f"vgg{num_layers}{'_bn' if kwargs.get('batch_norm') else ''}", ctx, root)
    return net


def _constructor(num_layers, batch_norm):
    def make(**kwargs):
        if batch_norm:
            kwargs["batch_norm"] = True
        return get_vgg(num_layers, **kwargs)
    make.__name__ = f"vgg{num_layers}{'_bn' if batch_norm else ''}"
    make.__doc__ = f"VGG-{num_layers}{' with BatchNorm' if batch_norm else ''}; kwargs as get_vgg's."
    return make


vgg11, vgg13, vgg16, vgg19 = (_constructor(n, False) for n in vgg_spec)
vgg11_bn, vgg13_bn, vgg16_bn, vgg19_bn = (_constructor(n, True) for n in vgg_spec)
