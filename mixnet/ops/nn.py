"""Neural-network operators (what Gluon layers call). Split by family:
nn_conv (FullyConnected, Convolution, Deconvolution, Pooling, UpSampling), nn_norm (BatchNorm, LayerNorm,
InstanceNorm, GroupNorm, L2Normalization, LRN), nn_act (activations, softmax family, Dropout, loss heads,
Embedding, Sequence*), nn_epilogue (the GEMM epilogues compiled graphs fuse into: ops/nn_epilogue.py)."""
from . import nn_conv, nn_norm, nn_act, nn_epilogue  # noqa: F401
