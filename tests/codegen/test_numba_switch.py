"""MIXNET_NUMBA=0 (config.NUMBA): a process never imports Numba, even with a warm kernel cache, and gets the results
of the generic paths (MIXNET_FUSE=0 with the eager fast paths off), bit for bit."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A hybridized model whose ops have fused kernels and eager Numba loops (Dense + activations, convolution,
# pooling, BatchNorm, LayerNorm, softmax, an LSTM step), one training step with SGD, then inference.
WORKER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import mixnet as mx
    from mixnet.ops import _fastpath
    if sys.argv[1] == "generic":
        _fastpath.ENABLED = False
    from mixnet import gluon
    mx.random.seed(0)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 3, activation="relu"), gluon.nn.MaxPool2D(), gluon.nn.BatchNorm(),
            gluon.nn.Flatten(), gluon.nn.Dense(32, activation="sigmoid"), gluon.nn.LayerNorm(),
            gluon.nn.Dense(10, activation="tanh"))
    lstm = gluon.rnn.LSTM(8, input_size=10)
    for block in (net, lstm):
        block.initialize(mx.init.Xavier())
        block.hybridize()
    params = list(net.collect_params().values()) + list(lstm.collect_params().values())
    trainer = gluon.Trainer({p.name: p for p in params}, "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    x = mx.nd.array(np.random.default_rng(0).standard_normal((6, 2, 10, 10)).astype(np.float32))
    label = mx.nd.array([1, 2, 3, 4, 5, 6])
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(2):
        with mx.autograd.record():
            h = net(x)
            out = lstm(h.reshape((3, 2, 10)))
            loss = loss_fn(out.reshape((6, 8)), label)
        loss.backward()
        trainer.step(6)
    y = lstm(net(x).reshape((3, 2, 10)))
    print(json.dumps({"numba": "numba" in sys.modules, "loss": loss.asnumpy().tolist(),
                      "y": y.asnumpy().tolist(), "w": params[0].data().asnumpy().ravel().tolist()}))
""")


def _run(mode, env):
    out = subprocess.run([sys.executable, "-c", WORKER, mode], env=env, capture_output=True, text=True, timeout=300,
                         check=False, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_numba_off_never_imports_numba_and_matches_the_generic_paths(tmp_path):
    cache = tmp_path / "kernels"
    cache.mkdir(mode=0o700)
    (cache / "mx_0123456789abcdef.py").write_text("# a warm cache: hybridize() would start Numba's runtime\n")
    env = dict(os.environ, MIXNET_CACHE_DIR=str(cache), MIXNET_FUSE_MIN_SIZE="1", MIXNET_COMPILE_BACKGROUND="0")
    off = _run("default", dict(env, MIXNET_NUMBA="0"))
    generic = _run("generic", dict(env, MIXNET_FUSE="0"))
    assert not off["numba"]
    for key in ("loss", "y", "w"):
        np.testing.assert_array_equal(np.array(off[key]), np.array(generic[key]), err_msg=key)
