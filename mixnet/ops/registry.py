"""The operator registry: every op is declared once, here, and everything else reads the declaration.

`nd.*` functions and NDArray methods, autograd, the generated tests — and later tracing, the symbol JSON and
fusion — all come from the `OpDef` table, so an op's behaviour is written in one place and adding an op is one
`register` call (docs/architecture.md describes the layers that read it).
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..base import MXNetError
from .attrs import parse_attrs

__all__ = ["OpDef", "OpTest", "ParamShapes", "ELEMENTWISE_KINDS", "register", "get", "all_ops", "find"]

# The kinds whose output element i depends only on element i of each (broadcast) input: what fusion, in-place
# reuse and mirroring may treat as a pointwise function.
ELEMENTWISE_KINDS = ("unary", "binary", "broadcast", "scalar")


@dataclass(frozen=True)
class OpTest:
    """How the generated tests exercise an op (tests/ops/ reads this; mixnet itself never does).

    cases: explicit examples, each `(input_shapes, attrs)`; recipe: a named family of hypothesis-drawn shapes
    (see tests/ops/recipes.py) combined with `recipe_attrs`; ref: an independent numpy reference
    `ref(*numpy_inputs, **attrs)`; domain: (low, high) for float inputs; int_inputs: {input index: (low, high)}
    for index/label inputs (drawn as integers, never differentiated).
    """
    ref: Optional[Callable] = None
    cases: tuple = ()
    recipe: Optional[str] = None
    recipe_attrs: tuple = ({},)
    domain: tuple = (-2.0, 2.0)
    int_inputs: dict = field(default_factory=dict)
    grad: bool = True
    grad2: bool = True
    rtol: float = 1e-4
    atol: float = 1e-5
    grad_rtol: float = 1e-2
    grad_atol: float = 1e-3
    dtype: str = "float32"
    random: bool = False           # output is random: forward compares statistics, not values
    moments: Optional[Callable] = None  # random ops: moments(*inputs, **attrs) -> (mean, variance) of each element
    #                                     of the first output (broadcastable to it), which the forward test checks


@dataclass(frozen=True)
class ParamShapes:
    """How graph shape inference fills an op's parameter inputs backwards from its data input, as MXNet's C++
    shape functions do (a FullyConnected weight from the data's width).

    rule(attrs, shapes) -> {input index: shape}, shapes[i] None when unknown. partial: the rule reads partly
    known shapes (0 = an unknown dim) sensibly; otherwise such an input reaches it as None. variables_only: it
    fills only variable and creation inputs (a computed label may have any shape the loss accepts); otherwise it
    also fills an unknown computed input (a weight passed through `cast`), which then flows back to its producer.
    """
    rule: Callable
    partial: bool = False
    variables_only: bool = False


@dataclass(eq=False)
class OpDef:
    """One operator.

    kernel(xp, *arrays, **attrs) computes outputs from numpy/cupy arrays (xp is the array module).
    grad(ctx, *out_grads) returns one gradient (an NDArray or None) per input, written with mixnet ops so it
    is itself differentiable; ctx has .inputs, .outputs, .attrs (and .op).
    infer(shapes, dtypes, **attrs) -> (out_shapes, out_dtypes) for every output (hidden ones included), computed
    from the shapes alone: no kernel runs and nothing of the data's size is allocated (graph shape inference,
    tracing and graph-mode autodiff use it; ops.common.infer wraps its errors). Every registered op declares one;
    an op whose output shape depends on the input values (dynamic_shape) declares one that says so.
    scalar: for elementwise ops, the expression template the fusion code generator renders ({0}, {1} = inputs).
    """
    name: str
    kernel: Callable
    inputs: Any = ("data",)                  # names; a callable(attrs) -> names for optional inputs
    attrs: dict = field(default_factory=dict)
    grad: Optional[Callable] = None
    infer: Optional[Callable] = None
    num_outputs: Any = 1                     # int or callable(attrs)
    num_visible: Any = None                  # outputs the user sees (Dropout hides its mask); None = all
    output_names: Any = None                 # MXNet's output names (tuple or callable(attrs)); None: output/outputN
    json_outputs: Any = None                 # the output count MXNet records in -symbol.json where it differs
                                             # from ours (max Pooling's workspace, RNN's hidden dropout masks)
    aliases: tuple = ()
    variadic: bool = False                   # every positional array is an input (concat, add_n, stack)
    kind: str = "other"                      # 'unary', 'binary', 'broadcast', 'scalar', 'reduce', 'other'
    scalar: Optional[str] = None
    differentiable: bool = True              # False: zero gradient to every input (comparisons, argmax), as MXNet
    nondiff_inputs: tuple = ()               # input indices that never get a gradient (indices, labels)
    mutates: tuple = ()                      # input indices updated in place (BatchNorm's running stats)
    writes_out: bool = False                 # kernel takes out= (an array, or a tuple of them) to write into
                                             # planned buffers (hybridize(static_alloc=True))
    train_aware: bool = False                # kernel takes is_train= (Dropout, BatchNorm)
    random: bool = False                     # kernel takes rng= (a numpy/cupy Generator)
    creates: bool = False                    # no array inputs; takes ctx= and makes a new array
    dynamic_shape: bool = False              # output shape depends on input values (boolean_mask)
    hidden: bool = False                     # internal (gradient helpers such as _sum_to): still nd._name, as MXNet
    open_attrs: bool = False                 # any attribute is accepted and kept as a string (Custom: op_type plus
                                             # its prop's keyword arguments); parse() validates them
    named_inputs: Optional[bool] = None      # MXNet lists input names (FListInputNames), so monitors and op
    #                                          hooks call them <node>_<name>; else <node>_input<i>. None: True
    #                                          except for the unary, scalar and reduce families
    param_shapes: Optional[ParamShapes] = None   # parameter-input shapes from the data's (graph inference)
    dtype_attr: bool = False                 # the output dtype is the `dtype` attribute (Cast, one_hot, argmax)
    reshape: bool = False                    # the output is input 0's data in another shape (Reshape, Flatten):
    #                                          one that keeps the input's shape and dtype does nothing
    reduction: Optional[Callable] = None     # reduction(attrs, input shape) -> ("sum" | "mean", axes) for the
    #                                          sum-type reductions the fusion pass can append to a kernel
    input_init: dict = field(default_factory=dict)   # input name -> MXNet's __init__ for an auto-created variable
    fast: Optional[str] = None               # the Numba loops the kernel runs instead of its generic xp code,
    #                                          and any condition beyond ops/_fastpath.py's (float32/float64 numpy
    #                                          arrays of one dtype, loops loaded, _fastpath.ENABLED);
    #                                          tests/ops/test_fast_paths.py runs every test case both ways
    test: Optional[OpTest] = None
    doc: str = ""

    def __post_init__(self):
        # The dispatcher's fast path: the kernel needs nothing beyond arrays and attributes.
        self.simple_kernel = not (self.train_aware or self.random or self.mutates)

    @property
    def elementwise(self):
        return self.kind in ELEMENTWISE_KINDS

    def input_names(self, attrs):
        return self.inputs(attrs) if callable(self.inputs) else self.inputs

    def monitor_input_names(self, attrs, n_inputs):
        """The names MXNet's monitor callbacks give this op's inputs (after `<node>_`)."""
        named = self.named_inputs if self.named_inputs is not None else \
            self.kind not in ("unary", "scalar", "reduce")
        if not named:
            return [f"input{i}" for i in range(n_inputs)]
        if self.variadic:
            return [f"arg{i}" for i in range(n_inputs)]
        return list(self.input_names(attrs))

    def aux_slots(self, attrs):
        """Inputs that are auxiliary states (Symbol.list_auxiliary_states): those the op updates in place."""
        return self.mutates

    def n_outputs(self, attrs):
        return self.num_outputs(attrs) if callable(self.num_outputs) else self.num_outputs

    def n_visible(self, attrs):
        if self.num_visible is None:
            return self.n_outputs(attrs)
        return self.num_visible(attrs) if callable(self.num_visible) else self.num_visible

    def parse(self, given):
        """User/JSON attributes -> a complete, typed attribute dict (defaults filled in)."""
        return parse_attrs(self.name, self.attrs, given)


_OPS = {}          # name or alias -> OpDef
_PRIMARY = {}      # name -> OpDef, declaration order


def register(op):
    if op.infer is None:
        raise MXNetError(f"operator {op.name!r} declares no infer: every op computes its output shapes and dtypes "
                         "from its input shapes and dtypes (see mixnet/ops/common.py)")
    for name in (op.name,) + tuple(op.aliases):
        if name in _OPS:
            raise MXNetError(f"operator {name!r} is declared twice")
        _OPS[name] = op
    _PRIMARY[op.name] = op
    return op


def get(name):
    try:
        return _OPS[name]
    except KeyError:
        raise MXNetError(f"unknown operator {name!r}") from None


def find(name):
    return _OPS.get(name)


def all_ops():
    """Each op once, in declaration order."""
    return list(_PRIMARY.values())
