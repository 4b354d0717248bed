"""gluon.nn basic layers: containers, Dense, Dropout, normalization, Embedding, Flatten, Lambda."""
import contextlib

import numpy as np

from ..._source import warn
from ...base import MXNetError, MXNetWarning
from .. import cached_graph
from ..block import Block, HybridBlock
from ... import ndarray

__all__ = ["Sequential", "HybridSequential", "Dense", "Activation", "Dropout", "BatchNorm", "BatchNormReLU", "InstanceNorm", "LayerNorm",
           "GroupNorm", "Embedding", "Flatten", "Lambda", "HybridLambda"]


class Sequential(Block):
    """Stacks Blocks: calling it calls each child in order on the previous one's output. Children are named
    '0', '1', ... in the order `add` receives them.

    Parameters
    ----------
    prefix : str, optional
        The name prefix of the children's parameters.
    params : ParameterDict, optional
        Parameters to share.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks):
        for block in blocks:
            self.register_child(block)

    def forward(self, x, *args):
        for block in self._children.values():
            x = block(x, *args)
            args = ()
            if isinstance(x, (tuple, list)):
                x, args = x[0], tuple(x[1:])
        return (x,) + args if args else x

    def hybridize(self, active=True, **kwargs):
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warn(f"All children of this Sequential layer {self.prefix!r} are HybridBlocks. Consider using "
                 "HybridSequential for the best performance.", MXNetWarning)
        super().hybridize(active, **kwargs)

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if not isinstance(layers, list):
            return layers
        net = type(self)(prefix=self._prefix)
        with net.name_scope():
            net.add(*layers)
        return net

    def __len__(self):
        return len(self._children)


class HybridSequential(HybridBlock):
    """Stacks HybridBlocks: like Sequential, and `hybridize()` compiles the whole stack as one graph.

    Parameters
    ----------
    prefix : str, optional
        The name prefix of the children's parameters.
    params : ParameterDict, optional
        Parameters to share.

    Examples
    --------
    >>> import mixnet as mx
    >>> net = mx.gluon.nn.HybridSequential()
    >>> net.add(mx.gluon.nn.Dense(3, in_units=2), mx.gluon.nn.Activation("relu"))
    >>> len(net), type(net[0]).__name__
    (2, 'Dense')
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def forward(self, x, *args):
        with self._op_names() if cached_graph.TRACING.get() else contextlib.nullcontext():
            return Sequential.forward(self, x, *args)

    add = Sequential.add
    __getitem__ = Sequential.__getitem__
    __len__ = Sequential.__len__


def _act_repr(activation):
    return f"Activation({activation})" if activation else "linear"


class Dense(HybridBlock):
    """A densely connected layer: `output = activation(dot(input, weight.T) + bias)`.

    Parameters
    ----------
    units : int
        The output size.
    activation : str, optional
        An activation applied to the output ('relu', 'sigmoid', 'tanh', 'softrelu', 'softsign'); None: linear.
    use_bias : bool, default True
        Whether the layer has a bias vector.
    flatten : bool, default True
        True: the input is reshaped to (batch, -1) first; False: the layer applies to the last axis only and
        keeps the others.
    dtype : str, default 'float32'
        The parameters' dtype.
    weight_initializer : str or Initializer, optional
        The weight's initializer (default: the one given to `initialize`).
    bias_initializer : str or Initializer, default 'zeros'
        The bias's initializer.
    in_units : int, default 0
        The input size; 0 infers it from the first input.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data`, shape (batch, x1, ..., xn) with flatten=True, (x1, ..., xn, in_units) otherwise.
    Outputs: shape (batch, units) with flatten=True, (x1, ..., xn, units) otherwise.
    Parameters: `weight` (units, in_units) and `bias` (units,).

    Examples
    --------
    >>> import mixnet as mx
    >>> layer = mx.gluon.nn.Dense(2, in_units=3)
    >>> layer.initialize(mx.init.Constant(0.5))
    >>> layer(mx.nd.ones((1, 3))).asnumpy().tolist()
    [[1.5, 1.5]]
    >>> layer.weight.shape, layer.bias.data().asnumpy().tolist()
    ((2, 3), [0.0, 0.0])
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32",
                 weight_initializer=None, bias_initializer="zeros", in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._units, self._in_units, self._flatten = units, in_units, flatten
        self._activation = activation
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(units, in_units), init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(units,), init=bias_initializer, dtype=dtype,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def infer_shape(self, x, *args):
        in_units = int(np.prod(x.shape[1:])) if self._flatten else x.shape[-1]
        self.weight.shape = (self._units, in_units)

    def hybrid_forward(self, F, x, weight, bias=None):
        args = (x, weight) if bias is None else (x, weight, bias)
        out = F.FullyConnected(*args, no_bias=bias is None, num_hidden=self._units, flatten=self._flatten,
                               name="fwd")
        return self.act(out) if self.act is not None else out

    def __repr__(self):
        shape = self.weight.shape
        return f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0]}, " \
               f"{_act_repr(self._activation)})"


class Activation(HybridBlock):
    """Applies an activation function elementwise.

    Parameters
    ----------
    activation : str
        'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of any shape. Outputs: the same shape.
    """

    def __init__(self, activation, **kwargs):
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self):
        return self._act_type

    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act_type, name="fwd")

    def __repr__(self):
        return f"{type(self).__name__}({self._act_type})"


class Dropout(HybridBlock):
    """Zeroes elements with probability `rate` while training (inside `autograd.record()`), scaling the others by
    1 / (1 - rate); the identity otherwise.

    Parameters
    ----------
    rate : float
        The fraction of the input to drop, in [0, 1).
    axes : tuple of int, default ()
        Axes along which one mask is shared (variational dropout); () draws every element independently.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of any shape. Outputs: the same shape.
    """

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate, self._axes = rate, axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd")
        return F.identity(x)

    def __repr__(self):
        return f"{type(self).__name__}(p = {self._rate}, axes={self._axes})"


class _ChannelNorm(HybridBlock):
    """Shared parameter set-up of the normalization layers: gamma/beta over `in_channels` (inferred)."""

    def _make_affine(self, in_channels, center, scale, beta_initializer, gamma_initializer):
        with self.name_scope():
            self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=(in_channels,),
                                         init=gamma_initializer, allow_deferred_init=True, differentiable=scale)
            self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=(in_channels,),
                                        init=beta_initializer, allow_deferred_init=True, differentiable=center)

    def _channels_of(self, x):
        return x.shape[self._axis]

    def infer_shape(self, x, *args):
        channels = self._channels_of(x)
        for param in self._reg_params.values():
            param.shape = (channels,)

    def __repr__(self):
        channels = self.gamma.shape[0]
        kwargs = getattr(self, "_repr_kwargs", self._kwargs)
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in kwargs.items())}, " \
               f"in_channels={channels if channels else None})"


class BatchNorm(_ChannelNorm):
    """Batch normalization: normalizes each channel by the batch's mean and variance while training, by the
    running statistics otherwise; the running statistics update while training (inside `autograd.record()`).

    Parameters
    ----------
    axis : int, default 1
        The channel axis (1 for NCHW data, -1 for NHWC).
    momentum : float, default 0.9
        The running statistics' momentum: running = momentum * running + (1 - momentum) * batch.
    epsilon : float, default 1e-5
        Added to the variance before its square root.
    center : bool, default True
        Learn an offset `beta`; False keeps it 0.
    scale : bool, default True
        Learn a scale `gamma`; False keeps it 1.
    use_global_stats : bool, default False
        Normalize by the running statistics while training too.
    beta_initializer : str or Initializer, default 'zeros'
        The initializer of beta.
    gamma_initializer : str or Initializer, default 'ones'
        The initializer of gamma.
    running_mean_initializer : str or Initializer, default 'zeros'
        The initializer of the running mean.
    running_variance_initializer : str or Initializer, default 'ones'
        The initializer of the running variance.
    in_channels : int, default 0
        The number of channels; 0 infers it from the first input.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of any shape with the channels on `axis`. Outputs: the same shape.
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True, use_global_stats=False,
                 beta_initializer="zeros", gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._axis = axis
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats}
        self._make_affine(in_channels, center, scale, beta_initializer, gamma_initializer)
        with self.name_scope():
            self.running_mean = self.params.get("running_mean", grad_req="null", shape=(in_channels,),
                                                init=running_mean_initializer, allow_deferred_init=True,
                                                differentiable=False)
            self.running_var = self.params.get("running_var", grad_req="null", shape=(in_channels,),
                                               init=running_variance_initializer, allow_deferred_init=True,
                                               differentiable=False)

    def cast(self, dtype):
        if np.dtype(dtype).name == "float16":
            dtype = "float32"      # statistics stay in float32, as in MXNet
        super().cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)


class BatchNormReLU(BatchNorm):
    """BatchNorm followed by ReLU (MXNet 1.9's fused layer): the same parameters, names and behaviour as
    BatchNorm, then `relu`.
    """

    def _alias(self):
        return "batchnorm"

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.relu(super().hybrid_forward(F, x, gamma, beta, running_mean, running_var))


class InstanceNorm(_ChannelNorm):
    """Instance normalization: normalizes each sample's channel over its spatial axes, then scales and shifts it.

    Parameters
    ----------
    axis : int, default 1
        The channel axis.
    epsilon : float, default 1e-5
        Added to the variance before its square root.
    center : bool, default True
        Learn an offset `beta`.
    scale : bool, default False
        Learn a scale `gamma`.
    beta_initializer : str or Initializer, default 'zeros'
        The initializer of beta.
    gamma_initializer : str or Initializer, default 'ones'
        The initializer of gamma.
    in_channels : int, default 0
        The number of channels; 0 infers it from the first input.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, ...) (channels on `axis`). Outputs: the same shape.
    """

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._axis = axis
        self._kwargs = {"eps": epsilon}
        self._repr_kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._make_affine(in_channels, center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", **self._kwargs)
        moved = x.swapaxes(1, self._axis)
        return F.InstanceNorm(moved, gamma, beta, name="fwd", **self._kwargs).swapaxes(1, self._axis)


class LayerNorm(_ChannelNorm):
    """Layer normalization: normalizes each sample over `axis`, then scales and shifts it per element of that axis.

    Parameters
    ----------
    axis : int, default -1
        The axis normalized over.
    epsilon : float, default 1e-5
        Added to the variance before its square root.
    center : bool, default True
        Learn an offset `beta`.
    scale : bool, default True
        Learn a scale `gamma`.
    beta_initializer : str or Initializer, default 'zeros'
        The initializer of beta.
    gamma_initializer : str or Initializer, default 'ones'
        The initializer of gamma.
    in_channels : int, default 0
        The size of `axis`; 0 infers it from the first input.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of any shape. Outputs: the same shape.
    """

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._axis = axis
        self._kwargs = {"eps": epsilon, "axis": axis}
        self._repr_kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._make_affine(in_channels, center, scale, beta_initializer, gamma_initializer)

    def __repr__(self):        # MXNet 1.9.1 prints in_channels=0 (not None) while the size is unknown
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._repr_kwargs.items())}, " \
               f"in_channels={self.gamma.shape[0]})"

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, **self._kwargs)


class GroupNorm(_ChannelNorm):
    """Group normalization over axis 1: the channels are split into `num_groups` groups, each normalized over its
    channels and spatial axes. As in MXNet 1.9, gamma and beta have shape (num_groups,): one scale and shift per
    group, not per channel (so nothing is inferred from the input).

    Parameters
    ----------
    num_groups : int, default 1
        The number of groups; it must divide the number of channels.
    epsilon : float, default 1e-5
        Added to the variance before its square root.
    center : bool, default True
        Learn an offset `beta`.
    scale : bool, default True
        Learn a scale `gamma`.
    beta_initializer : str or Initializer, default 'zeros'
        The initializer of beta.
    gamma_initializer : str or Initializer, default 'ones'
        The initializer of gamma.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, ...). Outputs: the same shape.
    """

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", **kwargs):
        super().__init__(**kwargs)
        self._axis = 1
        self._kwargs = {"eps": epsilon, "num_groups": num_groups}
        self._repr_kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center, "scale": scale}
        self._make_affine(num_groups, center, scale, beta_initializer, gamma_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, **self._kwargs)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._repr_kwargs.items())})"


class Embedding(HybridBlock):
    """Maps integer indices to dense vectors: row `i` of `weight` for index `i`.

    Parameters
    ----------
    input_dim : int
        The vocabulary size: indices are in [0, input_dim).
    output_dim : int
        The size of each vector.
    dtype : str, default 'float32'
        The weight's dtype.
    weight_initializer : str or Initializer, optional
        The weight's initializer.
    sparse_grad : bool, default False
        The weight's gradient is row_sparse (only the looked-up rows), so optimizers update those rows lazily.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data`, indices of any shape (x1, ..., xn). Outputs: shape (x1, ..., xn, output_dim).
    Parameters: `weight` (input_dim, output_dim).
    """

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None, sparse_grad=False,
                 **kwargs):
        super().__init__(**kwargs)
        # sparse_grad: the weight's gradient is row_sparse (the rows of the looked-up indices), so optimizers
        # update only those rows lazily
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": sparse_grad}
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer,
                                          dtype=dtype, allow_deferred_init=True,
                                          grad_stype="row_sparse" if sparse_grad else "default")

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self):
        return f"{type(self).__name__}({self._kwargs['input_dim']} -> {self._kwargs['output_dim']}, " \
               f"{self._kwargs['dtype']})"


class Flatten(HybridBlock):
    """Reshapes the input to two dimensions, keeping the first axis.

    Parameters
    ----------
    prefix : str, optional
        The name prefix of the block's parameters, as every Block takes.
    params : ParameterDict, optional
        Parameters to share, as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, x1, ..., xn). Outputs: shape (batch, x1 * ... * xn).
    """

    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return type(self).__name__


class Lambda(Block):
    """Wraps a function (or the name of an `mx.nd` function) as a Block.

    Parameters
    ----------
    function : callable or str
        Called with the block's inputs, e.g. `lambda x: x * 2`, or the name of an nd function such as 'tanh'.
    prefix : str, optional
        The block's name prefix.
    """

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(ndarray, function):
                raise MXNetError(f"Lambda: mx.nd has no function {function!r}")
            function = getattr(ndarray, function)
        elif not callable(function):
            raise MXNetError(f"Lambda: expected a function or the name of one, got {type(function).__name__}")
        self._func = function

    def forward(self, *args):
        return self._func(*args)

    def __repr__(self):
        return f"{type(self).__name__}({getattr(self._func, '__name__', repr(self._func))})"


class HybridLambda(HybridBlock):
    """Wraps `function(F, *args)` (or the name of an F function) as a HybridBlock, so it can be hybridized.

    Parameters
    ----------
    function : callable or str
        Called as `function(F, x, *args)` with F the nd or sym namespace, e.g.
        `lambda F, x: F.LeakyReLU(x, slope=0.1)`, or the name of an F function such as 'tanh'.
    prefix : str, optional
        The block's name prefix.
    """

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            name = function
            function = lambda F, *args: getattr(F, name)(*args)  # noqa: E731
            function.__name__ = name
        elif not callable(function):
            raise MXNetError(f"HybridLambda: expected a function or a name, got {type(function).__name__}")
        self._func = function

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    __repr__ = Lambda.__repr__
