"""Parallel fused kernels called from several threads: under Numba's 'workqueue' threading layer (what Numba uses
when neither OpenMP nor TBB loads) two concurrent parallel launches abort the whole process, so there they take
turns (numba_cpu.Kernel._launch)."""
import os
import subprocess
import sys
import textwrap

WORKER = textwrap.dedent("""
    import sys, threading
    import numpy as np
    sys.path.insert(0, {tests!r})
    from codegen.test_cache import small_group
    from mixnet.codegen import compile_kernel
    import numba
    k = compile_kernel(small_group(0.5), parallel_threshold=4)
    xs = [np.random.default_rng(s).standard_normal(4096).astype(np.float32) for s in range(8)]
    want = [np.exp(x + np.float32(0.5)) for x in xs]
    wrong = []

    def work():
        for _ in range(25):
            for x, w in zip(xs, want):
                if not np.allclose(k(x), w, rtol=1e-6):
                    wrong.append(1)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(numba.threading_layer(), len(wrong))
""")


def test_parallel_kernels_from_threads_under_the_workqueue_layer(kernel_dir):
    env = dict(os.environ, MIXNET_CACHE_DIR=str(kernel_dir), NUMBA_THREADING_LAYER="workqueue",
               NUMBA_NUM_THREADS="2")
    env.pop("NUMBA_CACHE_DIR", None)
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", WORKER.format(tests=tests)], env=env, capture_output=True,
                         text=True, timeout=120, cwd=os.path.dirname(tests))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["workqueue", "0"]
