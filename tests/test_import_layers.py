"""Layers point down: no import cycle at module level in mixnet/, and, counting the imports inside functions too,
exactly the cycles listed here (read from the source by tests/import_graph.py; nothing is imported)."""
from import_graph import cycles, import_graph

# The cycles that remain once function-local imports are counted, each with why. A new one, a module joining one
# of these, or one of these gone fails the test (so the list stays exact).
ALLOWED = {
    # the core: NDArray.attach_grad / backward call autograd, whose sweep makes NDArrays; sparse arrays subclass
    # NDArray, and NDArray.tostype / attach_grad(stype=) make them
    ("mixnet.autograd", "mixnet.ndarray._storage", "mixnet.ndarray.ndarray"),
}


def _named(found):
    return "; ".join(" <-> ".join(c) for c in sorted(found))


def test_no_module_level_import_cycle():
    top, _, _ = import_graph()
    found = cycles(top)
    assert not found, f"import cycles at module level: {_named(map(tuple, found))}"


def test_cycles_counting_function_local_imports_are_exactly_the_allowed_ones():
    top, local, _ = import_graph()
    found = {tuple(c) for c in cycles({m: top[m] | local[m] for m in top})}
    new, gone = found - ALLOWED, ALLOWED - found
    assert not new, (f"import cycles (function-local imports counted) beyond the allowed ones: {_named(new)}. "
                     "Import the lower module instead, or move what both sides need below them "
                     "(python tests/import_graph.py --list shows every function-local import).")
    assert not gone, (f"allowed import cycles that are gone: {_named(gone)}; take them out of ALLOWED in "
                      "tests/test_import_layers.py")


def test_cycle_finder_finds_a_cycle_and_ignores_a_chain():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == [["a", "b", "c"]]
