"""Reverse-mode autodiff on a tape of registry ops.

Recording: the dispatch door calls `_tape.record_op` for every op that has an input in the graph; the outputs then point
at a `TapeNode`. Ops declared not differentiable (comparisons, sign, round, BlockGrad, argmax, ...) are recorded
too and give their inputs zero gradients, as MXNet does: `backward()` through them writes zeros, not an error. Leaves (arrays with `attach_grad`) point at a `Leaf`. Gradient rules are the
registry's, written with mixnet ops, so running backward under `create_graph=True` records the backward pass too
and any order of derivative works.
"""
import contextlib

from . import _mode
from ._mode import MODE, Mode
from ._source import warn
from ._traceback import hide_internals
from .base import MXNetError
from .ndarray.ndarray import NDArray, _wrap, ones_like_array as _ones_like, zeros_like_array as _zeros_like
from .ops.common import call as _call
from .ops.registry import OpDef as _OpDef
from ._tape import _VERSION, Leaf, TapeNode, record_op as _record

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training", "set_recording",
           "set_training", "mark_variables", "backward", "grad", "Function", "get_symbol",  # noqa: F822
           "NDArray"]  # (get_symbol: set by mixnet/__init__.py) MXNet's autograd has no __all__: `from mxnet.autograd import *` brings NDArray too

# Two ways to have no graph, two messages; both keep MXNet's words "not in a computational graph" (code matches on
# them) and only the freed case mentions retain_graph.
_NOT_RECORDED = ("backward: this array is not in a computational graph: it was not computed inside "
                 "autograd.record() from an array with attach_grad() (or a Gluon parameter), so there is nothing "
                 "to differentiate. Record the computation: x.attach_grad(); with autograd.record(): y = f(x); "
                 "then y.backward().")
_GRAPH_FREED = ("backward: this array is not in a computational graph any more: an earlier backward() freed its "
                "graph. To differentiate the same graph twice, pass retain_graph=True to the first backward(), or "
                "record the computation again.")


class GradContext:
    """What a gradient rule sees, in eager backward and in graph-mode autodiff alike: the op, its inputs, outputs
    (hidden ones too), attributes and the training mode of the forward call (BatchNorm's rule needs it)."""
    __slots__ = ("op", "inputs", "attrs", "is_train", "_outputs", "_destinations")

    def __init__(self, op, attrs, inputs, is_train, outputs, destinations=None):
        self.op, self.attrs, self.inputs, self.is_train = op, attrs, inputs, is_train
        self._outputs = outputs             # a tuple, or a function making it (in eager backward few rules read them)
        self._destinations = destinations

    def grad_buffer(self, x):
        """The raw gradient buffer of input `x` that the rule may write x's gradient into and return (so that
        backward need not copy it there), or None. Offered by `backward` for leaves with grad_req 'write' that get
        exactly one gradient contribution in this sweep."""
        return None if self._destinations is None else self._destinations.get(id(x))

    @property
    def outputs(self):
        if callable(self._outputs):
            self._outputs = self._outputs()
        return self._outputs


# ---------------------------------------------------------------------------------------------------------
# Mode scopes
class _Scope(contextlib.ContextDecorator):
    __slots__ = ("_recording", "_training", "_token")

    def __init__(self, recording, training):
        self._recording, self._training = recording, training
        self._token = None

    def __enter__(self):
        mode = MODE.get()
        new = mode._replace(recording=mode.recording if self._recording is None else self._recording,
                            training=mode.training if self._training is None else self._training)
        self._token = MODE.set(new)
        return self

    def __exit__(self, *exc):
        MODE.reset(self._token)
        return False


def record(train_mode=True):
    """A scope whose NDArray operations are recorded, so that `backward()` can differentiate them.

    Parameters
    ----------
    train_mode : bool, default True
        Also run in training mode (Dropout drops, BatchNorm updates its running statistics); False records
        in inference mode.

    Examples
    --------
    >>> import mixnet as mx
    >>> x = mx.nd.array([1.0, 2.0, 3.0])
    >>> x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = (x * x).sum()
    >>> y.backward()
    >>> x.grad.asnumpy().tolist()
    [2.0, 4.0, 6.0]
    """
    return _Scope(True, train_mode)


def pause(train_mode=False):
    return _Scope(False, train_mode)


def train_mode():
    return _Scope(None, True)


def predict_mode():
    return _Scope(None, False)


def is_recording():
    return MODE.get().recording


def is_training():
    return MODE.get().training


def set_recording(is_recording):  # noqa: A002 - MXNet's name
    """Sets recording for this thread; returns the previous state."""
    mode = MODE.get()
    MODE.set(mode._replace(recording=bool(is_recording)))
    return mode.recording


def set_training(train_mode):
    mode = MODE.get()
    MODE.set(mode._replace(training=bool(train_mode)))
    return mode.training


# ---------------------------------------------------------------------------------------------------------
# Variables
_GRAD_REQS = ("write", "add", "null")


def _check_grad_req(req):
    if req not in _GRAD_REQS:
        raise MXNetError(f"grad_req must be one of {_GRAD_REQS}, got {req!r}")


def mark_variables(variables, gradients, grad_reqs="write"):
    """Marks arrays as leaves whose gradients are written into `gradients` (MXNet's low-level API)."""
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    if not len(variables) == len(gradients) == len(grad_reqs):
        raise MXNetError(f"mark_variables: {len(variables)} variables, {len(gradients)} gradients and "
                         f"{len(grad_reqs)} grad_reqs must match")
    for var, gbuf, req in zip(variables, gradients, grad_reqs):
        _check_grad_req(req)
        var._grad = gbuf
        var._grad_req = req
        var._node = None if req == "null" else Leaf(req)


# ---------------------------------------------------------------------------------------------------------
# Backward
def _topological_nodes(heads, stop_nodes=()):
    """Tape nodes reachable from the heads, each after all nodes that consume its outputs (nodes whose ids are
    in stop_nodes are not entered)."""
    order, seen = [], set(stop_nodes)
    stack = [(h._node, False) for h in heads if isinstance(h._node, TapeNode) and id(h._node) not in seen]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.released:
            raise MXNetError(_GRAPH_FREED)
        stack.append((node, True))
        for x in node.inputs:
            parent = x._node
            # An input whose graph an earlier backward() freed is a constant now, as in MXNet: no gradient
            # flows into it (only a head with a freed graph is an error, checked by the callers).
            if isinstance(parent, TapeNode) and id(parent) not in seen and not parent.released:
                stack.append((parent, False))
    order.reverse()
    return order


def _check_versions(node):
    if node.versions == list(map(_VERSION, node.inputs)):      # the common case, without a Python loop
        return
    mutated = node.op.mutates       # state the op itself updates (BatchNorm's moving stats) may change later
    for i, (x, version) in enumerate(zip(node.inputs, node.versions)):
        if x._version != version and i not in mutated:
            raise MXNetError(
                f"autograd: an input of {node.op.name} (shape {x.shape}) was modified in place after it was "
                "recorded, so its gradient would be wrong. Copy the array (x.copy()) before changing it, or "
                "change it outside the recorded computation.")


def accumulate(grads, key, value):
    """Adds a gradient contribution into grads[key]."""
    old = grads.get(key)
    grads[key] = value if old is None else old + value


def reverse_sweep(order, grads, graph):
    """The reverse pass of eager backward and of graph-mode autodiff (mixnet/symbol/autodiff.py) alike.

    order: op nodes, each after every consumer of its outputs. grads: {key: gradient}; output i of a node is keyed
    (id(node), i). For each node whose outputs have a gradient, the node's gradient rule runs (outputs without one
    get zeros) and each input gradient is added into grads. `graph` says what the nodes are: num_outputs(node);
    context(node) -> the rule's GradContext; zeros(node, ctx, i) -> a zero gradient for output i;
    rule(node, ctx, out_grads) -> one gradient (or None) per input; key(node, k, x, g) -> where the gradient g of
    input k (x) goes, None where it is not wanted.
    """
    # Plain loops and `is None` tests, no comprehensions or helper calls: this runs once per recorded node on
    # every backward (a list's `None in` or count would call NDArray.__eq__).
    pop, get = grads.pop, grads.get
    for node in order:
        node_id = id(node)
        out_grads = [pop((node_id, i), None) for i in range(graph.num_outputs(node))]
        missing = False
        for g in out_grads:
            if g is None:
                missing = True
            else:
                break
        else:
            continue                     # no output has a gradient
        ctx = graph.context(node)
        if missing or len(out_grads) > 1:
            out_grads = [graph.zeros(node, ctx, i) if g is None else g for i, g in enumerate(out_grads)]
        in_grads = graph.rule(node, ctx, out_grads)
        if len(in_grads) != len(ctx.inputs):
            raise MXNetError(f"internal: gradient rule of {node.op.name} returned {len(in_grads)} gradients "
                             f"for {len(ctx.inputs)} inputs")
        k = 0
        for x, g in zip(ctx.inputs, in_grads):
            if g is not None:
                key = graph.key(node, k, x, g)
                if key is not None:
                    old = get(key)
                    grads[key] = g if old is None else old + g      # accumulate(), inlined
            k += 1


def _key(x):
    """Where an array's gradient is collected: per (node, output index) for op outputs, per array for leaves."""
    node = x._node
    return (id(node), x._oidx) if isinstance(node, TapeNode) else id(x)


class _Tape:
    """reverse_sweep over the recorded tape: leaves reached are collected in `leaves`; destinations:
    {id(leaf): gradient buffer} offered to the rules (GradContext.grad_buffer)."""
    __slots__ = ("destinations", "leaves")

    def __init__(self, leaves, destinations=None):
        self.leaves, self.destinations = leaves, destinations

    @staticmethod
    def num_outputs(node):
        return len(node.out_data)

    def context(self, node):
        _check_versions(node)
        return GradContext(node.op, node.attrs, node.inputs, node.is_train, lambda: _tape_outputs(node),
                           self.destinations)

    @staticmethod
    def zeros(node, ctx, index):
        return _wrap(node.ctx.xp.zeros_like(node.out_data[index]), node.ctx)

    @staticmethod
    def rule(node, ctx, out_grads):
        if node.op.differentiable:
            return node.op.grad(ctx, *out_grads)
        return [_zeros_like(x) for x in node.inputs]

    def key(self, node, index, x, g):
        tape_node = x._node              # _key(x), inlined: once per gradient on every backward
        if tape_node is None:
            return None
        if type(tape_node) is TapeNode:
            return (id(tape_node), x._oidx)
        if isinstance(tape_node, Leaf):
            self.leaves[id(x)] = x
        return id(x)


class NotTraceable(MXNetError):
    """Raised when code that needs recorded values runs while graph-mode autodiff traces a gradient rule; the
    rule then runs eagerly inside the compiled backward instead (mixnet/symbol/autodiff.py)."""


def local_gradients(heads, head_grads, stops):
    """Gradients of `heads` w.r.t. the recorded arrays `stops`, through only the tape between them, in the
    current mode. For gradient rules that re-run a composite forward with mixnet ops (RNN): the sweep must not
    continue past the op's own inputs into the outer graph. Returns one gradient (or None) per stop."""
    if MODE.get().tracer is not None:
        raise NotTraceable("autograd.local_gradients needs a recorded tape, not a traced graph")
    grads = {}
    for h, g in zip(heads, head_grads):
        if g is not None and isinstance(h._node, TapeNode):
            accumulate(grads, _key(h), g)
    stop_nodes = {id(s._node) for s in stops if isinstance(s._node, TapeNode)}
    reverse_sweep(_topological_nodes([h for h in heads if isinstance(h._node, TapeNode)], stop_nodes), grads,
                  _Tape({}))
    return [grads.get(_key(s)) for s in stops]


def _direct_destinations(order, heads):
    """{id(leaf): its gradient buffer} for the leaves with grad_req 'write', a gradient buffer already, and one
    use in the recorded graph: their single gradient contribution may be written straight into the buffer."""
    uses, arrays = {}, {}
    for inputs in [heads] + [node.inputs for node in order]:     # plain loops: this runs on every backward
        for x in inputs:
            if isinstance(x._node, Leaf):
                key = id(x)
                uses[key] = uses.get(key, 0) + 1
                arrays[key] = x
    destinations = {}
    for key, x in arrays.items():
        if uses[key] == 1 and x._node.grad_req == "write" and x._grad is not None:
            destinations[key] = x._grad._data
    return destinations


def _reinterpret_head_grad(head, grad):
    """MXNet reads a head gradient's buffer as the head's shape: one of another shape with at least as many
    elements gives its leading elements in row-major order (warned about here; MXNet is silent). A smaller one
    would make MXNet read past its end, so it is an error."""
    if grad.size < head.size:
        raise MXNetError(f"backward: head gradient shape {grad.shape} does not match head shape {head.shape} "
                         f"(and has fewer elements)")
    warn(f"backward: head gradient of shape {grad.shape} for a head of shape {head.shape}: its first "
         f"{head.size} elements are used, as MXNet does")
    return grad.reshape((-1,))[:head.size].reshape(head.shape)


def _run_backward(heads, head_grads, create_graph, train_mode, retain_graph, into_grad_buffers=False):
    """Returns ({key: gradient}, {key: leaf array}) for everything the heads depend on. into_grad_buffers: gradient
    rules may write a leaf's gradient straight into its .grad buffer (`backward`, not `grad`)."""
    if isinstance(heads, NDArray):
        heads = [heads]
    if head_grads is None:
        head_grads = [None] * len(heads)
    elif isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    if len(head_grads) != len(heads):
        raise MXNetError(f"backward: {len(heads)} heads but {len(head_grads)} head gradients")
    for h in heads:
        if h._node is None:
            raise MXNetError(_NOT_RECORDED)
        if h._node.released:
            raise MXNetError(_GRAPH_FREED)
    grads, leaves = {}, {}
    for h, hg in zip(heads, head_grads):
        if hg is None:
            hg = _ones_like(h)
        elif tuple(hg.shape) != tuple(h.shape):
            hg = _reinterpret_head_grad(h, hg)
        if hg.dtype != h.dtype:           # gradient rules expect their output's dtype
            hg = hg.astype(h.dtype)
        accumulate(grads, _key(h), hg)
        if isinstance(h._node, Leaf):
            leaves[id(h)] = h
    order = _topological_nodes(heads)
    destinations = _direct_destinations(order, heads) if into_grad_buffers and not create_graph else None
    token = MODE.set(Mode(recording=create_graph, training=train_mode, tracer=None))
    try:
        reverse_sweep(order, grads, _Tape(leaves, destinations))
    finally:
        MODE.reset(token)
    if not retain_graph:
        for node in order:          # free what backward needed (a hybridized call keeps its saved values here)
            node.released = True
            node.inputs = ()
            node.attrs = None
    return grads, leaves


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Computes gradients of heads and writes them into the .grad of every leaf (attach_grad) reached."""
    try:
        grads, leaves = _run_backward(heads, head_grads, False, train_mode, retain_graph, into_grad_buffers=True)
    except MXNetError as err:
        __tracebackhide__ = True    # noqa: F841 - IPython and pytest hide this frame
        raise hide_internals(err)   # mixnet's own frames are cut: MIXNET_FULL_TRACEBACK=1 shows them
    _write_grads(leaves, grads)


def _write_grads(leaves, grads):
    """Each leaf's gradient into its .grad by its grad_req (one loop, no call per leaf: it runs every step)."""
    for key, x in leaves.items():
        req = x._node.grad_req
        if req == "null":
            continue
        if x._grad is None:        # Gluon parameters allocate their gradient at the first backward
            x._grad = _zeros_like(x)
        buf = x._grad
        data, target = grads[key]._data, buf._data
        if data.dtype != target.dtype:
            data = data.astype(target.dtype)
        if req == "write":
            if data is not target:     # else a gradient rule wrote it there already (GradContext.grad_buffer)
                target[...] = data
        else:
            target += data
        if buf._base is None:
            buf._version += 1
        else:
            buf._bump_version()    # a view: its base's version too
        x._fresh_grad = True


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False, train_mode=True):
    """Gradients of heads w.r.t. variables, returned (not written to .grad). With create_graph=True the
    returned gradients are themselves recorded, so they can be differentiated again."""
    single = isinstance(variables, NDArray)
    if single:
        variables = [variables]
    if retain_graph is None:
        retain_graph = create_graph
    for v in variables:
        if v._node is None:
            raise MXNetError("autograd.grad: a variable is not part of the recorded graph; call attach_grad() "
                             "on it before autograd.record()")
    try:
        grads, _ = _run_backward(heads, head_grads, create_graph, train_mode, retain_graph)
    except MXNetError as err:
        __tracebackhide__ = True    # noqa: F841 - IPython and pytest hide this frame
        raise hide_internals(err)   # mixnet's own frames are cut: MIXNET_FULL_TRACEBACK=1 shows them
    result = [grads.get(_key(v)) for v in variables]
    result = [_zeros_like(v) if g is None else g for v, g in zip(variables, result)]
    if create_graph:
        # MXNet's backward nodes take the forward inputs, so a gradient that does not depend on them (radians:
        # pi/180) is still on the graph and differentiates to zeros instead of raising "not in a graph"
        with record(train_mode):
            result = [g if g._node is not None else g + _call("zeros_like", v) for v, g in zip(variables, result)]
    return result


# ---------------------------------------------------------------------------------------------------------
class Function:
    """A user-defined differentiable function: subclass it, define forward and backward on NDArrays.

        class Sigmoid(mx.autograd.Function):
            def forward(self, x):
                y = 1 / (1 + mx.nd.exp(-x)); self.save_for_backward(y); return y
            def backward(self, dy):
                y, = self.saved_tensors; return dy * y * (1 - y)
    """

    def __init__(self):
        self._saved = ()

    def save_for_backward(self, *args):
        self._saved = args

    @property
    def saved_tensors(self):
        return self._saved

    def forward(self, *inputs):
        raise MXNetError(f"{type(self).__name__} must define forward()")

    def backward(self, *output_grads):
        raise MXNetError(f"{type(self).__name__} must define backward()")

    def __call__(self, *inputs):
        with pause(train_mode=is_training()):
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = (outputs,) if single else tuple(outputs)
        if is_recording() and any(x._node is not None for x in inputs):
            function = self

            def grad_rule(ctx, *out_grads):
                with pause(train_mode=is_training()):
                    in_grads = function.backward(*out_grads)
                in_grads = (in_grads,) if isinstance(in_grads, NDArray) else tuple(in_grads)
                if len(in_grads) != len(inputs):
                    raise MXNetError(f"{type(function).__name__}.backward returned {len(in_grads)} gradients "
                                     f"for {len(inputs)} inputs")
                return in_grads

            op = _OpDef(name=f"Function<{type(self).__name__}>", kernel=None, grad=grad_rule)
            outs = tuple(o.detach() for o in outs)   # fresh arrays owned by this node
            _record(op, {}, tuple(inputs), outs, is_training())
        return outs[0] if single else outs


del _mode


def _tape_outputs(node):
    """NDArrays of a tape node's outputs, linked into the graph like the original outputs (for rules that read
    them: few do, so GradContext makes them on first use)."""
    outputs = []
    for index, data in enumerate(node.out_data):
        out = _wrap(data, node.ctx)
        out._node = node
        out._oidx = index
        outputs.append(out)
    return tuple(outputs)
