"""`mx.image.ImageIter`, as MXNet 1.x's: batches of decoded, augmented images (NCHW float32) with their labels,
read from a RecordIO file (`path_imgrec`, with `path_imgidx` for random access), an image list file
(`path_imglist`: index, labels..., path per tab-separated line, images under `path_root`) or a Python `imglist`.

last_batch_handle: 'pad' fills the last batch with examples from the start (pad says how many), 'discard' drops
it, 'roll_over' carries its examples into the first batch of the next epoch. shuffle reorders with Python's
`random`, as MXNet does.
"""
import os
import random as _pyrandom
from numbers import Number

import numpy as np

from .. import ndarray as nd
from .. import recordio
from ..base import MXNetError
from ..io import DataBatch, DataDesc, DataIter
from .augment import CreateAugmenter
from .image import imdecode

__all__ = ["ImageIter"]


class ImageIter(DataIter):
    """Images and labels from a .rec file, an image list file or a list of (label(s), path); see the module
    docstring. Extra keyword arguments go to CreateAugmenter when aug_list is None."""

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None, path_imglist=None, path_root=None,
                 path_imgidx=None, shuffle=False, part_index=0, num_parts=1, aug_list=None, imglist=None,
                 data_name="data", label_name="softmax_label", dtype="float32", last_batch_handle="pad",
                 **kwargs):
        super().__init__(batch_size)
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise MXNetError("ImageIter needs path_imgrec, path_imglist or an imglist list")
        if dtype not in ("int32", "float32", "int64", "float64"):
            raise MXNetError(f"ImageIter: {dtype} label not supported")
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise MXNetError(f"ImageIter: last_batch_handle must be 'pad', 'discard' or 'roll_over', "
                             f"got {last_batch_handle!r}")
        self.imgrec, self.imgidx = None, None
        if path_imgrec:
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        self.imglist, imgkeys = self._load_list(path_imglist, imglist, dtype)
        self.path_root = path_root or ""
        self.check_data_shape(data_shape)
        self.provide_data = [DataDesc(data_name, (batch_size,) + tuple(data_shape))]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [DataDesc(label_name, label_shape)]
        self.data_shape, self.label_width, self.shuffle = tuple(data_shape), label_width, shuffle
        if self.imgrec is None:
            self.seq = imgkeys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise MXNetError("ImageIter: shuffle and num_parts > 1 need path_imgidx for a .rec file")
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise MXNetError(f"ImageIter: part_index {part_index} is not in [0, {num_parts})")
            step = len(self.seq) // num_parts
            self.seq = self.seq[part_index * step:(part_index + 1) * step]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache = None          # (data, label, count) of a rolled-over last batch
        self.reset()

    @staticmethod
    def _load_list(path_imglist, imglist, dtype):
        """{key: (label NDArray, path)} and the keys in order, or (None, None)."""
        if path_imglist:
            result, keys = {}, []
            with open(path_imglist) as fin:
                for line in fin:
                    fields = line.strip().split("\t")
                    if len(fields) < 3:
                        continue
                    key = int(fields[0])
                    result[key] = (nd.array([float(v) for v in fields[1:-1]], dtype=dtype), fields[-1])
                    keys.append(key)
            return result, keys
        if isinstance(imglist, list):
            result, keys = {}, []
            for index, img in enumerate(imglist, start=1):
                if len(img) > 2:
                    label = nd.array(img[:-1], dtype=dtype)
                elif isinstance(img[0], Number):
                    label = nd.array([img[0]], dtype=dtype)
                else:
                    label = nd.array(img[0], dtype=dtype)
                result[str(index)] = (label, img[-1])
                keys.append(str(index))
            return result, keys
        return None, None

    def reset(self):
        if self.seq is not None and self.shuffle:
            _pyrandom.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Resets and drops a rolled-over batch."""
        if self.seq is not None and self.shuffle:
            _pyrandom.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache = None

    def next_sample(self):
        """(label, encoded image bytes) of the next example; StopIteration at the end."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:
            s = self.imgrec.read()
            if s is None:
                if self.last_batch_handle != "discard":
                    self.imgrec.reset()
                raise StopIteration
            header, img = recordio.unpack(s)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != "discard":
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            header, img = recordio.unpack(self.imgrec.read_idx(idx))
            return (header.label if self.imglist is None else self.imglist[idx][0]), img
        label, fname = self.imglist[idx]
        return label, self.read_image(fname)

    def _batchify(self, data, label, start=0):
        """Fills data/label (numpy) from example `start` on; returns how many examples the batch now holds."""
        i = start
        try:
            while i < self.batch_size:
                lab, s = self.next_sample()
                img = self.augmentation_transform(self.imdecode(s))
                data[i] = self.postprocess_data(img).asnumpy()
                label[i] = lab.asnumpy().reshape(label[i].shape) if isinstance(lab, nd.NDArray) else \
                    np.asarray(lab).reshape(label[i].shape)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def next(self):
        if self._cache is not None:
            data, label, i = self._cache
        else:
            data = np.zeros(self.provide_data[0].shape, dtype=np.float32)
            label = np.zeros(self.provide_label[0].shape, dtype=np.float32)
            i = self._batchify(data, label)
        pad = self.batch_size - i
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache is None:
                self._cache = (data, label, i)
                raise StopIteration
            self._batchify(data, label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache = None
        return DataBatch([nd.array(data)], [nd.array(label)], pad=pad)

    def check_data_shape(self, data_shape):
        """data_shape must be (3, H, W)."""
        if len(data_shape) != 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if data_shape[0] != 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    def imdecode(self, s):
        """Decodes one image; a failure names the broken example."""
        try:
            return imdecode(s)
        except MXNetError as err:
            where = self.seq[(self.cur % self.num_image) - 1] if self.seq is not None else self.cur
            raise MXNetError(f"Broken image {where}: {err}") from None

    def read_image(self, fname):
        with open(os.path.join(self.path_root, fname), "rb") as fin:
            return fin.read()

    def augmentation_transform(self, data):
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """HWC -> CHW."""
        return nd.transpose(datum, axes=(2, 0, 1))
