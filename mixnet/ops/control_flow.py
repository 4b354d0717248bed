"""Control-flow operators: `_foreach`, `_while_loop` and `_cond`, with MXNet 1.9.1's names, attributes and layout.

A node holds its subgraph Symbols in its parsed attributes (`body`; `cond` and `func`; `cond`, `then_branch` and
`else_branch`), never in the string attributes written to JSON (symbol/json_io.py writes them as MXNet's
"subgraphs" list, in that order). The node's inputs are every array the subgraphs read; the `*_locs` attributes
say where each subgraph input (in its `list_inputs()` order) comes from:

* `_foreach(data..., states..., remain...)`: `in_data_locs[k]` / `in_state_locs[k]` / `remain_locs[k]` is the
  body input fed by data k (one step of it, axis 0 sliced away) / state k / remaining input k (closure values
  and parameters). Outputs: `num_out_data` per-step outputs stacked on axis 0, then the final states.
* `_while_loop(inputs...)`: `cond_input_locs[j]` / `func_input_locs[j]` is the node input feeding input j of
  `cond` / `func`; loop variable k is func input `func_var_locs[k]` (and is replaced, in the node's inputs, by
  func's output `num_out_data + k` after each step). Outputs: step outputs stacked and padded with zero rows up
  to `max_iterations` (MXNet leaves the padding uninitialized), then the final loop variables.
* `_cond(inputs...)`: `cond_input_locs` / `then_input_locs` / `else_input_locs` likewise; only the branch the
  predicate's value picks runs.

When a subgraph holds a random op (Dropout), the node has one hidden output more: the device generator's state
before the steps, from which the gradient rule replays the same draws (so eager and hybridized agree bitwise).

The kernel interprets the subgraphs step by step with mixnet.symbol.executor.run_graph on NDArrays wrapping the
raw arrays (recording paused). The gradient rule re-runs the same steps under autograd.record on `_copy`
proxies of the inputs and takes local gradients, so sequence data, states, and closure variables and parameters
all get theirs. The symbol, autograd and ndarray layers sit above this one, hence the imports inside functions.
"""
import numpy as np

from .. import random as mx_random
from .._mode import MODE
from .attrs import Attr, REQUIRED, optional, parse_int, parse_shape, parse_subgraph
from .common import call, device_of, run_ops
from .registry import OpDef, ParamShapes, register
from .rnn import _Reserves          # the RNN op's cache of forward activations, keyed by the output
from . import dispatch

__all__ = ["subgraph_inputs", "feeds", "infer_subgraph", "random_inside"]


def subgraph_inputs(graph):
    """The input names of a subgraph, in the order the *_locs attributes index; they must be unique."""
    names = graph.list_inputs()
    if len(set(names)) != len(names):
        raise ValueError(f"the inputs of a subgraph must have unique names, got {names}")
    return names


def feeds(op_name, attrs):
    """[(subgraph, slots)] of a control-flow node: subgraph input j is fed by node input slots[j]. For _foreach,
    the data inputs (slots below len(in_data_locs)) feed one step of themselves (axis 0 sliced away)."""
    if op_name == "_foreach":
        locs = list(attrs["in_data_locs"]) + list(attrs["in_state_locs"]) + list(attrs["remain_locs"])
        if sorted(locs) != list(range(len(locs))):
            raise ValueError(f"the data, state and remaining locations {locs} must number the body's inputs "
                             "exactly once")
        return [(attrs["body"], [locs.index(j) for j in range(len(locs))])]
    if op_name == "_while_loop":
        return [(attrs["cond"], list(attrs["cond_input_locs"])), (attrs["func"], list(attrs["func_input_locs"]))]
    return [(attrs[k], list(attrs[f"{k.split('_')[0]}_input_locs"])) for k in ("cond", "then_branch", "else_branch")]


def _run(graph, names, locs, inputs):
    """Evaluates a subgraph whose input j is inputs[locs[j]]; returns its output NDArrays."""
    from ..symbol.executor import run_graph  # lazy: symbol sits above ops
    if len(locs) != len(names):
        raise ValueError(f"a subgraph with {len(names)} inputs ({', '.join(names)}) is given {len(locs)} "
                         "input locations")
    return run_graph(graph, {n: inputs[loc] for n, loc in zip(names, locs)}, inputs[0].context)


def _truth(pred, what):
    if pred.size != 1:
        raise ValueError(f"{what} must have one element, got shape {tuple(pred.shape)}")
    return bool(pred.asnumpy().reshape(())[()])


def _stack(rows):
    return call("stack", *rows, axis=0, num_args=len(rows))


def _check_counts(attrs, graph_outputs, what):
    if graph_outputs != attrs["num_outputs"]:
        raise ValueError(f"{what} has {graph_outputs} outputs, but num_outputs={attrs['num_outputs']}")
    if not 0 <= attrs["num_out_data"] <= graph_outputs:
        raise ValueError(f"num_out_data={attrs['num_out_data']} is not between 0 and num_outputs={graph_outputs}")


# ---------------------------------------------------------------------------------------------------------
# the steps, on NDArrays with mixnet ops (the kernel runs them paused, the gradient rule recording)
def _foreach_layout(attrs, inputs):
    """Checks a foreach node's inputs; returns (body input names, order, n_data, n_states, length): body input
    j is fed by node input order[j]."""
    body = attrs["body"]
    names = subgraph_inputs(body)
    _check_counts(attrs, len(body.list_outputs()), "the body")
    n_data, n_states = len(attrs["in_data_locs"]), len(attrs["in_state_locs"])
    if len(inputs) != n_data + n_states + len(attrs["remain_locs"]):
        raise ValueError(f"expects {n_data} data, {n_states} state and {len(attrs['remain_locs'])} remaining "
                         f"inputs, got {len(inputs)} inputs")
    if n_states != attrs["num_outputs"] - attrs["num_out_data"]:
        raise ValueError(f"the body returns {attrs['num_outputs'] - attrs['num_out_data']} states for "
                         f"{n_states} state inputs")
    lengths = sorted({x.shape[0] if x.ndim else 0 for x in inputs[:n_data]})
    if len(lengths) != 1 or lengths[0] == 0:
        raise ValueError(f"the data must be non-empty with one common length on axis 0, got lengths {lengths}")
    return names, feeds("_foreach", attrs)[0][1], n_data, n_states, lengths[0]


def _foreach_steps(attrs, inputs):
    body = attrs["body"]
    names, order, n_data, n_states, length = _foreach_layout(attrs, inputs)
    data, states = inputs[:n_data], list(inputs[n_data:n_data + n_states])
    remain = list(inputs[n_data + n_states:])
    steps = []
    for t in range(length):
        step_inputs = [x[t] for x in data] + states + remain   # a 1-D array's step is (1,), as eagerly
        outs = _run(body, names, order, step_inputs)
        steps.append(outs[:attrs["num_out_data"]])
        states = outs[attrs["num_out_data"]:]
    return [_stack([s[k] for s in steps]) for k in range(attrs["num_out_data"])] + list(states)


def _while_steps(attrs, inputs):
    cond, func = attrs["cond"], attrs["func"]
    cond_names, func_names = subgraph_inputs(cond), subgraph_inputs(func)
    _check_counts(attrs, len(func.list_outputs()), "func")
    n_out, max_iter = attrs["num_out_data"], attrs["max_iterations"]
    func_locs = attrs["func_input_locs"]
    var_slots = [func_locs[k] for k in attrs["func_var_locs"]]       # the node input each loop variable lives in
    if len(var_slots) != attrs["num_outputs"] - n_out:
        raise ValueError(f"func returns {attrs['num_outputs'] - n_out} loop variables, func_var_locs names "
                         f"{len(var_slots)}")
    values = list(inputs)
    steps = []
    while len(steps) < max_iter and _truth(_run(cond, cond_names, attrs["cond_input_locs"], values)[0],
                                           "the loop condition"):
        outs = _run(func, func_names, func_locs, values)
        for k, (slot, new) in enumerate(zip(var_slots, outs[n_out:])):
            old = values[slot]
            if tuple(new.shape) != tuple(old.shape) or new.dtype != old.dtype:
                raise ValueError(f"loop variable {k} changed from {tuple(old.shape)} {np.dtype(old.dtype)} to "
                                 f"{tuple(new.shape)} {np.dtype(new.dtype)}; shapes and dtypes must stay the same")
            values[slot] = new
        steps.append(outs[:n_out])
    if steps:
        outputs = []
        for k in range(n_out):
            stacked = _stack([s[k] for s in steps])
            if len(steps) < max_iter:
                pad = call("_zeros", shape=(max_iter - len(steps),) + tuple(stacked.shape[1:]),
                           dtype=np.dtype(stacked.dtype), ctx=stacked.context)
                stacked = call("Concat", stacked, pad, dim=0, num_args=2)
            outputs.append(stacked)
    else:                                      # no step ran: zero rows of the shapes func would give
        shapes, dtypes = _while_infer(attrs, [tuple(x.shape) for x in inputs], [x.dtype for x in inputs])
        outputs = [call("_zeros", shape=s, dtype=np.dtype(d), ctx=inputs[0].context)
                   for s, d in zip(shapes[:n_out], dtypes[:n_out])]
    return outputs + [values[slot] for slot in var_slots]


def _cond_steps(attrs, inputs):
    names = subgraph_inputs(attrs["cond"])
    taken = _truth(_run(attrs["cond"], names, attrs["cond_input_locs"], inputs)[0], "the condition")
    key = "then" if taken else "else"
    branch = attrs[f"{key}_branch"]
    outs = _run(branch, subgraph_inputs(branch), attrs[f"{key}_input_locs"], inputs)
    if len(outs) != attrs["num_outputs"]:
        raise ValueError(f"the {key} branch has {len(outs)} outputs, but num_outputs={attrs['num_outputs']}")
    return outs


# ---------------------------------------------------------------------------------------------------------
# random ops inside: the generator's state is a hidden output, so the gradient rule replays the same draws
def random_inside(attrs):
    """True when a subgraph (or one nested in it) holds a random op such as Dropout."""
    from ..symbol.graph import subgraphs  # lazy: symbol sits above ops
    stack = [v for v in attrs.values() if type(v).__name__ == "Symbol"]
    while stack:
        for node in stack.pop()._nodes():
            if node.op is not None and node.op.random:
                return True
            stack.extend(sub for _, sub in subgraphs(node))
    return False


_MASK64 = (1 << 64) - 1


def _save_state(rng):
    """The device generator's PCG64 state as six uint64 words (an array output)."""
    st = rng.bit_generator.state
    if st["bit_generator"] != "PCG64":
        raise ValueError(f"cannot record the state of a {st['bit_generator']} generator (mixnet uses PCG64)")
    inner = st["state"]
    return np.array([inner["state"] >> 64, inner["state"] & _MASK64, inner["inc"] >> 64, inner["inc"] & _MASK64,
                     st["has_uint32"], st["uinteger"]], dtype=np.uint64)


def _load_state(words):
    w = [int(v) for v in words]
    return {"bit_generator": "PCG64", "state": {"state": (w[0] << 64) | w[1], "inc": (w[2] << 64) | w[3]},
            "has_uint32": w[4], "uinteger": w[5]}


def _n_outputs(attrs):
    return attrs["num_outputs"] + (1 if random_inside(attrs) else 0)


def _with_state(infer):
    def with_state(shapes, dtypes, **attrs):
        out_shapes, out_dtypes = infer(shapes, dtypes, **attrs)
        if random_inside(attrs):
            return list(out_shapes) + [(6,)], list(out_dtypes) + [np.dtype(np.uint64)]
        return out_shapes, out_dtypes
    return with_state


# ---------------------------------------------------------------------------------------------------------
# kernel and gradient rule, shared by the three ops
def _kernel(steps):
    def kernel(xp, *arrays, is_train=False, rng=None, **attrs):
        state = _save_state(rng) if rng is not None and random_inside(attrs) else None
        # The subgraph's ops run through the dispatch door like eager code (drawing from the same generator:
        # the device's, found from `rng` on cpu(k)), neither recorded nor traced.
        ctx = None if rng is None else mx_random._context_of(rng)
        outs = run_ops(xp, lambda *inputs: steps(attrs, list(inputs)), arrays, is_train, ctx)
        datas = [o._data for o in outs]
        # an output that is an input (a loop that never ran) must not alias the caller's buffer
        datas = [d.copy() if any(d is a for a in arrays) else d for d in datas]
        if state is not None:
            datas.append(xp.asarray(state))
        return datas[0] if len(datas) == 1 else tuple(datas)
    return kernel


def _grad(steps):
    def grad(c, *out_grads):
        from .. import autograd  # lazy: autograd sits above ops
        n = c.attrs["num_outputs"]
        gen = saved = None
        if len(c.outputs) > n:           # replay the forward's random draws (the generator is restored after)
            gen = dispatch.random_state(c.inputs[0].context)
            saved = gen.bit_generator.state
            gen.bit_generator.state = _load_state(c.outputs[n].asnumpy())
        try:
            with autograd.record(train_mode=c.is_train):
                proxies = [call("_copy", x) for x in c.inputs]
                outs = steps(c.attrs, proxies)
        finally:
            if gen is not None:
                gen.bit_generator.state = saved
        return tuple(autograd.local_gradients(outs, list(out_grads[:len(outs)]), proxies))
    return grad


# ---------------------------------------------------------------------------------------------------------
# _foreach compiled: the body runs as a compiled plan per step (mixnet/symbol/loop.py), and the first-order
# gradient is the hidden op `_foreach_bwd`, which runs the body's compiled backward once per step in reverse
def _data_step(x, t):
    return x[t] if x.ndim > 1 else x[t:t + 1]            # a 1-D array's step is (1,), as eagerly


def _body_plan(xp, arrays, attrs, is_train):
    from ..symbol.loop import body_plan  # lazy: symbol sits above ops
    names, order, n_data, n_states, length = _foreach_layout(attrs, arrays)
    shapes = {n: _step_shape(arrays[s].shape) if s < n_data else tuple(arrays[s].shape) for n, s in zip(names, order)}
    dtypes = {n: arrays[s].dtype for n, s in zip(names, order)}
    return body_plan(attrs["body"], names, shapes, dtypes, device_of(xp, arrays), is_train), order, n_data, n_states, \
        length


def _foreach_compiled(xp, arrays, attrs, is_train, save):
    """(outputs, reserve): the stacked per-step outputs and the final states, and with `save` the plan and each
    step's saved values (what the body's compiled backward reads)."""
    plan, order, n_data, n_states, length = _body_plan(xp, arrays, attrs, is_train)
    n_out = attrs["num_out_data"]
    outs = [xp.empty((length,) + tuple(s), dtype=d) for s, d in zip(plan.out_shapes[:n_out], plan.out_dtypes[:n_out])]
    data, states = arrays[:n_data], list(arrays[n_data:n_data + n_states])
    remain = list(arrays[n_data + n_states:])
    if save:
        training = plan.training
        run, kept = training.forward.run, training.saved_inputs
    else:
        run = plan.inference.run
    saved = []
    n_all = n_out + n_states
    for t in range(length):
        step = [_data_step(x, t) for x in data] + states + remain
        args = [step[s] for s in order]
        res = run(args, is_train)
        for k in range(n_out):
            outs[k][t] = res[k]
        states = list(res[n_out:n_all])
        if save:
            saved.append(list(res[n_all:]) + [args[i] for i in kept])
    return outs + states, ((plan, saved) if save else None)


_FOREACH_RESERVES = None


def _reserves():
    global _FOREACH_RESERVES
    if _FOREACH_RESERVES is None:
        _FOREACH_RESERVES = _Reserves()
    return _FOREACH_RESERVES


def _foreach_kernel(xp, *arrays, is_train=False, rng=None, **attrs):
    if random_inside(attrs):                # the generic path records and replays the generator's draws
        return _generic_foreach_kernel(xp, *arrays, is_train=is_train, rng=rng, **attrs)
    datas, reserve = _foreach_compiled(xp, arrays, attrs, is_train, is_train or MODE.get().recording)
    datas = [d.copy() if any(d is a for a in arrays) else d for d in datas]
    if reserve is not None:
        _reserves().put(datas[0], arrays, reserve)
    return datas[0] if len(datas) == 1 else tuple(datas)


def _k_foreach_bwd(xp, *arrays, is_train=False, **attrs):
    """Gradients of every foreach input from (inputs..., output 0, head gradient of each output...)."""
    n_in = len(attrs["in_data_locs"]) + len(attrs["in_state_locs"]) + len(attrs["remain_locs"])
    inputs, heads = arrays[:n_in], arrays[n_in + 1:]
    reserve = _reserves().get(arrays[n_in], inputs)
    if reserve is None:                     # the forward did not save (or its inputs changed): run it again
        _, reserve = _foreach_compiled(xp, inputs, attrs, is_train, True)
    plan, saved = reserve
    training = plan.training
    _, order, n_data, n_states, length = _body_plan(xp, inputs, attrs, plan.is_train)
    n_out = attrs["num_out_data"]
    slots = [order[plan.names.index(n)] for n in training.wrt]
    grads = [None] * n_in
    for k in range(n_data):
        grads[k] = xp.zeros_like(inputs[k])
    d_states = list(heads[n_out:n_out + n_states])
    for t in range(length - 1, -1, -1):
        if training.backward is None:
            break
        step_heads = [h[t] for h in heads[:n_out]] + d_states
        results = iter(training.backward.run([step_heads[i] for i in training.head_index] + saved[t], is_train))
        d_states = [None] * n_states
        for slot, present in zip(slots, training.grad_present):
            if not present:
                continue
            g = next(results)
            if slot < n_data:
                grads[slot][t] = g.reshape(grads[slot][t].shape)
            elif slot < n_data + n_states:
                d_states[slot - n_data] = g
            elif grads[slot] is None:
                grads[slot] = g.copy()      # owned: later steps add into it
            else:
                grads[slot] += g
        d_states = [xp.zeros_like(inputs[n_data + k]) if g is None else g for k, g in enumerate(d_states)]
    for k in range(n_states):
        grads[n_data + k] = d_states[k] if d_states[k] is not None else xp.zeros_like(inputs[n_data + k])
    grads = [xp.zeros_like(x) if g is None else g.astype(x.dtype, copy=False) for x, g in zip(inputs, grads)]
    grads = [g.copy() if any(g is a for a in arrays) else g for g in grads]
    return grads[0] if len(grads) == 1 else tuple(grads)


def _foreach_grad(c, *out_grads):
    if random_inside(c.attrs) or MODE.get().recording:
        # higher orders (create_graph) and random bodies: the steps re-run on the tape
        return _generic_foreach_grad(c, *out_grads)
    n = c.attrs["num_outputs"]
    grads = call("_foreach_bwd", *c.inputs, c.outputs[0], *out_grads[:n], **c.attrs)
    return tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)


def _infer_foreach_bwd(shapes, dtypes, **attrs):
    n_in = len(attrs["in_data_locs"]) + len(attrs["in_state_locs"]) + len(attrs["remain_locs"])
    return [tuple(s) for s in shapes[:n_in]], [np.dtype(d) for d in dtypes[:n_in]]


# ---------------------------------------------------------------------------------------------------------
# shape and dtype inference through the subgraphs
def infer_subgraph(graph, shapes, dtypes, what):
    """Output (shapes, dtypes) of a subgraph given {input name: shape} and {input name: dtype} (memoized within one
    top-level inference: symbol/infer.py)."""
    from ..symbol import infer  # lazy: symbol sits above ops
    eshape, edtype = infer.infer_subgraph(graph, shapes, dtypes, False)
    out_shapes, out_dtypes = [], []
    for k, (node, idx) in enumerate(graph._outputs):
        s, d = eshape.get((id(node), idx)), edtype.get((id(node), idx))
        if s is None or d is None:
            raise ValueError(f"cannot infer the shape of output {k} of {what} from its input shapes {shapes}")
        out_shapes.append(tuple(s))
        out_dtypes.append(d)
    return out_shapes, out_dtypes


def _feed(names, locs, values):
    return {n: values[loc] for n, loc in zip(names, locs)}


def _step_shape(shape):
    return tuple(shape[1:]) if len(shape) > 1 else (1,)


def _foreach_infer(shapes, dtypes, **attrs):
    body, order = feeds("_foreach", attrs)[0]
    names = subgraph_inputs(body)
    n_data, n_states = len(attrs["in_data_locs"]), len(attrs["in_state_locs"])
    step = [_step_shape(s) for s in shapes[:n_data]] + [tuple(s) for s in shapes[n_data:]]
    out_shapes, out_dtypes = infer_subgraph(body, _feed(names, order, step), _feed(names, order, dtypes),
                                            "the foreach body")
    n_out = attrs["num_out_data"]
    for k in range(n_states):
        given, made = tuple(shapes[n_data + k]), out_shapes[n_out + k]
        if given != made:
            raise ValueError(f"the body turns state {k} of shape {given} into shape {made}; "
                             "states must keep their shapes")
    length = shapes[0][0] if shapes and len(shapes[0]) else 0
    return [(length,) + s for s in out_shapes[:n_out]] + out_shapes[n_out:], out_dtypes


def _while_infer(attrs, shapes, dtypes):
    names = subgraph_inputs(attrs["func"])
    out_shapes, out_dtypes = infer_subgraph(attrs["func"], _feed(names, attrs["func_input_locs"], shapes),
                                            _feed(names, attrs["func_input_locs"], dtypes), "the while_loop func")
    n_out = attrs["num_out_data"]
    for k, loc in enumerate(attrs["func_var_locs"]):
        given, made = tuple(shapes[attrs["func_input_locs"][loc]]), out_shapes[n_out + k]
        if given != made:
            raise ValueError(f"func turns loop variable {k} of shape {given} into shape {made}; "
                             "loop variables must keep their shapes")
    return [(attrs["max_iterations"],) + s for s in out_shapes[:n_out]] + out_shapes[n_out:], out_dtypes


def _cond_infer(shapes, dtypes, **attrs):
    results = []
    for key in ("then", "else"):
        branch = attrs[f"{key}_branch"]
        names = subgraph_inputs(branch)
        locs = attrs[f"{key}_input_locs"]
        results.append(infer_subgraph(branch, _feed(names, locs, shapes), _feed(names, locs, dtypes),
                                      f"the {key} branch"))
    (then_s, then_d), (else_s, else_d) = results
    if then_s != else_s or [np.dtype(d) for d in then_d] != [np.dtype(d) for d in else_d]:
        raise ValueError(f"the branches must give outputs of the same shapes and dtypes; then gives "
                         f"{then_s} {[np.dtype(d).name for d in then_d]}, else gives {else_s} "
                         f"{[np.dtype(d).name for d in else_d]}")
    return then_s, then_d


# ---------------------------------------------------------------------------------------------------------
def _locs(doc):
    return Attr(parse_shape, REQUIRED, doc)


_COMMON = {
    "num_args": Attr(optional(parse_int), None, "inputs plus subgraphs (written by MXNet's front end)"),
    "num_outputs": Attr(parse_int, REQUIRED, "outputs of the node"),
}


def _param_rule(op_name):
    """Parameter rule of a control-flow node: its subgraphs are inferred with what is known, and the shapes their
    inputs get flow back to the node's inputs (a Dense weight used inside a foreach body)."""
    def rule(a, s):
        from ..symbol.infer import infer_subgraph, known  # lazy: symbol sits above ops
        out = {}
        n_step = len(a["in_data_locs"]) if op_name == "_foreach" else 0
        for graph, slots in feeds(op_name, a):
            names = graph.list_inputs()
            given = {}
            for name, slot in zip(names, slots):
                if slot < len(s) and s[slot] is not None:
                    given[name] = (tuple(s[slot][1:]) or (1,)) if slot < n_step else s[slot]
            eshape, _ = infer_subgraph(graph, given, {}, True)
            variables = {n.name: n for n in graph._nodes() if n.op is None}
            for name, slot in zip(names, slots):
                shape = eshape.get((id(variables[name]), 0))
                if slot >= n_step and known(shape):
                    out[slot] = shape
        return out
    return ParamShapes(rule, partial=op_name == "_foreach", variables_only=True)


def _register(name, kernel, grad, infer, attrs, doc):
    # random=True: the kernel gets the device generator, whose state it records when a subgraph draws from it
    register(OpDef(
        name=name, kernel=kernel, inputs=("data",), variadic=True, attrs=attrs, param_shapes=_param_rule(name),
        grad=grad, infer=_with_state(infer), num_outputs=_n_outputs,
        num_visible=lambda a: a["num_outputs"], json_outputs=lambda a: a["num_outputs"], train_aware=True,
        random=True, hidden=True, doc=doc))


_generic_foreach_kernel, _generic_foreach_grad = _kernel(_foreach_steps), _grad(_foreach_steps)
_FOREACH_ATTRS = {
    "body": Attr(parse_subgraph, REQUIRED, "the loop body"),
    **_COMMON,
    "num_out_data": Attr(parse_int, REQUIRED, "per-step outputs of the body (the rest are states)"),
    "in_state_locs": _locs("body inputs fed by the states"),
    "in_data_locs": _locs("body inputs fed by one step of the data"),
    "remain_locs": _locs("body inputs fed by the remaining inputs"),
}
_register("_foreach", _foreach_kernel, _foreach_grad, _foreach_infer, _FOREACH_ATTRS,
          "Runs a subgraph over axis 0 of its data (contrib.foreach under hybridize or in mx.sym).")

register(OpDef(
    name="_foreach_bwd", kernel=_k_foreach_bwd, inputs=("data",), variadic=True, attrs=_FOREACH_ATTRS,
    infer=_infer_foreach_bwd, num_outputs=lambda a: len(a["in_data_locs"]) + len(a["in_state_locs"])
    + len(a["remain_locs"]), train_aware=True, differentiable=False, hidden=True,
    doc="The first-order gradient of a foreach without random ops: the body's compiled backward run once per "
        "step in reverse over what the forward saved (inputs: the foreach's inputs, its first output, the head "
        "gradient of each output)."))

_register("_while_loop", _kernel(_while_steps), _grad(_while_steps), lambda shapes, dtypes, **a: _while_infer(a, shapes, dtypes), {
    "cond": Attr(parse_subgraph, REQUIRED, "the loop condition"),
    "func": Attr(parse_subgraph, REQUIRED, "the loop body"),
    **_COMMON,
    "num_out_data": Attr(parse_int, REQUIRED, "per-step outputs of func (the rest are loop variables)"),
    "max_iterations": Attr(parse_int, REQUIRED, "the most steps; step outputs are padded to this length"),
    "cond_input_locs": _locs("node inputs feeding cond's inputs"),
    "func_input_locs": _locs("node inputs feeding func's inputs"),
    "func_var_locs": _locs("func inputs that are the loop variables"),
}, "Runs a subgraph while a condition subgraph holds (contrib.while_loop under hybridize or in mx.sym).")

_register("_cond", _kernel(_cond_steps), _grad(_cond_steps), _cond_infer, {
    "cond": Attr(parse_subgraph, REQUIRED, "the predicate"),
    "then_branch": Attr(parse_subgraph, REQUIRED, "run when the predicate is nonzero"),
    "else_branch": Attr(parse_subgraph, REQUIRED, "run otherwise"),
    **_COMMON,
    "cond_input_locs": _locs("node inputs feeding the predicate's inputs"),
    "then_input_locs": _locs("node inputs feeding the then branch's inputs"),
    "else_input_locs": _locs("node inputs feeding the else branch's inputs"),
}, "Runs one of two subgraphs, as the predicate's value says (contrib.cond under hybridize or in mx.sym).")
