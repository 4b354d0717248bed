"""Makes tests/data/gluon/model_zoo_reference.json with real MXNet 1.9.1 (never run by the tests themselves):

    ~/.venvs/mxref/bin/python tests/data/make_model_zoo_reference.py

For every model of gluon.model_zoo.vision.get_model: the SHA-1 of its parameter list before the first forward
(names relative to the model's prefix, shapes with 0 for what is still deferred), in collect_params() order, and
of its structural names (what save_parameters writes). For a few models that accept a small input: the shapes
after a forward on a 1x3x32x32 input and the first logits, with parameters set from seeded uniforms in
sorted-name order (see `fill`), and the SHA-1 of the output names of the model's graph (its internals) when
called on mx.sym.var('data'). Also two tiny thumbnail ResNets (`tiny_resnet`) with their parameters saved by
MXNet itself: V1 with save_parameters (structural names), V2 as a legacy file (prefix-stripped global names, as
older model-store files are) and their logits. tests/gluon/model_zoo/test_vision.py rebuilds the models with
mixnet and compares.
"""
import hashlib
import json
import os

import numpy as np
import mxnet as mx
from mxnet.gluon.model_zoo import vision

HERE = os.path.dirname(os.path.abspath(__file__))
FORWARD_MODELS = ["resnet18_v1", "resnet18_v2", "resnet50_v1", "mobilenet0.25", "mobilenetv2_0.25", "vgg11_bn"]


def digest(lines):
    return hashlib.sha1("\n".join(lines).encode()).hexdigest()


def param_lines(net):
    return ["%s %s" % (name[len(net.prefix):], tuple(p.shape)) for name, p in net.collect_params().items()]


def structural_lines(net):
    return ["%s %s" % (name, tuple(p.shape)) for name, p in net._collect_params_with_prefix().items()]


def internal_names(net, data):
    """The output names of the graph of net(data), relative to the net's prefix."""
    return [n[len(net.prefix):] if n.startswith(net.prefix) else n
            for n in net(data).get_internals().list_outputs()]


def fill(net):
    """Parameter i (sorted by name) from RandomState(i): gamma and running_var in [0.5, 1.5], the rest in
    [-0.1, 0.1] (activations stay of order one through deep nets)."""
    for i, (name, p) in enumerate(sorted(net.collect_params().items())):
        rng = np.random.RandomState(i)
        if name.endswith(("gamma", "running_var")):
            value = rng.uniform(0.5, 1.5, p.shape)
        else:
            value = rng.uniform(-0.1, 0.1, p.shape)
        p.set_data(mx.nd.array(value.astype("float32")))


def tiny_resnet(vision, version):
    """A thumbnail ResNet with one block per stage and 4 to 20 channels (a few kB of parameters), 10 classes."""
    net_class, block = ((vision.ResNetV1, vision.BasicBlockV1) if version == 1 else
                        (vision.ResNetV2, vision.BottleneckV2))
    return net_class(block, [1, 1, 1, 1], [4, 8, 12, 16, 20], classes=10, thumbnail=True)


def main():
    out = {"models": {}, "forward": {}}
    for name in MODEL_NAMES:
        net = vision.get_model(name)
        lines = param_lines(net)
        out["models"][name] = {"count": len(lines), "params": digest(lines),
                               "structural": digest(structural_lines(net))}
    x = np.random.RandomState(42).uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    for name in FORWARD_MODELS:
        net = vision.get_model(name)
        net.initialize()
        net(mx.nd.array(x))
        fill(net)
        y = net(mx.nd.array(x)).asnumpy()
        lines = param_lines(net)
        internals = internal_names(net, mx.sym.var("data"))
        out["forward"][name] = {"params": digest(lines), "structural": digest(structural_lines(net)),
                                "internals": digest(internals), "n_internals": len(internals),
                                "logits": [float(v) for v in y[0, :8]], "sum": float(y.sum()),
                                "first_params": lines[:6]}
    for version in (1, 2):
        net = tiny_resnet(vision, version)
        net.initialize()
        net(mx.nd.array(x))
        fill(net)
        y = net(mx.nd.array(x)).asnumpy()
        path = os.path.join(HERE, "gluon", "tiny_resnet_v%d.params" % version)
        if version == 1:
            net.save_parameters(path)
        else:
            net.collect_params().save(path, strip_prefix=net.prefix)
        out["tiny_resnet_v%d" % version] = [float(v) for v in y[0]]
    with open(os.path.join(HERE, "gluon", "model_zoo_reference.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)


MODEL_NAMES = [
    "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1",
    "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2",
    "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn", "alexnet",
    "densenet121", "densenet161", "densenet169", "densenet201", "squeezenet1.0", "squeezenet1.1", "inceptionv3",
    "mobilenet1.0", "mobilenet0.75", "mobilenet0.5", "mobilenet0.25",
    "mobilenetv2_1.0", "mobilenetv2_0.75", "mobilenetv2_0.5", "mobilenetv2_0.25"]

if __name__ == "__main__":
    main()
