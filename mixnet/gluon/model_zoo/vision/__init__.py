"""`gluon.model_zoo.vision`: MXNet 1.x's image classification models, with MXNet's parameter names and
shapes (so `.params` files saved by MXNet load), and `get_model(name, **kwargs)`.

Inputs are NCHW batches of normalized RGB images (224x224; 299x299 for Inception V3). ``pretrained=True``
reads MXNet's pretrained weights from ``root`` (default ``$MXNET_HOME/models``); mixnet never downloads
them (see `model_store`).
"""
from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
from .mobilenet import *  # noqa: F401,F403
_models = {
    "resnet18_v1": resnet18_v1, "resnet34_v1": resnet34_v1, "resnet50_v1": resnet50_v1,  # noqa: F405
    "resnet101_v1": resnet101_v1, "resnet152_v1": resnet152_v1, "resnet18_v2": resnet18_v2,  # noqa: F405
    "resnet34_v2": resnet34_v2, "resnet50_v2": resnet50_v2, "resnet101_v2": resnet101_v2,  # noqa: F405
    "resnet152_v2": resnet152_v2, "vgg11": vgg11, "vgg13": vgg13, "vgg16": vgg16, "vgg19": vgg19,  # noqa: F405
    "vgg11_bn": vgg11_bn, "vgg13_bn": vgg13_bn, "vgg16_bn": vgg16_bn, "vgg19_bn": vgg19_bn, "alexnet": alexnet,  # noqa: F405
    "densenet121": densenet121, "densenet161": densenet161, "densenet169": densenet169, "densenet201": densenet201,  # noqa: F405
    "squeezenet1.0": squeezenet1_0, "squeezenet1.1": squeezenet1_1, "inceptionv3": inception_v3,  # noqa: F405
    "mobilenet1.0": mobilenet1_0, "mobilenet0.75": mobilenet0_75, "mobilenet0.5": mobilenet0_5,  # noqa: F405
    "mobilenet0.25": mobilenet0_25, "mobilenetv2_1.0": mobilenet_v2_1_0,  # noqa: F405
    "mobilenetv2_0.75": mobilenet_v2_0_75, "mobilenetv2_0.5": mobilenet_v2_0_5,  # noqa: F405
    "mobilenetv2_0.25": mobilenet_v2_0_25,  # noqa: F405
}


def get_model(name, **kwargs):
    """The model called `name` (case-insensitive, e.g. 'resnet18_v1', 'mobilenetv2_0.5'); kwargs go to its
    constructor (pretrained, ctx, root, classes, ...)."""
    key = name.lower()
    if key not in _models:
        raise ValueError("Model %s is not supported. Available options are\n\t%s"
                         % (key, "\n\t".join(sorted(_models))))
    return _models[key](**kwargs)
