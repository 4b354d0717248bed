"""LAMB's element-wise work runs over FLAT_CHUNK-element blocks of a large layer: the weights and moments come out
bit for bit as with whole-array operations (FLAT_CHUNK larger than the layer), for every dtype and option."""
import numpy as np
import pytest

import mixnet as mx
from mixnet.optimizer import optimizer as opt_mod

_OPTIONS = [dict(), dict(clip_gradient=0.4, rescale_grad=0.14, wd=0.03),
            dict(bias_correction=False, wd=0.07, lower_bound=1e-3, upper_bound=10)]


_SHAPE = (3 * opt_mod.FLAT_CHUNK // 256 + 7, 256)        # several blocks and a partial last one


def _run(dtype, kwargs, multi_precision):
    rng = np.random.default_rng(3)
    shape = _SHAPE
    w = mx.nd.array(rng.random(shape), dtype=dtype)
    g = mx.nd.array(rng.random(shape), dtype=dtype)
    opt = mx.optimizer.LAMB(multi_precision=multi_precision, **kwargs)
    state = opt.create_state_multi_precision(0, w)
    for _ in range(2):
        opt.update_multi_precision(0, w, g, state)
    flat = [w]
    pending = [state]
    while pending:
        s = pending.pop()
        if isinstance(s, (tuple, list)):
            pending.extend(s)
        elif s is not None:
            flat.append(s)
    return [a.asnumpy() for a in flat]


@pytest.mark.parametrize("dtype,multi_precision", [("float16", True), ("float16", False), ("float32", False),
                                                   ("float64", False)])
def test_blocks_give_the_whole_array_bits(dtype, multi_precision, monkeypatch):
    for kwargs in _OPTIONS:
        blocked = _run(dtype, kwargs, multi_precision)
        monkeypatch.setattr(opt_mod, "FLAT_CHUNK", 1 << 30)
        whole = _run(dtype, kwargs, multi_precision)
        monkeypatch.undo()
        assert len(blocked) == len(whole)
        for b, w in zip(blocked, whole):
            assert b.dtype == w.dtype and b.tobytes() == w.tobytes(), kwargs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numba_direction_gives_the_numpy_bits(dtype, monkeypatch):
    """The one-pass Numba loop (lamb_direction) against the numpy blocks, eps=0 and a tight clip included."""
    options = _OPTIONS + [dict(epsilon=0.0, clip_gradient=1e-3)]
    for kwargs in options:
        fast = _run(dtype, kwargs, False)
        monkeypatch.setattr(opt_mod._fastpath, "ENABLED", False)
        slow = _run(dtype, kwargs, False)
        monkeypatch.undo()
        for f, s in zip(fast, slow):
            assert f.tobytes() == s.tobytes(), kwargs


def test_numba_direction_runs(monkeypatch):
    used = []
    original = opt_mod.LAMB._direction_numba
    monkeypatch.setattr(opt_mod.LAMB, "_direction_numba",
                        lambda self, *a: used.append(original(self, *a)) or used[-1])
    _run("float32", {}, False)
    assert used and all(u is not None for u in used)
