"""mx.kv: the single-process KVStore."""
import numpy as np
import pytest

import mixnet as mx
import mixnet.kvstore as kv
import mixnet.optimizer as opt
from mixnet.base import MXNetError


def test_properties_and_types():
    for name in ("local", "device", "local_allreduce_cpu"):
        store = kv.create(name)
        assert store.type == name and store.rank == 0 and store.num_workers == 1
    with pytest.raises(MXNetError, match="not supported"):
        kv.create("dist_sync")


def test_init_push_pull_sum():
    store = kv.create("local")
    store.init(3, mx.nd.ones((2, 3)))
    out = mx.nd.zeros((2, 3))
    store.pull(3, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.ones((2, 3)))
    store.push(3, [mx.nd.ones((2, 3)), mx.nd.ones((2, 3)) * 2, mx.nd.ones((2, 3), ctx=mx.cpu(1))])
    outs = [mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3), ctx=mx.cpu(1))]
    store.pull(3, out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full((2, 3), 4.0))
    with pytest.raises(MXNetError, match="not been initialized"):
        store.pull(9, out=out)
    with pytest.raises(MXNetError, match="already initialized"):
        store.init(3, mx.nd.ones((2, 3)))


def test_str_keys_lists_pushpull_broadcast():
    store = kv.create("device")
    store.init(["a", "b"], [mx.nd.zeros(2), mx.nd.zeros(3)])
    vals = [mx.nd.ones(2), mx.nd.ones(2) * 3]
    store.pushpull("a", vals)                     # summed and written back into vals
    for v in vals:
        np.testing.assert_array_equal(v.asnumpy(), [4, 4])
    out = mx.nd.zeros(4)
    store.broadcast("c", mx.nd.array([1, 2, 3, 4]), out=out)
    np.testing.assert_array_equal(out.asnumpy(), [1, 2, 3, 4])


def test_set_optimizer_updates_on_push(tmp_path):
    store = kv.create("local")
    store.init(0, mx.nd.ones(2))
    store.set_optimizer(opt.create("sgd", learning_rate=0.5))
    store.push(0, [mx.nd.ones(2), mx.nd.ones(2)])     # merged grad 2 -> w = 1 - 0.5*2
    out = mx.nd.zeros(2)
    store.pull(0, out=out)
    np.testing.assert_allclose(out.asnumpy(), [0.0, 0.0])
    fname = str(tmp_path / "kv.states")
    store.save_optimizer_states(fname, dump_optimizer=True)
    store.load_optimizer_states(fname)
