"""NDArray's fluent methods (`x.sum(axis=1)`, `x.relu()`): each calls the nd function with x as first input."""
import inspect

import numpy as np

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


# numpy's np.sum(x), np.mean(x, axis=0), np.max(x, out=o), np.argmax(x), np.round(x) call these methods with
# numpy's keywords (dtype=None and out=None always, numpy arrays as out=, decimals=0, np.transpose's axes=None)
NUMPY_CALLED = {"sum", "mean", "prod", "max", "min", "nansum", "nanprod", "argmax", "argmin", "round", "transpose"}


def attach_fluent_methods(namespace):
    for name in FLUENT:
        function = namespace.get(name)
        if function is None or name in NDArray.__dict__:
            continue
        setattr(NDArray, name, (_numpy_called_method if name in NUMPY_CALLED else _method)(function))


def _method(function):
    def method(self, *args, **kwargs):
        return function(self, *args, **kwargs)
    return _named_like(method, function)


def _named_like(method, function, numpy_keywords=False):
    """`method` with the function's name, docstring and signature (its first input being the array itself; numpy's
    dtype= keyword added where the method takes it)."""
    method.__name__ = function.__name__
    method.__doc__ = function.__doc__
    signature = getattr(function, "__signature__", None)
    if signature is not None:
        signature = method_signature(signature)
        if numpy_keywords and "dtype" not in signature.parameters:
            dtype = inspect.Parameter("dtype", inspect.Parameter.KEYWORD_ONLY, default=None)
            params = list(signature.parameters.values())
            at = next((i for i, p in enumerate(params) if p.kind is inspect.Parameter.VAR_KEYWORD), len(params))
            signature = signature.replace(parameters=params[:at] + [dtype] + params[at:])
        method.__signature__ = signature
    return method


def _numpy_called_method(function):
    """A fluent method that also takes numpy's keywords: dtype= computes in that dtype (the array is cast first,
    as numpy accumulates in it), out= may be a numpy array (it receives the result and is returned), round's
    decimals=0 is its only rounding, a trailing None argument (np.transpose's axes) is the default. The result
    is an NDArray, as MXNet's np.max(x) gives."""
    def method(self, *args, dtype=None, out=None, **kwargs):
        while args and args[-1] is None:
            args = args[:-1]
        if kwargs.get("decimals", None) == 0:
            del kwargs["decimals"]
        x = self if dtype is None else self.astype(dtype)
        if isinstance(out, np.ndarray):
            out[...] = function(x, *args, **kwargs).asnumpy().reshape(out.shape)
            return out
        return function(x, *args, out=out, **kwargs)
    return _named_like(method, function, numpy_keywords=True)
