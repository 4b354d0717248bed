"""`mxnet.ndarray.op`: MXNet's module of generated operator functions, which MXNet code imports from
(`from mxnet.ndarray.op import Activation`). It gives every public (not underscore) op under its name and
aliases - the registry's, the optimizer update ops, `CachedOp` - as the same objects as `mx.nd.<name>`. Names are
looked up when asked for, so ops registered later (`Custom`, by mixnet.operator) are there too."""
from .. import ndarray as _nd
from ..ops import registry as _registry


def _op_names(namespace):
    """The public op names `namespace` (mx.nd's or mx.sym's) defines."""
    from ..optimizer import update_ops
    names = {n for op in _registry.all_ops() for n in (op.name,) + tuple(op.aliases) if not n.startswith("_")}
    return sorted((names | set(update_ops.__all__) | {"CachedOp"}) & set(namespace))


def _op_module_attributes(namespace, module_name):
    """`__getattr__` and `__dir__` of a module that gives `namespace`'s (mx.nd's or mx.sym's) public op functions."""
    def __getattr__(name):
        if name in _op_names(vars(namespace)):
            return getattr(namespace, name)
        raise AttributeError(f"module {module_name!r} has no operator {name!r}")

    def __dir__():
        return _op_names(vars(namespace))
    return __getattr__, __dir__


__getattr__, __dir__ = _op_module_attributes(_nd, "mxnet.ndarray.op")
