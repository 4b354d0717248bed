"""Strict parsers for operator attributes, in the string forms MXNet's JSON and users use.

`"(3, 3)"`, `"[3,3]"`, `"3"`, `"True"`, `"None"`, `"relu"` all parse without `eval`. Each parser also accepts the
already-typed Python value, so one schema serves eager calls (`kernel=(3, 3)`) and symbol files (`"(3, 3)"`).
"""
import numpy as np

from ..base import MXNetError, dtype_np
from ..context import Context

_NONE = ("None", "none", "")


class Attr:
    """One attribute of an op: a parser, a default (REQUIRED when the user must give it) and the printer."""
    __slots__ = ("parse", "default", "doc")

    def __init__(self, parse, default, doc=""):
        self.parse = parse
        self.default = default
        self.doc = doc


class _Required:
    """The default of an attribute the user must give. Its repr is what a generated function's signature shows
    for a required attribute that can also be given positionally (ops/docgen.py)."""
    __slots__ = ()

    def __repr__(self):
        return "<required>"

    def __reduce__(self):               # copies and pickles are the one marker (compared by identity)
        return "REQUIRED"


REQUIRED = _Required()


def _strip(text):
    return text.strip()


def parse_bool(value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip()
        if text in ("True", "true", "1"):
            return True
        if text in ("False", "false", "0"):
            return False
    raise ValueError(f"expected a boolean, got {value!r}")


def parse_int(value):
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            as_float = float(text)
        except ValueError:
            pass
        else:
            if as_float.is_integer():
                return int(as_float)
    raise ValueError(f"expected an integer, got {value!r}")


def parse_float(value):
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise ValueError(f"expected a number, got {value!r}")


def parse_str(value):
    if isinstance(value, str):
        return value.strip()
    raise ValueError(f"expected a string, got {value!r}")


def _split_tuple(text):
    text = text.strip()
    if len(text) >= 2 and (text[0], text[-1]) in (("(", ")"), ("[", "]")):
        text = text[1:-1]
    parts = [p.strip() for p in text.split(",")]
    if parts and parts[-1] == "":       # "(3,)"
        parts.pop()
    return parts


def parse_shape(value):
    """A tuple of ints: "(3, 3)", "[3,3]", "3", 3, (3, 3), [3, 3]. An empty tuple is "()"."""
    if isinstance(value, str):
        return tuple(parse_int(p) for p in _split_tuple(value))
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    if isinstance(value, (tuple, list, range)) or (isinstance(value, np.ndarray) and value.ndim == 1):
        return tuple(parse_int(p) for p in value)    # MXNet's Python API takes ranges and 1-d numpy arrays too
    raise ValueError(f"expected a shape such as (3, 3), got {value!r}")


def parse_float_tuple(value):
    if isinstance(value, str):
        return tuple(parse_float(p) for p in _split_tuple(value))
    if isinstance(value, (int, float, np.number)):
        return (float(value),)
    if isinstance(value, (tuple, list)):
        return tuple(parse_float(p) for p in value)
    raise ValueError(f"expected a tuple of numbers, got {value!r}")


def optional(parse):
    """Wraps a parser so that None / "None" mean absent."""
    def parse_optional(value):
        if value is None or (isinstance(value, str) and value.strip() in _NONE):
            return None
        return parse(value)
    parse_optional.__name__ = f"optional_{parse.__name__}"
    parse_optional.inner = parse          # read by describe.py
    return parse_optional


def choice(*options):
    def parse_choice(value):
        text = parse_str(value)
        if text not in options:
            raise ValueError(f"expected one of {list(options)}, got {value!r}")
        return text
    parse_choice.__name__ = "choice"
    parse_choice.options = options        # read by describe.py
    return parse_choice


def parse_dtype(value):
    """A dtype name -> numpy dtype; "None" is handled by optional()."""
    try:
        return dtype_np(value.strip() if isinstance(value, str) else value)
    except MXNetError as err:
        raise ValueError(str(err)) from None


def parse_axis(value):
    """An axis attribute: None, an int or a tuple of ints ("()" means no axes, as in MXNet)."""
    if value is None or (isinstance(value, str) and value.strip() in _NONE):
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    shape = parse_shape(value)
    return shape


def parse_subgraph(value):
    """A control-flow op's subgraph: a Symbol (held in the parsed attributes, never written as a string)."""
    if type(value).__name__ == "Symbol" and hasattr(value, "list_inputs"):   # symbol sits above this layer
        return value
    raise ValueError(f"expected a subgraph Symbol, got {type(value).__name__}")


def format_attr(value):
    """Python value -> MXNet's string form (for JSON and error messages)."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(format_attr(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


def parse_attrs(op_name, schema, given):
    """Validates the user's attributes against the op's schema; fills defaults; never evals."""
    result = {}
    for key, value in given.items():
        spec = schema.get(key)
        if spec is None:
            raise MXNetError(f"{op_name}: unknown attribute {key!r} (known: {', '.join(sorted(schema)) or 'none'})")
        try:
            result[key] = spec.parse(value)
        except ValueError as err:
            raise MXNetError(f"{op_name}: attribute {key}={value!r}: {err}") from None
    for key, spec in schema.items():
        if key not in result:
            if spec.default is REQUIRED:
                raise MXNetError(f"{op_name}: required attribute {key!r} is missing")
            result[key] = spec.default
    return result


def parse_ctx(value):
    """A device: a Context, or MXNet's string form 'cpu(0)' / 'gpu(1)'."""
    if value is None or isinstance(value, Context):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text in _NONE:
            return None
        for kind in ("cpu_pinned", "cpu_shared", "cpu", "gpu"):
            if text.startswith(kind + "(") and text.endswith(")"):
                return Context(kind, parse_int(text[len(kind) + 1:-1]))
    raise ValueError(f"expected a context such as cpu(0), got {value!r}")


def parse_any(value):
    """Attributes that are Python objects only the eager path passes (an indexing key); never from JSON."""
    return value
