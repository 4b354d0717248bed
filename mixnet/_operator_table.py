"""The binary operators of NDArray and Symbol (`x + y`, `2 ** x`, `x < 1`) and the functional forms of mx.nd and
mx.sym (`nd.add`, `nd.greater`, `sym.maximum`), from one table of registry ops.

Each operation has three registry ops: one for two arrays (broadcasting), one for array <op> number and one for
number <op> array (`_rminus_scalar`; for a commutative operation the same op as the second, for a comparison the
mirrored one: `1 < x` is `x > 1`).
"""
import builtins
import numbers
import operator
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["BINARY", "OPERATORS", "functional", "install_operators"]


class Binary(NamedTuple):
    array_op: str           # array <op> array
    scalar_op: str          # array <op> number
    rscalar_op: str         # number <op> array
    python: Callable        # number <op> number (the functional forms accept two numbers)
    hints: tuple = ()       # a Symbol's node names, MXNet's (array, scalar, number <op> array): x + 1 -> _plusscalar0

    @property
    def commutative(self):
        return self.rscalar_op == self.scalar_op


BINARY = {
    "add": Binary("broadcast_add", "_plus_scalar", "_plus_scalar", operator.add,
                  ("_plus", "_plusscalar", "_plusscalar")),
    "subtract": Binary("broadcast_sub", "_minus_scalar", "_rminus_scalar", operator.sub,
                       ("_minus", "_minusscalar", "_rminusscalar")),
    "multiply": Binary("broadcast_mul", "_mul_scalar", "_mul_scalar", operator.mul,
                       ("_mul", "_mulscalar", "_mulscalar")),
    "divide": Binary("broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv,
                     ("_div", "_divscalar", "_rdivscalar")),
    "modulo": Binary("broadcast_mod", "_mod_scalar", "_rmod_scalar", operator.mod,
                     ("_mod", "_modscalar", "_rmodscalar")),
    "power": Binary("broadcast_power", "_power_scalar", "_rpower_scalar", operator.pow,
                    ("_power", "_powerscalar", "_rpower_scalar")),
    "maximum": Binary("broadcast_maximum", "_maximum_scalar", "_maximum_scalar", builtins.max),
    "minimum": Binary("broadcast_minimum", "_minimum_scalar", "_minimum_scalar", builtins.min),
    "hypot": Binary("broadcast_hypot", "_hypot_scalar", "_hypot_scalar", lambda a, b: (a * a + b * b) ** .5),
    "equal": Binary("broadcast_equal", "_equal_scalar", "_equal_scalar", operator.eq,
                    ("_equal", "_equal_scalar", "_equal_scalar")),
    "not_equal": Binary("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar", operator.ne,
                        ("_not_equal", "_not_equal_scalar", "_not_equal_scalar")),
    "greater": Binary("broadcast_greater", "_greater_scalar", "_lesser_scalar", operator.gt,
                      ("_greater", "_greater_scalar", "_lesser_scalar")),
    "greater_equal": Binary("broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar", operator.ge,
                            ("_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar")),
    "lesser": Binary("broadcast_lesser", "_lesser_scalar", "_greater_scalar", operator.lt,
                     ("_lesser", "_lesser_scalar", "_greater_scalar")),
    "lesser_equal": Binary("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar", operator.le,
                           ("_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar")),
    "logical_and": Binary("broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar",
                          lambda a, b: float(bool(a) and bool(b))),
    "logical_or": Binary("broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar",
                         lambda a, b: float(bool(a) or bool(b))),
    "logical_xor": Binary("broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar",
                          lambda a, b: float(bool(a) != bool(b))),
}


class PythonOperator(NamedTuple):
    operation: str          # its BINARY entry
    ufunc: str              # the numpy ufunc that hands `np.float32(2) <op> x` over to NDArray.__array_ufunc__
    reflected: bool         # has __r<name>__ (comparisons have none: Python mirrors `1 < x` to `x > 1` itself)


# __<name>__ -> what it applies
OPERATORS = {
    "add": PythonOperator("add", "add", True),
    "sub": PythonOperator("subtract", "subtract", True),
    "mul": PythonOperator("multiply", "multiply", True),
    "truediv": PythonOperator("divide", "true_divide", True),
    "mod": PythonOperator("modulo", "remainder", True),
    "pow": PythonOperator("power", "power", True),
    "eq": PythonOperator("equal", "equal", False),
    "ne": PythonOperator("not_equal", "not_equal", False),
    "lt": PythonOperator("lesser", "less", False),
    "le": PythonOperator("lesser_equal", "less_equal", False),
    "gt": PythonOperator("greater", "greater", False),
    "ge": PythonOperator("greater_equal", "greater_equal", False),
}


def install_operators(cls, method):
    """Gives `cls` the operators of OPERATORS: `method(entry, reflected)` makes `__<name>__` (reflected False)
    and, for a non-commutative operation, `__r<name>__` (reflected True: number <op> self); a commutative one's
    reflected form is its forward form. `__div__` / `__rdiv__` are MXNet's Python 2 names of true division."""
    def put(name, function):
        function.__name__, function.__qualname__ = name, f"{cls.__name__}.{name}"
        setattr(cls, name, function)
    for name, spec in OPERATORS.items():
        entry = BINARY[spec.operation]
        put(f"__{name}__", method(entry, False))
        if spec.reflected:
            put(f"__r{name}__", method(entry, not entry.commutative))
    cls.__div__, cls.__rdiv__ = cls.__truediv__, cls.__rtruediv__


def functional(name, array_type, namespace):
    """mx.nd's / mx.sym's function for BINARY[name] (`nd.add(x, 2)`, `sym.maximum(2, s)`): arrays of `array_type`
    or numbers on either side; it calls the op functions `namespace` (the module's globals) defines."""
    entry = BINARY[name]

    def function(lhs, rhs):
        lhs_array, rhs_array = isinstance(lhs, array_type), isinstance(rhs, array_type)
        if lhs_array and rhs_array:
            return namespace[entry.array_op](lhs, rhs)
        if lhs_array:
            return namespace[entry.scalar_op](lhs, scalar=float(rhs))
        if rhs_array:
            return namespace[entry.rscalar_op](rhs, scalar=float(lhs))
        if isinstance(lhs, numbers.Number) and isinstance(rhs, numbers.Number):
            return entry.python(lhs, rhs)
        raise TypeError(f"{entry.array_op}: expected {array_type.__name__}s or numbers, got {type(lhs).__name__} "
                        f"and {type(rhs).__name__}")
    function.__name__ = entry.array_op.replace("broadcast_", "")
    return function
