"""Gradient compression for the allreduce (Horovod's `hvd.Compression.none` / `hvd.Compression.fp16`)."""
from abc import ABC, abstractmethod

import numpy as np

__all__ = ["Compression", "Compressor", "NoneCompressor", "FP16Compressor"]


class Compressor(ABC):
    """The interface (Horovod's): compress(tensor) -> (tensor to reduce, context for decompress);
    decompress(tensor, ctx) -> tensor. Subclass it for a compression of your own."""

    @staticmethod
    @abstractmethod
    def compress(tensor):
        """(the tensor to reduce, the context decompress needs)"""

    @staticmethod
    @abstractmethod
    def decompress(tensor, ctx):
        """the reduced tensor in its original form"""


class NoneCompressor(Compressor):
    """Reduces the tensor as it is."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor(Compressor):
    """Floating-point tensors travel as float16 (half the bytes, float16's precision and range)."""

    @staticmethod
    def compress(tensor):
        dtype = np.dtype(tensor.dtype)
        if np.issubdtype(dtype, np.floating) and dtype != np.float16:
            return tensor.astype(np.float16), dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tensor.astype(ctx)


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor
