"""`-symbol.json` in MXNet's schema: {"nodes": [{"op", "name", "attrs", "inputs": [[node, output, version]]}],
"arg_nodes", "node_row_ptr", "heads", "attrs": {"mxnet_version": ["int", N]}}, attribute values as strings.

The writer produces the bytes MXNet 1.9.1's dmlc JSONWriter produces for the same graph. The reader accepts
MXNet files of every version: old "attr"/"param" keys, missing node_row_ptr, 2-element entries, legacy hidden
keys without underscores, pre-0.9 files whose weights were auto-created. It parses with `json` and the ops' strict
attribute parsers; nothing is ever evaluated. A file is untrusted input: every malformed part (bad JSON, nesting
deeper than `MAX_SUBGRAPH_DEPTH` subgraphs or than Python's parser takes, wrong types, out-of-range or forward
node references, unknown ops or attributes, text that is not valid Unicode, a node declaring more than
`MAX_NODE_OUTPUTS` outputs) raises MXNetError naming the file, the node and the attribute.
"""
import json
import re

from .._shape_mode import is_np_shape
from ..base import MXNetError
from ..ops import registry
from ..ops.attrs import parse_any, parse_subgraph
from .graph import Node, subgraphs, topo_order

__all__ = ["graph_to_json", "graph_from_json", "MXNET_VERSION", "MAX_SUBGRAPH_DEPTH", "MAX_NODE_OUTPUTS",
           "short_repr"]

MXNET_VERSION = 10901
_LEGACY_HIDDEN = ("lr_mult", "wd_mult", "ctx_group", "force_mirroring", "mirror_stage")
# MXNet attributes that only tune its own kernels: accepted on read when an op's schema lacks them.
_IGNORABLE = frozenset(("workspace", "cudnn_tune", "cudnn_off", "is_int", "forward_stype"))
# Bounds on what a file may declare (real models nest control flow a few levels and split into a few outputs):
# beyond them a file is refused before anything proportional to the declared number is built.
MAX_SUBGRAPH_DEPTH = 32
MAX_NODE_OUTPUTS = 1 << 16


# ---------------------------------------------------------------------------------------------------------
# writing
def _is_plain(value):
    return not isinstance(value, (dict, list)) or (isinstance(value, list) and all(_is_plain(v) for v in value)
                                                    and len(value) <= 10)


def _dump(value, indent):
    """dmlc::JSONWriter layout: multi-line objects with more than one key, multi-line arrays with more than 10
    elements or non-plain elements; items in a multi-line scope end with ", " then a newline."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [json.dumps(k, ensure_ascii=False) + ": " + _dump(v, indent + 2) for k, v in value.items()]
        if len(items) == 1:
            return "{" + items[0] + "}"
        pad = " " * (indent + 2)
        return "{\n" + ", \n".join(pad + item for item in items) + "\n" + " " * indent + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        multi = len(value) > 10 or any(isinstance(v, dict) for v in value)
        if not multi:
            return "[" + ", ".join(_dump(v, indent) for v in value) + "]"
        pad = " " * (indent + 2)
        return "[\n" + ", \n".join(pad + _dump(v, indent + 2) for v in value) + "\n" + " " * indent + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _json_outputs(node):
    """The output count MXNet 1.9.1 records in node_row_ptr: as read from the file, else the op's declaration."""
    if node.json_outputs is not None:
        return node.json_outputs
    declared = node.op.json_outputs if node.op is not None else None
    if declared is not None:
        return declared(node.attrs) if callable(declared) else declared
    return node.num_outputs()


def _mutated_slots(node):
    return set(node.op.mutates) if node.op is not None else set()


def _graph_doc(heads):
    """The JSON document of the graph with outputs `heads`; a control-flow node carries its subgraphs' documents
    under "subgraphs" (which, as in MXNet, have no "attrs" of their own)."""
    nodes = topo_order(heads)
    index = {id(n): i for i, n in enumerate(nodes)}
    out_nodes, arg_nodes, row_ptr = [], [], [0]
    for i, node in enumerate(nodes):
        entry = {"op": "null" if node.op is None else node.op.name, "name": node.name}
        if node.raw:
            entry["attrs"] = {k: node.raw[k] for k in sorted(node.raw)}
        mutated = _mutated_slots(node)
        versions = node.json_versions
        if versions is None or len(versions) != len(node.inputs):
            versions = [1 if slot in mutated else 0 for slot in range(len(node.inputs))]
        entry["inputs"] = [[index[id(src)], idx, v] for (src, idx), v in zip(node.inputs, versions)]
        subs = subgraphs(node)
        if subs:
            entry["subgraphs"] = [_graph_doc(sub._outputs) for _, sub in subs]
        out_nodes.append(entry)
        if node.op is None:
            arg_nodes.append(i)
        row_ptr.append(row_ptr[-1] + _json_outputs(node))
    return {"nodes": out_nodes, "arg_nodes": arg_nodes, "node_row_ptr": row_ptr,
            "heads": [[index[id(n)], idx, 0] for n, idx in heads]}


def graph_to_json(heads):
    """The MXNet JSON text of the graph with outputs `heads` ((node, index) entries)."""
    doc = _graph_doc(heads)
    # np-shape mode marks the file (its 0 dims are sizes, not unknowns), as MXNet does
    doc["attrs"] = {"is_np_shape": ["int", 1]} if is_np_shape() else {}
    doc["attrs"]["mxnet_version"] = ["int", MXNET_VERSION]
    return _dump(doc, 0)


# ---------------------------------------------------------------------------------------------------------
# reading
def _fail(where, msg):
    raise MXNetError(f"cannot load symbol JSON{where}: {msg}")


def _version(doc, where):
    attrs = doc.get("attrs") or {}
    if not isinstance(attrs, dict):
        _fail(where, "'attrs' must be an object")
    ver = attrs.get("mxnet_version")
    if ver is None:
        return 800
    value = ver[1] if isinstance(ver, list) and len(ver) == 2 else ver
    if isinstance(value, str):
        value = int(value) if re.fullmatch(r"\s*[0-9]{1,9}\s*", value) else None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < 10 ** 9 \
            or value != int(value):
        _fail(where, f"bad mxnet_version {short_repr(ver)} (expected [\"int\", N] with N such as 10901)")
    return int(value)


def _text(value, what, where):
    """`value` as a str that is valid Unicode (json accepts lone surrogates such as "\\ud800", which no file,
    terminal or message can encode)."""
    if not isinstance(value, str):
        _fail(where, f"{what} must be a string, got {short_repr(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        _fail(where, f"{what} {short_repr(value)} is not valid Unicode text")
    return value


def short_repr(value, limit=80):
    """repr(value) cut to about `limit` characters: file contents quoted in messages stay readable."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _entry(value, n_done, what, where):
    if not isinstance(value, list) or len(value) not in (2, 3) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        _fail(where, f"{what}: an entry must be [node_id, output_index(, version)], got {short_repr(value)}")
    nid, idx = value[0], value[1]
    if not 0 <= nid < n_done:
        _fail(where, f"{what}: entry {short_repr(value)} refers to node {nid}, which is not an earlier node "
                     "(nodes must be in topological order)")
    return nid, idx


def _upgrade_hidden(attrs):
    """§3.8 rule 1: legacy hidden keys without underscores (lr_mult -> __lr_mult__)."""
    out = {}
    for key, value in attrs.items():
        if key in _LEGACY_HIDDEN:
            key = f"__{key}__"
        out[key] = value
    return out


def graph_from_json(text, make_symbol, source="the JSON text"):
    """Parses MXNet symbol JSON into a list of head entries ((node, index)); `make_symbol(heads)` makes the
    Symbol of each control-flow subgraph (Symbol is built on this module)."""
    where = f" from {source}"
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as err:
            _fail(where, f"not UTF-8 text ({err})")
    if not isinstance(text, str):
        raise MXNetError(f"load_json expects a JSON string, got {type(text).__name__}")
    try:
        doc = json.loads(text)
    except ValueError as err:
        _fail(where, f"invalid JSON ({err})")
    except RecursionError:
        _fail(where, "the JSON is nested too deeply")
    if not isinstance(doc, dict):
        _fail(where, "the top level must be an object with 'nodes', 'arg_nodes' and 'heads'")
    try:
        return _read_graph(doc, _version(doc, where), where, 0, make_symbol)
    except RecursionError:   # a last guard: attribute values are parsed recursively too
        _fail(where, "the graph is nested too deeply")


def _read_subgraphs(spec, op, name, version, where, depth, make_symbol):
    """{attribute name: Symbol} for a control-flow node's "subgraphs" list (documents without "attrs")."""
    keys = [key for key, attr in op.attrs.items() if attr.parse is parse_subgraph]
    docs = spec.get("subgraphs", [])
    label = f"node {short_repr(name)} (op {op.name})"
    if not isinstance(docs, list) or len(docs) != len(keys):
        _fail(where, f"{label} needs {len(keys)} subgraph(s) ({', '.join(keys) or 'none'}) in 'subgraphs', got "
                     f"{len(docs) if isinstance(docs, list) else short_repr(docs)}")
    if keys and depth >= MAX_SUBGRAPH_DEPTH:
        _fail(where, f"{label}: subgraphs nested more than {MAX_SUBGRAPH_DEPTH} levels deep")
    subs = {}
    for key, doc in zip(keys, docs):
        if not isinstance(doc, dict):
            _fail(where, f"{label}: subgraph {key!r} must be an object with 'nodes' and 'heads'")
        subs[key] = make_symbol(_read_graph(doc, version, f"{where}, subgraph {key!r} of node {short_repr(name)}",
                                            depth + 1, make_symbol))
    return subs


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _attributes(spec, i, label, where):
    """A node's string attributes ("attrs", or the old "attr"/"param"), legacy hidden keys renamed."""
    raw = spec.get("attrs", spec.get("attr", spec.get("param", {}))) or {}
    if not isinstance(raw, dict):
        _fail(where, f"node {i} ({label}): attributes must be an object of strings, got {short_repr(raw)}")
    out = {}
    for key, value in raw.items():
        _text(key, f"node {i} ({label}): attribute name", where)
        out[key] = _text(value, f"node {i} ({label}): attribute {short_repr(key)}", where) if isinstance(value, str) \
            else json.dumps(value)
    return _upgrade_hidden(out)


def _read_graph(doc, version, where, depth, make_symbol):
    """Nodes and heads of one graph document (the file's, or a subgraph's)."""
    for key in ("nodes", "heads"):
        if not isinstance(doc.get(key), list):
            _fail(where, f"missing or invalid {key!r} (an MXNet symbol file has 'nodes', 'arg_nodes', 'heads')")
    nodes = []
    for i, spec in enumerate(doc["nodes"]):
        if not isinstance(spec, dict):
            _fail(where, f"node {i} must be an object with string 'op' and 'name', got {short_repr(spec)}")
        name = _text(spec.get("name"), f"node {i}: 'name'", where)
        label = short_repr(name)
        op_name = _text(spec.get("op"), f"node {i} ({label}): 'op'", where)
        raw = _attributes(spec, i, label, where)
        inputs_spec = spec.get("inputs", [])
        if not isinstance(inputs_spec, list):
            _fail(where, f"node {i} ({label}): 'inputs' must be a list")
        inputs, versions = [], []
        for e in inputs_spec:
            versions.append(e[2] if isinstance(e, list) and len(e) == 3 else 0)
            nid, idx = _entry(e, i, f"node {i} ({label})", where)
            src = nodes[nid]
            if not 0 <= idx < src.num_outputs():
                _fail(where, f"node {i} ({label}) uses output {idx} of {short_repr(src.name)}, which has "
                             f"{src.num_outputs()} output(s)")
            inputs.append((src, idx))
        if op_name == "null":
            if inputs:
                _fail(where, f"variable node {i} ({label}) cannot have inputs")
            nodes.append(Node(None, name, {}, raw, ()))
            continue
        op = registry.find(op_name)
        if op is None:
            _fail(where, f"operator {short_repr(op_name)} (node {i}, {label}) is not implemented in mixnet")
        if any(attr.parse is parse_any for attr in op.attrs.values()):
            _fail(where, f"node {i} ({label}): {op.name} is mixnet's internal operator (its attributes are Python "
                         "objects), never written to a file")
        given = {}
        for key, value in raw.items():
            if key.startswith("__") and key.endswith("__"):
                continue
            if key not in op.attrs and not op.open_attrs:
                if key in _IGNORABLE:
                    continue
                if key.endswith(("_lr_mult", "_wd_mult")):
                    continue
                _fail(where, f"node {i} ({label}, op {op.name}): unknown attribute {short_repr(key)}="
                             f"{short_repr(value)} (known: {', '.join(op.attrs) or 'none'})")
            given[key] = value
        given.update(_read_subgraphs(spec, op, name, version, where, depth, make_symbol))
        if version < 905 and op.name in ("argmax", "argmin") and given.get("axis") == "-1":
            given.pop("axis")                              # §3.8 rule 4
        try:
            attrs = op.parse(given)
        except MXNetError as err:
            _fail(where, f"node {i} ({label}): {err}")
        node = Node(op, name, attrs, raw, inputs)
        n_out = node.num_outputs()
        if not 1 <= n_out <= MAX_NODE_OUTPUTS:
            _fail(where, f"node {i} ({label}, op {op.name}) declares {n_out} outputs (at most {MAX_NODE_OUTPUTS})")
        if any(versions) and versions != [1 if s in op.mutates else 0 for s in range(len(inputs))]:
            node.json_versions = versions
        if not op.variadic:
            names = op.input_names(attrs)
            if len(inputs) < len(names) and version < 900:   # §3.8 rule 2: weights were auto-created
                op_raw = {k: v for k, v in raw.items() if not k.startswith("__")}
                for arg in names[len(inputs):]:
                    var = Node(None, f"{name}_{arg}", {}, dict(op_raw), ())
                    node.inputs.append((var, 0))
            if len(node.inputs) != len(names):
                _fail(where, f"node {i} ({label}, op {op.name}) has {len(node.inputs)} input(s), expected "
                             f"{len(names)} ({', '.join(names)})")
        if version < 904 and op.name == "BatchNorm":      # §3.8 rule 3
            for slot, init in ((3, '["zero", {}]'), (4, '["one", {}]')):
                var = node.inputs[slot][0]
                if var.op is None:
                    var.raw.setdefault("__init__", init)
        for key in list(raw):                               # weight_lr_mult -> the weight's __lr_mult__
            for suffix in ("_lr_mult", "_wd_mult"):
                if key.endswith(suffix) and not key.startswith("__"):
                    arg = key[:-len(suffix)]
                    names = node.input_names()
                    if arg in names and node.inputs[names.index(arg)][0].op is None:
                        node.inputs[names.index(arg)][0].raw[f"__{suffix[1:]}__"] = raw.pop(key)
        nodes.append(node)
    arg_nodes = doc.get("arg_nodes")
    if arg_nodes is not None:
        # not needed to build the graph, but a list that names non-variables means the file is not what it claims
        if not isinstance(arg_nodes, list) or not all(_is_int(a) and 0 <= a < len(nodes) for a in arg_nodes):
            _fail(where, f"'arg_nodes' must be a list of node ids below {len(nodes)}, got {short_repr(arg_nodes)}")
        wrong = [a for a in arg_nodes if nodes[a].op is not None]
        if wrong:
            _fail(where, f"'arg_nodes' lists node {wrong[0]} ({short_repr(nodes[wrong[0]].name)}), which is not a "
                         "variable (op 'null')")
    ptr = doc.get("node_row_ptr")
    if ptr is not None:
        # Hidden output counts depend on MXNet's build (oneDNN adds a workspace output to max Pooling), so they
        # are kept for writing the file back, not checked against mixnet's ops.
        if not isinstance(ptr, list) or len(ptr) != len(nodes) + 1 or not all(
                _is_int(p) for p in ptr) or any(b < a for a, b in zip(ptr, ptr[1:])):
            _fail(where, "node_row_ptr must be a non-decreasing list of len(nodes) + 1 integers")
        for n, a, b in zip(nodes, ptr, ptr[1:]):
            if b - a != _json_outputs(n):
                n.json_outputs = b - a
    heads = []
    if not doc["heads"]:
        _fail(where, "the graph has no heads (outputs)")
    for e in doc["heads"]:
        nid, idx = _entry(e, len(nodes), "heads", where)
        if not 0 <= idx < nodes[nid].num_outputs():
            _fail(where, f"head {e!r}: node {nid} ({short_repr(nodes[nid].name)}) has {nodes[nid].num_outputs()} "
                         "output(s)")
        heads.append((nodes[nid], idx))
    return heads
