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


def user_location(with_function=False):
    """'file.py:12' of the user's line (a graph node's location), or 'file.py:12 in fn' with_function (an op's error
    message); None when called from mixnet itself."""
    loc = user_frame()
    if loc is None:
        return None
    filename = loc[0]
    if not filename.startswith("<"):
        try:
            filename = os.path.relpath(filename)
        except ValueError:      # another drive (Windows): keep the absolute path
            pass
    return f"{filename}:{loc[1]} in {loc[2]}" if with_function else f"{filename}:{loc[1]}"
