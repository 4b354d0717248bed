"""gluon.utils: splitting batches across devices, global-norm gradient clipping, file download helpers.

    data = gluon.utils.split_and_load(batch, [mx.gpu(0), mx.gpu(1)])   # one slice per device
    norm = gluon.utils.clip_global_norm([p.grad() for p in params], max_norm=1.0)

Differences from MXNet 1.9: bad input raises ``MXNetError`` (which is also a ``ValueError``, the type MXNet
raises), ``clip_global_norm`` works on float16 arrays on the CPU (the norm is accumulated in float32) and returns
a Python float, and ``download`` uses the standard library (urllib) and makes ``retries + 1`` attempts.
"""
import hashlib
import logging
import os
import ssl
import urllib.request

import numpy as np

from .._source import warn
from .._atomic import atomic_open
from ..base import MXNetError

_LOG = logging.getLogger(__name__)     # download: each attempt at INFO, a retry at WARNING

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download", "replace_file"]


class InvalidArgument(MXNetError, ValueError):
    """Invalid arguments to a gluon function or block call (catchable as MXNetError or ValueError)."""


def _nd():
    from .. import ndarray  # deferred: gluon.utils is importable while mx.nd is still being assembled
    return ndarray


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Split ``data`` into ``num_slice`` slices along ``batch_axis``.

    With ``even_split=False`` the first ``size % num_slice`` slices get one extra row (and some slices are empty
    when the batch is smaller than ``num_slice``). Slices along axis 0 are views of ``data``, as in MXNet.
    """
    if not hasattr(data, "shape"):
        raise InvalidArgument(f"split_data: data must be an NDArray, got {type(data).__name__}")
    try:
        num_slice = int(num_slice)
    except (TypeError, ValueError):
        raise InvalidArgument(f"split_data: num_slice must be a positive integer, got {num_slice!r}") from None
    if num_slice < 1:
        raise InvalidArgument(f"split_data: num_slice must be a positive integer, got {num_slice}")
    ndim = len(data.shape)
    if not -ndim <= batch_axis < ndim:
        raise InvalidArgument(f"split_data: batch_axis {batch_axis} is out of range for data with shape "
                        f"{tuple(data.shape)}")
    batch_axis %= ndim
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise InvalidArgument(
            "data with shape %s cannot be evenly split into %d slices along axis %d. "
            "Use a batch size that's multiple of %d or set even_split=False to allow "
            "uneven partitioning of data." % (str(tuple(data.shape)), num_slice, batch_axis, num_slice))
    n_each, extras = divmod(size, num_slice)
    bounds = np.cumsum([0] + [n_each + 1] * extras + [n_each] * (num_slice - extras)).tolist()
    if batch_axis == 0:
        return [data[bounds[i]:bounds[i + 1]] for i in range(num_slice)]
    nd = _nd()
    return [nd.slice_axis(data, axis=batch_axis, begin=bounds[i], end=bounds[i + 1]) for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Split ``data`` (an NDArray or numpy array) along ``batch_axis`` and put slice i on ``ctx_list[i]``.

    numpy input becomes an NDArray first (float32 unless it is an NDArray already, like ``mx.nd.array``).
    With one context the whole batch is returned, moved there.
    """
    if isinstance(ctx_list, (list, tuple)) is False:
        ctx_list = [ctx_list]
    if len(ctx_list) == 0:
        raise InvalidArgument("split_and_load: ctx_list is empty")
    nd = _nd()
    if isinstance(data, np.ndarray):
        data = nd.array(data, ctx=ctx_list[0])
    elif not isinstance(data, nd.NDArray):
        raise InvalidArgument(f"split_and_load: data must be an NDArray or a numpy array, got {type(data).__name__}")
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(ctx) for s, ctx in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Rescale ``arrays`` in place so that the 2-norm of all of them together is at most ``max_norm``.

    Returns the total norm before clipping: a Python float, or, with ``check_isfinite=False``, a 1-element
    NDArray on ``arrays[0]``'s device (no host synchronization, as in MXNet). Warns when the norm is nan or inf
    (the arrays then become nan/0, as in MXNet).
    """
    arrays = list(arrays) if isinstance(arrays, (list, tuple)) else [arrays]
    if not arrays:
        raise InvalidArgument("clip_global_norm: arrays is empty")
    nd = _nd()
    ctx = arrays[0].context

    def _sq_norm(arr):
        if getattr(arr, "stype", "default") != "default":
            return nd.square(nd.norm(arr)).reshape((1,)).astype("float32")
        x = arr.reshape((-1,))
        if x.dtype != np.float64:
            x = x.astype("float32")
        return nd.dot(x, x).astype("float32")

    total = nd.sqrt(nd.add_n(*[_sq_norm(a).as_in_context(ctx) for a in arrays]))
    if check_isfinite:
        total_value = float(total.asscalar())
        if not np.isfinite(total_value):
            warn(UserWarning("nan or inf is detected. Clipping results will be undefined."))
    scale = max_norm / (total + 1e-8)
    scale = nd.min(nd.concat(scale, nd.ones((1,), ctx=ctx, dtype=scale.dtype), dim=0))
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 already warned about above
        for arr in arrays:
            arr *= scale.as_in_context(arr.context).astype(arr.dtype)
    return total_value if check_isfinite else total


def check_sha1(filename, sha1_hash):
    """True when the file's SHA-1 hex digest equals ``sha1_hash`` (the full 40-digit lower-case string)."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        while True:
            data = f.read(1048576)
            if not data:
                break
            sha1.update(data)
    return sha1.hexdigest() == sha1_hash


def replace_file(src, dst):
    """Atomically move ``src`` over ``dst`` (same file system)."""
    os.replace(src, dst)


def _target_path(url, path):
    if path is None:
        fname = url.split("/")[-1]
        if not fname:
            raise InvalidArgument(f"Can't construct file-name from this URL ({url!r}). Please set the `path` option "
                            "manually.")
        return fname
    path = os.path.expanduser(path)
    if os.path.isdir(path):
        name = url.split("/")[-1]
        if not name:
            raise InvalidArgument(f"Can't construct file-name from this URL ({url!r}). Please give a file path, "
                            f"not the folder {path!r}.")
        return os.path.join(path, name)
    return path


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Download ``url`` to ``path`` (a file, or a folder to put the URL's file name in; default: the current
    folder) and return the file name.

    Skips the download when the file exists, ``overwrite`` is false and it matches ``sha1_hash`` (when given).
    Writes to a temporary file and renames it into place; makes ``retries + 1`` attempts in all.
    """
    fname = _target_path(url, path)
    if not isinstance(retries, int) or retries < 0:
        raise InvalidArgument("Number of retries should be at least 0, currently it's {}".format(retries))
    if not verify_ssl:
        warn("Unverified HTTPS request is being made (verify_ssl=False). "
             "Adding certificate verification is strongly advised.")
    if not (overwrite or not os.path.exists(fname) or (sha1_hash and not check_sha1(fname, sha1_hash))):
        return fname
    dirname = os.path.dirname(os.path.abspath(os.path.expanduser(fname)))
    os.makedirs(dirname, exist_ok=True)
    context = None if verify_ssl else ssl._create_unverified_context()  # noqa: S323 (the caller asked for it)
    attempts_left = retries + 1
    while True:
        try:
            _LOG.info("Downloading %s from %s...", fname, url)
            # A failed attempt (or a killed process: the next download cleans up) leaves no partial file behind.
            with atomic_open(fname, "wb") as f, urllib.request.urlopen(url, context=context) as response:
                status = getattr(response, "status", None)
                if status is not None and status != 200:
                    raise MXNetError("Failed downloading url {} (HTTP status {})".format(url, status))
                sha1 = hashlib.sha1()
                while True:
                    chunk = response.read(1 << 20)
                    if not chunk:
                        break
                    sha1.update(chunk)
                    f.write(chunk)
                if sha1_hash and sha1.hexdigest() != sha1_hash:
                    raise MXNetError("File {} is downloaded but the content hash does not match (expected sha1 {}). "
                                     "The repo may be outdated or the download incomplete.".format(fname, sha1_hash))
            return fname
        except Exception as err:
            attempts_left -= 1
            if attempts_left <= 0:
                raise
            _LOG.warning("download failed due to %r, retrying, %d attempt%s left", err, attempts_left,
                         "s" if attempts_left > 1 else "")
