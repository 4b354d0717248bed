"""The control-flow ops `_foreach`, `_while_loop`, `_cond` and mx.sym.contrib.foreach / while_loop / cond: the
generic op interface (dispatch, kernel, infer, grad), results and gradients equal to eager nd.contrib, shape
inference, JSON round trips, printed subgraphs and errors."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, nd
from mixnet import symbol as sym
from mixnet.ops import dispatch

R = np.random.RandomState(0)


def _arr(*shape):
    return nd.array(R.uniform(-1, 1, shape))


def _rnn_body(F, w):
    def body(xt, states):
        h = F.tanh(F.dot(states[0], w) + xt)
        return [h * 2, h.sum(axis=1)], [h]
    return body


def _foreach_node():
    x, h, w = sym.var("x"), sym.var("h"), sym.var("w")
    (outs, sums), (last,) = sym.contrib.foreach(_rnn_body(sym, w), x, [h])
    return sym.Group([outs, sums, last]), outs._outputs[0][0]


def test_foreach_through_the_generic_op_interface():
    group, node = _foreach_node()
    x, h, w = _arr(4, 2, 3), _arr(2, 3), _arr(3, 3)
    inputs = {"x": x, "h": h, "w": w}
    ordered = [inputs[src.name] for src, _ in node.inputs]
    outs = dispatch.apply(node.op, ordered, node.attrs)
    raw = node.op.kernel(np, *[a.asnumpy() for a in ordered], **node.attrs)
    assert isinstance(raw, tuple) and all(isinstance(r, np.ndarray) for r in raw)
    (e_outs, e_sums), (e_last,) = nd.contrib.foreach(_rnn_body(nd, w), x, [h])
    for got, r, want in zip(outs, raw, (e_outs, e_sums, e_last)):     # the op runs its body compiled (fused
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5)   # kernels round differently)
        np.testing.assert_allclose(r, want.asnumpy(), rtol=1e-5)
    shapes, dtypes = node.op.infer([a.shape for a in ordered], [np.float32] * 3, **node.attrs)
    assert shapes == [(4, 2, 3), (4, 2), (2, 3)] and len(dtypes) == 3
    assert "body" not in node.raw and node.raw["remain_locs"] == "[1]"


def _grads_of(fn, arrays):
    arrays = [a.copy() for a in arrays]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        outs = fn(*arrays)
        loss = sum(((o * (k + 1)) ** 2).sum() for k, o in enumerate(outs))
    loss.backward()
    return [a.grad.asnumpy() for a in arrays]


def test_foreach_gradients_reach_data_states_and_closure_variables():
    _, node = _foreach_node()
    x, h, w = _arr(5, 2, 3), _arr(2, 3), _arr(3, 3)
    slot_of = {src.name: i for i, (src, _) in enumerate(node.inputs)}

    def graph(x, h, w):
        ordered = [None] * 3
        for name, a in (("x", x), ("h", h), ("w", w)):
            ordered[slot_of[name]] = a
        return dispatch.apply(node.op, ordered, node.attrs)

    def eager(x, h, w):
        (o, s), (last,) = nd.contrib.foreach(_rnn_body(nd, w), x, [h])
        return o, s, last
    for got, want in zip(_grads_of(graph, [x, h, w]), _grads_of(eager, [x, h, w])):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_foreach_gradient_matches_finite_differences():
    _, node = _foreach_node()
    arrays = [_arr(3, 1, 2).astype("float64"), _arr(1, 2).astype("float64"), _arr(2, 2).astype("float64")]
    names = {"x": 0, "h": 1, "w": 2}
    ordered = [arrays[names[src.name]] for src, _ in node.inputs]
    grads = _grads_of(lambda *a: dispatch.apply(node.op, list(a), node.attrs), ordered)

    def loss(values):
        outs = node.op.kernel(np, *values, **node.attrs)
        return sum(((o * (k + 1)) ** 2).sum() for k, o in enumerate(outs))
    base = [a.asnumpy() for a in ordered]
    for i, g in enumerate(grads):
        num = np.zeros_like(base[i])
        for j in np.ndindex(base[i].shape):
            up, down = [b.copy() for b in base], [b.copy() for b in base]
            up[i][j] += 1e-6
            down[i][j] -= 1e-6
            num[j] = (loss(up) - loss(down)) / 2e-6
        np.testing.assert_allclose(g, num, rtol=1e-4, atol=1e-6)


def _while(F, s):
    return (lambda i, v: (v.sum() < 3) * (i < 10),
            lambda i, v: ([F.broadcast_mul(v, s), i * 2], [i + 1, v + F.abs(F.broadcast_mul(v, s)) + 0.5]))


def test_while_loop_symbol_matches_eager_with_gradients():
    i, v, s = sym.var("i"), sym.var("v"), sym.var("s")
    outs, (i_end, v_end) = sym.contrib.while_loop(*_while(sym, s), [i, v], max_iterations=7)
    group = sym.Group(outs + [i_end, v_end])
    values = [nd.zeros((1,)), nd.array([0.1, 0.3, 0.2]), nd.array([0.5, -0.7, 0.9])]

    def graph(i0, v0, s0):
        return group.eval(i=i0, v=v0, s=s0)

    def eager(i0, v0, s0):
        out, (ie, ve) = nd.contrib.while_loop(*_while(nd, s0), [i0, v0], max_iterations=7)
        return out + [ie, ve]
    got, want = graph(*values), eager(*values)
    assert got[0].shape == (7, 3) and not got[0].asnumpy()[int(got[2].asscalar()):].any()   # zero padding
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)
    for a, b in zip(_grads_of(graph, values), _grads_of(eager, values)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert group.infer_shape(i=(1,), v=(3,), s=(3,))[1] == [(7, 3), (7, 1), (1,), (3,)]


def test_while_loop_that_never_runs_gives_zero_rows():
    i = sym.var("i")
    outs, final = sym.contrib.while_loop(lambda i: i < 0, lambda i: (i * 3, i + 1), i, max_iterations=4)
    out, last = sym.Group([outs, final]).eval(i=nd.array([2.0]))
    assert out.shape == (4, 1) and not out.asnumpy().any() and last.asscalar() == 2
    eager_out, eager_last = nd.contrib.while_loop(lambda i: i < 0, lambda i: (i * 3, i + 1), nd.array([2.0]),
                                                  max_iterations=4)
    assert eager_out == [] and eager_last.asscalar() == 2         # eagerly (as in MXNet) there are no outputs


def test_eager_while_loop_keeps_the_nesting_func_returns():
    single, _ = nd.contrib.while_loop(lambda i: i < 2, lambda i: (i, i + 1), nd.array([0.0]), max_iterations=3)
    listed, _ = nd.contrib.while_loop(lambda i: i < 2, lambda i: ([i], [i + 1]), [nd.array([0.0])], max_iterations=3)
    assert isinstance(single, nd.NDArray) and isinstance(listed, list) and len(listed) == 1
    s_single, _ = sym.contrib.while_loop(lambda i: i < 2, lambda i: (i, i + 1), sym.var("i"), max_iterations=3)
    assert isinstance(s_single, sym.Symbol)


def _cond_fns(F, a, b):
    return lambda: [(a + 5) * (b + 5), a * 2], lambda: [(a - 5) * (b - 5), F.sin(b)]


def test_cond_symbol_picks_the_branch_and_differentiates_it():
    a, b = sym.var("a"), sym.var("b")
    result = sym.contrib.cond((a * b).sum() < 5, *_cond_fns(sym, a, b))
    group = sym.Group(result)
    for av, bv in (([1.0, 0.5], [2.0, 1.0]), ([3.0, 2.0], [4.0, 1.0])):
        values = [nd.array(av), nd.array(bv)]

        def eager(x, y):
            return nd.contrib.cond((x * y).sum() < 5, *_cond_fns(nd, x, y))
        got = group.eval(a=values[0], b=values[1])
        for p, q in zip(got, eager(*values)):
            np.testing.assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-6)
        graph_grads = _grads_of(lambda x, y: group.eval(a=x, b=y), values)
        for p, q in zip(graph_grads, _grads_of(eager, values)):
            np.testing.assert_allclose(p, q, rtol=1e-6)


def test_nested_foreach_in_foreach():
    x, w = sym.var("x"), sym.var("w")

    def outer(F, w):
        def body(row, states):
            inner, (acc,) = F.contrib.foreach(lambda e, st: (e * w, [st[0] + e * w]), row, [states[0]])
            return inner, [acc]
        return body
    outs, (total,) = sym.contrib.foreach(outer(sym, w), x, [sym.var("z")])
    xv, wv, zv = _arr(3, 4), nd.array([0.5]), nd.zeros((1,))
    got = sym.Group([outs, total]).eval(x=xv, w=wv, z=zv)
    want_outs, (want_total,) = nd.contrib.foreach(outer(nd, wv), xv, [zv])
    np.testing.assert_allclose(got[0].asnumpy(), want_outs.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(got[1].asnumpy(), want_total.asnumpy(), rtol=1e-6)
    text = str(outs)
    assert "\n  body:\n" in text and "\n      body:\n" in text            # the inner loop, indented twice


def test_json_round_trip_keeps_subgraphs():
    group, _ = _foreach_node()
    text = group.tojson()
    loaded = sym.load_json(text)
    assert loaded.tojson() == text and '"subgraphs"' in text
    assert '"in_data_locs": "[2]"' in text and '"remain_locs": "[1]"' in text     # body inputs: h-0, w, x-0
    values = {"x": _arr(3, 2, 3), "h": _arr(2, 3), "w": _arr(3, 3)}
    for a, b in zip(loaded.eval(**values), group.eval(**values)):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)


def test_printed_graph_shows_each_subgraph_as_an_indented_block():
    x, h = sym.var("x"), sym.var("h")
    outs, _ = sym.contrib.foreach(lambda xt, s: (xt + s[0], [s[0] * 2]), x, [h], name="loop")
    lines = [line.split("#")[0].rstrip() for line in str(outs).splitlines()]
    names = outs._outputs[0][0]
    body = names.attrs["body"]
    plus, mul = [n.name for n in body._nodes() if n.op is not None]
    assert lines == [
        "var x",
        "var h",
        f"{names.name} = _foreach(x, h, in_data_locs=[0], in_state_locs=[1], num_args=3, num_out_data=1, "
        "num_outputs=2, remain_locs=[])",
        "  body:",
        "    var x-0",
        "    var h-0",
        f"    {plus} = broadcast_add(x-0, h-0)",
        f"    {mul} = _mul_scalar(h-0, scalar=2)",
        f"    outputs: {plus}, {mul}",
        f"outputs: {names.name}[0]",
    ]


def test_errors_are_clear():
    x, h = sym.var("x"), sym.var("h")
    with pytest.raises(mx.MXNetError, match=r"contrib.foreach: the body returned 2 state\(s\)[\s\S]*"
                                            r"test_control_flow.py:\d+"):
        sym.contrib.foreach(lambda xt, s: (xt, [s[0], s[0]]), x, [h])
    with pytest.raises(mx.MXNetError, match="data 0 is not used"):
        sym.contrib.foreach(lambda xt, s: (s[0] * 2, [s[0] + 1]), x, [h])
    with pytest.raises(mx.MXNetError, match="then_func returns 2 output.* else_func 1"):
        sym.contrib.cond(x.sum() > 0, lambda: [x, h], lambda: x)
    with pytest.raises(mx.MXNetError, match="func returned 1 loop variable.*loop_vars has 2"):
        sym.contrib.while_loop(lambda a, b: a < 1, lambda a, b: (None, [a + 1]), [x, h], max_iterations=3)
    with pytest.raises(ValueError, match="max_iterations"):
        sym.contrib.while_loop(lambda a: a < 1, lambda a: (None, a + 1), x)
    with pytest.raises(mx.MXNetError, match="must return a pair"):
        sym.contrib.foreach(lambda xt, s: xt, x, [h])


def test_runtime_and_file_errors_name_the_op():
    outs, (final,) = sym.contrib.foreach(lambda xt, s: (xt, [s[0] + xt]), sym.var("x"), [sym.var("h")])
    with pytest.raises(mx.MXNetError, match=r"_foreach[\s\S]*shapes \(2,\), \(3,\)|_foreach[\s\S]*broadcast"):
        sym.Group([outs, final]).eval(x=nd.ones((4, 2)), h=nd.ones((3,)))
    text = sym.Group([outs, final]).tojson()
    broken = text.replace('"subgraphs"', '"subgraphz"')
    with pytest.raises(mx.MXNetError, match=r"\(op _foreach\) needs 1 subgraph\(s\) \(body\)"):
        sym.load_json(broken)
    with pytest.raises(mx.MXNetError, match="the condition must have one element"):
        sym.contrib.cond(sym.var("p"), lambda: sym.var("p") * 2, lambda: sym.var("p")).eval(p=nd.ones((2,)))
