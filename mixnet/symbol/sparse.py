"""`mx.sym.sparse`: MXNet's namespace of the ops with sparse kernels (`sparse.dot`, `sparse.retain`, ...). A
Symbol carries no storage type of its own (only variables' `stype` attribute), and mixnet computes every op on
the dense arrays sparse ones stand for, so each name here is the `mx.sym` op of the same name."""


from . import _namespace   # all of `mx.sym` but this module (`Custom`, set from above, too)


def __getattr__(name):
    if name.startswith("__") or not hasattr(_namespace, name):
        raise AttributeError(f"module 'mixnet.symbol.sparse' has no attribute {name!r}")
    return getattr(_namespace, name)
