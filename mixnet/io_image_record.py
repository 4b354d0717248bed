"""`mx.io.ImageRecordIter`: batches of images from a RecordIO file (im2rec's format), as MXNet 1.x's C++ iterator.

Per image, as MXNet: decode (Pillow, see mx.image.imdecode), resize the shorter edge to `resize`, pad by `pad`
with `fill_value`, upscale when smaller than data_shape, crop data_shape (random with rand_crop, else centred),
mirror (rand_mirror: with probability 0.5; mirror: always), then
``(pixel - mean) * (1 + U(-max_random_contrast, max_random_contrast)) * scale / std
+ U(-max_random_illumination, max_random_illumination) * scale / std``. The mean is `mean_img` (a file written
by nd.save; computed over the data and saved there when it does not exist yet) or mean_r/g/b.

The geometric and colour augmentations of MXNet's default augmenter (rotation, shear, random scale and aspect
ratio, random_resized_crop, crop-size ranges, HSL and colour jitter, PCA noise) are not implemented: setting one
raises an MXNetError. Records are read into memory; shuffle reorders them every epoch (seeded by `seed`);
`seed_aug` seeds each image's augmentation from its position, so two iterators with the same seed_aug agree.
"""
import os

import numpy as np

from . import recordio
from .base import MXNetError
from .image.image import imdecode
from .io_base import DataBatch, DataDesc, DataIter
from .ndarray.ndarray import array
from .ndarray.utils import load, save
from .ops.image import resize_hwc

__all__ = ["ImageRecordIter"]

# MXNet's parameters whose augmentation mixnet does not implement, with their "off" values
_UNSUPPORTED = {"max_rotate_angle": 0, "max_shear_ratio": 0, "rotate": -1, "max_random_scale": 1,
                "min_random_scale": 1, "max_aspect_ratio": 0, "min_aspect_ratio": None, "random_resized_crop": False,
                "max_random_area": 1, "min_random_area": 1, "max_crop_size": -1, "min_crop_size": -1,
                "max_img_size": 1e10, "min_img_size": 0, "brightness": 0, "contrast": 0, "saturation": 0,
                "pca_noise": 0, "random_h": 0, "random_s": 0, "random_l": 0}
# speed and logging knobs: they never change results
_KNOBS = {"preprocess_threads", "prefetch_buffer", "verbose", "ctx", "device_id", "shuffle_chunk_size",
          "shuffle_chunk_seed", "aug_seq"}


class ImageRecordIter(DataIter):
    """NCHW float32 batches and (batch,) / (batch, label_width) labels from path_imgrec; see the module
    docstring for the augmentation and normalization applied."""

    def __init__(self, path_imgrec, data_shape, batch_size, label_width=1, shuffle=False, seed=0, round_batch=True,
                 resize=-1, rand_crop=False, rand_mirror=False, mirror=False, pad=0, fill_value=255,
                 inter_method=1, mean_img="", mean_r=0.0, mean_g=0.0, mean_b=0.0, std_r=1.0, std_g=1.0,
                 std_b=1.0, scale=1.0, max_random_contrast=0.0, max_random_illumination=0.0, num_parts=1,
                 part_index=0, seed_aug=None, data_name="data", label_name="softmax_label", **kwargs):
        super().__init__(batch_size)
        for key, value in kwargs.items():
            if key in _UNSUPPORTED:
                if value != _UNSUPPORTED[key]:
                    raise MXNetError(f"ImageRecordIter: {key}={value!r} is not supported by mixnet (rotation, shear, "
                                     "random scale/aspect, HSL and colour jitter are not implemented)")
            elif key not in _KNOBS:
                raise MXNetError(f"ImageRecordIter: unknown argument {key!r}")
        data_shape = tuple(int(d) for d in data_shape)
        if len(data_shape) != 3 or data_shape[0] not in (1, 3):
            raise MXNetError(f"ImageRecordIter: data_shape must be (channels, height, width) with 1 or 3 channels, "
                             f"got {data_shape}")
        if batch_size <= 0:
            raise MXNetError(f"ImageRecordIter: batch_size must be positive, got {batch_size}")
        self._records = _read_records(path_imgrec, num_parts, part_index)
        self.data_shape, self.label_width = data_shape, label_width
        self._aug = dict(resize=resize, rand_crop=rand_crop, rand_mirror=rand_mirror, mirror=mirror, pad=pad,
                         fill_value=fill_value, inter_method=inter_method, max_random_contrast=max_random_contrast,
                         max_random_illumination=max_random_illumination, scale=scale)
        self._std = np.array([std_r, std_g, std_b][:data_shape[0]], dtype=np.float32).reshape(-1, 1, 1)
        self._mean = np.array([mean_r, mean_g, mean_b][:data_shape[0]], dtype=np.float32).reshape(-1, 1, 1)
        self._shuffle, self._round = shuffle, round_batch
        self._order_rng = np.random.RandomState(seed)
        self._aug_rng = np.random.RandomState(seed)
        self._seed_aug = seed_aug
        if mean_img:
            self._mean = self._mean_image(mean_img)
        self.provide_data = [DataDesc(data_name, (batch_size,) + data_shape)]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [DataDesc(label_name, label_shape)]
        self._order = np.arange(len(self._records))
        self._start = 0
        self.reset()

    def reset(self):
        if self._shuffle:
            self._order_rng.shuffle(self._order)
        self._pos = self._start

    def next(self):
        n, bs = len(self._records), self.batch_size
        if self._pos >= n:
            raise StopIteration
        positions = np.arange(self._pos, self._pos + bs) % n
        pad = max(0, self._pos + bs - n)
        self._pos += bs
        if self._pos >= n:
            self._start = pad if self._round else 0
        data = np.empty(self.provide_data[0].shape, dtype=np.float32)
        label = np.empty((bs, self.label_width), dtype=np.float32)
        for i, pos in enumerate(positions):
            record = int(self._order[pos])
            rng = np.random.RandomState(record + self._seed_aug) if self._seed_aug is not None else self._aug_rng
            data[i] = self._normalize(self._augment(self._decode(record), rng), rng)
            values = self._records[record][0]
            if values.size < self.label_width:
                raise MXNetError(f"ImageRecordIter: record {record} has {values.size} labels, label_width is "
                                 f"{self.label_width}")
            label[i] = values[:self.label_width]
        return DataBatch([array(data)], [array(label.reshape(self.provide_label[0].shape))], pad=pad,
                         provide_data=self.provide_data, provide_label=self.provide_label)

    def _decode(self, record):
        img = imdecode(self._records[record][1], flag=1 if self.data_shape[0] == 3 else 0)
        return img.asnumpy()

    def _augment(self, img, rng):
        """HWC uint8 -> CHW float32 of data_shape: resize, pad, crop, mirror."""
        a, (_, height, width) = self._aug, self.data_shape
        if a["resize"] > 0:
            h, w = img.shape[:2]
            new_h, new_w = (a["resize"] * h // w, a["resize"]) if h > w else (a["resize"], a["resize"] * w // h)
            img = resize_hwc(img, new_w, new_h, a["inter_method"])
        if a["pad"] > 0:
            p = a["pad"]
            img = np.pad(img, ((p, p), (p, p), (0, 0)), constant_values=a["fill_value"])
        if img.shape[0] < height:
            img = resize_hwc(img, int(height / img.shape[0] * img.shape[1]), height, a["inter_method"])
        if img.shape[1] < width:
            img = resize_hwc(img, width, int(width / img.shape[1] * img.shape[0]), a["inter_method"])
        y, x = img.shape[0] - height, img.shape[1] - width
        if a["rand_crop"]:
            y, x = rng.randint(0, y + 1), rng.randint(0, x + 1)
        else:
            y, x = y // 2, x // 2
        img = img[y:y + height, x:x + width]
        if (a["rand_mirror"] and rng.rand() < 0.5) or a["mirror"]:
            img = img[:, ::-1]
        return np.ascontiguousarray(img.transpose(2, 0, 1)).astype(np.float32)

    def _normalize(self, chw, rng):
        a = self._aug
        contrast = (1 + rng.uniform(-1, 1) * a["max_random_contrast"]) * a["scale"]
        illumination = rng.uniform(-1, 1) * a["max_random_illumination"] * a["scale"]
        return (chw - self._mean) * (contrast / self._std) + illumination / self._std

    def _mean_image(self, path):
        """The (C, H, W) mean image from path, or computed over the (unaugmented) data and saved there."""
        if os.path.exists(path):
            loaded = load(path)
            arrays = list(loaded.values()) if isinstance(loaded, dict) else list(loaded)
            if len(arrays) != 1:
                raise MXNetError(f"ImageRecordIter: invalid mean image file {path!r} (holds {len(arrays)} arrays)")
            return arrays[0].asnumpy().astype(np.float32)
        saved = dict(self._aug)
        self._aug.update(rand_crop=False, rand_mirror=False, mirror=False)
        total = np.zeros(self.data_shape, dtype=np.float64)
        for record in range(len(self._records)):
            total += self._augment(self._decode(record), self._aug_rng)
        self._aug = saved
        mean = (total / len(self._records)).astype(np.float32)
        save(path, {"mean_img": array(mean)})
        return mean


def _read_records(path, num_parts, part_index):
    """[(label float32 array, encoded image bytes)] of the records of one part of a .rec file."""
    if not 0 <= part_index < num_parts:
        raise MXNetError(f"ImageRecordIter: part_index {part_index} is not in [0, num_parts={num_parts})")
    reader = recordio.MXRecordIO(path, "r")
    records = []
    while True:
        item = reader.read()
        if item is None:
            break
        header, img = recordio.unpack(item)
        records.append((np.asarray(header.label, dtype=np.float32).reshape(-1), img))
    reader.close()
    step = len(records) // num_parts
    records = records[part_index * step:(part_index + 1) * step]
    if not records:
        raise MXNetError(f"ImageRecordIter: {path!r} holds no records for part {part_index} of {num_parts}")
    return records
