"""The base types of `mx.io` (`DataDesc`, `DataBatch`, `DataIter`), in a module of their own so that the file
readers (io_native, io_image_record, io_libsvm) build on them while `mx.io` re-exports the readers."""
from collections import namedtuple

import numpy as np

from .base import MXNetError


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name, shape, dtype and layout of one input or label (a ``(name, shape)`` namedtuple)."""

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        ret = super().__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout):
        """The axis of 'N' in layout (0 when layout is None or has no 'N')."""
        if layout is None:
            return 0
        return max(layout.find("N"), 0)

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from a list of (name, shape) and an optional list (or dict) of (name, dtype)."""
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(name, shape, type_dict[name]) for name, shape in shapes]
        return [DataDesc(name, shape) for name, shape in shapes]


class DataBatch:
    """One batch: lists of data and label NDArrays, how many trailing examples are padding (pad), and more."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None, provide_data=None,
                 provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise MXNetError(f"DataBatch: data must be a list of NDArrays, got {type(data).__name__}")
        if label is not None and not isinstance(label, (list, tuple)):
            raise MXNetError(f"DataBatch: label must be a list of NDArrays, got {type(label).__name__}")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [l.shape for l in self.label] if self.label else None
        return f"{self.__class__.__name__}: data shapes: {data_shapes} label shapes: {label_shapes}"


class DataIter:
    """The base iterator: ``for batch in it`` until StopIteration, then ``it.reset()`` for another epoch."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        pass

    def next(self):
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        return False

    def getdata(self):
        raise NotImplementedError(f"{type(self).__name__} must implement getdata()")

    def getlabel(self):
        raise NotImplementedError(f"{type(self).__name__} must implement getlabel()")

    def getindex(self):
        return None

    def getpad(self):
        raise NotImplementedError(f"{type(self).__name__} must implement getpad()")
