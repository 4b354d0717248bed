"""Small helpers shared by the text and HTML reprs (`_repr_html_`, what Jupyter shows) of NDArray, Block,
Parameter, Trainer, DataLoader, Optimizer and Metric.

Every piece of text that reaches HTML goes through `esc` (html.escape): names come from users and from loaded
files (a block or parameter may be called `<script>`). Cells are escaped by `table` unless wrapped in `Html`,
which marks a fragment built here from escaped parts. Array previews and statistics read only what they show:
the corners of a large array (as numpy's print options summarise it), and reductions, never a full host copy.
"""
import html
import warnings

import numpy as np

__all__ = ["Html", "Name", "esc", "table", "heading", "box", "badge", "pre", "shape_text", "array_tag", "preview",
           "summary_stats", "array_html", "call_text", "facts_html"]

# Statistics are shown from this many elements on: below it every value is on screen already.
STATS_FROM = 16

_STYLE = ("font-family:monospace;font-size:12px;border:1px solid #ccc;border-radius:4px;padding:4px 8px;"
          "display:inline-block;max-width:100%;overflow-x:auto")
_CELL = "text-align:left;padding:1px 8px;border:none"


class Html(str):
    """A fragment of HTML built from escaped parts: `table` and `box` insert it as it is."""


class Name(str):
    """A class name as a fact's value: `call_text` writes it bare (dataset=ArrayDataset), not quoted."""

    def __repr__(self):
        return str(self)


def esc(value):
    """The HTML-escaped text of value (quotes too, so it is safe inside attributes)."""
    return value if isinstance(value, Html) else html.escape(str(value), quote=True)


def table(rows, header=None):
    """An HTML table of rows (lists of cells: text, escaped here, or Html); `header` names the columns."""
    parts = ['<table style="border-collapse:collapse;margin:2px 0">']
    if header:
        parts.append("<tr>" + "".join(f'<th style="{_CELL};border-bottom:1px solid #ccc">{esc(c)}</th>'
                                      for c in header) + "</tr>")
    for row in rows:
        parts.append("<tr>" + "".join(f'<td style="{_CELL}">{esc(c)}</td>' for c in row) + "</tr>")
    parts.append("</table>")
    return Html("".join(parts))


def badge(text, title=None):
    """A small label (e.g. 'hybridized: 2 plans'); `title` is shown on hover."""
    tip = f' title="{esc(title)}"' if title else ""
    return Html(f'<span{tip} style="background:#e8f0fe;border-radius:3px;padding:0 4px;margin-left:6px">'
                f"{esc(text)}</span>")


def heading(name, *details):
    """A title line: the bold name (a class name), then details (text or Html), space-separated."""
    return Html(f"<b>{esc(name)}</b>" + "".join(" " + esc(d) for d in details if d))


def box(title, *parts):
    """The frame of every HTML repr: a title line (text or Html, see `heading`) and the parts below it."""
    return Html(f'<div class="mixnet-repr" style="{_STYLE}"><div>{esc(title)}</div>'
                + "".join(esc(p) for p in parts) + "</div>")


def pre(text):
    return Html(f'<pre style="margin:2px 0">{esc(text)}</pre>')


def shape_text(shape):
    """MXNet's shape spelling in reprs: '2x3'; a 0-d array is 'scalar' (MXNet prints nothing there)."""
    return "x".join(str(d) for d in shape) or "scalar"


def array_tag(kind, shape, dtype, ctx):
    """The last line of an array's text repr: '<NDArray 2x3 @cpu(0)>' as MXNet prints it, with the dtype
    after the shape when it is not float32 ('<NDArray 2 int32 @cpu(0)>'): float16, float32 and int32
    values can print alike."""
    name = np.dtype(dtype).name
    return f"<{kind} {shape_text(shape)}{'' if name == 'float32' else ' ' + name} @{ctx}>"


def _host(data):
    return data if isinstance(data, np.ndarray) else data.get()


def preview(data):
    """numpy's text of a buffer (numpy or cupy) under the current np.printoptions, reading only the corners
    numpy would show: a large array is first cut to its first and last `edgeitems` along every long axis with
    one element kept in between, which numpy then summarises to '...' exactly as it would the whole array."""
    opts = np.get_printoptions()
    edge, threshold = opts["edgeitems"], opts["threshold"]
    if data.size <= threshold:
        return str(_host(data))
    for axis, n in enumerate(data.shape):
        if n > 2 * edge + 1:
            keep = list(range(edge + 1)) + list(range(n - edge, n))
            data = data.take(keep, axis=axis)
    with np.printoptions(threshold=0):      # the cut array is small: summarise it as numpy did the original
        return str(_host(data))


def _scalar(x):
    """A Python number from a reduction's result (numpy scalar, 0-d cupy array: copied to the host)."""
    return x.item() if hasattr(x, "item") else x


def _fmt(value):
    if isinstance(value, np.floating):
        value = float(value)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        text = repr(value)           # 0.1, 0.0, 1e-08 as written; 0.30000000000000004 and float32 noise cut
        return text if len(text) <= 12 else f"{value:.6g}"
    return str(value)


def summary_stats(data, xp=np):
    """[(label, text)] for a non-empty buffer of array module xp (numpy or cupy): min, max, mean, and for
    floating types the NaN and inf counts; min/max/mean leave NaNs out. Reductions only (a float64 accumulator
    for the mean: float16 and integer sums must not overflow); one boolean mask per count."""
    kind = data.dtype.kind
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)      # all-NaN slices, inf - inf
        if kind == "f":
            nans = int(_scalar(xp.count_nonzero(xp.isnan(data))))
            infs = int(_scalar(xp.count_nonzero(xp.isinf(data))))
            if nans == data.size:
                return [("min", "nan"), ("max", "nan"), ("mean", "nan"), ("NaN", str(nans)), ("inf", str(infs))]
            lo, hi = float(_scalar(xp.nanmin(data))), float(_scalar(xp.nanmax(data)))
            mean = float(_scalar(xp.nanmean(data, dtype=np.float64) if nans else data.mean(dtype=np.float64)))
            return [("min", _fmt(lo)), ("max", _fmt(hi)), ("mean", _fmt(mean)), ("NaN", str(nans)),
                    ("inf", str(infs))]
        lo, hi = _scalar(data.min()), _scalar(data.max())
        mean = float(_scalar(data.mean(dtype=np.float64)))
    return [("min", _fmt(lo)), ("max", _fmt(hi)), ("mean", _fmt(mean))]


def array_html(arr, kind="NDArray", storage=()):
    """The HTML repr of an NDArray (or a sparse one: `storage` adds its [(label, text)] structure rows)."""
    data = arr._data
    head = heading(kind, shape_text(data.shape), Html(f"<code>{esc(np.dtype(data.dtype).name)}</code>"),
                   f"@{arr._ctx}")
    facts = list(storage) + (summary_stats(data, arr._ctx.xp) if data.size >= STATS_FROM else [])
    values = pre(preview(data)) if data.size else Html("<div><i>empty</i></div>")
    return box(head, values, table([[v for _, v in facts]], [k for k, _ in facts]) if facts else "")


def call_text(name, facts):
    """'Name(key=value, ...)': the one-line text repr of an object described by [(key, value)] facts."""
    def text(v):
        return _fmt(v) if isinstance(v, (float, np.floating)) else repr(v)
    return f"{name}(" + ", ".join(f"{k}={text(v)}" for k, v in facts) + ")"


def facts_html(name, facts, subtitle=""):
    """The HTML repr of an object described by [(key, value)] facts: its name, then a two-column table."""
    return box(heading(name, subtitle), table([[k, _fmt(v)] for k, v in facts]))
