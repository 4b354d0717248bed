"""The operator registry and its op families. Importing this package registers every op."""
from . import registry, dispatch, attrs  # noqa: F401
from . import elemwise, basic, reduce, shape, indexing, sort, creation, random, linalg, nn, ctc, rnn, control_flow  # noqa: F401

__all__ = ["registry", "dispatch", "attrs"]
