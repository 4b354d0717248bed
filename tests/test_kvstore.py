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


def test_pull_skips_row_sparse_outputs_unless_asked():
    # MXNet: a plain pull leaves row_sparse outputs alone (their rows come from row_sparse_pull)
    store = kv.create("local")
    store.init("w", mx.nd.zeros((4, 2)))
    out = (mx.nd.ones((4, 2)) * 2).tostype("row_sparse")
    store.pull("w", out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full((4, 2), 2.0))
    store.pull("w", out=out, ignore_sparse=False)
    np.testing.assert_array_equal(out.asnumpy(), np.zeros((4, 2)))


def test_row_sparse_pull_per_key_per_device_row_ids():
    store = kv.create("local")
    keys = ["a", "b"]
    values = [mx.nd.array(np.arange(8.0).reshape(4, 2) + 10 * i).tostype("row_sparse") for i in range(2)]
    store.init(keys, values)
    outs = [[mx.nd.zeros((4, 2)).tostype("row_sparse") for _ in range(3)] for _ in keys]
    row_ids = [[mx.nd.array([0]), mx.nd.array([1, 3]), mx.nd.array([2])] for _ in keys]
    store.row_sparse_pull(keys, out=outs, row_ids=row_ids)
    for i, key_outs in enumerate(outs):
        dense = np.arange(8.0).reshape(4, 2) + 10 * i
        for o, rows in zip(key_outs, ([0], [1, 3], [2])):
            expected = np.zeros((4, 2))
            expected[rows] = dense[rows]
            np.testing.assert_array_equal(o.asnumpy(), expected)
    with pytest.raises(MXNetError, match="row_ids entries for 2 keys"):
        store.row_sparse_pull(keys, out=outs, row_ids=row_ids[:1])


def test_row_sparse_pull_refuses_dense_values_and_outputs():
    store = kv.create("local")
    store.init("d", mx.nd.ones((3, 2)))
    with pytest.raises(MXNetError, match="row_sparse"):
        store.row_sparse_pull("d", out=mx.nd.zeros((3, 2)), row_ids=mx.nd.array([1]))
    store.init("s", mx.nd.ones((3, 2)).tostype("row_sparse"))
    with pytest.raises(MXNetError, match="output is default"):
        store.row_sparse_pull("s", out=mx.nd.zeros((3, 2)), row_ids=mx.nd.array([1]))


def test_teststore_broadcasts_again_and_has_no_optimizer():
    store = kv.create("teststore")
    out = mx.nd.zeros((2,))
    store.broadcast(1, mx.nd.ones((2,)), out=out)
    store.broadcast(1, mx.nd.ones((2,)) * 3, out=out)      # MXNet's Python store keeps no init state
    np.testing.assert_array_equal(out.asnumpy(), [3.0, 3.0])
    for call in (lambda: store.set_optimizer(opt.create("sgd")), lambda: store.save_optimizer_states("f"),
                 lambda: store.load_optimizer_states("f")):
        with pytest.raises(NotImplementedError, match="teststore"):   # MXNet's exception type ...
            call()
        with pytest.raises(MXNetError):                              # ... and mixnet's
            call()


def test_one_store_holds_one_kind_of_key():
    store = kv.create("local")
    store.init(3, mx.nd.zeros((2,)))
    for call in (lambda: store.init("a", mx.nd.zeros((2,))), lambda: store.push("a", mx.nd.zeros((2,))),
                 lambda: store.pull("a", out=mx.nd.zeros((2,)))):
        with pytest.raises(MXNetError, match="int keys or str keys"):
            call()
    text = kv.create("local")
    text.init("a", mx.nd.zeros((2,)))
    with pytest.raises(MXNetError, match="str"):
        text.push(3, mx.nd.zeros((2,)))
