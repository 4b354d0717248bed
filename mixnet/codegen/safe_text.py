"""The one door through which outside text (node names from a model file, op names, the user's file:line) reaches
generated source (compiled graph code, Numba kernels, CUDA kernels).

Generated code is exec'd or compiled, and a graph may come from a downloaded `-symbol.json`: a node name holding a
newline would end a `#` comment and start a statement. So identifiers in generated code are always generated
(`v12`, `K3`, `x0`), numbers are rendered from parsed numbers, and outside text only ever appears in comments,
after `comment_text` has reduced it to characters that cannot end or extend a comment in Python or C/CUDA.
"""
import string

__all__ = ["comment_text", "node_comment"]

# Printable ASCII except `\` (a backslash at the end of a // line continues the comment onto the next line) and
# `?` (`??/` is the trigraph for a backslash in C). No line breaks of any kind (\n, \r, \x0b, \x0c, \x85,
# \u2028, \u2029), no NUL, nothing non-ASCII: each of those becomes `_`.
_SAFE = frozenset(string.ascii_letters + string.digits + " !\"#$%&'()*+,-./:;<=>@[]^_`{|}~")
LIMIT = 160


def comment_text(text, limit=LIMIT):
    """`text` (any object, through str) as it may appear inside a `#` or `//` comment of generated source: every
    character outside printable ASCII, and `\\` and `?`, replaced by `_`; `*/` and `/*` broken up with a space;
    at most `limit` characters (then `...`)."""
    text = str(text)
    cut = len(text) > limit
    safe = "".join(c if c in _SAFE else "_" for c in text[:limit])
    while "*/" in safe or "/*" in safe:
        safe = safe.replace("*/", "* /").replace("/*", "/ *")
    return safe + "..." if cut else safe


def node_comment(op, location, locations=True):
    """The comment of one node in a generated kernel: its op name and (with `locations`) the user's file:line."""
    if locations and location:
        return f"{comment_text(op):<14} {comment_text(location)}"
    return comment_text(op)
