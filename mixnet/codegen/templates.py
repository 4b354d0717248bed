"""The scalar templates of the registry, as both code generators read them (numba_cpu renders Python, cupy_gpu
renders CUDA C from the same parse).

A template is a Python expression over `{0}`, `{1}`, ... (the op's inputs) and `{name}` (a numeric attribute):
`"{0} * {scalar}"`, `"min(max({0} * {alpha} + {beta}, 0), 1)"`, `"(({0} != 0) & ({1} != 0))"`. `parse` turns one
into an `ast` expression whose inputs are variable names and whose attributes are numeric constants, and checks
that it stays inside the small language both backends implement:

* numbers, the input names, and calls of the functions in `FUNCTIONS` (with their arity);
* `+ - * /`, unary `-`/`+`/`not`, a single comparison, and `& | ^` between booleans.

Attribute values become plain Python ints and floats here (anything else is refused), so a backend renders a
number it parsed, never text it was given.

Each backend maps the function names to its own (`exp` is `exp_f32` in a float32 Numba kernel, `expf` in a float32
CUDA kernel) and renders constants in the kernel's dtype. A boolean-valued expression (`is_bool`) is cast back to
the kernel's dtype by both, as MXNet's comparisons return 0/1 in the input dtype.
"""
import ast
import re

import numpy as np

__all__ = ["FUNCTIONS", "BOOL_FUNCTIONS", "parse", "is_bool", "kernel_dtype", "step_arguments"]

# Template function -> number of arguments. Semantics are numpy's (np.maximum propagates nan, np.sign(nan) is nan),
# except `round` (MXNet's: halves away from zero) and `fmod_floor` (np.mod: the remainder has the divisor's sign).
FUNCTIONS = {
    **dict.fromkeys(
        ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "ceil", "cos", "cosh", "erf", "erfinv",
         "exp", "expm1", "floor", "isfinite", "isinf", "isnan", "lgamma", "log", "log10", "log1p", "log2", "rint",
         "round", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "tgamma", "trunc"], 1),
    **dict.fromkeys(["fmod_floor", "hypot", "max", "min", "pow"], 2),
}
BOOL_FUNCTIONS = frozenset({"isnan", "isinf", "isfinite"})

_BINARY = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.BitAnd, ast.BitOr, ast.BitXor)
_UNARY = (ast.USub, ast.UAdd, ast.Not)
_COMPARE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def kernel_dtype(group):
    """'float32' or 'float64' (the only kernel dtypes), else ValueError."""
    dtype = np.dtype(group.dtype).name
    if dtype not in ("float32", "float64"):
        raise ValueError(f"codegen supports float32 and float64 kernels, not {dtype}")
    return dtype


def step_arguments(group):
    """Checks the group's references. Returns (rows, loaded): rows is [(j, step, args)] with `args` the variable
    names the step reads (`a<k>` for input k, `v<j>` for step j's result, the names both backends use); `loaded`
    is the sorted list of input indices some step reads."""
    rows, loaded = [], set()
    for j, s in enumerate(group.steps):
        args = []
        for ref in s.inputs:
            if ref.kind == "input":
                if not 0 <= ref.index < group.n_inputs:
                    raise ValueError(f"step {j} ({s.op}) reads input {ref.index} of {group.n_inputs}")
                loaded.add(ref.index)
                args.append(f"a{ref.index}")
            else:
                if not 0 <= ref.index < j:
                    raise ValueError(f"step {j} ({s.op}) reads step {ref.index}, not an earlier step")
                args.append(f"v{ref.index}")
        rows.append((j, s, args))
    for j in group.outputs:
        if not 0 <= j < len(group.steps):
            raise ValueError(f"output {j} is not a step of the group ({len(group.steps)} steps)")
    return rows, sorted(loaded)


def parse(template, args, attrs):
    """The template with `{k}` replaced by the name args[k] and `{name}` by the constant attrs[name], as an
    `ast` expression; ValueError for anything outside the template language."""
    def placeholder(match):
        key = match.group(1)
        if key.isdigit():
            if int(key) >= len(args):
                raise ValueError(f"template {template!r} needs input {key}, the step has {len(args)}")
            return f"__in{key}"
        if key not in attrs:
            raise ValueError(f"template {template!r} needs attribute {key!r}")
        return f"__attr_{key}"

    try:
        tree = ast.parse(re.sub(r"\{(\w+)\}", placeholder, template), mode="eval").body
    except SyntaxError as e:
        raise ValueError(f"template {template!r} is not an expression: {e.msg}") from None
    return _Substitute(template, args, attrs).visit(tree)


class _Substitute(ast.NodeTransformer):
    def __init__(self, template, args, attrs):
        self.template, self.args, self.attrs = template, args, attrs

    def fail(self, what):
        raise ValueError(f"{what} in template {self.template!r}")

    def visit_Name(self, node):
        if node.id.startswith("__in"):
            return ast.copy_location(ast.Name(self.args[int(node.id[4:])], ast.Load()), node)
        if node.id.startswith("__attr_"):
            value = self.attrs[node.id[7:]]
            # a plain int or float made here (not the object given, nor a string): what the backends render
            if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
                value = int(value)
            elif isinstance(value, (float, np.floating)):
                value = float(value)
            return self.visit_Constant(ast.copy_location(ast.Constant(value), node))
        self.fail(f"unknown name {node.id!r}")

    def visit_Constant(self, node):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            self.fail(f"unsupported constant {node.value!r}")
        return node

    def visit_Call(self, node):
        name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
        if name not in FUNCTIONS:
            self.fail(f"unknown template function {name!r}")
        if node.keywords or len(node.args) != FUNCTIONS[name]:
            self.fail(f"{name} takes {FUNCTIONS[name]} argument(s)")
        node.args = [self.visit(a) for a in node.args]
        return node

    def visit_BinOp(self, node):
        if not isinstance(node.op, _BINARY):
            self.fail(f"unsupported operator {type(node.op).__name__}")
        return self.generic_visit(node)

    def visit_UnaryOp(self, node):
        if not isinstance(node.op, _UNARY):
            self.fail(f"unsupported operator {type(node.op).__name__}")
        return self.generic_visit(node)

    def visit_Compare(self, node):
        if len(node.ops) != 1 or not isinstance(node.ops[0], _COMPARE):
            self.fail("a chained or unsupported comparison")
        return self.generic_visit(node)

    def generic_visit(self, node):
        if not isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Load) + _BINARY + _UNARY + _COMPARE):
            self.fail(f"unsupported construct {type(node).__name__}")
        return super().generic_visit(node)


def is_bool(tree):
    """Whether a parsed template's value is a boolean (to be cast back to the kernel dtype)."""
    if isinstance(tree, ast.Compare) or (isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.Not)):
        return True
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return True
    return isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id in BOOL_FUNCTIONS
