"""The user's side of the stack: their source line (for graph nodes and error messages), warnings that point at
it (tracebacks without mixnet's own frames: `_traceback.py`).

A frame is mixnet's when its file is inside this package (generated graph code, `<mixnet graph N>`, included) or
the stdlib's contextlib (mixnet's scopes). In IPython a cell's file (`/tmp/ipykernel_NNN/NNNN.py`) is shown as
IPython shows it: `Cell In[3], line 13`. IPython is never imported here: only asked when the program runs in it.
"""
import os
import sys
import warnings

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB = os.path.dirname(os.__file__) + os.sep
_SKIP = (_PKG_DIR, _STDLIB + "contextlib.py", "<mixnet graph ")
# where a thread starts: code reached from there alone (mixnet's background compiles) has no user line
_THREAD_START = (_STDLIB + "threading.py", _STDLIB + "concurrent" + os.sep)


def _internal(filename):
    return filename.startswith(_SKIP)


def user_frame():
    """(filename, lineno, function) of the nearest caller outside mixnet, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _internal(filename):
            return filename, frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return None


def _ipython_cell(filename):
    """'Cell In[3]' when `filename` is an IPython cell of the running shell, else None."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    format_code_name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if format_code_name is None:
        return None
    try:
        label = format_code_name(filename)     # ('Cell', 'In[3]') for a cell, None for a file
    except Exception:                          # noqa: BLE001 - a shell of another make: fall back to the path
        return None
    return f"{label[0]} {label[1]}" if label else None


def location_text(filename, lineno, function=None):
    """'file.py:12' ('file.py:12 in fn' with a function), or 'Cell In[3], line 12' (', in fn') in IPython."""
    cell = _ipython_cell(filename)
    if cell is not None:
        return f"{cell}, line {lineno}" + (f", in {function}" if function else "")
    if not filename.startswith("<"):
        try:
            filename = os.path.relpath(filename)
        except ValueError:      # another drive (Windows): keep the absolute path
            pass
    return f"{filename}:{lineno}" + (f" in {function}" if function else "")


def user_location(with_function=False):
    """'file.py:12' of the user's line (a graph node's location), or 'file.py:12 in fn' with_function (an op's error
    message); in IPython 'Cell In[3], line 12'. None when called from mixnet itself."""
    loc = user_frame()
    if loc is None:
        return None
    return location_text(loc[0], loc[1], loc[2] if with_function else None)


def warn(message, category=UserWarning):
    """warnings.warn pointing at the user's line: the nearest frame outside mixnet (the direct caller when there
    is none, e.g. in a thread of mixnet's own). Every warning mixnet issues goes through here."""
    frame, level = sys._getframe(1), 2
    while frame is not None and _internal(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    if frame is None or frame.f_code.co_filename.startswith(_THREAD_START):
        level = 2
    warnings.warn(message, category, stacklevel=level)
