"""Hostile -symbol.json: mx.sym.load_json on mutations of valid files (the real-MXNet-made and mixnet-made ones in
tests/data/symbol, and a legacy pre-0.9 document) gives a Symbol whose structure can be listed, printed, written
and read back, or an MXNetError naming the problem - never another exception - within ~2 s and ~100 MB each
(tests/hostile_inputs.py). Shape inference is not run on the mutants: attribute values that ask for huge shapes
are bounded by inference itself, which the ops' tests cover."""
import glob
import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

import hostile_inputs as hostile
import mixnet as mx
from mixnet.base import MXNetError
from mixnet.symbol import json_io

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "symbol")
FILES = sorted(glob.glob(os.path.join(DATA, "*-symbol.json")))

# MXNet 0.8's layout: "param" attributes, no node_row_ptr, 2-element entries, weights auto-created on load.
LEGACY = {"nodes": [{"op": "null", "name": "data", "inputs": []},
                    {"op": "FullyConnected", "name": "fc1", "param": {"num_hidden": "4", "no_bias": "False"},
                     "inputs": [[0, 0]]},
                    {"op": "Activation", "name": "relu1", "param": {"act_type": "relu"}, "inputs": [[1, 0]]}],
          "arg_nodes": [0], "heads": [[2, 0]]}


def _read(path):
    with open(path, "rb") as f:
        return f.read()


SEED_TEXTS = [_read(p) for p in FILES] + [json.dumps(LEGACY).encode()]


def _use(sym):
    """What a user does with a loaded Symbol short of running it; what is loaded must write a file that loads."""
    sym.list_arguments()
    sym.list_auxiliary_states()
    sym.attr_dict()
    str(sym)
    sym.get_internals().list_outputs()
    again = mx.sym.load_json(sym.tojson())
    assert again.list_outputs() == sym.list_outputs()


def _load_and_use(text):
    with hostile.bounded(text):
        sym = hostile.outcome(mx.sym.load_json, text)
        if not isinstance(sym, MXNetError):
            hostile.outcome(_use, sym)


def test_seeds_load():
    assert len(FILES) >= 8
    for text in SEED_TEXTS:
        _use(mx.sym.load_json(text))


@hostile.fuzz_settings(325)
@given(st.sampled_from(SEED_TEXTS), hostile.RNGS)
def test_structural_mutations(seed, rng):
    hostile.each((json.dumps(hostile.mutate_json(json.loads(seed), rng)) for _ in range(hostile.BATCH)),
                 _load_and_use)


@hostile.fuzz_settings(500)
@given(st.sampled_from(SEED_TEXTS), hostile.RNGS)
def test_byte_mutations(seed, rng):
    hostile.each((hostile.mutate_bytes(seed, rng) for _ in range(hostile.BATCH)), _load_and_use)


# ---------------------------------------------------------------------------------------------------------
# the defects found by probing, one by one
def _mlp():
    return json.loads(SEED_TEXTS[FILES.index(os.path.join(DATA, "mlp-symbol.json"))])


def _fails(text, *words):
    with pytest.raises(MXNetError) as info:
        mx.sym.load_json(text if isinstance(text, (str, bytes)) else json.dumps(text))
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    return str(info.value)


@pytest.mark.parametrize("text", ["[" * 100000, '{"a": ' * 100000, '{"nodes": ' + "[" * 100000])
def test_deep_nesting(text):
    _fails(text, "nested too deeply")


@pytest.mark.parametrize("version", ["1e400", "-1e400", "NaN", "-1", "1.5", '"abc"', '"\\u00b2"', "[]", "{}",
                                     "true", "100000000000"])
def test_bad_mxnet_version(version):
    doc = json.dumps(_mlp())
    doc = doc[:doc.rindex("{")] + '{"mxnet_version": ["int", ' + version + "]}}"
    _fails(doc, "mxnet_version")


def _mutated(change):
    doc = _mlp()
    change(doc)
    return doc


def _node(doc, name):
    return next(n for n in doc["nodes"] if n["name"] == name)


@pytest.mark.parametrize("change,words", [
    (lambda d: _node(d, "mlp_dense0_fwd").__setitem__("inputs", [[9, 0, 0], [2, 0, 0], [3, 0, 0]]),
     ["node 4", "'mlp_dense0_fwd'", "refers to node 9"]),                          # a forward reference
    (lambda d: _node(d, "mlp_dense0_fwd").__setitem__("inputs", [[4, 0, 0], [2, 0, 0], [3, 0, 0]]),
     ["node 4", "refers to node 4"]),                                              # a cycle on itself
    (lambda d: d.__setitem__("heads", [[99, 0, 0]]), ["heads", "node 99"]),
    (lambda d: d.__setitem__("heads", [[13, 1, 0]]), ["head", "mlp_dense2_fwd", "1 output"]),
    (lambda d: d.__setitem__("heads", []), ["no heads"]),
    (lambda d: _node(d, "mlp_dense0_fwd").__setitem__("op", "NoSuchOp\nimport os"), ["'NoSuchOp\\nimport os'",
                                                                                    "not implemented"]),
    (lambda d: _node(d, "mlp_dense0_fwd")["attrs"].__setitem__("num_hidden", "eight"),
     ["node 4", "num_hidden", "eight"]),
    (lambda d: _node(d, "mlp_dense0_fwd")["attrs"].__setitem__("no_such_attr", "1"), ["no_such_attr"]),
    (lambda d: _node(d, "mlp_dense0_fwd").__setitem__("attrs", ["num_hidden"]), ["node 4", "attributes"]),
    (lambda d: _node(d, "mlp_dense0_fwd").pop("op"), ["node 4", "'op'"]),
    (lambda d: _node(d, "mlp_dense0_fwd").__setitem__("name", 5), ["node 4", "'name'"]),
    (lambda d: _node(d, "mlp_dense0_fwd").__setitem__("inputs", [[1, 0, 0]]), ["mlp_dense0_fwd", "1 input(s)"]),
    (lambda d: _node(d, "mlp_dense0_fwd").__setitem__("inputs", {"a": 1}), ["'inputs' must be a list"]),
    (lambda d: _node(d, "mlp_dense0_fwd").__setitem__("inputs", [[1, 0, 0], [True, 0, 0], [3, 0, 0]]),
     ["node 4", "entry"]),
    (lambda d: _node(d, "data").__setitem__("inputs", [[0, 0, 0]]), ["node 0", "refers to node 0"]),
    (lambda d: d.__setitem__("arg_nodes", [1]), ["arg_nodes", "node 1", "mlp_flatten0_flatten0"]),
    (lambda d: d.__setitem__("arg_nodes", [0, 14]), ["arg_nodes", "below 14"]),
    (lambda d: d.__setitem__("arg_nodes", "0"), ["arg_nodes"]),
    (lambda d: d.__setitem__("node_row_ptr", [True] * 15), ["node_row_ptr"]),
    (lambda d: d.__setitem__("node_row_ptr", list(range(14))), ["node_row_ptr"]),
    (lambda d: d.pop("nodes"), ["'nodes'"]),
    (lambda d: _node(d, "data").__setitem__("name", "\ud800"), ["node 0", "not valid Unicode"]),
    (lambda d: _node(d, "mlp_dense0_fwd")["attrs"].__setitem__("\udfff", "1"), ["node 4", "not valid Unicode"]),
    (lambda d: _node(d, "mlp_dense0_fwd").update(op="SliceChannel", attrs={"num_outputs": "1000000"},
                                                 inputs=[[1, 0, 0]]),
     ["node 4", "1000000 outputs", str(json_io.MAX_NODE_OUTPUTS)]),
    (lambda d: _node(d, "mlp_dense0_fwd").update(op="_fused_elemwise", attrs={"kernel": "x"}),
     ["node 4", "internal operator"]),
    (lambda d: _node(d, "mlp_dense0_fwd").__setitem__("subgraphs", [{}]), ["needs 0 subgraph"]),
])
def test_graph_errors_name_the_node(change, words):
    _fails(_mutated(change), *words)


def test_subgraph_nesting_is_bounded():
    def nested(x, depth):
        return x * 2 if depth == 0 else mx.sym.contrib.cond(x.sum() > 0, lambda: nested(x, depth - 1), lambda: x)
    x = mx.sym.var("x")
    mx.sym.load_json(nested(x, json_io.MAX_SUBGRAPH_DEPTH).tojson())
    _fails(nested(x, json_io.MAX_SUBGRAPH_DEPTH + 1).tojson(), "nested more than", str(json_io.MAX_SUBGRAPH_DEPTH))


def test_load_names_the_file(tmp_path):
    path = tmp_path / "model\nname-symbol.json"
    doc = _mlp()
    doc["heads"] = [[99, 0, 0]]
    path.write_text(json.dumps(doc))
    with pytest.raises(MXNetError, match="model\\\\nname-symbol.json"):
        mx.sym.load(str(path))
