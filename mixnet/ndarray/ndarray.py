"""NDArray: an eager array on a device (a numpy or cupy buffer), with MXNet 1.x semantics.

Operators and methods are thin: they pick a registry op and go through the one dispatch door
(`mixnet.ops.dispatch.apply`), which runs the kernel and records onto the autograd tape when needed.
"""
import numbers
import operator
import sys

import numpy as np

from .._mode import MODE
from .._operator_table import OPERATORS, install_operators
from .._source import warn
from .._traceback import hide_internals
from ..base import InputDtypeWarning, MXNetError, OpError, ScalarConversionError, dtype_np, is_number
from ..context import Context, array_module, current_context, cpu, gpu as gpu_context
from ..ops import dispatch, registry
from ..ops.common import check_shape, infer as infer_shapes
from .. import _display, serialization
from ..context import num_gpus

__all__ = ["NDArray", "array", "empty", "from_numpy", "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write",
           "waitall", "py_slice", "_STORAGE_TYPE_STR_TO_ID"]

py_slice = slice
_STORAGE_TYPE_STR_TO_ID = {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
_IN_GRAPH_ASSIGN = ("Assigning to NDArrays that are already in a computational graph will cause undefined "
                    "behavior when evaluating gradients. Please call backward first to clear the graph or do "
                    "this out side of a record section.")

_INPLACE_RECORDED = "Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with autograd."


def _wrap(data, ctx):
    arr = NDArray.__new__(NDArray)
    arr._data = data
    arr._ctx = ctx
    return arr


dispatch.WRAP = _wrap


def _bump_versions(arrays):
    """NDArray._bump_version of each of `arrays`, in one Python call (an optimizer's step bumps every weight)."""
    for arr in arrays:
        while arr is not None:
            arr._version += 1
            arr = arr._base


class NDArray:
    """An n-dimensional array on a device, with MXNet 1.x's NDArray API.

    Create one with `mx.nd.array`, `mx.nd.zeros`, `mx.nd.ones`, `mx.nd.arange`, ... rather than with the class.
    Arithmetic, comparisons and indexing return new arrays (broadcasting like numpy); the op functions of
    `mx.nd` are also methods (`x.sum(axis=1)`, `x.reshape((3, 2))`); `asnumpy()` copies the values out.

    Examples
    --------
    >>> import mixnet as mx
    >>> x = mx.nd.ones((2, 3))
    >>> x.shape, x.size, x.context
    ((2, 3), 6, cpu(0))
    >>> (x * 2 + 1).sum(axis=1).asnumpy().tolist()
    [9.0, 9.0]
    >>> x[0, 1:].asnumpy().tolist()
    [1.0, 1.0]
    >>> x.reshape((3, 2)).T.shape
    (2, 3)
    """
    # Attributes that are usually unset live on the class, so creating an array sets only its buffer and device.
    _node = None          # autograd: a TapeNode (op output) or a Leaf (attach_grad), else None
    _oidx = 0             # which output of its TapeNode this array is
    _grad = None
    _grad_req = "null"
    _fresh_grad = False
    _version = 0          # bumped by every in-place write; autograd checks it
    _base = None          # the array a basic-indexing view writes through to
    __array_priority__ = 1000.0

    def __init__(self, data=None, ctx=None, dtype=None):
        source = array(data if data is not None else [], ctx=ctx, dtype=dtype)
        self._data, self._ctx = source._data, source._ctx

    # ---------------------------------------------------------------- attributes
    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        """The numpy scalar type (np.float32, ...), as MXNet returns it."""
        return self._data.dtype.type

    @property
    def size(self):
        return self._data.size

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def context(self):
        return self._ctx

    ctx = context

    @property
    def stype(self):
        return "default"

    @property
    def writable(self):
        return True

    @property
    def handle(self):
        return id(self)

    @property
    def grad(self):
        return self._grad

    @property
    def T(self):
        if self.ndim < 2:
            return self
        return self.transpose()

    # ---------------------------------------------------------------- conversion
    def asnumpy(self):
        data = self._data
        if self._ctx.device_type == "gpu":
            return data.get()
        return data.copy()

    def asscalar(self):
        if self.size != 1:
            raise MXNetError(f"asscalar: the array must have exactly one element, it has shape {self.shape}")
        return self.asnumpy().reshape(()).item() if self.dtype is np.bool_ else self.asnumpy().reshape(())[()]

    def item(self):
        return self.asscalar()

    def astype(self, dtype, copy=True):
        target = dtype_np(dtype)
        if not copy and target == self._data.dtype:
            return self
        return _op_call("Cast", (self,), {"dtype": target})

    def copy(self):
        return _op_call("_copy", (self,), {})

    def copyto(self, other):
        """Copies into `other` (an NDArray: shapes must match) or onto a Context (a new array)."""
        if isinstance(other, Context):
            xp = array_module(other)
            data = self.asnumpy() if xp is np else xp.asarray(self._data)
            return _wrap(data if data is not self._data else data.copy(), other)
        if isinstance(other, NDArray):
            if other is self:
                return other
            if other.shape != self.shape:
                raise MXNetError(f"copyto: shape mismatch, source {self.shape} vs target {other.shape}")
            other._assign(self._converted_for(other))
            return other
        raise MXNetError(f"copyto: expected an NDArray or Context, got {type(other).__name__}")

    def _converted_for(self, target):
        data = self._data
        if target._ctx != self._ctx:
            data = array_module(target._ctx).asarray(self.asnumpy())
        return data

    def as_in_context(self, context):
        if self._ctx == context:
            return self
        return self.copyto(context)

    as_in_ctx = as_in_context

    def tostype(self, stype):
        """A copy in storage type `stype` ('row_sparse', 'csr'); 'default' returns the array itself."""
        from ._storage import from_dense  # lazy: _storage subclasses NDArray
        return from_dense(self, stype)

    def as_np_ndarray(self):
        raise MXNetError("as_np_ndarray: the mx.np namespace is not part of mixnet yet")

    def wait_to_read(self):
        """Blocks until the array's value is computed. On the CPU every op has finished when it returns; on a GPU,
        cupy queues kernels on the device's stream, and this waits for that stream (as MXNet's engine would)."""
        if self._ctx.device_type == "gpu":
            _synchronize(self._ctx)

    def wait_to_write(self):
        """Blocks until no pending kernel reads or writes the array (the device's stream, on a GPU)."""
        self.wait_to_read()

    def __array__(self, dtype=None, copy=None):
        data = self.asnumpy() if self._ctx.device_type == "gpu" else self._data
        return data if dtype is None else data.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy's ufuncs on NDArrays (np.exp(x), np.add(x, 1, out=y)) compute in numpy and return numpy arrays
        (nothing is recorded), except a numpy scalar on the left of an arithmetic or comparison operator
        (`np.float64(0.5) * x`): numpy routes that here (comparisons hand the scalar over as a 0-d array), and
        MXNet answers it as `0.5 * x`, an NDArray on the autograd tape. An NDArray given as out= receives the
        result and is what is returned, as numpy returns its out.

        numpy's other functions follow numpy's own protocol, as with MXNet: those numpy implements by calling the
        array's method of the same name (np.sum, np.mean, np.max, np.min, np.prod, np.argmax, np.clip,
        np.round, np.reshape, np.transpose, ...) run the NDArray method and return an NDArray, as MXNet does
        (the methods take numpy's dtype=/out=/keepdims=, fluent.py); the rest (np.std, np.var, np.median,
        np.concatenate, ...) compute in numpy on the values and return numpy arrays."""
        binop = _UFUNC_OPERATORS.get(ufunc)
        if binop is not None and method == "__call__" and not kwargs and len(inputs) == 2 \
                and isinstance(inputs[1], NDArray) and isinstance(inputs[0], (np.generic, np.ndarray)) and inputs[0].ndim == 0:
            return binop(inputs[0].item(), inputs[1])
        return _numpy_call(getattr(ufunc, method), inputs, kwargs)

    def __dlpack__(self, stream=None, **kwargs):
        return self._data.__dlpack__(**({"stream": stream} if stream is not None else {}), **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def to_dlpack_for_read(self):
        return to_dlpack_for_read(self)

    def to_dlpack_for_write(self):
        return to_dlpack_for_write(self)

    # ---------------------------------------------------------------- autograd
    def attach_grad(self, grad_req="write", stype=None):
        """Allocates self.grad (zeros) and marks the array as a leaf whose gradient backward() writes. The
        gradient has the array's dtype: on an integer array it is truncated (1.5 becomes 1), as in MXNet,
        which is warned about (InputDtypeWarning); attach it to a float copy instead (x.astype('float32'))."""
        if self._data.dtype.kind in "iub" and grad_req != "null":
            warn(f"attach_grad() on an {self._data.dtype.name} array: its gradient is {self._data.dtype.name} too, so "
                 "backward() truncates it (1.5 becomes 1), as MXNet does. Differentiate a float copy instead: "
                 "x = x.astype('float32'); x.attach_grad()", InputDtypeWarning)
        from .. import autograd  # lazy: autograd imports ndarray
        from ._storage import check_stype, zeros  # lazy: _storage subclasses NDArray
        stype = check_stype(stype or self.stype, "attach_grad")
        grad = zeros_like_array(self) if stype == "default" else zeros(stype, self.shape, self._ctx, self._data.dtype)
        autograd.mark_variables([self], [grad], grad_req)

    def detach(self):
        return _wrap(self._data, self._ctx)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        autograd = sys.modules["mixnet.autograd"]    # imported by mixnet/__init__; it imports this module (an
        try:                                         # import statement here would cost ~2 us on every step)
            autograd.backward([self], None if out_grad is None else [out_grad], retain_graph, train_mode)
        except MXNetError as err:
            __tracebackhide__ = True    # noqa: F841 - IPython and pytest hide this frame
            raise hide_internals(err)   # mixnet's own frames are cut: MIXNET_FULL_TRACEBACK=1 shows them

    # ---------------------------------------------------------------- in-place writes
    def _bump_version(self):
        arr = self
        while arr is not None:
            arr._version += 1
            arr = arr._base

    def _check_assignable(self):
        if MODE.get().recording and (self._node is not None or (self._base is not None
                                                                 and self._base._node is not None)):
            raise MXNetError(_IN_GRAPH_ASSIGN)

    def _assign(self, value, key=Ellipsis):
        """self[key] = value in place (value: a backend array or a scalar), with broadcasting."""
        self._check_assignable()
        try:
            self._data[key] = value
        except (ValueError, TypeError, IndexError) as err:
            shape = getattr(value, "shape", ())
            raise MXNetError(f"__setitem__: cannot assign a value of shape {tuple(shape)} to index {key!r} of an "
                             f"array of shape {self.shape}: {err}") from None
        self._bump_version()

    def __setitem__(self, key, value):
        key = _index_key(key)
        if isinstance(value, NDArray):
            if value._node is not None and not _whole_array_key(key) and MODE.get().recording:
                # MXNet records a partial assignment as an op writing into self: refused while recording
                raise MXNetError(_INPLACE_RECORDED)
            value = value._converted_for(self)
        elif not is_number(value):
            value = array_module(self._ctx).asarray(value, dtype=self._data.dtype)
        if not is_number(value) and value.size == 1:
            value = value.reshape(())    # x[i] = <size-1 array> fills one element too, as MXNet broadcasts it
        if self.ndim == 0 and _whole_array_key(key):
            key = Ellipsis               # x[:] = v on a scalar array (np-shape mode) fills it, as MXNet does
        self._assign(value, key)

    def __getitem__(self, key):
        key = _index_key(key)
        if _is_basic(key):
            key = _legacy_scalar_key(key, self.ndim)
            out = _op_call("_getitem", (self,), {"key": key})
            out._base = self
            return out
        return _op_call("_getitem", (self,), {"key": key})

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape):
        """Whether basic indexing of a C-contiguous array of `shape` with the tuple of slices `slc_key` gives a
        contiguous view (MXNet's helper). numpy answers it exactly from strides: a view of one byte with C strides
        for `shape` is sliced, nothing of `shape`'s size is allocated or read."""
        strides = [1] * len(shape)
        for axis in range(len(shape) - 2, -1, -1):
            strides[axis] = strides[axis + 1] * max(shape[axis + 1], 1)
        view = np.lib.stride_tricks.as_strided(np.empty(1, np.uint8), shape=tuple(shape), strides=tuple(strides))
        return bool(view[tuple(slc_key)].flags.c_contiguous)

    # ---------------------------------------------------------------- python protocol
    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d NDArray")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def _one_value(self, conversion):
        """The single element as a numpy scalar, for float()/int()/index(); an error naming the shape otherwise."""
        if self.size != 1:
            raise ScalarConversionError(
                f"{conversion}() needs an NDArray with exactly one element, this one has shape {self.shape} "
                f"({self.size} elements): reduce it first (x.sum(), x.mean()) or convert it with x.asnumpy()")
        return self.asnumpy().reshape(())[()]

    def __float__(self):
        return float(self._one_value("float"))

    def __int__(self):
        return int(self._one_value("int"))

    def __index__(self):
        """A 0-d integer NDArray is an index (range(n), a list's position), as numpy's 0-d arrays are. A (1,)
        array is not, also as in numpy: numpy would then index with it as a scalar instead of as an array of
        one position (np_array[nd_index] keeps its numpy shape). int(x) converts any one-element array."""
        if self.ndim != 0 or self._data.dtype.kind not in "iu":
            raise ScalarConversionError(
                f"only a 0-d integer NDArray is an index; this one is {self._data.dtype.name} of shape "
                f"{self.shape}: convert it with int(x)")
        return int(self._data)

    def __bool__(self):
        if self.size == 0:
            return False
        if self.size == 1:
            return bool(self.asnumpy().reshape(())[()])
        raise ValueError("The truth value of an NDArray with more than one element is ambiguous.")

    __hash__ = object.__hash__

    def __repr__(self):
        """MXNet's form, '\\n[[1. 2.]]\\n<NDArray 1x2 @cpu(0)>', with the dtype when it is not float32
        ('<NDArray 2 int32 @cpu(0)>') and 'scalar' for a 0-d array; a large array is summarised as numpy's
        print options say, reading only the values shown."""
        tag = _display.array_tag("NDArray", self.shape, self._data.dtype, self._ctx)
        return f"\n{_display.preview(self._data)}\n{tag}"

    def __str__(self):
        return self.__repr__()

    def _repr_html_(self):
        """Jupyter's view: shape, dtype, device, the values (summarised as in the text repr) and, from
        _display.STATS_FROM elements on, min/max/mean and the NaN/inf counts."""
        return _display.array_html(self)

    def __getstate__(self):
        # MXNet's own form: the array's raw bytes (one .params record), so pickles move between the two.
        device = (self._ctx.device_type, self._ctx.device_id)
        return {"handle": bytearray(serialization.encode_raw(self.asnumpy(), device))}

    def __setstate__(self, state):
        if "handle" in state:
            data, device = serialization.decode_raw(state["handle"])
        else:  # what mixnet pickled before it wrote MXNet's form
            data, device = state["data"], state["ctx"]
        ctx = Context(*device) if device[0] in ("cpu", "gpu") else cpu()
        if ctx.device_type == "gpu" and ctx.device_id >= _num_gpus():
            ctx = cpu()  # MXNet does the same when the saving GPU is not there
        self._data = array_module(ctx).asarray(data)
        self._ctx = ctx

    def __reduce__(self):
        return (_unpickle, (self.__getstate__(),))

    # ---------------------------------------------------------------- arithmetic
    # + - * / % ** and the comparisons come from the operator table (_operator_method, below)
    def __matmul__(self, other):
        return _op_call("dot", (self, other), {})

    def __neg__(self):
        return _op_call("negative", (self,), {})

    def __pos__(self):
        return self

    def __abs__(self):
        return _op_call("abs", (self,), {})

    def _inplace(self, other, fn):
        self._check_assignable()
        result = fn(self, other)
        if result._node is not None and MODE.get().recording:
            # `w += x` with x in the graph: MXNet refuses to record an op whose output is an existing array
            raise MXNetError(_INPLACE_RECORDED)
        self._assign(result._data if result._ctx == self._ctx else result._converted_for(self))
        return self

    def __iadd__(self, other):
        return self._inplace(other, operator.add)

    def __isub__(self, other):
        return self._inplace(other, operator.sub)

    def __imul__(self, other):
        return self._inplace(other, operator.mul)

    def __itruediv__(self, other):
        return self._inplace(other, operator.truediv)

    def __imod__(self, other):
        return self._inplace(other, operator.mod)

    # ---------------------------------------------------------------- shape helpers MXNet spells as methods
    def reshape(self, *shape, **kwargs):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if "shape" in kwargs:
            shape = kwargs.pop("shape")
        reverse = kwargs.pop("reverse", False)
        if kwargs.get("order") == "C":        # np.reshape(x, shape) passes numpy's default order (and copy=)
            kwargs.pop("order")
            kwargs.pop("copy", None)
        if kwargs:
            raise MXNetError(f"reshape: unexpected arguments {sorted(kwargs)}")
        return _op_call("Reshape", (self,), {"shape": tuple(shape), "reverse": reverse})

    # flatten / squeeze / expand_dims: inplace=True returns a reshaped view sharing this array's memory (MXNet)
    def flatten(self, inplace=False):
        return self._reshape_family("Flatten", inplace)

    def squeeze(self, axis=None, inplace=False):
        return self._reshape_family("squeeze", inplace, axis=axis)

    def expand_dims(self, axis, inplace=False):
        return self._reshape_family("expand_dims", inplace, axis=axis)

    def _reshape_family(self, name, inplace, **attrs):
        op = _op(name)
        attrs = op.parse(attrs)
        if not inplace:
            return dispatch.apply(op, (self,), attrs)
        shapes, _ = infer_shapes(op, [self.shape], [self._data.dtype], attrs)
        return self.reshape(shapes[0])

    def zeros_like(self):
        return zeros_like_array(self)

    def ones_like(self):
        return ones_like_array(self)


def _as_numpy(value):
    """NDArrays (also inside lists, tuples and dicts) as numpy arrays, for numpy's ufuncs: a CPU array's buffer
    itself (as __array__ gives it), a GPU array's copy on the host."""
    if isinstance(value, NDArray):
        return np.asarray(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_as_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: _as_numpy(v) for k, v in value.items()}
    return value


def _numpy_call(func, args, kwargs):
    """A ufunc's func(*args, **kwargs) on the numpy values of NDArray arguments. NDArrays given as out= receive the result
    (numpy writes into a CPU array's buffer, a GPU array gets it copied back; either counts as an in-place write)
    and are returned as numpy returns its out."""
    out = kwargs.get("out")
    targets = out if isinstance(out, tuple) else (out,)
    arrays = [o for o in targets if isinstance(o, NDArray)]
    if not arrays:
        return func(*_as_numpy(args), **_as_numpy(kwargs))
    for o in arrays:
        o._check_assignable()
    host = tuple(_as_numpy(o) for o in targets)
    func(*_as_numpy(args), **{**_as_numpy(kwargs), "out": host if isinstance(out, tuple) else host[0]})
    for o, h in zip(targets, host):
        if isinstance(o, NDArray):
            if o._ctx.device_type == "gpu":
                o._data[...] = array_module(o._ctx).asarray(h)
            o._bump_version()
    return out[0] if isinstance(out, tuple) and len(out) == 1 else out    # a ufunc's out comes as a tuple


def _num_gpus():
    return num_gpus()


def _unpickle(state):
    arr = NDArray.__new__(NDArray)
    arr.__setstate__(state)
    return arr


# ---------------------------------------------------------------------------------------------------------
# dispatch helpers
_OP_CACHE = {}


def _op(name):
    op = _OP_CACHE.get(name)
    if op is None:
        op = _OP_CACHE[name] = registry.get(name)
    return op


_apply = dispatch.apply


def _op_call(name, inputs, attrs):
    """Calls a registry op with already-typed attrs (defaults filled from the schema)."""
    op = _op(name)
    if len(attrs) != len(op.attrs):
        attrs = op.parse(attrs)
    return dispatch.apply(op, inputs, attrs)


def _binary(lhs, rhs, array_op, scalar_op):
    """lhs <op> rhs where lhs is an NDArray: NDArray (or numpy) rhs -> broadcasting op, number -> scalar op.

    Reflected operators (`2 - x`) pass array_op=None: Python only reflects for non-NDArray left operands, and a
    numpy left operand is handled by numpy through __array_ufunc__, so only numbers reach them.
    """
    if isinstance(rhs, np.ndarray) and array_op is not None:
        rhs = array(rhs, ctx=lhs._ctx, dtype=lhs._data.dtype)
    if isinstance(rhs, NDArray):
        return dispatch.apply(_OP_CACHE.get(array_op) or _op(array_op), (lhs, rhs), _NO_ATTRS)
    if isinstance(rhs, (int, float)) or isinstance(rhs, numbers.Number) or (
            isinstance(rhs, np.generic) and rhs.ndim == 0):
        return dispatch.apply(_OP_CACHE.get(scalar_op) or _op(scalar_op), (lhs,), {"scalar": float(rhs)})
    return NotImplemented


_NO_ATTRS = {}


def _operator_method(entry, reflected):
    """NDArray's method for an operator of mixnet/_operator_table.py."""
    array_op, scalar_op = entry.array_op, entry.scalar_op
    if reflected:
        # Python reflects only for a non-NDArray left operand, and a numpy one is handled by numpy through
        # __array_ufunc__, so only numbers reach here
        def method(self, other):
            return _binary(self, other, None, entry.rscalar_op)
        return method

    def method(self, other):
        try:
            if type(other) is NDArray:         # the hot path: one call into the dispatcher
                return _apply(_OP_CACHE.get(array_op) or _op(array_op), (self, other), _NO_ATTRS)
            return _binary(self, other, array_op, scalar_op)
        except MXNetError as err:
            __tracebackhide__ = True    # noqa: F841 - IPython and pytest hide this frame
            raise hide_internals(err)   # mixnet's own frames are cut: MIXNET_FULL_TRACEBACK=1 shows them
    return method


install_operators(NDArray, _operator_method)
# numpy ufunc -> the Python operator it implements (for a numpy scalar on the left of an NDArray)
_UFUNC_OPERATORS = {getattr(np, spec.ufunc): getattr(operator, name) for name, spec in OPERATORS.items()}


# ---------------------------------------------------------------------------------------------------------
# indexing keys
def _index_key(key):
    """Normalizes a user's index: NDArray indices become backend integer arrays, lists become arrays."""
    if isinstance(key, tuple):
        return tuple(_index_part(k) for k in key)
    return _index_part(key)


def _index_part(k):
    if isinstance(k, NDArray):
        return k.asnumpy().astype(np.int64)
    if isinstance(k, list):
        return np.asarray(k, dtype=np.int64) if all(isinstance(i, numbers.Integral) for i in k) \
            else np.asarray(k)
    if isinstance(k, np.ndarray) and k.dtype.kind == "f":
        return k.astype(np.int64)
    return k


def _whole_array_key(key):
    """x[:] / x[...] / x[None]: MXNet copies the value into the whole array (no recorded op)."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in parts)


def _is_basic(key):
    parts = key if isinstance(key, tuple) else (key,)
    return all(isinstance(k, (numbers.Integral, slice)) or k is None or k is Ellipsis for k in parts)


def _legacy_scalar_key(key, ndim):
    """MXNet 1.x has no 0-d results from indexing: x[i] on 1-D (or x[i, j] on 2-D) is shape (1,)."""
    parts = key if isinstance(key, tuple) else (key,)
    ints = [i for i, k in enumerate(parts) if isinstance(k, numbers.Integral)]
    if not ints or len(ints) != ndim or any(k is None for k in parts):
        return key
    last = ints[-1]
    k = int(parts[last])
    parts = list(parts)
    parts[last] = slice(k, k + 1) if k != -1 else slice(-1, None)
    return tuple(parts)


# ---------------------------------------------------------------------------------------------------------
# creation and interop
def array(source_array, ctx=None, dtype=None):
    """Creates an NDArray from a nested list, a numpy array or another NDArray (copied).

    Parameters
    ----------
    source_array : array_like or NDArray
        The values.
    ctx : Context, optional
        The device (default: the current context, `mx.cpu()` unless a `with mx.gpu():` block says otherwise).
    dtype : str or numpy dtype, optional
        float32 unless given, even from int64 numpy data (MXNet 1.x); an NDArray source keeps its dtype.

    Returns
    -------
    NDArray

    Examples
    --------
    >>> import mixnet as mx
    >>> x = mx.nd.array([[1, 2], [3, 4]])
    >>> x.dtype, x.shape
    (<class 'numpy.float32'>, (2, 2))
    >>> (x * x).asnumpy().tolist()
    [[1.0, 4.0], [9.0, 16.0]]
    >>> mx.nd.array([1, 2], dtype="int32").dtype
    <class 'numpy.int32'>
    """
    ctx = ctx or current_context()
    if isinstance(source_array, NDArray):
        dtype = source_array._data.dtype if dtype is None else dtype
        source_array = source_array.asnumpy()
    np_dtype = dtype_np(dtype)
    xp = np if ctx.device_type != "gpu" else array_module(ctx)
    try:
        data = xp.array(source_array, dtype=np_dtype)
    except (ValueError, TypeError) as err:
        raise MXNetError(f"array: cannot make an array from {type(source_array).__name__}: {err}") from None
    return _wrap(data, ctx)


def empty(shape, ctx=None, dtype=None):
    ctx = ctx or current_context()
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    try:
        shape = check_shape(shape)          # refuse a negative or over-limit shape before allocating
    except MXNetError as err:
        raise MXNetError(f"empty: {err}") from None
    xp = np if ctx.device_type != "gpu" else array_module(ctx)
    return _wrap(xp.empty(shape, dtype=dtype_np(dtype)), ctx)


def zeros_like_array(x, value=0):
    """A constant array shaped like x (no op recorded): autograd's zero gradients and default head gradient."""
    xp = np if x._ctx.device_type != "gpu" else array_module(x._ctx)
    data = xp.empty(x._data.shape, dtype=x._data.dtype)
    data.fill(value)                         # (xp.full is a Python function: twice the cost, on every backward)
    return _wrap(data, x._ctx)


def ones_like_array(x, value=1):
    return zeros_like_array(x, value)


def from_numpy(ndarray, zero_copy=True):
    """Wraps a numpy array. zero_copy (MXNet's default): shares its memory, which must be C-contiguous, and makes
    the numpy array read-only; otherwise a copy."""
    if not isinstance(ndarray, np.ndarray):
        raise MXNetError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    if zero_copy and not ndarray.flags.c_contiguous:
        raise OpError(f"from_numpy: zero_copy needs a C-contiguous array (shape {ndarray.shape}, strides "
                      f"{ndarray.strides}); pass zero_copy=False or numpy.ascontiguousarray(a)")
    dtype_np(ndarray.dtype)
    if not zero_copy:
        return _wrap(np.ascontiguousarray(ndarray).copy(), cpu())
    # MXNet takes the buffer over: the NDArray writes through, the numpy array becomes read-only (an array made
    # from a memoryview exported while it was writable stays writable; a plain view would not)
    if not ndarray.flags.writeable:
        try:        # one handed over before (MXNet writes into its buffer just the same)
            ndarray.flags.writeable = True
        except ValueError:
            pass    # memory numpy cannot write (a read-only buffer): the NDArray is read-only too
    data = np.asarray(memoryview(ndarray)) if ndarray.size else ndarray.copy()
    if data.dtype != ndarray.dtype:
        data = data.view(ndarray.dtype)
    ndarray.flags.writeable = False
    return _wrap(data, cpu())


class _CapsuleHolder:
    """Lets numpy/cupy's from_dlpack take a bare PyCapsule, as MXNet's from_dlpack does."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def to_dlpack_for_read(data):
    return data._data.__dlpack__()


def to_dlpack_for_write(data):
    """A capsule through which the consumer may write (a versioned DLPack capsule, which numpy 2 imports
    writable; older numpy has only the legacy form, which it imports writable too)."""
    data._bump_version()
    try:
        return data._data.__dlpack__(max_version=(1, 0))
    except TypeError:
        return data._data.__dlpack__()


_DLPACK_CUDA = 2      # DLDeviceType kDLCUDA


def from_dlpack(dlpack):
    """Wraps a DLPack capsule (or any object with __dlpack__) without copying: host memory as a CPU array, a GPU's
    memory (read by cupy) as an array on that GPU."""
    source = dlpack if hasattr(dlpack, "__dlpack__") else _CapsuleHolder(dlpack, (1, 0))
    on_gpu = hasattr(dlpack, "__dlpack_device__") and dlpack.__dlpack_device__()[0] == _DLPACK_CUDA
    if not on_gpu:
        try:
            return _wrap(np.from_dlpack(source), cpu())
        except BufferError:
            if num_gpus() == 0:     # a bare capsule names its device only inside; numpy refuses a GPU's
                raise
    data = array_module(gpu_context(0)).from_dlpack(dlpack)
    return _wrap(data, Context("gpu", data.device.id))


def waitall():
    """Blocks until every queued computation has finished: nothing is pending on the CPU; on GPUs, waits for each
    device's stream (cupy launches kernels asynchronously, so a timing without this measures only the launches)."""
    if "cupy" in sys.modules:
        for device_id in range(num_gpus()):
            _synchronize(Context("gpu", device_id))


def _synchronize(ctx):
    import cupy
    with cupy.cuda.Device(ctx.device_id):
        cupy.cuda.get_current_stream().synchronize()
