"""`mx.gluon.data.vision`: image datasets (MNIST, FashionMNIST, CIFAR10 from local files) and transforms."""
from .datasets import MNIST, FashionMNIST, CIFAR10  # noqa: F401
from . import transforms  # noqa: F401
