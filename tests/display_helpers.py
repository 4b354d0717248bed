"""Reading what Jupyter would show: the mimebundle from IPython's display formatter, and the text of its HTML."""
import html
import re

from IPython.core.formatters import DisplayFormatter

_FORMATTER = DisplayFormatter()


def bundle(obj):
    """{mime type: data} as IPython computes it for display (a formatter error would be printed and the HTML
    left out: `rich` then fails on the missing key)."""
    data, _ = _FORMATTER.format(obj)
    return data


def rich(obj):
    """The text/html IPython shows for obj; its text/plain must be repr(obj)."""
    data = bundle(obj)
    assert data["text/plain"] == repr(obj)
    return data["text/html"]


def cells(page):
    """The unescaped text of every <td> and <th> of an HTML page, in order."""
    return [html.unescape(re.sub(r"<[^>]*>", "", c)).replace("\xa0", " ").strip()
            for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", page, flags=re.S)]


def rows(page):
    """The cells of each table row (<tr>) of an HTML page."""
    return [cells(r) for r in re.findall(r"<tr>(.*?)</tr>", page, flags=re.S)]


def text(page):
    """The unescaped text of an HTML page, tags removed."""
    return html.unescape(re.sub(r"<[^>]*>", " ", page)).replace("\xa0", " ")


def stats(page):
    """{label: value} of an array view's statistics table (a header row of labels over one row of values)."""
    table = rows(page)
    return dict(zip(table[0], table[1])) if len(table) == 2 else {}
