"""`mx.init`: weight initializers, with MXNet 1.x's names, registry, `dumps()` format and name-suffix dispatch."""
import inspect
import json
import math
import re

import numpy as np

from .base import MXNetError
from .ndarray import random as nd_random
from .ndarray.utils import load
from .random import _state

__all__ = ["InitDesc", "Initializer", "register", "create", "Uniform", "Normal", "Xavier", "MSRAPrelu",
           "Orthogonal", "Bilinear", "Constant", "Zero", "One", "LSTMBias", "FusedRNN", "Mixed", "Load"]  # noqa: F822
# (FusedRNN unpacks mx.rnn.FusedRNNCell's weights: it is defined in rnn/rnn_cell.py, set here by mixnet/__init__)

_REGISTRY = {}


def register(klass):
    """Registers an Initializer subclass under its lower-case class name (what dumps() writes)."""
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def _alias(*names):
    def decorate(klass):
        for name in names:
            _REGISTRY[name] = klass
        return klass
    return decorate


class InitDesc(str):
    """A parameter name that also carries attributes (the `__init__` attribute chooses the initializer)."""

    def __new__(cls, name, attrs=None, global_init=None):
        obj = super().__new__(cls, name)
        obj.attrs = attrs or {}
        obj.global_init = global_init
        return obj


class Initializer:
    """Base class. Calling `init(desc, arr)` fills the NDArray `arr` in place."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        self._verbose, self._print_func = verbose, print_func
        return self

    def dumps(self):
        """'["name", {kwargs}]', the form stored in a parameter's `__init__` attribute."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._kwargs.items())})"

    def __eq__(self, other):
        """Same class and same arguments (as MXNet compares them), e.g. the inits of two blocks' parameters."""
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    def __hash__(self):
        return hash(type(self))      # equal initializers share a class; their arguments may be unhashable lists

    def __call__(self, desc, arr):
        if not isinstance(desc, InitDesc):
            desc = InitDesc(str(desc))
        if desc.global_init is None:
            desc.global_init = self     # what a variable's own __init__ (e.g. FusedRNN) falls back to
        init_attr = desc.attrs.get("__init__", "")
        if init_attr:
            create(init_attr)._init_weight(desc, arr)
            return
        name = str(desc)
        for suffix, method in (("weight", self._init_weight), ("bias", self._init_bias),
                               ("gamma", self._init_gamma), ("beta", self._init_beta),
                               ("running_mean", self._init_zero), ("running_var", self._init_one),
                               ("moving_mean", self._init_zero), ("moving_var", self._init_one),
                               ("moving_inv_var", self._init_zero), ("moving_avg", self._init_zero),
                               ("min", self._init_zero), ("max", self._init_one)):
            if name.endswith(suffix):
                method(desc, arr)
                return
        self._init_default(desc, arr)

    # The rules a subclass may override.
    def _init_weight(self, name, arr):
        raise MXNetError(f"{type(self).__name__} does not define how to initialize weight {name!r}")

    def _init_bias(self, name, arr):
        arr[:] = 0.0

    def _init_gamma(self, name, arr):
        arr[:] = 1.0

    def _init_beta(self, name, arr):
        arr[:] = 0.0

    def _init_zero(self, name, arr):
        arr[:] = 0.0

    def _init_one(self, name, arr):
        arr[:] = 1.0

    def _init_default(self, name, arr):
        raise MXNetError(f"Unknown initialization pattern for {name!r}: the name must end in weight, bias, gamma, "
                         "beta, running_mean/var, moving_mean/var, min or max, or carry an __init__ attribute")


def _random(name, arr, **kwargs):
    sample = getattr(nd_random, name)(shape=arr.shape, dtype=np.dtype(arr.dtype).name
                                      if np.dtype(arr.dtype).kind == "f" else "float32", ctx=arr.context, **kwargs)
    arr[:] = sample


@register
class Zero(Initializer):
    def _init_weight(self, name, arr):
        arr[:] = 0.0


@register
class One(Initializer):
    def _init_weight(self, name, arr):
        arr[:] = 1.0


_alias("zero", "zeros")(Zero)
_alias("one", "ones")(One)


@register
class Constant(Initializer):
    def __init__(self, value):
        # the kwargs are what dumps() writes: an array value is kept as a (JSON) list, as in MXNet
        plain = value.asnumpy() if hasattr(value, "asnumpy") else value
        super().__init__(value=plain.tolist() if hasattr(plain, "tolist") else plain)
        self.value = value

    def _init_weight(self, name, arr):
        value = self.value
        try:
            value = value.asnumpy() if hasattr(value, "asnumpy") else np.asarray(value)
            ok = value.dtype.kind in "biuf" and np.broadcast_shapes(value.shape, tuple(arr.shape)) == tuple(arr.shape)
        except ValueError:           # a ragged list, or shapes that do not broadcast
            ok = False
        if not ok:
            raise MXNetError(f"Constant initializer: value {self.value!r:.80} cannot fill {str(name)!r} of shape "
                             f"{tuple(arr.shape)}")
        arr[:] = value


@register
class Uniform(Initializer):
    """uniform(-scale, scale): the Gluon default (scale 0.07)."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, name, arr):
        _random("uniform", arr, low=-self.scale, high=self.scale)


@register
class Normal(Initializer):
    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, name, arr):
        _random("normal", arr, loc=0.0, scale=self.sigma)


def _fans(name, shape):
    if len(shape) < 2:
        raise MXNetError(f"Xavier/MSRAPrelu initializer cannot be applied to {name!r} of shape {shape}: it needs at "
                         "least 2 dimensions")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


@register
class Xavier(Initializer):
    """scale = sqrt(magnitude / factor), factor = fan average, fan_in or fan_out; uniform(-s, s) or normal(0, s)."""

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ("uniform", "gaussian"):
            raise MXNetError(f"Xavier: rnd_type must be 'uniform' or 'gaussian', got {rnd_type!r}")
        if factor_type not in ("avg", "in", "out"):
            raise MXNetError(f"Xavier: factor_type must be 'avg', 'in' or 'out', got {factor_type!r}")
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, float(magnitude)

    def _init_weight(self, name, arr):
        fan_in, fan_out = _fans(name, arr.shape)
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        scale = np.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            _random("uniform", arr, low=-scale, high=scale)
        else:
            _random("normal", arr, loc=0.0, scale=scale)


@register
class MSRAPrelu(Xavier):
    """He initialization for PReLU: Xavier(gaussian) with magnitude 2 / (1 + slope^2)."""

    def __init__(self, factor_type="avg", slope=0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Orthogonal(Initializer):
    """A (scaled) orthogonal matrix from the SVD of a random one (Saxe et al.)."""

    def __init__(self, scale=1.414, rand_type="uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale, self.rand_type = scale, rand_type

    def _init_weight(self, name, arr):
        rows = arr.shape[0]
        cols = int(np.prod(arr.shape[1:]))
        rng = _state(arr.context)
        tmp = rng.uniform(-1, 1, (rows, cols)) if self.rand_type == "uniform" else rng.normal(0, 1, (rows, cols))
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        q = u if u.shape == tmp.shape else v
        arr[:] = (self.scale * q).reshape(arr.shape)


@register
class Bilinear(Initializer):
    """Bilinear upsampling kernels (for Deconvolution weights)."""

    def _init_weight(self, name, arr):
        shape = arr.shape
        weight = np.zeros(int(np.prod(shape)), dtype=np.float32)
        f = np.ceil(shape[3] / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        for i in range(weight.size):
            x = i % shape[3]
            y = (i // shape[3]) % shape[2]
            weight[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
        arr[:] = weight.reshape(shape)


@register
class LSTMBias(Initializer):
    """Zero bias except the forget gate's, set to forget_bias (gate order i, f, g, o)."""

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        value = np.zeros(arr.shape, dtype=np.float32)
        hidden = arr.shape[0] // 4
        value[hidden:2 * hidden] = self.forget_bias
        arr[:] = value


class Mixed:
    """Chooses an initializer by the first regex pattern matching the parameter name."""

    def __init__(self, patterns, initializers):
        if len(patterns) != len(initializers):
            raise MXNetError(f"Mixed: {len(patterns)} patterns but {len(initializers)} initializers")
        self.map = [(re.compile(p), create(i)) for p, i in zip(patterns, initializers)]

    def __call__(self, name, arr):
        for pattern, init in self.map:
            if pattern.match(str(name)):
                init(name, arr)
                return
        raise MXNetError(f"Mixed: parameter {name!r} matches none of the patterns; add '.*' as a catch-all")


class Load:
    """Initializes from a dict of arrays (or an nd.save file), falling back to default_init."""

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            param = load(param)
        self.param = {(k[4:] if k.startswith(("arg:", "aux:")) else k): v for k, v in param.items()}
        self.default_init, self.verbose = default_init, verbose

    def __call__(self, name, arr):
        if name in self.param:
            src = self.param[name]
            if src.shape != arr.shape:
                raise MXNetError(f"Load: parameter {name!r} has shape {arr.shape} but the file holds {src.shape}")
            arr[:] = src
        elif self.default_init is not None:
            self.default_init(name, arr)
        else:
            raise MXNetError(f"Load: {name!r} is not in the loaded parameters and no default_init was given")


def create(init, **kwargs):
    """An Initializer from an instance, a registered name ('xavier', 'zeros') or a dumps() JSON string."""
    if isinstance(init, (Initializer, Mixed, Load)):
        return init
    if callable(init) and not isinstance(init, str):
        return init
    if not isinstance(init, str):
        raise MXNetError(f"cannot make an initializer from {type(init).__name__}")
    text = init.strip()
    if text.startswith("["):
        return _from_description(text)
    return _registered(text)(**kwargs)


def _registered(name):
    klass = _REGISTRY.get(name.lower())
    if klass is None:
        raise MXNetError(f"unknown initializer {name!r:.80} (known: {', '.join(sorted(_REGISTRY))})")
    return klass


def _from_description(text):
    """dumps()'s '["name", {arguments}]'. Such text comes from model files (a variable's __init__ attribute), so it
    is read with json and checked against the initializer's signature before anything is made: known argument
    names, finite numbers where the default is a number, text where it is text, otherwise plain JSON values
    (numbers, text, booleans, lists of them). Nothing is evaluated."""
    what = f"invalid initializer description {text!r:.80}"
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        raise MXNetError(f"{what}: not valid JSON") from None
    if not (isinstance(doc, list) and len(doc) == 2 and isinstance(doc[0], str) and isinstance(doc[1], dict)):
        raise MXNetError(f'{what}: expected ["name", {{arguments}}]')
    name, arguments = doc
    klass = _registered(name)
    signature = inspect.signature(klass)
    try:
        signature.bind(**arguments)
    except TypeError as err:
        raise MXNetError(f"{what}: {err} (arguments of {klass.__name__}: {', '.join(signature.parameters)})") \
            from None
    for key, value in arguments.items():
        default = signature.parameters[key].default if key in signature.parameters else None
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        elif isinstance(default, str):
            ok = isinstance(value, str)
        else:
            ok = _plain(value, 8)
        if not ok:
            raise MXNetError(f"{what}: argument {key}={value!r:.80} of {klass.__name__} has the wrong type")
    try:
        return klass(**arguments)
    except (TypeError, ValueError, ArithmeticError) as err:     # e.g. MSRAPrelu's slope ** 2 overflowing
        raise MXNetError(f"{what}: {type(err).__name__}: {err}") from None


def _plain(value, depth):
    """A JSON scalar (finite if a number), or a list of them nested at most `depth` levels."""
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, (int, float)):
        return math.isfinite(value)
    return isinstance(value, list) and depth > 0 and all(_plain(v, depth - 1) for v in value)
