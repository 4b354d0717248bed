"""Warm start (mixnet/codegen/numba_load.py): cached kernels load without Numba's compiler, and what is not cached
still compiles as before; hybridize() imports nothing."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
from numba import njit

from mixnet.codegen import numba_load

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Loads (or compiles) one fused kernel; says whether Numba's compiler was started (its refresh imports
# numba.np.arraymath) and how many cache hits the serial variant had.
WORKER = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from codegen.test_cache import small_group
    from mixnet.codegen import compile_kernel
    k = compile_kernel(small_group(0.25))
    y = k(np.zeros(4, np.float32))
    print(json.dumps({{"compiler": "numba.np.arraymath" in sys.modules, "y": float(y[0]),
                      "hits": sum(k.serial.stats.cache_hits.values())}}))
""")


def _run(script, env):
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=180, check=False,
                         cwd=os.path.dirname(TESTS))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cached_kernel_loads_without_numbas_compiler(tmp_path):
    env = dict(os.environ, MIXNET_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    script = WORKER.format(tests=TESTS)
    cold, warm = _run(script, env), _run(script, env)
    assert cold["compiler"] and cold["hits"] == 0                   # compiled: the compiler ran
    assert not warm["compiler"] and warm["hits"] == 1               # loaded from the cache, compiler never started
    assert warm["y"] == cold["y"]                                   # the same machine code
    np.testing.assert_allclose(warm["y"], np.exp(0.25), rtol=1e-6)


def test_uncached_dispatchers_load_nothing_and_still_compile():
    @njit(cache=False)
    def add_one(x):
        return x + 1

    assert numba_load.load_cached(add_one) == 0                     # no disk cache: nothing to load
    assert add_one(1.5) == 2.5                                      # compiles as Numba always does


def test_hybridize_imports_no_numba_even_with_fused_kernels_in_the_cache(tmp_path):
    """Other blocks' fused kernels in the cache say nothing of this one's: hybridize() used to import Numba ahead
    of the first call whenever the cache held any, which cost a block that needs none (an MLP whose eager loops
    load without Numba, codegen/native_loops.py) ~0.2 s of shared GIL and ~40 MB."""
    kernels = tmp_path / "kernels"
    kernels.mkdir(mode=0o700)
    (kernels / "mx_0123456789abcdef.py").write_text("# another block's fused kernel\n")
    script = textwrap.dedent("""
        import sys, threading
        import mixnet as mx
        net = mx.gluon.nn.HybridSequential()
        net.hybridize()
        for thread in threading.enumerate():          # what hybridize() may have started
            if thread is not threading.current_thread():
                thread.join(30)
        print('{"numba": %s}' % str("numba" in sys.modules).lower())
    """)
    env = dict(os.environ, MIXNET_CACHE_DIR=str(kernels), MIXNET_COMPILE_BACKGROUND="1")
    assert _run(script, env) == {"numba": False}
