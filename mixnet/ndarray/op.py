"""`mxnet.ndarray.op`: MXNet's module of generated operator functions, which MXNet code imports from
(`from mxnet.ndarray.op import Activation`). It gives every public (not underscore) op under its name and
aliases - the registry's, the optimizer update ops - as the same objects as `mx.nd.<name>`; `CachedOp` and
`Custom` are set here by the modules that define them (they sit above mx.nd). Names are looked up when asked
for, so ops registered later are there too."""
from ..ops import registry as _registry
from ..optimizer import update_ops as _update_ops
from .register import make_function as _make_function


def op_module_attributes(module_name, namespace, function_of, extras=()):
    """`__getattr__` and `__dir__` of the module `module_name` (its globals: `namespace`), which gives every
    public registry op (name and aliases) as `function_of(op, name)` returns it, and those of the names in
    `extras` that its globals hold."""
    def ops():
        return {n: op for op in _registry.all_ops() for n in (op.name,) + tuple(op.aliases) if not n.startswith("_")}

    def __getattr__(name):
        op = ops().get(name)
        if op is None:
            raise AttributeError(f"module {module_name!r} has no operator {name!r}")
        return function_of(op, name)

    def __dir__():
        return sorted(set(ops()) | {n for n in extras if n in namespace})
    return __getattr__, __dir__


_UPDATE_OPS = [name for name in _update_ops.__all__ if name != "adamw_update"]   # that one is nd.contrib's
globals().update({name: getattr(_update_ops, name) for name in _UPDATE_OPS})
__getattr__, __dir__ = op_module_attributes("mxnet.ndarray.op", globals(), lambda op, name: _make_function(op),
                                            _UPDATE_OPS + ["CachedOp"])
