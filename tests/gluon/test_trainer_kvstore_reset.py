"""Trainer and KVStore: MXNet's 'teststore' (no optimizer on the store), and new parameter values (load /
set_data) dropping a KVStore that holds its own copy of the weights."""
import numpy as np
import pytest

import mixnet as mx
from mixnet import gluon


def _grads_of_one(param):
    with mx.autograd.record():
        for w in param.list_data():
            (w + 1).backward()


def test_teststore_updates_on_the_workers():
    x = gluon.Parameter("x", shape=(4,))
    x.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    kv = mx.kv.create("teststore")
    assert kv.type == "teststore" and not kv.is_capable("optimizer")
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0}, kvstore=kv)
    _grads_of_one(x)
    trainer.step(1)
    assert trainer._update_on_kvstore is False
    np.testing.assert_array_equal(x.data(mx.cpu(1)).asnumpy(), -2.0)
    with pytest.raises(ValueError, match="update_on_kvstore=False"):
        gluon.Trainer([x], "sgd", kvstore=kv, update_on_kvstore=True)._init_kvstore()


@pytest.mark.parametrize("kv", ["local", "device"])
def test_new_values_reset_an_updating_kvstore(kv, tmp_path):
    params = gluon.ParameterDict()
    x = params.get("x", shape=(3,))
    params.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore=kv)
    params.save(str(tmp_path / "x.params"))
    _grads_of_one(x)
    trainer.step(1)
    assert trainer._update_on_kvstore
    params.load(str(tmp_path / "x.params"))
    assert trainer._kvstore is None
    _grads_of_one(x)
    trainer.step(1)
    np.testing.assert_allclose(x.data(mx.cpu()).asnumpy(), -0.2, rtol=1e-6)    # from the loaded zeros
