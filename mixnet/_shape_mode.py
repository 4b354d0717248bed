"""MXNet 1.x's np-shape mode: a per-thread flag that changes only how shapes read.

Legacy (the default): a shape `()` means "unknown" and a `0` dimension means "unknown size", so no array may be
a scalar or have a zero-size dimension. np-shape (`mx.np_shape()`, `mx.util.set_np_shape(True)`): `()` is a
scalar, `0` is a real size, and `-1` marks what is unknown. A ContextVar, so each thread starts in legacy mode.
"""
import contextvars

NP_SHAPE = contextvars.ContextVar("mixnet_np_shape", default=False)


def is_np_shape():
    return NP_SHAPE.get()


def shape_is_unknown(shape):
    """Whether a creation op's `shape` attribute leaves its output shape (or part of it) to inference:
    `()`, a 0 or a -1 dim in legacy mode (MXNet's graph inference reads `ones(shape=(-1, 2))` as `(0, 2)`), a -1
    dim in np-shape mode."""
    shape = tuple(shape)
    if NP_SHAPE.get():
        return -1 in shape
    return not shape or 0 in shape or -1 in shape


def legacy_shape_error(shape):
    """The message for a shape legacy mode cannot hold (None if it can)."""
    shape = tuple(shape)
    if NP_SHAPE.get() or (shape and 0 not in shape):
        return None
    what = "a scalar" if not shape else "has a zero-size dimension"
    what = "is " + what if not shape else what
    return (f"shape {shape} {what}, which MXNet 1.x's legacy shape semantics read as unknown; use "
            "`with mx.np_shape():` (or mx.util.set_np_shape(True)) for scalar and zero-size arrays")
