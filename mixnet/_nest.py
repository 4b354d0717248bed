"""Nested lists/tuples of arrays (or Symbols) <-> a flat list and a structure description: how hybridized blocks
take and return nested values, and how the control-flow ops (foreach, while_loop, cond) take and regroup them.

A structure is "x" for one leaf, None for None, or (kind, parts) for a list or tuple (kind "list" or "tuple").
`leaf(value)` says what a leaf is: (flat items, structure) for a leaf, None for anything else.
"""
from .base import MXNetError

__all__ = ["flatten", "leaf_of", "mxnet_format", "unflatten"]


def leaf_of(cls):
    """The `leaf` that takes instances of `cls` as leaves and None as an empty slot (hybridize's arguments and
    outputs)."""
    def leaf(x):
        if x is None:
            return [], None
        return ([x], "x") if isinstance(x, cls) else None
    return leaf


def flatten(value, leaf, what, keep_tuples=True):
    """Nested lists/tuples of leaves -> (flat list of leaves, structure). keep_tuples=False records every sequence
    as a list (MXNet's control flow regroups into lists and does not tell tuples from lists). Anything else raises
    MXNetError("<what>, got <type>")."""
    found = leaf(value)
    if found is not None:
        return found
    if isinstance(value, (list, tuple)):
        flat, parts = [], []
        for item in value:
            items, part = flatten(item, leaf, what, keep_tuples)
            flat.extend(items)
            parts.append(part)
        return flat, (type(value).__name__ if keep_tuples else "list", tuple(parts))
    raise MXNetError(f"{what}, got {type(value).__name__}")


def unflatten(flat, structure):
    """Inverse of flatten: rebuilds the nesting from a flat list (consumed from the front)."""
    if structure == "x":
        return flat.pop(0)
    if structure is None:
        return None
    kind, parts = structure
    items = [unflatten(flat, p) for p in parts]
    return tuple(items) if kind == "tuple" else items


def mxnet_format(structure):
    """A structure in MXNet's spelling (Block.save's formats, control-flow messages): 0 a leaf, -1 None, a list
    for a list."""
    if structure == "x":
        return 0
    if structure is None:
        return -1
    return [mxnet_format(part) for part in structure[1]]
