"""The one door: every operator call, from nd.*, NDArray methods or gradient rules, goes through `apply`.

Whether it only runs the kernel, also records onto the autograd tape, or hands the call to the object in the
mode's tracer slot (hybridize's check mode uses it to observe every op) is decided here from the per-thread
mode, never inside ops.
"""
import numpy as np

from .. import config
from .._mode import MODE
from .._source import user_location
from .._tape import record_op
from ..base import MXNetError, OpError, OpIndexError
from ..context import current_context
from ..random import _state as random_state

WRAP = None          # (data, ctx) -> NDArray: filled in by mixnet.ndarray at import (it sits above this layer)
PROFILER = None      # the running mx.profiler recorder, set by mixnet/profiler.py; None (one check) when off


def describe_inputs(arrays):
    return ", ".join(f"{tuple(a.shape)} {a.dtype}" for a in arrays) or "no inputs"


def op_error(op, arrays, attrs, err):
    """A clear error naming the op, its inputs' shapes and dtypes, and the user's line."""
    where = user_location(with_function=True)
    shown = {k: v for k, v in attrs.items() if k not in ("ctx",)}
    attr_text = f" with {shown}" if shown else ""
    msg = f"{op.name}: {err} (inputs: {describe_inputs(arrays)}{attr_text})"
    if where:
        msg += f"\n  at {where}"
    return (OpIndexError if isinstance(err, IndexError) else OpError)(msg)


def run_kernel(op, xp, datas, attrs, mode, ctx):
    """Calls the kernel; any input error becomes an OpError naming the op, shapes, dtypes and user line."""
    kwargs = attrs
    try:
        if op.train_aware or op.random:
            kwargs = dict(attrs)
            if op.train_aware:
                kwargs["is_train"] = mode.training
            if op.random:      # the generator of the device the op runs on
                kwargs["rng"] = random_state(ctx)
        return op.kernel(xp, *datas, **kwargs)
    except OpError:
        raise
    except MXNetError as err:
        raise op_error(op, datas, attrs, err) from (err if config.DEBUG_ERRORS else None)
    except (ValueError, TypeError, IndexError, ArithmeticError, np.linalg.LinAlgError) as err:
        raise op_error(op, datas, attrs, err) from (err if config.DEBUG_ERRORS else None)


def _device(op, inputs, attrs):
    """The inputs' common device (equal Context objects may be distinct instances)."""
    ctx = inputs[0]._ctx
    for x in inputs:
        if x._ctx is not ctx and x._ctx != ctx:
            raise op_error(op, [i._data for i in inputs], attrs,
                           f"inputs are on different devices ({', '.join(str(i._ctx) for i in inputs)})")
    return ctx


def apply(op, inputs, attrs):
    """Runs `op` on NDArray `inputs` with parsed `attrs`; returns an NDArray or a tuple of them.

    This is the hot path of eager mode (about 2 us per small op), so it avoids helper calls on the common path.
    """
    mode = MODE.get()
    if mode.tracer is not None:
        return mode.tracer.emit(op, inputs, attrs)
    if PROFILER is not None and PROFILER.wants(op):
        return PROFILER.time_op(op, apply, inputs, attrs)   # times this same call, re-entering once
    if inputs:
        ctx = inputs[0]._ctx
        for x in inputs:
            if x._ctx is not ctx:
                ctx = _device(op, inputs, attrs)
                break
    else:
        ctx = attrs.get("ctx") or current_context()
    datas = [x._data for x in inputs]
    xp = ctx._xp or ctx.xp
    if op.simple_kernel:
        try:
            result = op.kernel(xp, *datas, **attrs)
        except Exception:
            result = run_kernel(op, xp, datas, attrs, mode, ctx)   # re-run to classify and explain the error
    else:
        result = run_kernel(op, xp, datas, attrs, mode, ctx)
        for i in op.mutates:
            inputs[i]._bump_version()
    if type(result) is not tuple:
        out = WRAP(result, ctx)
        if mode.recording:
            for x in inputs:
                if x._node is not None:
                    record_op(op, attrs, inputs, (out,), mode.training)
                    break
        return out
    outputs = tuple([WRAP(r, ctx) for r in result])
    if mode.recording:
        for x in inputs:
            if x._node is not None:
                record_op(op, attrs, inputs, outputs, mode.training)
                break
    nvis = op.num_visible
    if nvis is None:
        return outputs
    if callable(nvis):
        nvis = nvis(attrs)
    return outputs[0] if nvis == 1 else outputs[:nvis]
