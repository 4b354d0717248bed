"""The generated mx.nd / mx.sym functions describe themselves: a real inspect.Signature and a NumPy-style
docstring from the op's OpDef (mixnet/ops/docgen.py), for every op in the registry, under every name."""
import inspect

import numpy as np
import pytest

import mixnet as mx
from mixnet.ndarray import register as nd_register
from mixnet.ops import attrs as A, docgen, registry
from mixnet.symbol import symbol as sym_module

P = inspect.Parameter
OPS = registry.all_ops()


def _functions():
    """(op, public name, kind, function): nd makes one function per op, sym one per name."""
    for op in OPS:
        yield op, op.name, "nd", nd_register.make_function(op)
        for name in (op.name,) + tuple(op.aliases):
            yield op, name, "sym", sym_module.make_function(op, name)


FUNCTIONS = list(_functions())


def _required(param):
    return param.default is P.empty or param.default is A.REQUIRED


def _doc_names(doc):
    """The names the docstring's Parameters section lists (`name : type` or a bare `**kwargs`)."""
    section = doc.split("\nParameters\n----------\n", 1)[1].split("\n\nReturns\n", 1)[0]
    return [line.split(" : ")[0] for line in section.splitlines() if line and not line.startswith(" ")]


def test_every_function_has_a_real_signature_and_docstring():
    problems = []
    for op, name, kind, fn in FUNCTIONS:
        sig = inspect.signature(fn)
        params = sig.parameters
        kinds = [p.kind for p in params.values()]
        where = f"{kind}.{name}"
        if kinds == [P.VAR_POSITIONAL, P.VAR_KEYWORD]:
            problems.append(f"{where}: generic (*args, **kwargs)")
            continue
        layout = docgen.input_layout(op)
        inputs = ([f"{n}_" if n in ("out", "name", "attr") else n for n in layout[0]] if layout
                  else ["*" + next(p.name for p in params.values() if p.kind is P.VAR_POSITIONAL)])
        for key, attr in op.attrs.items():
            param = params.get(key)
            if param is None:
                problems.append(f"{where}: attribute {key!r} missing from {sig}")
            elif attr.default is A.REQUIRED:
                counted = kind == "sym" and layout is None and key == "num_args"   # mx.sym counts the inputs
                if _required(param) == counted:
                    problems.append(f"{where}: {key!r} required={not counted} but the signature says {param}")
            elif param.default != docgen._default(attr.default):
                problems.append(f"{where}: {key!r} default {param.default!r} != {attr.default!r}")
        for input_name in inputs:
            if input_name.lstrip("*") not in params:
                problems.append(f"{where}: input {input_name!r} missing from {sig}")
        if kind == "nd" and not {"out", "name"} <= set(params):
            problems.append(f"{where}: no out=/name= in {sig}")
        if kind == "sym" and not {"name", "attr"} <= set(params):
            problems.append(f"{where}: no name=/attr= in {sig}")
        doc = fn.__doc__ or ""
        if "\nParameters\n----------\n" not in doc or "\nReturns\n-------\n" not in doc:
            problems.append(f"{where}: docstring without NumPy-style sections")
            continue
        listed = _doc_names(doc)
        for documented in inputs + list(op.attrs):
            if documented not in listed:
                problems.append(f"{where}: docstring does not list {documented!r}")
        if op.doc and op.doc.strip() not in doc:
            problems.append(f"{where}: docstring lacks the OpDef's description")
    assert not problems, "\n".join(problems[:30])


def test_signatures_bind_every_input_and_attribute_by_keyword():
    """A call naming everything binds (nd: inputs as arrays; sym: inputs may be left out)."""
    for op, name, kind, fn in FUNCTIONS:
        layout = docgen.input_layout(op)
        if layout is None or op.name in ("_softmax_bwd", "_log_softmax_bwd", "_softmax_output_grad"):
            continue            # list inputs; `out` inputs are positional only (test below)
        given = {n: object() for n in layout[0]} if kind == "nd" else {}
        given.update({k: 1 for k in op.attrs})
        inspect.signature(fn).bind(**given)


def test_every_attribute_parser_has_a_documented_type():
    unknown = {f"{op.name}.{key}" for op in OPS for key, attr in op.attrs.items()
               if _unknown_parser(attr.parse)}
    assert not unknown, f"add these parsers to docgen._TYPES: {sorted(unknown)}"


def _unknown_parser(parse):
    try:
        docgen.attr_type(parse)
    except KeyError:
        return True
    return False


# Attribute names, order and defaults checked against MXNet 1.9.1's generated functions and docstrings
# (inputs, then (attribute, default); REQ: required).
REQ = "required"
MXNET_191 = {
    "FullyConnected": (["data", "weight", "bias"], [("num_hidden", REQ), ("no_bias", False), ("flatten", True)]),
    "Convolution": (["data", "weight", "bias"],
                    [("kernel", REQ), ("stride", ()), ("dilate", ()), ("pad", ()), ("num_filter", REQ),
                     ("num_group", 1), ("workspace", 1024), ("no_bias", False), ("cudnn_tune", None),
                     ("cudnn_off", False), ("layout", None)]),
    "BatchNorm": (["data", "gamma", "beta", "moving_mean", "moving_var"],
                  [("eps", 1e-3), ("momentum", 0.9), ("fix_gamma", True), ("use_global_stats", False),
                   ("output_mean_var", False), ("axis", 1), ("cudnn_off", False), ("min_calib_range", None),
                   ("max_calib_range", None)]),
    "Dropout": (["data"], [("p", 0.5), ("mode", "training"), ("axes", ()), ("cudnn_off", False)]),
    "LeakyReLU": (["data", "gamma"], [("act_type", "leaky"), ("slope", 0.25), ("lower_bound", 0.125),
                                      ("upper_bound", 0.334)]),
    "one_hot": (["indices"], [("depth", REQ), ("on_value", 1.0), ("off_value", 0.0), ("dtype", "float32")]),
    "sum": (["data"], [("axis", None), ("keepdims", False), ("exclude", False)]),
    "softmax": (["data", "length"], [("axis", -1), ("temperature", None), ("dtype", None), ("use_length", False)]),
    "RNN": (["data", "parameters", "state", "state_cell", "sequence_length"],
            [("state_size", REQ), ("num_layers", REQ), ("bidirectional", False), ("mode", REQ), ("p", 0.0),
             ("state_outputs", False), ("projection_size", None), ("lstm_state_clip_min", None),
             ("lstm_state_clip_max", None), ("lstm_state_clip_nan", False), ("use_sequence_length", False)]),
    "Activation": (["data"], [("act_type", REQ)]),
    "Pooling": (["data"], [("kernel", ()), ("pool_type", "max"), ("global_pool", False), ("cudnn_off", False),
                           ("pooling_convention", "valid"), ("stride", ()), ("pad", ()), ("p_value", None),
                           ("count_include_pad", None), ("layout", None)]),
    "Embedding": (["data", "weight"], [("input_dim", REQ), ("output_dim", REQ), ("dtype", "float32"),
                                       ("sparse_grad", False)]),
    "slice_axis": (["data"], [("axis", REQ), ("begin", REQ), ("end", REQ)]),
    "clip": (["data"], [("a_min", REQ), ("a_max", REQ)]),
    "transpose": (["data"], [("axes", ())]),
    "topk": (["data"], [("axis", -1), ("k", 1), ("ret_typ", "indices"), ("is_ascend", False),
                        ("dtype", "float32")]),
    "SoftmaxOutput": (["data", "label"], [("grad_scale", 1.0), ("ignore_label", -1.0), ("multi_output", False),
                                          ("use_ignore", False), ("preserve_shape", False),
                                          ("normalization", "null"), ("out_grad", False), ("smooth_alpha", 0.0)]),
}


@pytest.mark.parametrize("name", sorted(MXNET_191))
@pytest.mark.parametrize("namespace", ["nd", "sym"])
def test_signature_matches_mxnet_191(name, namespace):
    inputs, attributes = MXNET_191[name]
    params = list(inspect.signature(getattr(getattr(mx, namespace), name)).parameters.values())
    assert [p.name for p in params[:len(inputs)]] == inputs
    assert all(p.kind is P.POSITIONAL_OR_KEYWORD for p in params[:len(inputs) + len(attributes)])
    got = [(p.name, REQ if _required(p) else p.default) for p in params[len(inputs):len(inputs) + len(attributes)]]
    assert got == attributes


def test_fully_connected_help_shows_required_num_hidden():
    sig = inspect.signature(mx.nd.FullyConnected)
    assert str(sig) == ("(data, weight, bias=None, num_hidden: int = <required>, no_bias: bool = False, "
                        "flatten: bool = True, *, out=None, name=None)")
    assert "num_hidden : int\n    Required." in mx.nd.FullyConnected.__doc__
    assert "bias : NDArray, optional\n    Absent when ``no_bias=True``." in mx.nd.FullyConnected.__doc__
    one_hot = inspect.signature(mx.nd.one_hot)      # no earlier default: required in Python's own sense
    assert one_hot.parameters["depth"].default is P.empty
    assert str(inspect.signature(mx.nd.concat)).startswith("(*data, num_args: int | None = None, dim: int = 1,")
    assert "lr_mult" in mx.sym.FullyConnected.__doc__


def _arrays():
    rng = np.random.default_rng(0)
    return (mx.nd.array(rng.standard_normal((2, 4))), mx.nd.array(rng.standard_normal((3, 4))),
            mx.nd.array(rng.standard_normal((3,))))


# call forms the existing tests use: each must bind to the signature and run
def _call_forms():
    x, w, b = _arrays()
    idx = mx.nd.array([0, 2])
    s = mx.sym.var("s")
    return [
        (mx.nd.FullyConnected, (x, w, b), {"num_hidden": 3}),
        (mx.nd.FullyConnected, (x, w), {"num_hidden": 3, "no_bias": True}),
        (mx.nd.FullyConnected, (x, w, b, 3), {}),                      # positional attribute, as MXNet
        (mx.nd.FullyConnected, (), {"data": x, "weight": w, "bias": b, "num_hidden": 3}),
        (mx.nd.one_hot, (idx, 4), {}),
        (mx.nd.slice_axis, (x, 1, 0, 2), {}),
        (mx.nd.clip, (x, -0.5, 0.5), {}),
        (mx.nd.transpose, (x, (1, 0)), {}),
        (mx.nd.sum, (x,), {"axis": 1, "keepdims": True}),
        (mx.nd.softmax, (x,), {"axis": -1}),
        (mx.nd.concat, (x, x), {"dim": 0}),
        (mx.nd.add_n, (x, x, x), {}),
        (mx.nd.Activation, (x,), {"act_type": "relu"}),
        (mx.nd.broadcast_add, (x, x), {}),
        (mx.nd.reshape, (x,), {"shape": (4, 2)}),
        (mx.nd.Dropout, (x,), {"p": 0.5}),
        (mx.nd.FullyConnected, (x, w, b), {"num_hidden": 3, "out": mx.nd.zeros((2, 3))}),
        (mx.sym.FullyConnected, (), {"data": s, "num_hidden": 10, "name": "fc"}),
        (mx.sym.FullyConnected, (s,), {"num_hidden": 10, "lr_mult": 2.0}),
        (mx.sym.Convolution, (s,), {"kernel": (3, 3), "num_filter": 8, "pad": (1, 1)}),
        (mx.sym.concat, (s, s), {"dim": 1}),
        (mx.sym.one_hot, (s, 10), {}),
        (mx.sym.Activation, (), {"data": s, "act_type": "tanh", "attr": {"k": "v"}}),
    ]


def test_existing_call_forms_bind_and_run():
    for fn, args, kwargs in _call_forms():
        inspect.signature(fn).bind(*args, **kwargs)
        fn(*args, **kwargs)


def test_apply_defaults_round_trip_calls_like_the_original():
    """bind().apply_defaults() fills <required> markers for attributes given positionally-absent: calling with
    them is calling without them."""
    x, w, b = _arrays()
    sig = inspect.signature(mx.nd.FullyConnected)
    bound = sig.bind(x, w, b, num_hidden=3)
    bound.apply_defaults()
    np.testing.assert_allclose(mx.nd.FullyConnected(*bound.args, **bound.kwargs).asnumpy(),
                               mx.nd.FullyConnected(x, w, b, num_hidden=3).asnumpy())
    conv = inspect.signature(mx.sym.Convolution).bind(mx.sym.var("d"), kernel=(3, 3), num_filter=4, name="c")
    conv.apply_defaults()
    assert conv.arguments["num_filter"] == 4 and conv.arguments["weight"] is None
    node = mx.sym.Convolution(*conv.args, **conv.kwargs)
    assert node.list_arguments() == ["d", "c_weight", "c_bias"]
    with pytest.raises(mx.base.MXNetError, match="required attribute 'num_hidden'"):
        bound = sig.bind(x, w, b)
        bound.apply_defaults()
        mx.nd.FullyConnected(*bound.args, **bound.kwargs)


def test_input_that_shares_a_keyword_name_is_positional_only():
    sig = inspect.signature(mx.nd._softmax_bwd)
    first = next(iter(sig.parameters.values()))
    assert (first.name, first.kind) == ("out_", P.POSITIONAL_ONLY)
    assert sig.parameters["out"].kind is P.KEYWORD_ONLY


def test_ndarray_methods_show_the_function_signature_without_the_array():
    x = mx.nd.ones((2, 3))
    assert str(inspect.signature(x.one_hot)).startswith("(depth: int, on_value: float = 1.0")
    assert list(inspect.signature(mx.nd.NDArray.sum).parameters)[:2] == ["self", "axis"]
    assert x.sum.__doc__ == mx.nd.sum.__doc__


def test_signatures_are_made_once_and_copy_as_equal():
    import copy
    import pickle
    sig = inspect.signature(mx.sym.concat)
    assert sig is inspect.signature(mx.sym.Concat)           # one per op, under all its names
    assert copy.deepcopy(sig) == sig and pickle.loads(pickle.dumps(sig)) == sig
    assert sig.replace(return_annotation=int).return_annotation is int


def _gluon_classes():
    from mixnet.gluon import loss, nn, rnn
    for module in (nn, rnn, loss):
        for name, obj in vars(module).items():
            if isinstance(obj, type) and issubclass(obj, mx.gluon.Block) and not name.startswith("_"):
                yield f"{module.__name__}.{name}", obj


def test_public_gluon_classes_have_real_signatures():
    generic = [name for name, cls in _gluon_classes()
               if [p.kind for p in inspect.signature(cls).parameters.values()] == [P.VAR_POSITIONAL, P.VAR_KEYWORD]]
    assert not generic, generic
    assert len(list(_gluon_classes())) > 50
    for cls in (mx.gluon.Trainer, mx.gluon.data.DataLoader, mx.gluon.nn.Dense, mx.gluon.rnn.LSTM):
        assert "\nParameters\n" in inspect.getdoc(cls), cls
