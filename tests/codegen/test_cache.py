"""The on-disk kernel cache (mixnet/codegen/cache.py): round trip, corruption recovery, warm start of a new
process."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mixnet.codegen import Group, Step, cache, compile_kernel, inp, numba_cpu, render_kernel


def small_group(value):
    return Group([Step("_plus_scalar", "{0} + {scalar}", (inp(0),), {"scalar": value}),
                  Step("exp", "exp({0})", (numba_cpu.step(0),), {})], [1], 1)


@pytest.fixture
def fresh_dir(tmp_path):
    previous = cache.set_cache_dir(tmp_path)
    yield tmp_path
    cache.set_cache_dir(previous)


def _forget(source):
    """Make this process forget a kernel, as a new process would (memo and sys.modules)."""
    name = cache.kernel_name(source)
    sys.modules.pop(name, None)
    for key in [k for k in numba_cpu._kernels if k[0] == source]:
        del numba_cpu._kernels[key]


def test_round_trip(fresh_dir):
    group = small_group(1.25)
    k = compile_kernel(group)
    assert os.path.basename(k.path) == cache.kernel_name(k.source) + ".py"
    assert os.path.dirname(k.path) == str(fresh_dir)
    assert compile_kernel(group) is k                               # memoized in the process
    files = cache.numba_cache_files(k.path)
    assert any(f.endswith(".nbi") for f in files) and any(f.endswith(".nbc") for f in files)
    assert all(f.startswith(str(fresh_dir)) for f in files)
    assert not [f for f in os.listdir(fresh_dir) if f.endswith(".mixnet-tmp")]
    np.testing.assert_allclose(k(np.zeros(3, np.float32)), np.exp(np.float32(1.25)), rtol=1e-6)


def test_truncated_source_is_rewritten(fresh_dir):
    source = render_kernel(small_group(2.5))
    module = cache.load_source(source)
    path = module.__file__
    with open(path, "r+") as f:
        f.truncate(40)
    _forget(source)
    module = cache.load_source(source)
    with open(path) as f:
        assert f.read() == source
    assert hasattr(module, "serial")


def test_garbage_numba_cache_is_rebuilt(fresh_dir):
    group = small_group(3.75)
    k = compile_kernel(group)
    for f in cache.numba_cache_files(k.path):
        with open(f, "wb") as fh:
            fh.write(b"\x80\x04garbage, not a pickle")
    _forget(k.source)
    k2 = compile_kernel(group)                                      # recovers: purge + recompile
    np.testing.assert_allclose(k2(np.zeros(2, np.float32)), np.exp(np.float32(3.75)), rtol=1e-6)
    assert cache.numba_cache_files(k2.path)                         # and the cache is written again


WORKER = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from codegen.test_cache import small_group
    from mixnet.codegen import cache, compile_kernel
    k = compile_kernel(small_group(0.5), parallel_threshold=4)
    k(np.ones(8, np.float32))                                       # the parallel variant too
    hits = sum(sum(v.stats.cache_hits.values()) for v in (k.serial, k.parallel))
    files = {{f: os.path.getmtime(f) for f in cache.numba_cache_files(k.path)}}
    print(json.dumps({{"hits": hits, "files": files}}))
""").replace("import json, sys", "import json, os, sys")


def test_second_process_starts_warm(tmp_path):
    env = dict(os.environ, MIXNET_CACHE_DIR=str(tmp_path), NUMBA_NUM_THREADS="2")
    env.pop("NUMBA_CACHE_DIR", None)
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = WORKER.format(tests=tests)

    def run():
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120,
                             cwd=os.path.dirname(tests))
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])
    first, second = run(), run()
    assert first["hits"] == 0 and len(first["files"]) >= 4          # serial + parallel: index and data each
    assert second["hits"] == 2                                      # both variants loaded from the cache
    assert second["files"] == first["files"]                        # nothing new written, nothing rewritten
