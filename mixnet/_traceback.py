"""Tracebacks without mixnet's own frames, for the boundaries between the user and mixnet (op calls, Block calls,
backward, Trainer.step, DataLoader iteration). Apart from `_source` because it reads a flag: `config` warns through
`_source`, so `_source` stays below `config`."""
import types

from . import config
from ._source import _internal


def hide_internals(err):
    """`err` with mixnet's frames cut out of its traceback, for a boundary between the user and mixnet to re-raise:

        except MXNetError as err:
            __tracebackhide__ = True        # IPython and pytest hide this frame too
            raise hide_internals(err)

    The user's frames (their forward(), hybrid_forward(), gradient functions) stay, in order; the re-raise adds
    the boundary's own frame once. The exception, its message and its __cause__/__context__ chain are untouched.
    MIXNET_FULL_TRACEBACK=1 (config.FULL_TRACEBACK, read now) keeps every frame: only the boundary's own entry
    is dropped, which the re-raise puts back."""
    tb = err.__traceback__
    if tb is None:
        return err
    if config.FULL_TRACEBACK:
        return err.with_traceback(tb.tb_next)
    kept = []
    while tb is not None:
        if not _internal(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    chain = None
    for entry in reversed(kept):
        chain = types.TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return err.with_traceback(chain)
