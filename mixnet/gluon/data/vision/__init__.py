"""`mx.gluon.data.vision`: image datasets (MNIST, FashionMNIST, CIFAR10/100 from local files; RecordIO and folder
datasets of encoded images) and transforms."""
from .datasets import MNIST, FashionMNIST, CIFAR10, CIFAR100  # noqa: F401
from .image_datasets import ImageRecordDataset, ImageFolderDataset  # noqa: F401
from . import transforms  # noqa: F401
