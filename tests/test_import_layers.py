"""Layers point down: no import cycle at module level in mixnet/, and, counting the imports inside functions too,
none beyond the ones listed here (read from the source by tests/import_graph.py; nothing is imported)."""
from import_graph import cycles, import_graph

# The cycles that remain once function-local imports are counted, each with why. A new one, or a module joining
# one of these, fails the test: import the lower module instead, or move what both sides need below them.
KNOWN = {
    # the tape and NDArray: NDArray.attach_grad / backward call autograd, whose sweep makes NDArrays; sparse
    # arrays subclass NDArray, and NDArray.tostype / attach_grad(stype=) make them
    ("mixnet.autograd", "mixnet.ndarray._storage", "mixnet.ndarray.ndarray"),
    # nd.sparse.<op> / sym.sparse.<op> fall back to any mx.nd / mx.sym function (MXNet's storage fallback)
    ("mixnet.ndarray", "mixnet.ndarray.sparse"),
    ("mixnet.symbol", "mixnet.symbol.sparse"),
}


def _named(found):
    return "; ".join(" <-> ".join(c) for c in sorted(found))


def test_no_module_level_import_cycle():
    top, _, _ = import_graph()
    found = cycles(top)
    assert not found, f"import cycles at module level: {_named(map(tuple, found))}"


def test_no_new_cycle_counting_function_local_imports():
    top, local, _ = import_graph()
    found = {tuple(c) for c in cycles({m: top[m] | local[m] for m in top})}
    assert found <= KNOWN, f"new import cycles (function-local imports counted): {_named(found - KNOWN)}"


def test_cycle_finder_finds_a_cycle_and_ignores_a_chain():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == [["a", "b", "c"]]
