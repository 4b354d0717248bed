"""mixnet's loggers: `logging.getLogger("mixnet")` and its children, one per module (`logging.getLogger(__name__)`).

As the logging HOWTO asks of a library, mixnet adds only a NullHandler to its top logger and never configures
logging: what its records look like and where they go is the application's choice (`logging.basicConfig(level=
logging.INFO)` shows the learning-rate and checkpoint messages, as with MXNet).

The diagnostic switches (MIXNET_LOG_COMPILES, MIXNET_SHOW_CODE; mixnet/config.py) are DEBUG records that the
switch forces out: `debug(logger, switch, ...)` with the switch on hands the record to the handlers whatever the
loggers' levels, or, when the application configured no handler that would receive it, writes it to stderr
itself, since a switch someone turned on must show something. With the switch off the record goes out only where a
mixnet logger is set to DEBUG, as any DEBUG record would.
"""
import logging
import sys

__all__ = ["debug", "debug_wanted"]

logging.getLogger("mixnet").addHandler(logging.NullHandler())


class _Stderr(logging.StreamHandler):
    """Writes to the sys.stderr of the moment (a notebook kernel or a test replaces it after import)."""

    def __init__(self):
        logging.Handler.__init__(self)
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    @property
    def stream(self):
        return sys.stderr


_STDERR = _Stderr()


def _handled(logger):
    """Whether a record of `logger` reaches a handler other than a NullHandler (the application's)."""
    while logger is not None:
        if any(not isinstance(handler, logging.NullHandler) for handler in logger.handlers):
            return True
        if not logger.propagate:
            return False
        logger = logger.parent
    return False


def debug_wanted(logger, switch):
    """Whether a DEBUG record of `logger` would be shown: its switch is on, or the logger is enabled for DEBUG.
    Callers test it before building an expensive message (a kernel's source)."""
    return bool(switch) or logger.isEnabledFor(logging.DEBUG)


def debug(logger, switch, msg, *args):
    """Logs `msg % args` at DEBUG; forced out (see the module's docstring) when `switch` is on."""
    if not switch:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(msg, *args, stacklevel=2)
        return
    caller = sys._getframe(1)
    record = logger.makeRecord(logger.name, logging.DEBUG, caller.f_code.co_filename, caller.f_lineno, msg, args,
                               None, caller.f_code.co_name)
    if _handled(logger):
        logger.handle(record)
    elif not logger.disabled:
        _STDERR.handle(record)
