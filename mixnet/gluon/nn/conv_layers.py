"""gluon.nn convolution, transposed convolution, pooling and padding layers: channels-first (NC*) layouts, and
channels-last (NWC / NHWC / NDHWC) for Conv2D/Conv3D and every pooling layer, as MXNet 1.x allows them."""
from ...base import MXNetError
from ..block import HybridBlock
from .basic_layers import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
           "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "GlobalMaxPool1D",
           "GlobalMaxPool2D", "GlobalMaxPool3D", "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D",
           "ReflectionPad2D"]


def _tuple(value, n, what):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) != n:
        raise MXNetError(f"{what} must be an int or a tuple of {n} ints, got {value}")
    return value


_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _check_layout(layout, dims, channels_last_ok=True):
    """True for a channels-last layout (NWC, NHWC, NDHWC), False for channels-first; else MXNetError."""
    first, last = _LAYOUTS[dims]
    if layout == first or (layout == last and channels_last_ok):
        return layout == last
    allowed = f"{first!r} or {last!r}" if channels_last_ok else repr(first)
    raise MXNetError(f"layout {layout!r} is not supported here; use {allowed}")


def _to_channels_first(F, x, dims):
    """(N, *spatial, C) -> (N, C, *spatial): the kernels run channels-first (MXNet's CPU kernels transpose too)."""
    return F.transpose(x, axes=(0, dims + 1) + tuple(range(1, dims + 1)))


def _to_channels_last(F, x, dims):
    return F.transpose(x, axes=(0,) + tuple(range(2, dims + 2)) + (1,))


class _Conv(HybridBlock):
    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout, in_channels=0,
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 op_name="Convolution", adj=None, **kwargs):
        super().__init__(**kwargs)
        dims = len(kernel_size)
        # channels-last convolutions keep MXNet's weight layout (channels, *kernel, in_channels / groups)
        self._channels_last = _check_layout(layout, dims, channels_last_ok=op_name == "Convolution" and dims > 1)
        self._channels, self._in_channels, self._groups = channels, in_channels, groups
        self._op_name = op_name
        self._kwargs = {"kernel": kernel_size, "stride": _tuple(strides, dims, "strides"),
                        "dilate": _tuple(dilation, dims, "dilation"), "pad": _tuple(padding, dims, "padding"),
                        "num_filter": channels, "num_group": groups, "no_bias": not use_bias,
                        "layout": _LAYOUTS[dims][0]}
        if adj is not None:
            self._kwargs["adj"] = _tuple(adj, dims, "output_padding")
        with self.name_scope():
            self.weight = self.params.get("weight", shape=self._weight_shape(in_channels),
                                          init=weight_initializer, allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def _weight_shape(self, in_channels):
        kernel = self._kwargs["kernel"]
        if self._op_name == "Convolution":
            per_group = in_channels // self._groups if in_channels else 0
            if self._channels_last:
                return (self._channels,) + tuple(kernel) + (per_group,)
            return (self._channels, per_group) + tuple(kernel)
        return (in_channels, self._channels // self._groups) + tuple(kernel)

    def infer_shape(self, x, *args):
        self.weight.shape = self._weight_shape(x.shape[-1] if self._channels_last else x.shape[1])

    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        dims = len(self._kwargs["kernel"])
        if self._channels_last:
            x, weight = _to_channels_first(F, x, dims), _to_channels_first(F, weight, dims)
        out = op(x, weight, bias, name="fwd", **self._kwargs) if bias is not None else \
            op(x, weight, name="fwd", **self._kwargs)
        if self._channels_last:
            out = _to_channels_last(F, out, dims)
        return self.act(out) if self.act is not None else out

    def _alias(self):
        return "conv"

    def __repr__(self):
        shape = self.weight.shape
        in_channels = shape[-1 if self._channels_last else 1] * self._groups if self._op_name == "Convolution" \
            else shape[0]
        k = self._kwargs
        text = f"{type(self).__name__}({in_channels if in_channels else None} -> {self._channels}, " \
               f"kernel_size={tuple(k['kernel'])}, stride={k['stride']}"
        if any(k["pad"]):
            text += f", padding={k['pad']}"
        if any(d != 1 for d in k["dilate"]):
            text += f", dilation={k['dilate']}"
        if self._groups != 1:
            text += f", groups={self._groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.act is not None:
            text += f", {self.act!r}"
        return text + ")"


class Conv1D(_Conv):
    """1-D convolution over (width):
    `output = activation(conv(data, weight) + bias)`.

    Parameters
    ----------
    channels : int
        The number of output channels.
    kernel_size : int or tuple of int
        The kernel's size along each spatial axis (W); an int for all of them.
    strides : int or tuple of int, default 1
        The stride along each spatial axis.
    padding : int or tuple of int, default 0
        The zero padding added to both sides of each spatial axis.
    dilation : int or tuple of int, default 1
        The kernel's dilation along each spatial axis.
    groups : int, default 1
        Split the channels into this many groups convolved separately (channels and in_channels must divide).
    layout : str, default 'NCW'
        The data layout: 'NCW'.
    activation : str, optional
        An activation applied to the output ('relu', 'sigmoid', ...); None: linear.
    use_bias : bool, default True
        Whether the layer has a bias vector.
    weight_initializer : str or Initializer, optional
        The weight's initializer (default: the one given to `initialize`).
    bias_initializer : str or Initializer, default 'zeros'
        The bias's initializer.
    in_channels : int, default 0
        The number of input channels; 0 infers it from the first input.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, in_channels, W) in the channels-first layout.
    Outputs: shape (batch, channels, out_w), each
    `out = floor((in + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1`.
    Parameters: `weight` (channels, in_channels / groups, *kernel_size) and `bias` (channels,).
    """

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1, layout="NCW",
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros", in_channels=0,
                 **kwargs):
        super().__init__(channels, _tuple(kernel_size, 1, "kernel_size"), strides, padding, dilation, groups,
                         layout, in_channels, activation, use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv1DTranspose(_Conv):
    """1-D transposed convolution (the gradient of a convolution, used to upsample) over (width):
    `output = activation(conv(data, weight) + bias)`.

    Parameters
    ----------
    channels : int
        The number of output channels.
    kernel_size : int or tuple of int
        The kernel's size along each spatial axis (W); an int for all of them.
    strides : int or tuple of int, default 1
        The stride along each spatial axis.
    padding : int or tuple of int, default 0
        The zero padding added to both sides of each spatial axis.
    output_padding : int or tuple of int, default 0
        Added to one side of each output dimension (resolves the output size when stride > 1).
    dilation : int or tuple of int, default 1
        The kernel's dilation along each spatial axis.
    groups : int, default 1
        Split the channels into this many groups convolved separately (channels and in_channels must divide).
    layout : str, default 'NCW'
        The data layout: 'NCW' (the only one).
    activation : str, optional
        An activation applied to the output ('relu', 'sigmoid', ...); None: linear.
    use_bias : bool, default True
        Whether the layer has a bias vector.
    weight_initializer : str or Initializer, optional
        The weight's initializer (default: the one given to `initialize`).
    bias_initializer : str or Initializer, default 'zeros'
        The bias's initializer.
    in_channels : int, default 0
        The number of input channels; 0 infers it from the first input.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, in_channels, W) in the channels-first layout.
    Outputs: shape (batch, channels, out_w), each
    `out = (in - 1) * stride - 2 * padding + dilation * (kernel_size - 1) + output_padding + 1`.
    Parameters: `weight` (in_channels, channels / groups, *kernel_size) and `bias` (channels,).
    """

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0, dilation=1, groups=1,
                 layout="NCW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, _tuple(kernel_size, 1, "kernel_size"), strides, padding, dilation, groups,
                         layout, in_channels, activation, use_bias, weight_initializer, bias_initializer,
                         op_name="Deconvolution", adj=output_padding, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over (height, width):
    `output = activation(conv(data, weight) + bias)`.

    Parameters
    ----------
    channels : int
        The number of output channels.
    kernel_size : int or tuple of int
        The kernel's size along each spatial axis (H, W); an int for all of them.
    strides : int or tuple of int, default 1
        The stride along each spatial axis.
    padding : int or tuple of int, default 0
        The zero padding added to both sides of each spatial axis.
    dilation : int or tuple of int, default 1
        The kernel's dilation along each spatial axis.
    groups : int, default 1
        Split the channels into this many groups convolved separately (channels and in_channels must divide).
    layout : str, default 'NCHW'
        The data layout: 'NCHW' or 'NHWC'.
    activation : str, optional
        An activation applied to the output ('relu', 'sigmoid', ...); None: linear.
    use_bias : bool, default True
        Whether the layer has a bias vector.
    weight_initializer : str or Initializer, optional
        The weight's initializer (default: the one given to `initialize`).
    bias_initializer : str or Initializer, default 'zeros'
        The bias's initializer.
    in_channels : int, default 0
        The number of input channels; 0 infers it from the first input.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, in_channels, H, W) in the channels-first layout.
    Outputs: shape (batch, channels, out_h, out_w), each
    `out = floor((in + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1`.
    Parameters: `weight` (channels, in_channels / groups, *kernel_size) and `bias` (channels,).
    """

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1, layout="NCHW",
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros", in_channels=0,
                 **kwargs):
        super().__init__(channels, _tuple(kernel_size, 2, "kernel_size"), strides, padding, dilation, groups,
                         layout, in_channels, activation, use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv2DTranspose(_Conv):
    """2-D transposed convolution (the gradient of a convolution, used to upsample) over (height, width):
    `output = activation(conv(data, weight) + bias)`.

    Parameters
    ----------
    channels : int
        The number of output channels.
    kernel_size : int or tuple of int
        The kernel's size along each spatial axis (H, W); an int for all of them.
    strides : int or tuple of int, default 1
        The stride along each spatial axis.
    padding : int or tuple of int, default 0
        The zero padding added to both sides of each spatial axis.
    output_padding : int or tuple of int, default 0
        Added to one side of each output dimension (resolves the output size when stride > 1).
    dilation : int or tuple of int, default 1
        The kernel's dilation along each spatial axis.
    groups : int, default 1
        Split the channels into this many groups convolved separately (channels and in_channels must divide).
    layout : str, default 'NCHW'
        The data layout: 'NCHW' (the only one).
    activation : str, optional
        An activation applied to the output ('relu', 'sigmoid', ...); None: linear.
    use_bias : bool, default True
        Whether the layer has a bias vector.
    weight_initializer : str or Initializer, optional
        The weight's initializer (default: the one given to `initialize`).
    bias_initializer : str or Initializer, default 'zeros'
        The bias's initializer.
    in_channels : int, default 0
        The number of input channels; 0 infers it from the first input.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, in_channels, H, W) in the channels-first layout.
    Outputs: shape (batch, channels, out_h, out_w), each
    `out = (in - 1) * stride - 2 * padding + dilation * (kernel_size - 1) + output_padding + 1`.
    Parameters: `weight` (in_channels, channels / groups, *kernel_size) and `bias` (channels,).
    """

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0, dilation=1, groups=1,
                 layout="NCHW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, _tuple(kernel_size, 2, "kernel_size"), strides, padding, dilation, groups,
                         layout, in_channels, activation, use_bias, weight_initializer, bias_initializer,
                         op_name="Deconvolution", adj=output_padding, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over (depth, height, width):
    `output = activation(conv(data, weight) + bias)`.

    Parameters
    ----------
    channels : int
        The number of output channels.
    kernel_size : int or tuple of int
        The kernel's size along each spatial axis (D, H, W); an int for all of them.
    strides : int or tuple of int, default 1
        The stride along each spatial axis.
    padding : int or tuple of int, default 0
        The zero padding added to both sides of each spatial axis.
    dilation : int or tuple of int, default 1
        The kernel's dilation along each spatial axis.
    groups : int, default 1
        Split the channels into this many groups convolved separately (channels and in_channels must divide).
    layout : str, default 'NCDHW'
        The data layout: 'NCDHW' or 'NDHWC'.
    activation : str, optional
        An activation applied to the output ('relu', 'sigmoid', ...); None: linear.
    use_bias : bool, default True
        Whether the layer has a bias vector.
    weight_initializer : str or Initializer, optional
        The weight's initializer (default: the one given to `initialize`).
    bias_initializer : str or Initializer, default 'zeros'
        The bias's initializer.
    in_channels : int, default 0
        The number of input channels; 0 infers it from the first input.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, in_channels, D, H, W) in the channels-first layout.
    Outputs: shape (batch, channels, out_d, out_h, out_w), each
    `out = floor((in + 2 * padding - dilation * (kernel_size - 1) - 1) / stride) + 1`.
    Parameters: `weight` (channels, in_channels / groups, *kernel_size) and `bias` (channels,).
    """

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1, layout="NCDHW",
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros", in_channels=0,
                 **kwargs):
        super().__init__(channels, _tuple(kernel_size, 3, "kernel_size"), strides, padding, dilation, groups,
                         layout, in_channels, activation, use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv3DTranspose(_Conv):
    """3-D transposed convolution (the gradient of a convolution, used to upsample) over (depth, height, width):
    `output = activation(conv(data, weight) + bias)`.

    Parameters
    ----------
    channels : int
        The number of output channels.
    kernel_size : int or tuple of int
        The kernel's size along each spatial axis (D, H, W); an int for all of them.
    strides : int or tuple of int, default 1
        The stride along each spatial axis.
    padding : int or tuple of int, default 0
        The zero padding added to both sides of each spatial axis.
    output_padding : int or tuple of int, default 0
        Added to one side of each output dimension (resolves the output size when stride > 1).
    dilation : int or tuple of int, default 1
        The kernel's dilation along each spatial axis.
    groups : int, default 1
        Split the channels into this many groups convolved separately (channels and in_channels must divide).
    layout : str, default 'NCDHW'
        The data layout: 'NCDHW' (the only one).
    activation : str, optional
        An activation applied to the output ('relu', 'sigmoid', ...); None: linear.
    use_bias : bool, default True
        Whether the layer has a bias vector.
    weight_initializer : str or Initializer, optional
        The weight's initializer (default: the one given to `initialize`).
    bias_initializer : str or Initializer, default 'zeros'
        The bias's initializer.
    in_channels : int, default 0
        The number of input channels; 0 infers it from the first input.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, in_channels, D, H, W) in the channels-first layout.
    Outputs: shape (batch, channels, out_d, out_h, out_w), each
    `out = (in - 1) * stride - 2 * padding + dilation * (kernel_size - 1) + output_padding + 1`.
    Parameters: `weight` (in_channels, channels / groups, *kernel_size) and `bias` (channels,).
    """

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0, dilation=1, groups=1,
                 layout="NCDHW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, _tuple(kernel_size, 3, "kernel_size"), strides, padding, dilation, groups,
                         layout, in_channels, activation, use_bias, weight_initializer, bias_initializer,
                         op_name="Deconvolution", adj=output_padding, **kwargs)


class _Pooling(HybridBlock):
    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
                 count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        dims = len(pool_size)
        self._channels_last = _check_layout(layout, dims)
        self._layout = layout
        strides = pool_size if strides is None else _tuple(strides, dims, "strides")
        self._kwargs = {"kernel": pool_size, "stride": strides, "pad": _tuple(padding, dims, "padding"),
                        "global_pool": global_pool, "pool_type": pool_type,
                        "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self):
        return "pool"

    def hybrid_forward(self, F, x):
        if not self._channels_last:
            return F.Pooling(x, name="fwd", **self._kwargs)
        dims = len(self._kwargs["kernel"])
        return _to_channels_last(F, F.Pooling(_to_channels_first(F, x, dims), name="fwd", **self._kwargs), dims)

    def __repr__(self):
        k = self._kwargs
        return f"{type(self).__name__}(size={k['kernel']}, stride={k['stride']}, padding={k['pad']}, " \
               f"ceil_mode={k['pooling_convention'] == 'full'}, global_pool={k['global_pool']}, " \
               f"pool_type={k['pool_type']}, layout={self._layout})"


class MaxPool1D(_Pooling):
    """1-D maximum pooling over (width).

    Parameters
    ----------
    pool_size : int or tuple of int, default 2
        The window's size along each spatial axis (W).
    strides : int or tuple of int, optional
        The window's stride; None: pool_size.
    padding : int or tuple of int, default 0
        The padding added to both sides of each spatial axis.
    layout : str, default 'NCW'
        The data layout, channels-first ('NCW') or channels-last.
    ceil_mode : bool, default False
        Round the output size up instead of down (MXNet's pooling_convention 'full').
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, W) in the channels-first layout.
    Outputs: shape (batch, channels, out_w), each
    `out = floor((in + 2 * padding - pool_size) / strides) + 1` (ceil with ceil_mode=True).
    """

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False, **kwargs):
        super().__init__(_tuple(pool_size, 1, "pool_size"), strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class AvgPool1D(_Pooling):
    """1-D average pooling over (width).

    Parameters
    ----------
    pool_size : int or tuple of int, default 2
        The window's size along each spatial axis (W).
    strides : int or tuple of int, optional
        The window's stride; None: pool_size.
    padding : int or tuple of int, default 0
        The padding added to both sides of each spatial axis.
    layout : str, default 'NCW'
        The data layout, channels-first ('NCW') or channels-last.
    ceil_mode : bool, default False
        Round the output size up instead of down (MXNet's pooling_convention 'full').
    count_include_pad : bool, default True
        Count the padding elements in each average.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, W) in the channels-first layout.
    Outputs: shape (batch, channels, out_w), each
    `out = floor((in + 2 * padding - pool_size) / strides) + 1` (ceil with ceil_mode=True).
    """

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(_tuple(pool_size, 1, "pool_size"), strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class GlobalMaxPool1D(_Pooling):
    """1-D global maximum pooling: the maximum over all of (width) per channel.

    Parameters
    ----------
    layout : str, default 'NCW'
        The data layout, channels-first ('NCW') or channels-last.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, W) in the channels-first layout.
    Outputs: shape (batch, channels, 1).
    """

    def __init__(self, layout="NCW", **kwargs):
        super().__init__((1,) * 1, None, 0, True, True, "max", layout, **kwargs)


class GlobalAvgPool1D(_Pooling):
    """1-D global average pooling: the average over all of (width) per channel.

    Parameters
    ----------
    layout : str, default 'NCW'
        The data layout, channels-first ('NCW') or channels-last.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, W) in the channels-first layout.
    Outputs: shape (batch, channels, 1).
    """

    def __init__(self, layout="NCW", **kwargs):
        super().__init__((1,) * 1, None, 0, True, True, "avg", layout, **kwargs)


class MaxPool2D(_Pooling):
    """2-D maximum pooling over (height, width).

    Parameters
    ----------
    pool_size : int or tuple of int, default 2
        The window's size along each spatial axis (H, W).
    strides : int or tuple of int, optional
        The window's stride; None: pool_size.
    padding : int or tuple of int, default 0
        The padding added to both sides of each spatial axis.
    layout : str, default 'NCHW'
        The data layout, channels-first ('NCHW') or channels-last.
    ceil_mode : bool, default False
        Round the output size up instead of down (MXNet's pooling_convention 'full').
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, H, W) in the channels-first layout.
    Outputs: shape (batch, channels, out_h, out_w), each
    `out = floor((in + 2 * padding - pool_size) / strides) + 1` (ceil with ceil_mode=True).
    """

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCHW", ceil_mode=False, **kwargs):
        super().__init__(_tuple(pool_size, 2, "pool_size"), strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class AvgPool2D(_Pooling):
    """2-D average pooling over (height, width).

    Parameters
    ----------
    pool_size : int or tuple of int, default 2
        The window's size along each spatial axis (H, W).
    strides : int or tuple of int, optional
        The window's stride; None: pool_size.
    padding : int or tuple of int, default 0
        The padding added to both sides of each spatial axis.
    layout : str, default 'NCHW'
        The data layout, channels-first ('NCHW') or channels-last.
    ceil_mode : bool, default False
        Round the output size up instead of down (MXNet's pooling_convention 'full').
    count_include_pad : bool, default True
        Count the padding elements in each average.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, H, W) in the channels-first layout.
    Outputs: shape (batch, channels, out_h, out_w), each
    `out = floor((in + 2 * padding - pool_size) / strides) + 1` (ceil with ceil_mode=True).
    """

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCHW", ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(_tuple(pool_size, 2, "pool_size"), strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class GlobalMaxPool2D(_Pooling):
    """2-D global maximum pooling: the maximum over all of (height, width) per channel.

    Parameters
    ----------
    layout : str, default 'NCHW'
        The data layout, channels-first ('NCHW') or channels-last.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, H, W) in the channels-first layout.
    Outputs: shape (batch, channels, 1, 1).
    """

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__((1,) * 2, None, 0, True, True, "max", layout, **kwargs)


class GlobalAvgPool2D(_Pooling):
    """2-D global average pooling: the average over all of (height, width) per channel.

    Parameters
    ----------
    layout : str, default 'NCHW'
        The data layout, channels-first ('NCHW') or channels-last.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, H, W) in the channels-first layout.
    Outputs: shape (batch, channels, 1, 1).
    """

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__((1,) * 2, None, 0, True, True, "avg", layout, **kwargs)


class MaxPool3D(_Pooling):
    """3-D maximum pooling over (depth, height, width).

    Parameters
    ----------
    pool_size : int or tuple of int, default 2
        The window's size along each spatial axis (D, H, W).
    strides : int or tuple of int, optional
        The window's stride; None: pool_size.
    padding : int or tuple of int, default 0
        The padding added to both sides of each spatial axis.
    layout : str, default 'NCDHW'
        The data layout, channels-first ('NCDHW') or channels-last.
    ceil_mode : bool, default False
        Round the output size up instead of down (MXNet's pooling_convention 'full').
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, D, H, W) in the channels-first layout.
    Outputs: shape (batch, channels, out_d, out_h, out_w), each
    `out = floor((in + 2 * padding - pool_size) / strides) + 1` (ceil with ceil_mode=True).
    """

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCDHW", ceil_mode=False, **kwargs):
        super().__init__(_tuple(pool_size, 3, "pool_size"), strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class AvgPool3D(_Pooling):
    """3-D average pooling over (depth, height, width).

    Parameters
    ----------
    pool_size : int or tuple of int, default 2
        The window's size along each spatial axis (D, H, W).
    strides : int or tuple of int, optional
        The window's stride; None: pool_size.
    padding : int or tuple of int, default 0
        The padding added to both sides of each spatial axis.
    layout : str, default 'NCDHW'
        The data layout, channels-first ('NCDHW') or channels-last.
    ceil_mode : bool, default False
        Round the output size up instead of down (MXNet's pooling_convention 'full').
    count_include_pad : bool, default True
        Count the padding elements in each average.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, D, H, W) in the channels-first layout.
    Outputs: shape (batch, channels, out_d, out_h, out_w), each
    `out = floor((in + 2 * padding - pool_size) / strides) + 1` (ceil with ceil_mode=True).
    """

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCDHW", ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(_tuple(pool_size, 3, "pool_size"), strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class GlobalMaxPool3D(_Pooling):
    """3-D global maximum pooling: the maximum over all of (depth, height, width) per channel.

    Parameters
    ----------
    layout : str, default 'NCDHW'
        The data layout, channels-first ('NCDHW') or channels-last.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, D, H, W) in the channels-first layout.
    Outputs: shape (batch, channels, 1, 1, 1).
    """

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__((1,) * 3, None, 0, True, True, "max", layout, **kwargs)


class GlobalAvgPool3D(_Pooling):
    """3-D global average pooling: the average over all of (depth, height, width) per channel.

    Parameters
    ----------
    layout : str, default 'NCDHW'
        The data layout, channels-first ('NCDHW') or channels-last.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, D, H, W) in the channels-first layout.
    Outputs: shape (batch, channels, 1, 1, 1).
    """

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__((1,) * 3, None, 0, True, True, "avg", layout, **kwargs)


class ReflectionPad2D(HybridBlock):
    """Pads the two spatial axes of NCHW input by reflection (the border row/column is not repeated).

    Parameters
    ----------
    padding : int or tuple of int, default 0
        An int pads every side by that much; otherwise 8 values in `pad(mode='reflect')`'s pad_width order,
        the first four 0 (batch and channel axes are not padded).
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of shape (batch, channels, H, W). Outputs: shape (batch, channels, H + 2p, W + 2p) for an
    int padding p.
    """

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, int):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        if len(padding) != 8:
            raise MXNetError(f"ReflectionPad2D: padding must be an int or 8 values, got {padding}")
        self._padding = tuple(padding)

    def hybrid_forward(self, F, x):
        return F.pad(x, mode="reflect", pad_width=self._padding)
