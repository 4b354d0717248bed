"""Find the user's line: the innermost stack frame that is not inside mixnet (or the stdlib's contextlib)."""
import os
import sys

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_SKIP = (_PKG_DIR, os.path.dirname(os.__file__) + os.sep + "contextlib.py")


def user_frame():
    """(filename, lineno, function) of the nearest caller outside mixnet, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_SKIP):
            return filename, frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return None


def user_location():
    """'file.py:12 in fn' for error messages; empty when called from mixnet itself."""
    loc = user_frame()
    if loc is None:
        return ""
    return f"{os.path.relpath(loc[0]) if not loc[0].startswith('<') else loc[0]}:{loc[1]} in {loc[2]}"
