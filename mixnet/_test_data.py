"""The data set fetchers of `mx.test_utils` (MXNet's get_mnist_ubyte, get_cifar10): they use the files already in
./data when present and otherwise download MXNet's zip archives; with no network they raise a ConnectionError
that names the files to put in place."""
import os
import zipfile

_MNIST = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
_CIFAR = ("cifar/train.rec", "cifar/test.rec", "cifar/train.lst", "cifar/test.lst")


def _fetch(url, wanted):
    """Makes sure data/<each of wanted> exists: extracts the zip at url into data/ unless they all do."""
    os.makedirs("data", exist_ok=True)
    if all(os.path.exists(os.path.join("data", name)) for name in wanted):
        return
    from .gluon.utils import download
    try:
        path = download(url, path="data", retries=0)
    except OSError as err:
        missing = [os.path.join("data", n) for n in wanted if not os.path.exists(os.path.join("data", n))]
        raise ConnectionError(f"cannot download {url} ({err}); this machine may be offline: put {missing} in "
                              f"place (relative to {os.getcwd()}) to use local copies") from None
    with zipfile.ZipFile(path) as zf:
        zf.extractall("data")


def get_mnist_ubyte():
    """MNIST's four idx-ubyte files in ./data (downloaded from data.mxnet.io when missing)."""
    _fetch("http://data.mxnet.io/mxnet/data/mnist.zip", _MNIST)


def get_cifar10():
    """CIFAR-10 as RecordIO files in ./data/cifar (downloaded from data.mxnet.io when missing)."""
    _fetch("http://data.mxnet.io/mxnet/data/cifar10.zip", _CIFAR)
