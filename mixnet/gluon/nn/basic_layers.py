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
    """Stacks Blocks; children are named '0', '1', ..."""

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
    """Stacks HybridBlocks; children are named '0', '1', ..."""

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
    """y = activation(x W^T + b). Weight (units, in_units); in_units 0 is inferred at the first forward."""

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
    """Zeroes elements with probability `rate` while training (autograd.record()); identity otherwise."""

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
    """Batch normalization; running statistics update while training (autograd.record())."""

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
    """BatchNorm followed by ReLU (MXNet 1.9's fused layer; same parameters and naming as BatchNorm)."""

    def _alias(self):
        return "batchnorm"

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.relu(super().hybrid_forward(F, x, gamma, beta, running_mean, running_var))


class InstanceNorm(_ChannelNorm):
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
    """Group normalization over axis 1. As in MXNet 1.9, gamma and beta have shape (num_groups,): one scale and
    shift per group, not per channel (so nothing is inferred from the input)."""

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
    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return type(self).__name__


class Lambda(Block):
    """Wraps a function (or the name of an nd function) as a Block."""

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
    """Wraps `function(F, *args)` (or the name of an F function) as a HybridBlock."""

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
