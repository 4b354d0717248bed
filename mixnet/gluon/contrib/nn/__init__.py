"""gluon.contrib.nn: Concurrent, HybridConcurrent, Identity, PixelShuffle1D/2D/3D, SyncBatchNorm;
and (mixnet additions) DotProductAttention, MultiHeadAttention with valid lengths."""
from .basic_layers import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403  (DotProductAttention, MultiHeadAttention: mixnet additions)
