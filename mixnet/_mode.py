"""Per-thread execution mode read by the one dispatch door: recording onto the tape, training, tracing.

A single ContextVar holding an immutable tuple, so each thread (and each asyncio task) has its own state and a
dispatch reads it with one lookup.
"""
import contextvars
from typing import NamedTuple, Any


class Mode(NamedTuple):
    recording: bool = False
    training: bool = False
    tracer: Any = None          # set while hybridize() traces a block (a later layer)


MODE = contextvars.ContextVar("mixnet_mode", default=Mode())
