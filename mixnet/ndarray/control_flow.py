"""Eager control flow, `mx.nd.contrib.foreach / while_loop / cond`, with MXNet 1.x signatures and output
conventions. Eagerly they are Python loops over ordinary ops, so autograd records every step and gradients
(of closed-over arrays too) accumulate across iterations exactly as in MXNet.

Deliberate difference: while_loop's padding rows (up to max_iterations) are zeros, not uninitialized memory.
"""
from .._nest import flatten, unflatten
from ..base import MXNetError
from ..symbol import control_flow as symbolic
from ._internal import _zeros
from .ndarray import NDArray
from .op import concat, stack


def _array_leaf(x):
    return ([x], "x") if isinstance(x, NDArray) else None


def _flatten(obj, what):
    """Nested lists of NDArrays -> (flat list, structure): mixnet/_nest.py, regrouped as lists as MXNet does."""
    return flatten(obj, _array_leaf, f"{what} must be an NDArray or a (nested) list of NDArrays", keep_tuples=False)


def foreach(body, data, init_states):
    """Runs body(data_slice, states) -> (outputs, new_states) over axis 0 of data; per-step outputs are
    stacked on a new axis 0. Returns (outputs, final_states) with the nesting of the body's outputs and of
    init_states."""
    if _traced(data):
        return symbolic.foreach(body, data, init_states)
    flat_data, data_fmt = _flatten(data, "foreach data")
    lengths = {x.shape[0] for x in flat_data}
    if len(lengths) != 1:
        raise MXNetError(f"foreach: every data array must have the same length on axis 0, got {sorted(lengths)}")
    states = init_states
    _, state_fmt = _flatten(init_states, "foreach init_states")
    steps, out_fmt = [], None
    for i in range(lengths.pop()):
        slices = [x[i] for x in flat_data]       # legacy shapes: a 1-D array's slice is (1,), as in MXNet
        step_data = unflatten(slices, data_fmt)
        outputs, states = body(step_data, states)
        flat_out, out_fmt = _flatten(outputs, "foreach body outputs")
        flat_states, fmt = _flatten(states, "foreach body states")
        if fmt != state_fmt:
            raise MXNetError("foreach: the body must return states with the same structure as init_states")
        steps.append(flat_out)
    if not steps:
        raise MXNetError("foreach: data has length 0 on axis 0")
    stacked = [stack(*[s[k] for s in steps], axis=0) for k in range(len(steps[0]))]
    return unflatten(stacked, out_fmt), states


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Runs func(*loop_vars) -> (step_output, new_loop_vars) while cond(*loop_vars); step outputs are stacked on
    axis 0 and padded with zero rows to max_iterations (MXNet pads with uninitialized memory), nested as func
    returns them (a single array, or lists). No step run: no outputs ([]), as in MXNet."""
    if _traced(loop_vars):
        return symbolic.while_loop(cond, func, loop_vars, max_iterations)
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    single = isinstance(loop_vars, NDArray)
    variables = [loop_vars] if single else list(loop_vars)
    steps, steps_taken = [], 0
    while steps_taken < max_iterations and _truth(cond(*variables)):
        step_out, new_vars = func(*variables)
        new_vars = [new_vars] if isinstance(new_vars, NDArray) else list(new_vars or [])
        if len(new_vars) != len(variables):
            raise MXNetError(f"while_loop: func returned {len(new_vars)} loop variables, expected {len(variables)}")
        old_flat, old_fmt = _flatten(variables, "while_loop loop_vars")      # loop variables may be nested lists
        new_flat, new_fmt = _flatten(new_vars, "while_loop new loop_vars")
        if new_fmt != old_fmt:
            raise MXNetError("while_loop: func must return loop variables nested as loop_vars are")
        for old, new in zip(old_flat, new_flat):
            if old.shape != new.shape or old.dtype != new.dtype:
                raise MXNetError(f"while_loop: a loop variable changed from {old.shape} {old.dtype.__name__} to "
                                 f"{new.shape} {new.dtype.__name__}; shapes and dtypes must stay the same")
        variables = new_vars
        flat_out, out_fmt = _flatten([] if step_out is None else step_out, "while_loop step outputs")
        steps.append(flat_out)
        steps_taken += 1
    if not steps:
        return [], (variables[0] if single else variables)      # MXNet: no step ran, no outputs
    outputs = []
    for k in range(len(steps[0])):
        rows = [s[k] for s in steps]
        stacked = stack(*rows, axis=0)
        pad = max_iterations - len(rows)
        if pad:
            zero_rows = _zeros(shape=(pad,) + rows[0].shape, ctx=rows[0].context, dtype=rows[0].dtype)
            stacked = concat(stacked, zero_rows, dim=0)
        outputs.append(stacked)
    # nested as func returned them: a single array stays single (MXNet 1.9.1's regrouping)
    return unflatten(outputs, out_fmt), (variables[0] if single else variables)


def _truth(pred):
    if isinstance(pred, NDArray):
        if pred.size != 1:
            raise MXNetError(f"while_loop/cond: the condition must have one element, got shape {pred.shape}")
        return bool(pred.asscalar())
    return bool(pred)


def cond(pred, then_func, else_func):
    """then_func() if pred else else_func(); only the branch taken is run (and differentiated)."""
    if _traced(pred):
        return symbolic.cond(pred, then_func, else_func)
    return then_func() if _truth(pred) else else_func()


def _traced(value):
    """True for Symbols (hybridize tracing 2.0-style code that calls mx.nd.contrib.*)."""
    first = value[0] if isinstance(value, (list, tuple)) and value else value
    return type(first).__name__ == "Symbol"
