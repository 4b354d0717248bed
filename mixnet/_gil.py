"""Background loading that hands the GIL back to the user's thread quickly.

A background thread that imports Numba and loads cached machine code runs Python for ~0.2-0.3 s. Meanwhile the
user's thread mostly runs GIL-free code (a BLAS call, a ufunc) and needs the GIL back between those calls. With
the interpreter's default switch interval (5 ms) it waits up to 5 ms each time, so a 5-ms training step took
~12 ms during the load. `handing_back_often()` lowers the interval while such a section runs in a thread other than
the main one, so the main thread waits ~20 us instead: on the MLP step of benchmarks/mlp.py the time the main
thread lost to the load fell from ~0.21 to ~0.15 s (benchmarks/README.md, "The loading window").

Only CPU-bound loading is wrapped, never a wait on a compiling child: a short interval costs threads that contend
with each other a little more switching, which is worth it for a fraction of a second, not for a long compile.
Sections may overlap across threads; the interval is restored when the last one ends, unless someone set another
value meanwhile (that value is kept).
"""
import contextlib
import sys
import threading

SWITCH_INTERVAL = 2e-5      # seconds; 1e-5 and 5e-6 measured no better, 5e-4 barely better than the default

_lock = threading.Lock()
_sections = 0
_saved = None               # the interval before the first open section
_set = None                 # the interval as the interpreter reports it after we set it (it rounds to microseconds)


@contextlib.contextmanager
def handing_back_often():
    if threading.current_thread() is threading.main_thread():
        yield             # the user's own thread: nobody to hand the GIL to that matters more
        return
    _enter()
    try:
        yield
    finally:
        _leave()


def _enter():
    global _sections, _saved, _set
    with _lock:
        if _sections == 0:
            _saved = sys.getswitchinterval()
            if _saved > SWITCH_INTERVAL:
                sys.setswitchinterval(SWITCH_INTERVAL)
            _set = sys.getswitchinterval()
        _sections += 1


def _leave():
    global _sections
    with _lock:
        _sections -= 1
        if _sections == 0 and sys.getswitchinterval() == _set:
            sys.setswitchinterval(_saved)
