"""Shared by the hostile-input tests (tests/symbol/test_json_fuzz.py, tests/gluon/test_symbol_block_hostile.py,
tests/gluon/test_trainer_states_hostile.py, tests/ndarray/test_load_fuzz.py, tests/test_recordio_fuzz.py):
mutations of JSON documents (structure and values) and of binary files (hypothesis strategies), and the property
every generated input must have: a result or an MXNetError - never another exception - within TIME_LIMIT_S seconds
and MEMORY_LIMIT bytes of Python/numpy allocations (tracemalloc's peak).

Memory is traced only around the call under test (numpy reports its buffers to tracemalloc): tracing hypothesis'
own work as well would make it several times slower."""
import contextlib
import copy
import json
import random
import struct
import time
import tracemalloc

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from mixnet.base import MXNetError

TIME_LIMIT_S = 2.0
MEMORY_LIMIT = 100 << 20


def fuzz_settings(max_examples):
    """A fixed budget, the same examples on every run, no example database."""
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@contextlib.contextmanager
def bounded(what):
    """Fails when the body takes more than TIME_LIMIT_S or its allocations peak above MEMORY_LIMIT (traced only
    here: tracing the whole test would slow hypothesis down several times)."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        yield
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < TIME_LIMIT_S, f"{elapsed:.2f} s for {what!r:.300}"
    assert peak < MEMORY_LIMIT, f"{peak / 2 ** 20:.0f} MB for {what!r:.300}"


def outcome(fn, *args):
    """fn(*args)'s result, or the MXNetError it raised; any other exception fails the test."""
    try:
        return fn(*args)
    except MXNetError as err:
        assert str(err), "an MXNetError must say what is wrong"
        return err


def bounded_outcome(fn, *args):
    """outcome(fn, *args) within the time and memory bounds."""
    with bounded(fn.__name__):
        return outcome(fn, *args)


# ---------------------------------------------------------------------------------------------------------
# mutations
HOSTILE_STRINGS = ["", " ", "\n", "\r\n", "\u2028", "\x0c", "\x00", "'", '"', "\\", "*/", "#", "\ud800",
                   "__import__('os').system('true')", "1e400", "-1", "nan", "inf", "(100000000000, 100000000)",
                   "(0,)", "()", "(-1, 3)", "[" * 50, "\u00e4\u6f22\U0001f642", "x" * 5000, "null", "None", "True",
                   "float32", "99", "0", "1", "zeros", '["uniform", {"scale": "x"}]', '["foo", {}]', "null_op"]
HOSTILE_NUMBERS = [0, 1, 2, -1, 3, 7, 2 ** 31, 2 ** 63, -2 ** 63, 10 ** 30, float("inf"), float("-inf"),
                   float("nan"), 1e-300, 0.5, True, False]


def _deep(depth):
    value = 0
    for _ in range(depth):
        value = [value]
    return value


def hostile_value(rng):
    """A value a hostile file puts where a valid one has something else."""
    kind = rng.randrange(8)
    if kind < 3:
        return rng.choice(HOSTILE_STRINGS)
    if kind < 5:
        return rng.choice(HOSTILE_NUMBERS)
    if kind == 5:
        return rng.choice([None, [], {}, [rng.randrange(-3, 4) for _ in range(rng.randrange(5))]])
    if kind == 6:
        return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x110000)])) for _ in range(
            rng.randrange(12)))
    return rng.choice([_deep(rng.randrange(20, 400)), list(range(3000)), rng.randrange(-2 ** 70, 2 ** 70)])


def _locations(doc):
    """(container, key) of every value in a JSON tree (iteratively: trees may be deep)."""
    found, stack = [], [doc]
    while stack:
        node = stack.pop()
        for key, value in (node.items() if isinstance(node, dict) else enumerate(node)):
            found.append((node, key))
            if isinstance(value, (dict, list)):
                stack.append(value)
    return found


def _retyped(value, rng):
    """The same information with another type or an out-of-range neighbour (index 3 -> 3000, "64" -> 64...)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return rng.choice([str(value), float(value), value + 1, value - 1, -value - 1, value + 1000,
                           value * 2 ** 40])
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return [value]
    if isinstance(value, list):
        return str(tuple(value)) if len(value) < 20 else {"items": value}
    return json.dumps(value) if isinstance(value, dict) else str(value)


def mutate_json(doc, rng, max_mutations=4):
    """`doc` (a JSON tree, changed in place and returned) with 1..max_mutations structural or value mutations: a
    value replaced by a hostile one, a key or element dropped, duplicated, renamed, wrapped, swapped with another
    part of the document, or retyped."""
    for _ in range(rng.randint(1, max_mutations)):
        places = _locations(doc)
        if not places:
            break
        parent, key = rng.choice(places)
        how = rng.choice(["replace", "replace", "drop", "duplicate", "rename", "wrap", "swap", "retype", "retype"])
        if how == "replace":
            parent[key] = hostile_value(rng)
        elif how == "drop":
            del parent[key]
        elif how == "duplicate":
            if isinstance(parent, list):
                parent.insert(rng.randint(0, len(parent)), copy.deepcopy(parent[key]))
            else:
                parent[rng.choice(["attr", "param", "attrs", "inputs", "subgraphs", "op", "name", "heads", "nodes",
                                   key + "_"])] = copy.deepcopy(parent[key])
        elif how == "rename" and isinstance(parent, dict):
            parent[rng.choice(HOSTILE_STRINGS)] = parent.pop(key)
        elif how == "wrap":
            parent[key] = rng.choice([[parent[key]], {"x": parent[key]}])
        elif how == "swap":
            other_parent, other_key = rng.choice(places)
            if other_parent is not parent or other_key != key:
                parent[key], other_parent[other_key] = copy.deepcopy(other_parent[other_key]), parent[key]
        else:
            parent[key] = _retyped(parent[key], rng)
    return doc


def mutate_bytes(data, rng, max_mutations=8):
    """`data` with byte-level damage: flipped, overwritten, inserted, deleted or repeated bytes, truncation, or a
    run of '[' (deep nesting)."""
    data = bytearray(data)
    for _ in range(rng.randint(1, max_mutations)):
        how = rng.choice(["flip", "set", "insert", "delete", "repeat", "truncate", "nest"])
        pos = rng.randrange(max(len(data), 1))
        if how == "flip" and data:
            data[pos] ^= 1 << rng.randrange(8)
        elif how == "set" and data:
            data[pos] = rng.choice([0, 0xFF, 0x80, ord('"'), ord("["), ord("{"), ord("9"), ord("-")])
        elif how == "insert":
            data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif how == "delete":
            del data[pos:pos + rng.randint(1, 64)]
        elif how == "repeat":
            data[pos:pos] = data[pos:pos + rng.randint(1, 256)]
        elif how == "truncate":
            del data[pos:]
        elif how == "nest":
            data[pos:pos] = b"[" * rng.choice([10, 1000, 100000])
    return bytes(data)


# Hypothesis draws one seed per example and the mutations come from a Random seeded with it: one draw instead of
# dozens, and BATCH inputs per example, keep the cost of generation small next to the code under test.
RNGS = st.integers(0, 2 ** 64 - 1).map(random.Random)
BATCH = 4


def each(inputs, check):
    """check(x) for every x of `inputs`; a failure names the input."""
    for value in inputs:
        try:
            check(value)
        except Exception as err:
            err.add_note(f"hostile input: {value!r:.3000}")
            raise


# ---------------------------------------------------------------------------------------------------------
# binary formats (.params, RecordIO): byte mutations as hypothesis strategies
# Values a hostile length, count, shape or flag field takes: edges of every integer width, powers of two.
INTERESTING = sorted({0, 1, 2, 3, 4, 7, 8, 12, 31, 32, 33, 64, 255, 256, 4096, 0x112, 0x7FFF, 0xFFFF, 1 << 20,
                      1 << 24, (1 << 29) - 1, 1 << 29, 1 << 30, (1 << 31) - 1, 1 << 31, (1 << 32) - 1, 1 << 32,
                      1 << 40, 1 << 62, (1 << 63) - 1, (1 << 64) - 1, -1, -2, -(1 << 31), -(1 << 63)})


def pack_field(value, fmt):
    """`value` as a 4- or 8-byte little-endian field, wrapped to the width (as a C reader would see it)."""
    bits = 8 * struct.calcsize(fmt)
    return struct.pack("<" + fmt.upper(), value % (1 << bits))


_POS = st.integers(0, 1 << 16)                       # reduced modulo the input's length
_MUTATION = st.one_of(
    st.tuples(st.just("flip"), _POS, st.integers(0, 7)),
    st.tuples(st.just("truncate"), _POS),
    st.tuples(st.just("field"), _POS, st.sampled_from(INTERESTING), st.sampled_from("iq"), st.booleans(),
              st.booleans()),
    st.tuples(st.just("insert"), _POS, st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("delete"), _POS, st.integers(1, 16)),
    st.tuples(st.just("splice"), _POS, _POS, st.integers(1, 64)),
)


def _apply(buf, mutation):
    kind, pos = mutation[0], mutation[1] % (len(buf) + 1)
    if kind == "flip":
        if pos < len(buf):
            buf[pos] ^= 1 << mutation[2]
    elif kind == "truncate":
        del buf[pos:]
    elif kind == "field":                 # overwrite or insert a length/count/shape field, usually aligned
        _, _, value, fmt, aligned, insert = mutation
        if aligned:
            pos -= pos % 4
        field = pack_field(value, fmt)
        buf[pos:pos if insert else pos + len(field)] = field
    elif kind == "insert":
        buf[pos:pos] = mutation[2]
    elif kind == "delete":
        del buf[pos:pos + mutation[2]]
    else:                                 # copy a chunk of the file over another place (a duplicated record)
        src = mutation[2] % (len(buf) + 1)
        buf[pos:pos] = buf[src:src + mutation[3]]
    return buf


MUTATIONS = st.lists(_MUTATION, min_size=1, max_size=4)


def mutate(seed, mutations):
    """`seed` (bytes) after the mutations, in order."""
    buf = bytearray(seed)
    for m in mutations:
        buf = _apply(buf, m)
    return bytes(buf)


def mutated(seeds):
    """Inputs made from one of the byte strings `seeds` (a dict name -> bytes) by one to four mutations."""
    return st.tuples(st.sampled_from(sorted(seeds)), MUTATIONS).map(lambda t: mutate(seeds[t[0]], t[1]))
