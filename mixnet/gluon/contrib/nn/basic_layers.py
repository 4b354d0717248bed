"""gluon.contrib.nn layers (MXNet 1.x): containers that concatenate their children's outputs, Identity,
PixelShuffle1D/2D/3D and SyncBatchNorm.

Not provided: SparseEmbedding (use nn.Embedding(sparse_grad=True): the same row_sparse gradient).
"""
from ...block import HybridBlock
from ...nn import BatchNorm, HybridSequential, Sequential
from .... import ndarray as F

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SyncBatchNorm", "PixelShuffle1D", "PixelShuffle2D",
           "PixelShuffle3D"]


class Concurrent(Sequential):
    """Runs every child on the same input and concatenates their outputs along `axis` (default -1).

    Example::

        net = Concurrent()
        with net.name_scope():
            net.add(nn.Dense(10, activation='relu'))
            net.add(nn.Dense(20))
            net.add(Identity())
    """

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """The HybridBlock form of Concurrent: children's outputs concatenated along `axis` (default -1)."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    forward = HybridBlock.forward      # not HybridSequential's chaining: F is mx.nd eagerly, mx.sym when traced

    def hybrid_forward(self, F, x):
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class Identity(HybridBlock):
    """Returns its input unchanged (useful as a branch of a Concurrent: a residual/skip path)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x):
        return x

    def __repr__(self):
        return f"{type(self).__name__}(\n\n)"


class SyncBatchNorm(BatchNorm):
    """Cross-device synchronized batch normalization (MXNet's contrib.SyncBatchNorm).

    mixnet runs in a single process on a single device, so there is nothing to synchronize: this layer is exactly
    `nn.BatchNorm` over axis 1 (same parameters, names `syncbatchnorm0_gamma` etc., same training/inference
    behaviour). `num_devices` and the synchronization key are recorded (and shown in the repr) but unused;
    statistics are those of the batch this process sees.
    """

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones", **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer, running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer, in_channels=in_channels,
                         **kwargs)
        self._num_devices = 1 if num_devices is None else num_devices

    def __repr__(self):
        channels = self.gamma.shape[0]
        k = self._kwargs
        return (f"{type(self).__name__}(eps={k['eps']}, momentum={k['momentum']}, fix_gamma={k['fix_gamma']}, "
                f"use_global_stats={k['use_global_stats']}, ndev={self._num_devices}, key={self.prefix!r}, "
                f"in_channels={channels if channels else None})")


def _factors(factor, n, name):
    if isinstance(factor, int):
        return (factor,) * n
    factors = tuple(int(f) for f in factor)
    if len(factors) != n:
        raise ValueError(f"{name}: wrong length {len(factors)} of factor {factor!r}, expected {n}")
    return factors


class PixelShuffle1D(HybridBlock):
    """(N, f*C, W) -> (N, C, W*f): moves groups of `factor` channels into the width (sub-pixel upsampling)."""

    def __init__(self, factor):
        super().__init__()
        self._factor = int(factor)

    def hybrid_forward(self, F, x):
        f = self._factor
        x = F.reshape(x, (0, -4, -1, f, 0))         # (N, C, f, W)
        x = F.transpose(x, (0, 1, 3, 2))            # (N, C, W, f)
        return F.reshape(x, (0, 0, -3))             # (N, C, W*f)

    def __repr__(self):
        return f"{type(self).__name__}({self._factor})"


class PixelShuffle2D(HybridBlock):
    """(N, f1*f2*C, H, W) -> (N, C, H*f1, W*f2). `factor`: an int or a pair (f1, f2)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 2, type(self).__name__)

    def hybrid_forward(self, F, x):
        f1, f2 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2, 0, 0))    # (N, C, f1*f2, H, W)
        x = F.reshape(x, (0, 0, -4, f1, f2, 0, 0))       # (N, C, f1, f2, H, W)
        x = F.transpose(x, (0, 1, 4, 2, 5, 3))           # (N, C, H, f1, W, f2)
        return F.reshape(x, (0, 0, -3, -3))              # (N, C, H*f1, W*f2)

    def __repr__(self):
        return f"{type(self).__name__}({self._factors})"


class PixelShuffle3D(HybridBlock):
    """(N, f1*f2*f3*C, D, H, W) -> (N, C, D*f1, H*f2, W*f3). `factor`: an int or a triple."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 3, type(self).__name__)

    def hybrid_forward(self, F, x):
        f1, f2, f3 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2 * f3, 0, 0, 0))    # (N, C, f1*f2*f3, D, H, W)
        x = F.reshape(x, (0, 0, -4, f1, f2 * f3, 0, 0, 0))       # (N, C, f1, f2*f3, D, H, W)
        x = F.reshape(x, (0, 0, 0, -4, f2, f3, 0, 0, 0))         # (N, C, f1, f2, f3, D, H, W)
        x = F.transpose(x, (0, 1, 5, 2, 6, 3, 7, 4))             # (N, C, D, f1, H, f2, W, f3)
        return F.reshape(x, (0, 0, -3, -3, -3))                  # (N, C, D*f1, H*f2, W*f3)

    def __repr__(self):
        return f"{type(self).__name__}({self._factors})"
