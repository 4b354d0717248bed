"""Shared by the hostile-input fuzz tests: byte mutations of valid files as hypothesis strategies, and `bounded`,
which runs one input and checks the loader's promise - a result or an MXNetError, never another exception, within
MEMORY_LIMIT bytes and TIME_LIMIT seconds.

Memory is measured with tracemalloc (numpy reports its buffers to it), switched on only around the loader's call:
tracing hypothesis' own work as well would make it several times slower."""
import struct
import time
import tracemalloc

from hypothesis import strategies as st

from mixnet.base import MXNetError

MEMORY_LIMIT = 100 << 20
TIME_LIMIT = 2.0

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


def bounded(fn, *args):
    """fn(*args) -> its result, or the MXNetError it raised. Any other exception propagates (the test fails);
    so does an allocation peak above MEMORY_LIMIT or a run longer than TIME_LIMIT."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        result = fn(*args)
    except MXNetError as err:
        result = err
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    elapsed = time.perf_counter() - start
    assert peak < MEMORY_LIMIT, f"{fn.__name__} allocated {peak} bytes at its peak"
    assert elapsed < TIME_LIMIT, f"{fn.__name__} took {elapsed:.1f} s"
    return result
