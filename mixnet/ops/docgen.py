"""Signatures and NumPy-style docstrings of the generated `mx.nd.*` / `mx.sym.*` functions, from an op's OpDef.

A generated function takes `*args, **kwargs` and binds them by MXNet's convention (ops/binding.py); its
`__signature__` says what that binding accepts, so `help()`, IPython and mkdocstrings show the real parameters:

- the array inputs, positional, in the op's order (the full list for ops whose attributes add or remove inputs:
  `bias` with `no_bias`, RNN's `state_cell`), or `*data` for ops that take a list;
- then the attributes in declaration order, with type annotations and defaults, positional too (MXNet accepts
  `nd.one_hot(x, 10)`; keyword-only after `*data`);
- then `out=` / `name=` (nd) or `name=` / `attr=` / `**kwargs` (sym: hidden attributes such as `lr_mult`).

A required attribute has no default where Python allows it; after a parameter with a default (an optional
input, an earlier attribute, any sym input: mx.sym creates missing inputs as variables) it can only be a
positional parameter with a default, so its default is `attrs.REQUIRED`, shown as `<required>` (the binder
treats that value as not given). Everything is computed once per op when the function is made.
"""
import inspect
import itertools
from typing import Literal

import numpy as np

from . import attrs as A
from .creation import _parse_dtype_f32
from .shape import parse_opt_int_tuple
from .spatial import _positive_int

__all__ = ["nd_signature", "sym_signature", "method_signature", "nd_doc", "sym_doc", "attr_type", "input_layout"]

_P = inspect.Parameter
_SYM_HIDDEN = "lr_mult, wd_mult, ctx_group, force_mirroring, mirror_stage"

# parser -> (annotation, type text in the docstring); None: no annotation
_TYPES = {
    A.parse_bool: (bool, "bool"),
    A.parse_int: (int, "int"),
    int: (int, "int"),
    _positive_int: (int, "int"),
    A.parse_float: (float, "float"),
    A.parse_str: (str, "str"),
    A.parse_shape: (tuple[int, ...], "tuple of int"),
    A.parse_float_tuple: (tuple[float, ...], "tuple of float"),
    A.parse_axis: (int | tuple[int, ...] | None, "int, tuple of int or None"),
    parse_opt_int_tuple: (tuple[int | None, ...], "tuple of int or None"),
    A.parse_dtype: (str | np.dtype, "dtype"),
    _parse_dtype_f32: (str | np.dtype, "dtype"),
    A.parse_ctx: (None, "Context"),
    A.parse_subgraph: (None, "Symbol"),
    A.parse_any: (None, "object"),
}
# a value of the inner type for each optional parser, to find the inputs an attribute adds or removes
_SAMPLES = {A.parse_bool: True, A.parse_int: 1, A.parse_float: 1.0, A.parse_shape: (1,), A.parse_str: "x"}


def attr_type(parse):
    """(annotation or None, docstring type text) of an attribute's parser; KeyError for an unknown parser.
    The annotation is built only for a signature someone reads (typing's Literal costs at import)."""
    inner = getattr(parse, "inner", None)
    if inner is not None:
        annotation, text = attr_type(inner)
        if text.endswith("or None"):
            return annotation, text
        return (annotation | None if annotation is not None else None), f"{text} or None"
    options = getattr(parse, "options", None)
    if options is not None:
        return Literal[options], _choice_text(options)
    return _TYPES[parse]


def _choice_text(options):
    return "{" + ", ".join(repr(o) for o in options) + "}"


def _type_text(parse):
    """attr_type's text alone, without building the annotation; "object" for a parser the table lacks
    (tests/test_signatures.py checks there is none)."""
    inner = getattr(parse, "inner", None)
    if inner is not None:
        text = _type_text(inner)
        return text if text.endswith("or None") else f"{text} or None"
    options = getattr(parse, "options", None)
    if options is not None:
        return _choice_text(options)
    known = _TYPES.get(parse)
    return known[1] if known else "object"


def _annotation(parse):
    try:
        return attr_type(parse)[0]
    except KeyError:
        return None


def _default(value):
    """The attribute's default as a caller would pass it (dtypes by name)."""
    return value.name if isinstance(value, np.dtype) else value


def _toggles(op):
    """Base attributes (defaults; a required choice's first option) and the single changes to try on them."""
    base, toggles = {}, []
    for key, attr in op.attrs.items():
        parse = attr.parse
        inner = getattr(parse, "inner", None)
        options = getattr(inner or parse, "options", None)
        default = attr.default
        if default is A.REQUIRED:
            default = options[0] if options else None
        base[key] = default
        if parse is A.parse_bool or inner is A.parse_bool:
            values = [v for v in (True, False) if v != default]
        elif options:
            values = [o for o in options if o != default]
        elif inner in _SAMPLES:
            values = [_SAMPLES[inner]] if default is None else [None]
        else:
            values = []
        toggles.extend((key, v) for v in values)
    return base, toggles


def input_layout(op):
    """(names, required names, {name: note}) of a fixed-list op's inputs: every input any attributes give, in
    binding order; required: those all of them give; notes say when an optional one is read. None when the
    inputs are a list (variadic ops, or ones an open attribute set decides, such as Custom)."""
    if op.variadic or op.open_attrs:
        return None
    if not callable(op.inputs):
        names = tuple(op.inputs)
        return names, frozenset(names), {}
    base, toggles = _toggles(op)

    def variant(change):
        try:
            return change, tuple(op.inputs(dict(base, **dict(change))))
        except Exception:       # noqa: BLE001  (a combination the op's input function does not take)
            return None
    variants = [v for v in [variant(())] + [variant((t,)) for t in toggles] if v is not None]
    # pairs of the changes that alter the inputs (RNN's mode='lstm' with use_sequence_length=True)
    acting = [change[0] for change, names in variants if change and names != variants[0][1]]
    variants += [v for v in (variant((a, b)) for a, b in itertools.combinations(acting, 2) if a[0] != b[0])
                 if v is not None]
    if not variants:
        return None
    names = list(max((v for _, v in variants), key=len))
    for _, variant in variants:             # merge the inputs the longest variant lacks after their predecessor
        for i, name in enumerate(variant):
            if name not in names:
                names.insert(names.index(variant[i - 1]) + 1 if i else 0, name)
    required = frozenset.intersection(*(frozenset(v) for _, v in variants))
    in_base = set(variants[0][1]) if variants[0][0] == () else set()
    notes = {}
    for name in names:
        if name in required:
            continue
        when = [f"``{k}={v!r}``" for change, v_names in variants if len(change) == 1
                for k, v in change if (name in v_names) != (name in in_base)]
        if when:
            notes[name] = ("Absent when " if name in in_base else "Read when ") + " or ".join(when) + "."
    return tuple(names), required, notes


class _Spec:
    """What the signatures and docstrings of one op share, computed once: its inputs, its attributes' type
    texts, the docstring's attribute entries, and (made when first needed) the Signature and docstring body of
    its mx.sym functions, one for all its names."""
    __slots__ = ("layout", "attrs", "attr_doc", "sym_signature", "sym_body")

    def __init__(self, op):
        self.layout = input_layout(op)
        self.attrs = [(key, attr, _type_text(attr.parse)) for key, attr in op.attrs.items()]
        self.attr_doc = _attr_entries(self, False)
        self.sym_signature = self.sym_body = None


_SPECS = {}


def _spec(op):
    spec = _SPECS.get(op.name)
    if spec is None or spec[0] is not op:
        spec = _SPECS[op.name] = (op, _Spec(op))
    return spec[1]


def _list_name(op):
    return op.input_names({})[0] if op.variadic else "data"


_ND_KEYWORDS = ("out", "name")
_SYM_KEYWORDS = ("name", "attr", "out")


def _input_label(name, reserved):
    return f"{name}_" if name in reserved else name


def _parameters(op, inputs_required, sym, reserved):
    spec = _spec(op)
    params, defaulted = [], False
    if spec.layout is None:
        params.append(_P(_list_name(op), _P.VAR_POSITIONAL))
        attr_kind = _P.KEYWORD_ONLY
    else:
        names, required, _ = spec.layout
        # an input named like one of the function's own keywords (the `out` of _softmax_bwd) can only be given
        # positionally: it is positional-only, renamed `out_` (a signature's names are unique), and so are
        # the inputs before it positional-only
        clash = max((names.index(n) for n in reserved if n in names), default=-1)
        for i, name in enumerate(names):
            kind = _P.POSITIONAL_ONLY if i <= clash else _P.POSITIONAL_OR_KEYWORD
            label = _input_label(name, reserved)
            if inputs_required and name in required and not defaulted:
                params.append(_P(label, kind))
            else:
                params.append(_P(label, kind, default=None))
                defaulted = True
        attr_kind = _P.POSITIONAL_OR_KEYWORD
    for key, attr, _ in spec.attrs:
        annotation = _annotation(attr.parse)
        annotation = _P.empty if annotation is None else annotation
        if attr.default is not A.REQUIRED:
            default = _default(attr.default)
        elif sym and spec.layout is None and key == "num_args":
            default = None                      # mx.sym counts the inputs
        elif attr_kind is _P.KEYWORD_ONLY or not defaulted:
            default = _P.empty
        else:
            default = A.REQUIRED
        params.append(_P(key, attr_kind, default=default, annotation=annotation))
        defaulted = defaulted or default is not _P.empty
    return params


class _LazySignature(inspect.Signature):
    """A Signature whose parameters are made when first read: some 700 generated functions get one at import,
    and few are ever inspected. Signature keeps its state in two slots; until they are set, reading one
    lands in __getattr__, which builds them."""
    __slots__ = ("_build",)

    def __init__(self, build):          # noqa: D107  (no super().__init__: the slots stay unset until read)
        self._build = build

    def __getattr__(self, name):
        if name not in ("_parameters", "_return_annotation"):
            raise AttributeError(name)
        built = inspect.Signature(self._build())
        self._parameters, self._return_annotation = built.parameters, built.return_annotation
        return getattr(self, name)

    def _built(self):
        return inspect.Signature(list(self.parameters.values()), return_annotation=self.return_annotation)

    def replace(self, **changes):       # Signature.replace calls type(self)(parameters, ...)
        return self._built().replace(**changes)

    def __reduce__(self):
        return self._built().__reduce__()


def _nd_parameters(op):
    params = _parameters(op, True, False, _ND_KEYWORDS)
    params += [_P("out", _P.KEYWORD_ONLY, default=None), _P("name", _P.KEYWORD_ONLY, default=None)]
    if _spec(op).layout is None:        # `data=[...]` by keyword (variadic), or Custom's open attributes
        params.append(_P("kwargs", _P.VAR_KEYWORD))
    return params


def _sym_parameters(op):
    params = _parameters(op, False, True, _SYM_KEYWORDS)
    params += [_P("name", _P.KEYWORD_ONLY, default=None), _P("attr", _P.KEYWORD_ONLY, default=None),
               _P("kwargs", _P.VAR_KEYWORD)]
    return params


def method_signature(signature):
    """A function's signature as an NDArray method's: its first input becomes `self` (ndarray/fluent.py)."""
    def parameters():
        first, *rest = signature.parameters.values()
        return [_P("self", _P.POSITIONAL_OR_KEYWORD), *rest]
    return _LazySignature(parameters)


def nd_signature(op):
    """mx.nd: inputs (required where every attribute setting needs them), attributes, out=, name=."""
    return _LazySignature(lambda: _nd_parameters(op))


def sym_signature(op):
    """mx.sym: every input optional (created as a variable when absent), attributes, name=, attr=, **kwargs
    (one Signature for the op's functions under all its names)."""
    spec = _spec(op)
    if spec.sym_signature is None:
        spec.sym_signature = _LazySignature(lambda: _sym_parameters(op))
    return spec.sym_signature


def _summary(op, public_name):
    text = op.doc.strip() if op.doc else f"The ``{public_name}`` operator."
    others = [n for n in (op.name,) + tuple(op.aliases) if n != public_name]
    if others:
        text += "\n\nAlso registered as " + ", ".join(f"``{n}``" for n in others) + "."
    return text


def _entry(name, kind, doc=""):
    return (f"{name} : {kind}" if kind else name) + (f"\n    {doc}" if doc else "")


def _attr_entries(spec, sym):
    entries = []
    for key, attr, text in spec.attrs:
        doc = attr.doc.strip()
        if doc:                                   # the OpDef's notes are phrases: shown as sentences
            doc = doc[0].upper() + doc[1:] + ("" if doc.endswith(".") else ".")
        if attr.default is A.REQUIRED:
            if sym and spec.layout is None and key == "num_args":
                entries.append(_entry(key, f"{text}, optional", "The number of inputs (counted when not given)."))
            else:
                entries.append(_entry(key, text, "Required." + (f" {doc}" if doc else "")))
        else:
            entries.append(_entry(key, f"{text}, default {_default(attr.default)!r}", doc))
    return "\n".join(entries)


def _input_entries(op, spec, array, reserved):
    if spec.layout is None:
        doc = "The input arrays, as separate arguments or one list."
        if op.open_attrs:
            doc = "The input arrays, in the order the operator declares them."
        return [_entry(f"*{_list_name(op)}", array, doc)]
    names, required, notes = spec.layout
    return [_entry(_input_label(n, reserved), array if n in required else f"{array}, optional",
                   notes.get(n, "") if n not in reserved else f"The input ``{n}`` (positional only).")
            for n in names]


def _outputs_text(op):
    count = op.num_visible if op.num_visible is not None else op.num_outputs
    names = op.output_names if isinstance(op.output_names, tuple) else None
    if isinstance(count, int) and count == 1:
        return None
    if isinstance(count, int):
        return f"{count} outputs" + (": " + ", ".join(f"``{n}``" for n in names[:count]) if names else "")
    return "as many outputs as the attributes give"


_ND_TAIL = "\n".join([
    _entry("out", "NDArray, optional", "An array to write the result into (it is also returned)."),
    _entry("name", "str, optional", "The graph node's name when the call is traced by ``hybridize`` "
                                    "(unused otherwise).")])
_SYM_TAIL = "\n".join([
    _entry("name", "str, optional", "The node's name (by default one made from the operator's name)."),
    _entry("attr", "dict of str to str, optional", "Attributes stored on the node.")])
_SYM_NOTES = ("\nNotes\n-----\nAn input not given is created as a variable named ``<name>_<input>``, as MXNet "
              "does (a layer's weights).\n")


def _join(*parts):
    return "\n".join(p for p in parts if p)


def nd_doc(op, public_name):
    spec, outputs = _spec(op), _outputs_text(op)
    kwargs = None
    if spec.layout is None:
        kwargs = _entry("**kwargs", "", "Custom's attributes." if op.open_attrs else
                        f"``{_list_name(op)}=`` (a list of arrays) by keyword, instead of positionally.")
    returns = (_entry("out", "NDArray", "The result.") if outputs is None else
               _entry("out", "NDArray or list of NDArray", f"A list of the {outputs}."))
    return _join(_summary(op, public_name), "\nParameters\n----------",
                 *_input_entries(op, spec, "NDArray", _ND_KEYWORDS), spec.attr_doc, _ND_TAIL, kwargs,
                 "\nReturns\n-------", returns) + "\n"


def sym_doc(op, public_name):
    spec = _spec(op)
    if spec.sym_body is None:
        outputs = _outputs_text(op)
        attr_doc = _attr_entries(spec, True) if spec.layout is None else spec.attr_doc
        kwargs = _entry("**kwargs", "", f"{_SYM_HIDDEN} and ``__key__`` values:\n    stored on the node as "
                        "MXNet's hidden attributes" + (";\n    inputs given by keyword, in order." if op.variadic
                                                        else "."))
        returns = _entry("Symbol", "", "The node's output" + (f" (it has {outputs})." if outputs else "."))
        spec.sym_body = _join("\nParameters\n----------", *_input_entries(op, spec, "Symbol", _SYM_KEYWORDS),
                              attr_doc, _SYM_TAIL, kwargs, "\nReturns\n-------", returns,
                              _SYM_NOTES if spec.layout is not None else "") + "\n"
    return _summary(op, public_name) + "\n" + spec.sym_body
