"""Hostile models for SymbolBlock.imports: mutated -symbol.json files (the hidden __shape__/__dtype__/__init__
attributes of variables above all, and the graph's structure) and damaged .params files give a block that runs or
an MXNetError naming the file, the variable and the attribute - never another exception, never an allocation the
files do not justify (~100 MB, ~2 s each, tests/hostile_inputs.py). Op attributes are mutated only by the
structural mutations here: a value asking for huge shapes is bounded by shape inference, which the ops' tests cover.

Also: a hybridized SymbolBlock runs (compiled) with the same results, alone, with static_alloc, and inside a
hybridized parent, and can be exported after one call."""
import json
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostile_inputs as hostile
import mixnet as mx
from mixnet import autograd, gluon
from mixnet.base import MXNetError
from mixnet.gluon.symbol_block import MAX_DECLARED_ELEMENTS, SymbolBlock

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "symbol")
MODELS = {"mlp": ["data"], "cf_cond": ["data"]}        # small graphs: one plain, one with subgraphs


def _read(name, suffix, mode="rb"):
    with open(os.path.join(DATA, f"{name}{suffix}"), mode) as f:
        return f.read()


def _input_arrays(name):
    io = json.loads(_read(name, "-io.json"))
    first = io[0] if isinstance(io, list) else io
    return [np.array(x["data"], dtype=np.float32).reshape(x["shape"]) for x in first["inputs"]]


SYMBOLS = {name: _read(name, "-symbol.json") for name in MODELS}
PARAMS = {name: _read(name, "-0000.params") for name in MODELS}
INPUT_ARRAYS = {name: _input_arrays(name) for name in MODELS}


def _inputs(name):
    """The model's inputs as NDArrays on the default device (made in the test: at import it would be cpu(0))."""
    return [mx.nd.array(a) for a in INPUT_ARRAYS[name]]

ATTRIBUTE_VALUES = {
    "__shape__": ["(100000000000, 100000000)", f"({MAX_DECLARED_ELEMENTS + 1},)", "(8, 10)", "(10, 8)", "(0,)",
                  "()", "(-1, 3)", "(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,"
                  " 1, 1, 1, 1, 1)", "(8, 10, 2)", "[8, 10]", "8", "(1e400,)", "(8.0, 10)", "abc", "(2**40,)"],
    "__dtype__": [str(code) for code in range(-1, 14)] + ["float32", "1e400", "0.0", " 0 ", "\u0660"],
    "__init__": ["zeros", "ones", "xavier", "Xavier", '["zero", {}]', '["uniform", {"scale": 0.5}]',
                 '["xavier", {"rnd_type": "gaussian", "magnitude": 2}]', '["constant", {"value": 2}]',
                 '["constant", {"value": [[1, 2]]}]', '["uniform", {"scale": "x"}]', '["normal", {"sigma": 1e400}]',
                 '["msraprelu", {"slope": 1e300}]', '["uniform", {"foo": 1}]', '["foo", {}]', "[" * 5000,
                 "__import__('os').system('touch PWNED')", '["orthogonal", {"scale": true}]'],
    "__lr_mult__": ["abc", "1e400", "-1"],
    "__storage_type__": ["1", "2", "7", "abc"],
}


def _nodes(doc):
    """Every node of a symbol document, its subgraphs' included."""
    found, docs = [], [doc]
    while docs:
        for node in docs.pop()["nodes"]:
            found.append(node)
            docs.extend(node.get("subgraphs", []))
    return found


def _mutate_variables(doc, rng):
    """Hostile hidden attributes on one to three variables of the document (its subgraphs' included)."""
    variables = [n for n in _nodes(doc) if n.get("op") == "null"]
    for node in rng.sample(variables, min(len(variables), rng.randint(1, 3))):
        attrs = node.setdefault("attrs", {})
        key = rng.choice(sorted(ATTRIBUTE_VALUES))
        attrs[key] = rng.choice(ATTRIBUTE_VALUES[key] + [hostile.hostile_value(rng)])
    return doc


def _model(name, rng):
    """(symbol text, params bytes or None, input names): variables, structure or params damaged."""
    doc, params, names = json.loads(SYMBOLS[name]), PARAMS[name], list(MODELS[name])
    how = rng.randrange(10)
    if how < 5:
        _mutate_variables(doc, rng)
    elif how < 8:
        hostile.mutate_json(doc, rng, max_mutations=2)
    else:
        params = hostile.mutate_bytes(params, rng)
    if rng.randrange(8) == 0:
        params = None
    if rng.randrange(8) == 0:
        names = [rng.choice(["mlp_dense0_weight", "nope", "\n", "data"])]
    return json.dumps(doc), params, names


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """One folder for every generated model; the models' kernels compiled before the clock runs. Fusion is off:
    a mutant with new elementwise structure would otherwise spend seconds compiling its kernels, which measures
    Numba, not how the input is handled (compiled kernels are tested on their own)."""
    from mixnet import config
    fuse, config.FUSE = config.FUSE, False
    for name in MODELS:
        for hybridize in (False, True):
            block = SymbolBlock.imports(os.path.join(DATA, f"{name}-symbol.json"), MODELS[name],
                                        os.path.join(DATA, f"{name}-0000.params"))
            if hybridize:
                block.hybridize(static_alloc=True)
            block(*_inputs(name))
    yield tmp_path_factory.mktemp("hostile-models")
    config.FUSE = fuse


_WRITTEN = {}


def _write(path, data):
    """Writes `data` unless the file already holds it (the same .params file is used again and again)."""
    if _WRITTEN.get(path) != data:
        with open(path, "wb") as f:
            f.write(data)
        _WRITTEN[path] = data


def _import_and_run(folder, name, model, hybridize):
    text, params, names = model
    sym_file, params_file = str(folder / "m-symbol.json"), str(folder / f"{name}-0000.params")
    _write(sym_file, text.encode("utf-8", "surrogatepass"))
    if params is not None:
        _write(params_file, params)
    block = hostile.outcome(SymbolBlock.imports, sym_file, names, params_file if params is not None else None)
    if isinstance(block, MXNetError) or params is None:
        if isinstance(block, MXNetError) and "SymbolBlock" in str(block) and "attribute __" in str(block):
            assert sym_file in str(block)                   # attribute errors name the file
        return
    if hybridize:
        block.hybridize(static_alloc=hybridize == "static")
    for _ in range(2 if hybridize else 1):
        out = hostile.outcome(block, *_inputs(name))
        if isinstance(out, MXNetError):
            return


@pytest.mark.filterwarnings("ignore")         # hostile settings overflow, warn...
@hostile.fuzz_settings(150)
@given(st.sampled_from(sorted(MODELS)), hostile.RNGS, st.sampled_from([None, "plain", "static"]))
def test_mutated_models(folder, name, rng, hybridize):
    def check(model):
        with hostile.bounded(model):
            _import_and_run(folder, name, model, hybridize)
    hostile.each((_model(name, rng) for _ in range(hostile.BATCH)), check)


# ---------------------------------------------------------------------------------------------------------
# the probes, one by one
def _write_mlp(folder, attrs, variable="mlp_dense0_weight"):
    doc = json.loads(SYMBOLS["mlp"])
    node = next(n for n in doc["nodes"] if n["name"] == variable)
    node["attrs"].update(attrs)
    path = str(folder / "probe-symbol.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


@pytest.mark.parametrize("key,value,words", [
    ("__shape__", "(100000000000, 100000000)", ["more than", str(MAX_DECLARED_ELEMENTS)]),
    ("__shape__", "abc", ["expected an integer"]),
    ("__shape__", "(-1, 3)", [">= 0"]),
    ("__dtype__", "99", ["dtype code"]),
    ("__dtype__", "abc", ["dtype code"]),
    ("__dtype__", "12", ["dtype code"]),                              # bfloat16: no Parameter dtype
    ("__init__", "__import__('os').system('touch PWNED')", ["unknown initializer"]),
    ("__init__", '["uniform", {"scale": "x"}]', ["scale", "wrong type"]),
    ("__init__", '["uniform", {"foo": 1}]', ["foo"]),
    ("__init__", '["foo", {}]', ["unknown initializer 'foo'"]),
    ("__init__", "[" * 100000, ["not valid JSON"]),
    ("__init__", '["msraprelu", {"slope": 1e300}]', ["OverflowError"]),
])
@pytest.mark.parametrize("with_params", [True, False])
def test_hostile_attribute_is_refused_with_its_file_and_name(tmp_path, monkeypatch, key, value, words, with_params):
    monkeypatch.chdir(tmp_path)
    path = _write_mlp(tmp_path, {key: value})
    with hostile.bounded(value):
        with pytest.raises(MXNetError) as info:
            SymbolBlock.imports(path, ["data"], os.path.join(DATA, "mlp-0000.params") if with_params else None)
    message = str(info.value)
    for word in [path, "mlp_dense0_weight", key] + words:
        assert word in message, (word, message)
    assert not os.path.exists(tmp_path / "PWNED")


def test_declared_shapes_and_initializers_still_work(tmp_path):
    path = _write_mlp(tmp_path, {"__init__": '["constant", {"value": 0.5}]', "__shape__": "(8, 10)"})
    block = SymbolBlock.imports(path, ["data"])
    assert block.collect_params()["mlp_dense0_weight"].shape == (8, 10)
    block.initialize()
    block(_inputs("mlp")[0])
    np.testing.assert_array_equal(block.collect_params()["mlp_dense0_weight"].data().asnumpy(), 0.5)


def test_constant_initializer_that_does_not_fit(tmp_path):
    path = _write_mlp(tmp_path, {"__init__": '["constant", {"value": [1, 2, 3]}]'})
    block = SymbolBlock.imports(path, ["data"])
    block.initialize()
    with pytest.raises(MXNetError, match="Constant initializer.*mlp_dense0_weight.*\\(8, 10\\)"):
        block(_inputs("mlp")[0])


# ---------------------------------------------------------------------------------------------------------
# hybridize
def _mlp():
    return SymbolBlock.imports(os.path.join(DATA, "mlp-symbol.json"), ["data"], os.path.join(DATA, "mlp-0000.params"))


def _output_and_grads(block, x):
    x = x.copy()
    x.attach_grad()
    with autograd.record(train_mode=False):               # the model has Dropout
        y = block(x)
    y.backward(mx.nd.ones_like(y))
    return y.asnumpy(), x.grad.asnumpy(), [p.grad().asnumpy() for p in block.collect_params().values()
                                           if p.grad_req != "null"]


@pytest.mark.parametrize("flags", [{}, {"static_alloc": True}, {"static_alloc": True, "static_shape": True}])
def test_hybridized_symbol_block_matches(flags):
    x = _inputs("mlp")[0]
    plain = _mlp()
    want = _output_and_grads(plain, x)
    block = _mlp()
    block.hybridize(**flags)
    for _ in range(2):                                    # the plan, then the plan reused
        got = _output_and_grads(block, x)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-7)
        for g, w in zip(got[2], want[2]):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(block(x).asnumpy(), plain(x).asnumpy())


class _Head(gluon.HybridBlock):
    def __init__(self, body, **kwargs):
        super().__init__(**kwargs)
        self.body = body
        with self.name_scope():
            self.out = gluon.nn.Dense(2)

    def hybrid_forward(self, F, x):
        return self.out(F.relu(self.body(x)))


def test_symbol_block_inside_a_hybridized_parent_and_export(tmp_path):
    x = _inputs("mlp")[0]
    net = _Head(_mlp())
    net.out.initialize()
    eager = net(x).asnumpy()
    net.hybridize()
    for _ in range(2):
        np.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-6, atol=1e-7)
    prefix = str(tmp_path / "head")
    net.export(prefix)
    again = SymbolBlock.imports(f"{prefix}-symbol.json", ["data"], f"{prefix}-0000.params")
    np.testing.assert_allclose(again(x).asnumpy(), eager, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("hybridized", [False, True])
def test_export_after_one_call(tmp_path, hybridized):
    x = _inputs("mlp")[0]
    block = _mlp()
    if hybridized:
        block.hybridize()
    want = block(x).asnumpy()
    prefix = str(tmp_path / "again")
    block.export(prefix)
    again = SymbolBlock.imports(f"{prefix}-symbol.json", ["data"], f"{prefix}-0000.params")
    np.testing.assert_array_equal(again(x).asnumpy(), want)
