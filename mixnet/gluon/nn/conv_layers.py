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
    """1-D convolution over NCW input; weight (channels, in_channels / groups, *kernel_size)."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1, layout="NCW",
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros", in_channels=0,
                 **kwargs):
        super().__init__(channels, _tuple(kernel_size, 1, "kernel_size"), strides, padding, dilation, groups,
                         layout, in_channels, activation, use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv1DTranspose(_Conv):
    """1-D transposed convolution over NCW input; weight (in_channels, channels / groups, *kernel_size)."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0, dilation=1, groups=1,
                 layout="NCW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, _tuple(kernel_size, 1, "kernel_size"), strides, padding, dilation, groups,
                         layout, in_channels, activation, use_bias, weight_initializer, bias_initializer,
                         op_name="Deconvolution", adj=output_padding, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over NCHW input; weight (channels, in_channels / groups, *kernel_size)."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1, layout="NCHW",
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros", in_channels=0,
                 **kwargs):
        super().__init__(channels, _tuple(kernel_size, 2, "kernel_size"), strides, padding, dilation, groups,
                         layout, in_channels, activation, use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv2DTranspose(_Conv):
    """2-D transposed convolution over NCHW input; weight (in_channels, channels / groups, *kernel_size)."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0, dilation=1, groups=1,
                 layout="NCHW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        super().__init__(channels, _tuple(kernel_size, 2, "kernel_size"), strides, padding, dilation, groups,
                         layout, in_channels, activation, use_bias, weight_initializer, bias_initializer,
                         op_name="Deconvolution", adj=output_padding, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over NCDHW input; weight (channels, in_channels / groups, *kernel_size)."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1, layout="NCDHW",
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros", in_channels=0,
                 **kwargs):
        super().__init__(channels, _tuple(kernel_size, 3, "kernel_size"), strides, padding, dilation, groups,
                         layout, in_channels, activation, use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv3DTranspose(_Conv):
    """3-D transposed convolution over NCDHW input; weight (in_channels, channels / groups, *kernel_size)."""

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
    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False, **kwargs):
        super().__init__(_tuple(pool_size, 1, "pool_size"), strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class AvgPool1D(_Pooling):
    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(_tuple(pool_size, 1, "pool_size"), strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class GlobalMaxPool1D(_Pooling):
    def __init__(self, layout="NCW", **kwargs):
        super().__init__((1,) * 1, None, 0, True, True, "max", layout, **kwargs)


class GlobalAvgPool1D(_Pooling):
    def __init__(self, layout="NCW", **kwargs):
        super().__init__((1,) * 1, None, 0, True, True, "avg", layout, **kwargs)


class MaxPool2D(_Pooling):
    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCHW", ceil_mode=False, **kwargs):
        super().__init__(_tuple(pool_size, 2, "pool_size"), strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class AvgPool2D(_Pooling):
    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCHW", ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(_tuple(pool_size, 2, "pool_size"), strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class GlobalMaxPool2D(_Pooling):
    def __init__(self, layout="NCHW", **kwargs):
        super().__init__((1,) * 2, None, 0, True, True, "max", layout, **kwargs)


class GlobalAvgPool2D(_Pooling):
    def __init__(self, layout="NCHW", **kwargs):
        super().__init__((1,) * 2, None, 0, True, True, "avg", layout, **kwargs)


class MaxPool3D(_Pooling):
    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCDHW", ceil_mode=False, **kwargs):
        super().__init__(_tuple(pool_size, 3, "pool_size"), strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class AvgPool3D(_Pooling):
    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCDHW", ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(_tuple(pool_size, 3, "pool_size"), strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class GlobalMaxPool3D(_Pooling):
    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__((1,) * 3, None, 0, True, True, "max", layout, **kwargs)


class GlobalAvgPool3D(_Pooling):
    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__((1,) * 3, None, 0, True, True, "avg", layout, **kwargs)


class ReflectionPad2D(HybridBlock):
    """Pads the two spatial axes of NCHW input by reflection."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, int):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        if len(padding) != 8:
            raise MXNetError(f"ReflectionPad2D: padding must be an int or 8 values, got {padding}")
        self._padding = tuple(padding)

    def hybrid_forward(self, F, x):
        return F.pad(x, mode="reflect", pad_width=self._padding)
