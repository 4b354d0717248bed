"""Environment flags, read once at import. Each flag is documented here and nowhere else.

MIXNET_DEBUG_ERRORS=1   keep the underlying numpy/cupy exception chained under mixnet's operator errors
                        (by default the OpError alone is shown: it names the op, shapes, dtypes and your line).
"""
import os


def _flag(name, default=False):
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in ("", "0", "false", "no", "off")


DEBUG_ERRORS = _flag("MIXNET_DEBUG_ERRORS")
