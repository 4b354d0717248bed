"""`Symbol`: a list of node outputs in the graph IR, with MXNet 1.x's Symbol API.

Differences from MXNet, on purpose (docs/compatibility.md lists them all): `+ - * / % **` and comparisons
between Symbols broadcast (they map to `broadcast_add` etc., as NDArray's do; MXNet used non-broadcasting
`elemwise_add`). Node names stay MXNet's (`_plus0`, `_mulscalar0`). `print(sym)` shows one line per node with
its op, inputs, attributes and the user's `file:line` (repr stays MXNet's `<Symbol name>`).
"""
import contextvars

import numpy as np

from .. import attribute, name as name_module
from .._shape_mode import is_np_shape
from .._atomic import write_atomic
from .._operator_table import install_operators
from .._source import user_location, warn
from ..base import MXNetError, NotImplementedForSymbol
from ..ops import docgen, registry
from ..ops.binding import bind_call
from ..serialization import dtype_code
from . import draw
from .graph import Node, mx_str, subgraphs, topo_order
from .infer import infer_graph, known
from .json_io import graph_from_json, graph_to_json

__all__ = ["Symbol", "var", "Variable", "Group", "load", "load_json", "fromjson", "make_function",
           "build_functions", "create_node"]

# {variable name: NDArray} while hybridize traces: arrays made inside forward become constant inputs of the graph
TRACE_CONSTANTS = contextvars.ContextVar("mixnet_trace_constants", default=None)


def _is_array(value):
    return type(value).__name__ == "NDArray" or isinstance(value, np.ndarray)


def constant(value):
    """A graph input holding `value`, an array made inside a traced forward (e.g. `x + mx.nd.ones((3,))`). The
    trace keeps the value; the graph reads it like a frozen parameter, and export() writes it as one."""
    constants = TRACE_CONSTANTS.get()
    if constants is None:
        raise MXNetError(f"an NDArray cannot be combined with a Symbol outside hybridize() (at {user_location()}); "
                         "make it a variable (mx.sym.var) and bind its value")
    from ..ndarray.ndarray import array  # lazy: the ndarray package imports symbol
    name = name_module.NameManager.current().get(None, "const")
    constants[name] = value.copy() if type(value).__name__ == "NDArray" else array(value, dtype=value.dtype)
    return Symbol([(Node(None, name, {}, {}, (), user_location()), 0)])


class Symbol:
    """Outputs of a graph: a list of (Node, output index) entries."""
    __slots__ = ("_outputs",)

    def __init__(self, outputs):
        self._outputs = list(outputs)

    # ------------------------------------------------------------------ structure
    @property
    def name(self):
        if len(self._outputs) != 1:
            return None
        return self._outputs[0][0].name

    def _nodes(self):
        return topo_order(self._outputs)

    def __len__(self):
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([e]) for e in self._outputs)

    def __getitem__(self, index):
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if not matches:
                raise ValueError(f"There is no output named {index!r} (outputs: {names})")
            if len(matches) > 1:
                raise ValueError(f"There are multiple outputs named {index!r}")
            index = matches[0]
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not isinstance(index, (int, np.integer)):
            raise TypeError("Symbol only supports an integer index or an output name")
        if not -len(self._outputs) <= index < len(self._outputs):
            raise IndexError(f"Symbol has {len(self._outputs)} output(s), index {index} is out of range")
        return Symbol([self._outputs[index]])

    def _aux_ids(self, nodes):
        aux = set()
        for node in nodes:
            if node.op is not None:
                for slot in node.op.aux_slots(node.attrs):
                    if slot < len(node.inputs) and node.inputs[slot][0].op is None:
                        aux.add(id(node.inputs[slot][0]))
        return aux

    def list_arguments(self):
        nodes = self._nodes()
        aux = self._aux_ids(nodes)
        return [n.name for n in nodes if n.op is None and id(n) not in aux]

    def list_auxiliary_states(self):
        nodes = self._nodes()
        aux = self._aux_ids(nodes)
        return [n.name for n in nodes if n.op is None and id(n) in aux]

    def list_inputs(self):
        return [n.name for n in self._nodes() if n.op is None]

    def list_outputs(self):
        return [node.output_names()[idx] if node.op is not None else node.name for node, idx in self._outputs]

    def get_internals(self):
        entries = []
        for node in self._nodes():
            entries.extend((node, i) for i in range(node.num_visible()))
        return Symbol(entries)

    def get_children(self):
        """The inputs of the nodes making this Symbol's outputs (None for a variable)."""
        entries, seen = [], set()
        for node, _ in self._outputs:
            if id(node) not in seen:
                seen.add(id(node))
                entries.extend(node.inputs)
        return Symbol(entries) if entries else None

    def __call__(self, *args, name=None, **kwargs):
        """Composition: a copy of this graph with input variables replaced by Symbols, by name
        (`net(fc3_data=other)`) or in list_inputs() order (positionally). name= renames the head node."""
        inputs = self.list_inputs()
        if len(args) > len(inputs):
            raise MXNetError(f"Symbol composition: {len(args)} positional Symbols for the {len(inputs)} inputs "
                             f"{inputs}")
        replace = dict(zip(inputs, args))
        for key, value in kwargs.items():
            if key not in inputs:
                raise MXNetError(f"Symbol composition: {key!r} is not an input of this symbol (inputs: {inputs})")
            if key in replace:
                raise MXNetError(f"Symbol composition: input {key!r} given twice")
            replace[key] = value
        for key, value in replace.items():
            if not isinstance(value, Symbol) or len(value) != 1:
                raise MXNetError(f"Symbol composition: input {key!r} must be a Symbol with one output, got "
                                 f"{type(value).__name__}")
        clones, substitutes = {}, {}      # op nodes -> their copies; replaced variables -> the new entry

        def entry(node, index):
            if node.op is None:
                return substitutes.get(id(node), (node, index))
            return clones[id(node)], index

        for node in self._nodes():
            if node.op is None:
                if node.name in replace:
                    substitutes[id(node)] = replace[node.name]._outputs[0]
                continue
            clones[id(node)] = node.clone([entry(src, idx) for src, idx in node.inputs], attrs=dict(node.attrs),
                                          raw=dict(node.raw), json_versions=None)
        outputs = [entry(node, idx) for node, idx in self._outputs]
        if name is not None and len(outputs) == 1 and outputs[0][0].op is not None:
            outputs[0][0].name = name
        return Symbol(outputs)

    def _gen_atomic_symbol(self):
        """The op of this Symbol's (single) node applied to fresh variables named after its inputs."""
        nodes = {id(n): n for n, _ in self._outputs}
        if len(nodes) != 1 or self._outputs[0][0].op is None:
            raise MXNetError("_gen_atomic_symbol needs the outputs of one operator node")
        node = self._outputs[0][0]
        inputs = [(Node(None, name, {}, {}, (), node.location), 0) for name in node.input_names()]
        atom = Node(node.op, node.name, node.attrs, dict(node.raw), inputs, node.location)
        return Symbol([(atom, i) for i in range(atom.num_visible())])

    # ------------------------------------------------------------------ attributes
    def attr(self, key):
        if len(self._outputs) != 1:
            raise MXNetError("attr() needs a single-output Symbol")
        return self._outputs[0][0].raw.get(key)

    def list_attr(self, recursive=False):
        if recursive:
            raise MXNetError("list_attr(recursive=True) is removed in MXNet 1.x; use attr_dict()")
        if len(self._outputs) != 1:
            return {}
        return dict(self._outputs[0][0].raw)

    def attr_dict(self):
        return {n.name: dict(n.raw) for n in self._nodes() if n.raw}

    def _set_attr(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError("Set Attr only accepts string values")
            for node, _ in self._outputs:
                node.raw[key] = value

    # ------------------------------------------------------------------ inference
    def _infer(self, shapes, dtypes, partial):
        nodes = self._nodes()
        return nodes, infer_graph(nodes, shapes, dtypes, partial)

    def _inputs_by_name(self, what, values, args, kwargs):
        """{input name: value} from infer_shape's / infer_type's arguments: by name, or positionally in
        list_arguments() order (None: not given)."""
        names = self.list_arguments()
        if args:
            if kwargs:
                raise MXNetError(f"{what}: give {values} either positionally or by name, not both")
            if len(args) > len(names):
                raise MXNetError(f"{what}: {len(args)} {values} given for {len(names)} arguments {names}")
            kwargs = {n: v for n, v in zip(names, args) if v is not None}
        unknown = [k for k in kwargs if k not in self.list_inputs()]
        if unknown:
            raise MXNetError(f"{what}: {unknown} are not inputs of this symbol (inputs: {self.list_inputs()})")
        return kwargs

    def _infer_shapes(self, args, kwargs, dtypes=None):
        shapes = {k: tuple(v) for k, v in self._inputs_by_name("infer_shape", "shapes", args, kwargs).items()}
        nodes, (eshape, _) = self._infer(shapes, dtypes or {}, True)
        by_name = {n.name: eshape.get((id(n), 0)) for n in nodes if n.op is None}
        return ([by_name[n] for n in self.list_arguments()],
                [eshape.get((id(node), idx)) for node, idx in self._outputs],
                [by_name[n] for n in self.list_auxiliary_states()])

    def infer_shape(self, *args, **kwargs):
        """(arg_shapes, out_shapes, aux_shapes) from the given input shapes (by name or in list_arguments()
        order); (None, None, None) with a warning when some stay unknown."""
        res = self._infer_shapes(args, kwargs)
        names = self.list_arguments() + self.list_auxiliary_states()
        missing = [(n, s) for n, s in zip(names, res[0] + res[2]) if not known(s)]
        if missing or not all(known(s) for s in res[1]):
            warn("Cannot decide shape for the following arguments (0s in shape means unknown "
                 "dimensions). Consider providing them as input:\n" +
                 "\n".join(f"\t{n}: {s if s is not None else ()}" for n, s in missing))
            return None, None, None
        return res

    def infer_shape_partial(self, *args, **kwargs):
        """Like infer_shape, but unknown shapes are () (or keep their 0 dims) instead of failing; in np-shape mode,
        as MXNet there, an unknown shape is None and an unknown dim -1."""
        groups = self._infer_shapes(args, kwargs)
        if is_np_shape():
            return tuple([None if s is None else tuple(-1 if d == 0 else d for d in s) for s in group]
                         for group in groups)
        return tuple([s if s is not None else () for s in group] for group in groups)

    def _infer_types(self, args, kwargs):
        names = self.list_arguments()
        kwargs = self._inputs_by_name("infer_type", "dtypes", args, kwargs)
        nodes, (_, edtype) = self._infer({}, {k: np.dtype(v) for k, v in kwargs.items()}, False)
        by_name = {n.name: edtype.get((id(n), 0)) for n in nodes if n.op is None}

        def as_type(ts):        # MXNet gives numpy type classes, None where unknown
            return [None if t is None else t.type for t in ts]
        return (as_type(by_name[n] for n in names), as_type(edtype.get((id(n), i)) for n, i in self._outputs),
                as_type(by_name[n] for n in self.list_auxiliary_states()))

    def infer_type(self, *args, **kwargs):
        """(arg_types, out_types, aux_types) as numpy type classes from the given input dtypes (by name or in
        list_arguments() order); (None, None, None) with a warning when some stay unknown."""
        res = self._infer_types(args, kwargs)
        names = self.list_arguments() + self.list_auxiliary_states()
        missing = [n for n, t in zip(names, res[0] + res[2]) if t is None]
        if missing or any(t is None for t in res[1]):
            warn("Cannot decide type for the following arguments. Consider providing them as input:\n" +
                 "\n".join(f"\t{n}: None" for n in missing))
            return None, None, None
        return res

    def infer_type_partial(self, *args, **kwargs):
        """Like infer_type, but unknown types are None instead of failing."""
        return self._infer_types(args, kwargs)

    # ------------------------------------------------------------------ JSON
    def tojson(self, remove_amp_cast=True):
        return graph_to_json(self._outputs)

    def save(self, fname, remove_amp_cast=True):
        """Writes the JSON atomically (a temporary file in the same folder, then a rename; mixnet/_atomic.py)."""
        write_atomic(fname, self.tojson())

    # ------------------------------------------------------------------ text
    def __repr__(self):
        if len(self._outputs) == 1:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(n.name for n, _ in self._outputs)}]>"

    def __str__(self):
        return self.debug_str()

    # notebooks: a picture through graphviz when Graphviz's `dot` is installed, else the text graph (symbol/draw.py)
    def _repr_svg_(self):
        return draw.notebook_svg(self._outputs, title=self.name or "plot")

    def _repr_html_(self):
        return draw.notebook_html(self._outputs, self.debug_str(), title=self.name or "plot")

    def debug_str(self):
        """One line per node: `name = op(inputs, attrs)  # file:line`, then the outputs. A control-flow node's
        subgraphs follow it, each as an indented block under its name (`body:`, `cond:`, `then_branch:`...)."""
        return "\n".join(self._debug_lines(""))

    def _debug_lines(self, indent, note=None):
        nodes = self._nodes()
        aux = self._aux_ids(nodes)
        lines = []

        def entry(node, idx):
            return node.name if node.num_outputs() == 1 else f"{node.name}[{idx}]"

        def shown(raw):          # the subgraph tag is MXNet's bookkeeping, not the user's attribute
            return sorted((k, v) for k, v in raw.items() if k != "__subgraph_name__")
        for node in nodes:
            if node.op is None:
                kind = "aux" if id(node) in aux else "var"
                extra = ", ".join(f"{k.strip('_')}={v}" for k, v in shown(node.raw))
                text = f"{kind} {node.name}" + (f" ({extra})" if extra else "")
            else:
                args = [entry(src, idx) for src, idx in node.inputs]
                args += [f"{k}={v}" for k, v in shown(node.raw)]
                text = f"{node.name} = {node.op.name}({', '.join(args)})"
            text = indent + text
            extra = note(node) if note is not None else None
            if extra:                                         # e.g. the output types of a traced graph's node
                text = f"{text}  -> {extra}"
            if node.location:
                text = f"{text:<60}  # {node.location}"
            lines.append(text.rstrip())
            for key, sub in subgraphs(node):
                lines.append(f"{indent}  {key}:")
                lines.extend(sub._debug_lines(indent + "    ", note))
        lines.append(indent + "outputs: " + ", ".join(entry(n, i) for n, i in self._outputs))
        return lines

    # ------------------------------------------------------------------ arithmetic (broadcasting)
    # + - * / % ** and the comparisons come from the operator table (_operator_method, below the class)
    def _binary(self, other, entry, reverse=False):
        """self <op> other (other <op> self when reverse): a Symbol or an array (a constant input) -> the
        broadcasting op, a number -> the scalar op; the nodes are named as MXNet names them."""
        array_hint, scalar_hint, rscalar_hint = entry.hints
        if isinstance(other, Symbol):
            lhs, rhs = (other, self) if reverse else (self, other)
            return create_node(entry.array_op, [lhs, rhs], {}, name_hint=array_hint)
        if isinstance(other, (int, float, np.number, bool)) and not isinstance(other, np.ndarray):
            if reverse:
                return create_node(entry.rscalar_op, [self], {"scalar": other}, name_hint=rscalar_hint)
            return create_node(entry.scalar_op, [self], {"scalar": other}, name_hint=scalar_hint)
        if _is_array(other):
            lhs, rhs = (constant(other), self) if reverse else (self, constant(other))
            return create_node(entry.array_op, [lhs, rhs], {}, name_hint=array_hint)
        return NotImplemented

    def __neg__(self):
        return self.__mul__(-1.0)

    def __abs__(self):
        return create_node("abs", [self], {}, name_hint="abs")

    __hash__ = object.__hash__

    def _no_data(self, function):
        # NotImplementedForSymbol is what MXNet raises here (an MXNetError); the hint covers the common cause.
        where = user_location()
        raise NotImplementedForSymbol(function, None, hint=(
            "A Symbol has no data (while hybridize() traces, arrays are Symbols), so Python control flow cannot "
            "depend on it. Use mx.nd.contrib.cond / foreach / while_loop (F.contrib.* in hybrid_forward), or do "
            "not hybridize this block" + (f"\n  at {where}" if where else "")))

    def __bool__(self):
        self._no_data("bool")

    def __float__(self):
        self._no_data("float")

    def __int__(self):
        self._no_data("int")

    def asnumpy(self):
        self._no_data("asnumpy")

    def asscalar(self):
        self._no_data("asscalar")

    def __copy__(self):
        return Symbol(self._outputs)

    def __deepcopy__(self, memo):
        return load_json(self.tojson())

    def __getstate__(self):
        return {"json": self.tojson()}

    def __setstate__(self, state):
        self._outputs = load_json(state["json"])._outputs

    # ------------------------------------------------------------------ execution (see executor.py)
    def eval(self, ctx=None, **kwargs):
        from .executor import evaluate  # lazy: executor imports symbol
        return evaluate(self, kwargs, ctx)

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
             shared_exec=None):
        from .executor import Executor  # lazy: executor imports symbol
        return Executor(self, ctx, args, args_grad, grad_req, aux_states)

    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
        from .executor import simple_bind  # lazy: executor imports symbol
        # MXNet reads only the shape-valued keywords; others (MXNet's tests pass force_rebind=True) are ignored
        shapes = {k: v for k, v in kwargs.items() if isinstance(v, (tuple, list))}
        return simple_bind(self, ctx, grad_req, type_dict, shapes)

    # fluent helpers most used in graph code
    def reshape(self, *shape, **kwargs):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        if shape:
            kwargs["shape"] = tuple(shape)
        return _call("reshape", self, **kwargs)

    def astype(self, dtype):
        return _call("Cast", self, dtype=dtype)

    # MXNet's Symbol accepts NDArray's `inplace` here and ignores it: a graph node is never a view of its input
    def flatten(self, inplace=False, **kwargs):
        return _call("Flatten", self, **kwargs)

    def squeeze(self, axis=None, inplace=False, **kwargs):
        return _call("squeeze", self, axis=axis, **kwargs)

    def expand_dims(self, axis, inplace=False, **kwargs):
        return _call("expand_dims", self, axis=axis, **kwargs)

    def __getattr__(self, name):
        # fluent methods (x.sum(axis=1), x.exp(), x.swapaxes(1, 2)) from the registry
        if name.startswith("_"):
            raise AttributeError(name)
        op = registry.find(name)
        if op is None or op.creates or op.hidden:
            raise AttributeError(f"'Symbol' object has no attribute {name!r}")
        fn = make_function(op, name)
        return lambda *args, **kwargs: fn(self, *args, **kwargs)


def _operator_method(entry, reflected):
    """Symbol's method for an operator of mixnet/_operator_table.py."""
    def method(self, other):
        return self._binary(other, entry, reverse=reflected)
    return method


install_operators(Symbol, _operator_method)


def _call(public_name, *args, **kwargs):
    return make_function(registry.get(public_name), public_name)(*args, **kwargs)


# ---------------------------------------------------------------------------------------------------------
# making nodes
def _symbol_inputs(op, entries):
    out = []
    for x in entries:
        if _is_array(x) and TRACE_CONSTANTS.get() is not None:
            x = constant(x)
        if not isinstance(x, Symbol):
            raise MXNetError(f"{op.name}: inputs must be Symbols, got {type(x).__name__}")
        if len(x._outputs) != 1:
            raise MXNetError(f"{op.name}: an input must have exactly one output, got a group of {len(x._outputs)} "
                             f"({', '.join(x.list_outputs())})")
        out.append(x._outputs[0])
    return out


# Keyword arguments of any op that MXNet keeps as node attributes `__<key>__` (not op parameters); the variables
# the node creates for its missing inputs inherit them (`FullyConnected(..., lr_mult=0)` freezes its weight).
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


def create_node(op_name, inputs, given, name=None, attr=None, name_hint=None, missing=None):
    """Applies a registry op to Symbol inputs. `given` holds the attributes the user passed (written to JSON in
    MXNet's spelling); `missing` lists input names to auto-create as `<node>_<input>` variables."""
    op = registry.get(op_name) if isinstance(op_name, str) else op_name
    try:
        attrs = op.parse(given)
    except MXNetError as err:
        loc = user_location()
        raise MXNetError(f"{err}" + (f"\n  at {loc}" if loc else "")) from None
    hint = name_hint or op.name.lower()
    node_name = name_module.NameManager.current().get(name, hint)
    raw = {k: mx_str(k, v) for k, v in given.items()}
    raw.update(attribute.AttrScope.current().get(attr))
    entries = _symbol_inputs(op, [x for x in inputs if x is not None])
    node = Node(op, node_name, attrs, raw, [], user_location())
    if missing:
        op_raw = {k: v for k, v in raw.items() if not k.startswith("__") or k[2:-2] in HIDDEN_KEYS}
        slots = {n: i for i, n in enumerate(op.input_names(attrs))}
        full = list(inputs)
        for arg in missing:
            var_raw = dict(op_raw)
            init = op.input_init.get(arg)       # MXNet's initializer (BatchNorm's running statistics)
            if init:
                var_raw["__init__"] = init
            full[slots[arg]] = Symbol([(Node(None, f"{node_name}_{arg}", {}, var_raw, (), node.location), 0)])
        entries = _symbol_inputs(op, full)
    node.inputs = entries
    return Symbol([(node, i) for i in range(node.num_visible())])


def bind_symbol_arguments(op, args, kwargs):
    """A call's arguments -> (inputs, raw attributes, missing input names) by MXNet's convention
    (ops/binding.py); inputs not given are auto-created as variables, as MXNet does."""
    tracing = TRACE_CONSTANTS.get() is not None
    inputs, given, names = bind_call(op, args, kwargs,
                                     lambda v: isinstance(v, Symbol) or (tracing and _is_array(v)),
                                     named_variadic=True)
    if names is None:
        if "num_args" in op.attrs and "num_args" not in given:
            given["num_args"] = len(inputs)
        return inputs, given, []
    return inputs, given, [n for n, x in zip(names, inputs) if x is None]


_FUNCTIONS = {}


def make_function(op, public_name=None):
    public_name = public_name or op.name
    key = (op.name, public_name)
    if key in _FUNCTIONS:
        return _FUNCTIONS[key]
    hint = public_name.lower()

    def function(*args, name=None, attr=None, out=None, **kwargs):
        if out is not None:
            raise MXNetError(f"{public_name}: out= is not supported for Symbols")
        # MXNet keeps `__key__` keywords (e.g. mx.rnn's begin_state(__layout__='NC')) as node attributes, and
        # lr_mult / wd_mult / ctx_group as the hidden `__lr_mult__`... ones
        hidden = {f"__{k}__": str(kwargs.pop(k)) for k in HIDDEN_KEYS if k in kwargs}
        hidden.update({k: str(kwargs.pop(k)) for k in [k for k in kwargs if k.startswith("__") and k.endswith("__")]})
        if hidden:
            attr = {**hidden, **(attr or {})}
        inputs, given, missing = bind_symbol_arguments(op, args, kwargs)
        return create_node(op, inputs, given, name=name, attr=attr, name_hint=hint, missing=missing)
    function.__name__ = public_name
    function.__qualname__ = public_name
    function.__doc__ = docgen.sym_doc(op, public_name)
    function.__signature__ = docgen.sym_signature(op)
    _FUNCTIONS[key] = function
    return function


def build_functions(namespace, prefix=""):
    """One function per registry op (and alias) whose name starts with `prefix`."""
    made = {}
    for op in registry.all_ops():
        for public in (op.name,) + tuple(op.aliases):
            if not public.startswith(prefix):
                continue
            short = public[len(prefix):]
            if short and short not in namespace:
                namespace[short] = made[short] = make_function(op, public)
    return made


# ---------------------------------------------------------------------------------------------------------
# variables, groups, loading
def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None, stype=None, **kwargs):
    """A graph input/parameter. Hidden attributes are written to JSON as MXNet does (__shape__, __dtype__ as the
    dtype code, __init__, __lr_mult__, __wd_mult__, __storage_type__)."""
    if not isinstance(name, str):
        raise TypeError("Expect a string for variable `name`")
    raw = attribute.AttrScope.current().get(attr)
    if shape is not None:
        raw["__shape__"] = str(tuple(shape) if isinstance(shape, list) else shape)
    if lr_mult is not None:
        raw["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        raw["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        raw["__dtype__"] = str(dtype_code(np.dtype(dtype) if not isinstance(dtype, str) else
                                          np.dtype({"float": "float32"}.get(dtype, dtype))))
    if init is not None:
        raw["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        codes = {"default": 0, "row_sparse": 1, "csr": 2}
        if stype not in codes:
            raise MXNetError(f"var {name!r}: unknown stype {stype!r}")
        raw["__storage_type__"] = str(codes[stype])
    for key, value in kwargs.items():
        if key.startswith("__") and key.endswith("__"):
            raw[key] = str(value)
        else:
            raise ValueError(f"Attribute name={key} is not supported. Additional attributes must start and end "
                             "with double underscores, e.g, __yourattr__")
    return Symbol([(Node(None, name, {}, raw, (), user_location()), 0)])


Variable = var


def Group(symbols):
    """One Symbol whose outputs are all the given symbols' outputs, in order."""
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Expected a list of symbols as input")
    entries = []
    for s in symbols:
        entries.extend(s._outputs)
    return Symbol(entries)


def load_json(json_str):
    """A Symbol from MXNet JSON text (any MXNet version's files; corrupt input raises MXNetError)."""
    return Symbol(graph_from_json(json_str, Symbol))


fromjson = load_json


def load(fname):
    """Loads a `-symbol.json` file."""
    try:
        with open(fname, "rb") as f:
            data = f.read()
    except OSError as err:
        raise MXNetError(f"cannot read symbol file {fname!r}: {err}") from None
    return Symbol(graph_from_json(data, Symbol, source=repr(str(fname))))
