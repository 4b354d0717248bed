"""NDArray's fluent methods (`x.sum(axis=1)`, `x.relu()`): each calls the nd function with x as first input."""
from ..ops.docgen import method_signature
from .ndarray import NDArray

FLUENT = (
    "sum mean prod max min nansum nanprod norm argmax argmin argmax_channel transpose expand_dims squeeze flatten "
    "clip abs sign round rint fix floor ceil trunc sqrt rsqrt cbrt rcbrt square exp expm1 log log2 log10 log1p "
    "sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh degrees radians relu sigmoid softmax "
    "log_softmax softmin one_hot pick take tile repeat split split_v2 slice slice_axis slice_like swapaxes flip sort argsort "
    "topk reshape_like broadcast_to broadcast_like broadcast_axes broadcast_axis pad diag reciprocal erf erfinv "
    "gamma gammaln zeros_like ones_like shape_array size_array depth_to_space space_to_depth moveaxis nanprod"
).split()


def attach_fluent_methods(namespace):
    for name in FLUENT:
        function = namespace.get(name)
        if function is None or name in NDArray.__dict__:
            continue
        setattr(NDArray, name, _method(function))


def _method(function):
    def method(self, *args, **kwargs):
        return function(self, *args, **kwargs)
    method.__name__ = function.__name__
    method.__doc__ = function.__doc__
    signature = getattr(function, "__signature__", None)
    if signature is not None:            # the function's, its first input being the array itself
        method.__signature__ = method_signature(signature)
    return method
