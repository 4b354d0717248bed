"""Neural-network operators (what Gluon layers call). Split by family:
nn_conv (FullyConnected, Convolution, Deconvolution, Pooling, UpSampling), nn_norm (BatchNorm, LayerNorm,
InstanceNorm, GroupNorm, L2Normalization, LRN), nn_act (activations, softmax family, Dropout, loss heads,
Embedding, Sequence*)."""
from . import nn_conv, nn_norm, nn_act  # noqa: F401
