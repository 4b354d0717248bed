"""`mx.runtime`: which build features are available. mixnet reports what it really has: numpy on the CPU
(with LAPACK through numpy.linalg), CUDA only when cupy sees a device, and none of MXNet's native libraries."""
import collections
from .context import num_gpus

__all__ = ["Feature", "Features", "feature_list"]

# MXNet 1.9.1's feature names, in its order.
_NAMES = ("CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3", "CPU_SSE4_1",
          "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C", "JEMALLOC", "BLAS_OPEN",
          "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN", "OPENCV", "CAFFE", "PROFILER",
          "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DEBUG", "TVM_OP")


class Feature:
    def __init__(self, name, enabled):
        self.name = name
        self.enabled = bool(enabled)

    def __repr__(self):
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def _enabled():
    has_gpu = num_gpus() > 0
    return {"CUDA": has_gpu, "LAPACK": True, "INT64_TENSOR_SIZE": True, "PROFILER": True}


def feature_list():
    on = _enabled()
    return [Feature(name, on.get(name, False)) for name in _NAMES]


class Features(collections.OrderedDict):
    """name -> Feature for every MXNet feature name; `is_enabled(name)` raises RuntimeError for unknown ones."""

    def __init__(self):
        super().__init__((f.name, f) for f in feature_list())

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature '{feature_name}' is unknown, known features are: {list(self.keys())}")
        return self[name].enabled
