"""An mkdocs hook: fills docs/api/operators.md with every public function of `mx.nd` and its sub-namespaces.

Most of them are generated from the operator registry at import (mixnet/ndarray/register.py), so no source file
holds them for mkdocstrings to read; this hook imports mixnet and writes each function's signature and docstring,
as `help()` shows them, in place of the page's `<!-- operators -->` marker.
"""
import inspect
import types

MARKER = "<!-- operators -->"
NAMESPACES = ("", "linalg", "contrib", "random", "image", "sparse")


def _functions(module):
    for name in sorted(dir(module), key=str.lower):
        value = getattr(module, name)
        if not name.startswith("_") and isinstance(value, types.FunctionType):
            yield name, value


def _signature(func):
    try:
        return str(inspect.signature(func))
    except (TypeError, ValueError):
        return "(...)"


def operators_markdown():
    import mixnet as mx

    parts = []
    for sub in NAMESPACES:
        module = getattr(mx.nd, sub) if sub else mx.nd
        prefix = f"mx.nd.{sub}." if sub else "mx.nd."
        parts.append(f"## `{prefix.rstrip('.')}`\n")
        for name, func in _functions(module):
            doc = inspect.getdoc(func) or "(no docstring)"
            parts.append(f"### `{prefix}{name}` {{ #{prefix.replace('.', '-')}{name} data-toc-label='{name}' }}\n\n"
                         f"````text\n{name}{_signature(func)}\n\n{doc}\n````\n")
    return "\n".join(parts)


def on_page_markdown(markdown, page, **kwargs):
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, operators_markdown())
