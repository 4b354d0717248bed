"""The import graph of mixnet/, read from the source (AST, nothing imported): its cycles and its function-local
imports. tests/test_import_layers.py checks it; run it as a script to see it:

    python tests/import_graph.py [repository root] [--list]

--list also prints each function-local import of a mixnet module (module:line -> what it imports).

An edge A -> B means module A imports module B (or a name from it) at module level; a function-local edge is an
import inside a function or method. Cycles are the strongly connected components with more than one module.
"""
import ast
import os
import signal
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _modules(root):
    """{dotted module name: path} of every .py file under root/mixnet."""
    mods = {}
    for folder, _, files in os.walk(os.path.join(root, "mixnet")):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                name = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                mods[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return mods


def _target(mods, module, is_package, node, alias):
    """The mixnet module an import statement's name refers to, or None for one outside mixnet."""
    if isinstance(node, ast.Import):
        name = alias.name
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            name = ".".join(base + ([node.module] if node.module else []))
        else:
            name = node.module or ""
        if f"{name}.{alias.name}" in mods:          # `from . import submodule`
            name = f"{name}.{alias.name}"
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name if name.startswith("mixnet") and name != module else None


def import_graph(root=ROOT, sites=None):
    """({module: modules it imports at module level}, {module: modules it imports inside functions}, and the
    numbers of import statements inside functions: {"mixnet": of mixnet modules, "third-party": of others}).
    A list given as `sites` gets (module, line, sorted targets) of each function-local import of mixnet modules."""
    mods = _modules(root)
    top = {m: set() for m in mods}
    local = {m: set() for m in mods}
    n_local = {"mixnet": 0, "third-party": 0}
    for module, path in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        is_package = path.endswith("__init__.py")
        pending = [(tree, False)]
        while pending:
            node, in_function = pending.pop()
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets = {_target(mods, module, is_package, node, alias) for alias in node.names} - {None}
                (local if in_function else top)[module].update(targets)
                if in_function:
                    internal = targets or (isinstance(node, ast.ImportFrom) and node.level)
                    n_local["mixnet" if internal else "third-party"] += 1
                    if internal and sites is not None:
                        sites.append((module, node.lineno, sorted(targets)))
            in_function = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            pending.extend((child, in_function) for child in ast.iter_child_nodes(node))
    return top, local, n_local


def cycles(edges):
    """The strongly connected components with more than one module, each sorted, in sorted order."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def connect(v):                 # Tarjan's algorithm, iterative (the graph is deep enough for recursion limits)
        work = [(v, iter(sorted(edges[v])))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return sorted(found)


def main(root, listing=False):
    sites = []
    top, local, n_local = import_graph(root, sites)
    both = {m: top[m] | local[m] for m in top}
    module_level, with_local = cycles(top), cycles(both)
    print(f"modules {len(top)}, function-local imports {sum(n_local.values())} "
          f"({n_local['mixnet']} of mixnet modules, {n_local['third-party']} of others)")
    print(f"module-level cycles: {len(module_level)}")
    for c in module_level:
        print("  ", " <-> ".join(c))
    print(f"cycles counting function-local imports too: {len(with_local)}")
    for c in with_local:
        print(f"   {len(c)} modules:", ", ".join(c[:12]) + (" ..." if len(c) > 12 else ""))
    if listing:
        print("function-local imports of mixnet modules:")
        for module, line, targets in sorted(sites):
            print(f"   {module}:{line} -> {', '.join(targets) or '(relative)'}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)     # `--list | head` stops quietly, as other filters do
    args = [a for a in sys.argv[1:] if a != "--list"]
    main(args[0] if args else ROOT, "--list" in sys.argv[1:])
