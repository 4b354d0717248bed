"""Progress bars for `Estimator.fit`/`evaluate`: a widget in Jupyter, a text bar in a terminal (`tqdm.auto`).

Shown by default only where someone watches: in a Jupyter kernel, or when stderr is a terminal; never in a
pipe, a log file or a test run unless asked (``LoggingHandler(progress=True)``). tqdm is imported on first use,
so a run that shows no bar never pays for it. Per batch the cost is one counter update and one clock read;
metric values are read only when the bar will be redrawn (at most every `MININTERVAL` seconds).
"""
import contextlib
import importlib.util
import sys
import time

MININTERVAL = 0.2     # seconds between redraws: a tiny model runs thousands of batches a second
_open_bars = []       # bars now on screen (log lines must clear them first in a terminal)


def in_notebook():
    """True inside a Jupyter kernel (where tqdm.auto draws a widget)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # noqa: BLE001  (a half-initialised IPython: treat as no notebook)
        return False
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def wanted(progress):
    """Whether to draw bars: `progress` True/False, or None for 'where someone watches'."""
    if progress is not None:
        return bool(progress)
    if in_notebook():
        return True
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):   # a replaced or closed stderr
        return False


def write_mode():
    """A context that lifts open terminal bars out of the way while a log line is written."""
    if not _open_bars:
        return contextlib.nullcontext()
    return type(_open_bars[-1]).external_write_mode()


def _short(name):
    for prefix in ("training ", "validation "):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _tqdm_class():
    """tqdm.auto's choice (a widget in Jupyter), but tqdm's text bar in a notebook without ipywidgets, where
    tqdm.auto would warn and fall back to it anyway. Imported only when a bar is drawn: tqdm.auto inspects IPython
    on import."""
    if in_notebook() and importlib.util.find_spec("ipywidgets") is None:
        from tqdm.std import tqdm
    else:
        from tqdm.auto import tqdm
    return tqdm


class Bar:
    """One tqdm bar for one pass over a data loader; `metrics` fill its postfix."""

    def __init__(self, total, desc, metrics, leave=True):
        tqdm = _tqdm_class()
        self._metrics = metrics
        self._bar = tqdm(total=total, desc=desc, leave=leave, mininterval=MININTERVAL, unit="batch",
                         dynamic_ncols=True, disable=False)
        self._next_postfix = 0.0
        _open_bars.append(self._bar)

    def update(self):
        now = time.monotonic()
        if now >= self._next_postfix:
            self._next_postfix = now + MININTERVAL
            self._bar.set_postfix_str(self._postfix(), refresh=False)
        self._bar.update(1)
        if self._bar.total is not None and self._bar.n >= self._bar.total:
            self.close()

    def _postfix(self):
        # the bar's description already says training or validation: drop the metric names' prefix
        return ", ".join(f"{_short(name)}={value:.4f}" for name, value in (m.get() for m in self._metrics))

    @property
    def closed(self):
        return self._bar not in _open_bars

    def close(self):
        if self.closed:
            return
        self._bar.set_postfix_str(self._postfix(), refresh=False)
        _open_bars.remove(self._bar)
        self._bar.close()
