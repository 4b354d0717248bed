"""The data set fetchers of `mx.test_utils` (MXNet's download, get_mnist, get_mnist_ubyte, get_cifar10): they use
the files already in place when present and otherwise download them as MXNet does; with no network they raise a
ConnectionError that names the URL and the files to put in place."""
import os
import zipfile

import numpy as np

from ._atomic import atomic_open
from .gluon.utils import download as fetch
from .gluon.data.vision import datasets
from .gluon.data.vision.datasets import _read_idx
from .base import MXNetError

_MNIST = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
_CIFAR = ("cifar/train.rec", "cifar/test.rec", "cifar/train.lst", "cifar/test.lst")


def _fetch(url, wanted):
    """Makes sure data/<each of wanted> exists: extracts the zip at url into data/ unless they all do."""
    os.makedirs("data", exist_ok=True)
    if all(os.path.exists(os.path.join("data", name)) for name in wanted):
        return
    from .gluon.utils import download  # local: the name is also this module's own download()
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


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """MXNet's test_utils.download: the file at `url` saved as `fname` (default: the URL's last part) in `dirname`
    (default: fname's folder, else the current one); returns its path. An existing file is used as it is unless
    `overwrite`. The download is atomic (gluon.utils.download); if it fails, ConnectionError says where to put
    the file by hand."""
    if not isinstance(retries, int) or retries < 0:
        raise ValueError(f"download: retries must be an integer >= 0, got {retries!r}")
    if fname is None:
        fname = url.split("/")[-1]
    if dirname is not None:
        fname = os.path.join(dirname, fname)
    if not overwrite and os.path.exists(fname):
        return fname
    if os.path.dirname(fname):
        os.makedirs(os.path.dirname(fname), exist_ok=True)
    try:
        fetch(url, path=fname, overwrite=True, retries=retries)
    except OSError as err:      # urllib's URLError, socket errors, a refused write
        raise ConnectionError(f"cannot download {url} ({err}); this machine may be offline: put the file at "
                              f"{os.path.abspath(fname)} to use a local copy") from None
    return fname


_MNIST_URL = "http://data.mxnet.io/data/mnist/"


def _mnist_file(name):
    """The path of MNIST file `name` (.gz or not): in the current folder (where MXNet's get_mnist downloads), in
    ./data (get_mnist_ubyte's), or where gluon.data.vision.MNIST reads by default; else downloaded like MXNet."""
    folders = (".", "data", os.path.join(datasets._data_dir(), "datasets", "mnist"))
    for folder in folders:
        for candidate in (name + ".gz", name):
            path = os.path.join(folder, candidate)
            if os.path.isfile(path):
                return path
    try:
        return download(_MNIST_URL + name + ".gz")
    except ConnectionError as err:
        raise ConnectionError(f"{err}; get_mnist also reads {name}[.gz] from any of {list(folders)}") from None


def get_mnist():
    """MNIST as MXNet's test_utils.get_mnist returns it: {'train_data', 'test_data'}: float32 (N, 1, 28, 28) in
    [0, 1]; {'train_label', 'test_label'}: int8 (N,). Reads local files first (see _mnist_file)."""

    def read(prefix):
        label = _read_idx(_mnist_file(f"{prefix}-labels-idx1-ubyte"), 1).view(np.int8)
        image = _read_idx(_mnist_file(f"{prefix}-images-idx3-ubyte"), 3)
        if image.shape[0] != label.shape[0] or image.shape[1:] != (28, 28):
            raise MXNetError(f"get_mnist: {prefix} images {image.shape} do not fit labels {label.shape} "
                             "(expected (N, 28, 28) images for N labels)")
        return label, image.reshape(-1, 1, 28, 28).astype(np.float32) / 255
    train_label, train_data = read("train")
    test_label, test_data = read("t10k")
    return {"train_data": train_data, "train_label": train_label, "test_data": test_data, "test_label": test_label}


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """MXNet's test_utils.get_bz2_data: makes data_dir/data_name, the bz2 file at `url` (saved as
    data_origin_name) decompressed, unless it exists already; the downloaded archive is removed afterwards."""
    import bz2
    import shutil
    target = os.path.join(data_dir, data_name)
    if os.path.exists(target):
        return
    archive = download(url, fname=data_origin_name, dirname=data_dir, overwrite=False)
    with bz2.open(archive, "rb") as src, atomic_open(target, "wb") as dst:    # an interrupted run leaves no torn file
        shutil.copyfileobj(src, dst)
    os.remove(archive)
