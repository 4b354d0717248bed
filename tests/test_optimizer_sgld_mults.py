"""SGLD, and lr_mult / wd_mult given to Symbol ops (MXNet's hidden keys), read by Module's optimizer."""
import math

import numpy as np

import mixnet as mx


def test_sgld_step_is_half_gradient_plus_seeded_noise():
    w = mx.nd.array([[1.0, -2.0], [0.5, 3.0]])
    g = mx.nd.array([[0.2, 0.4], [-1.0, 2.0]])
    opt = mx.optimizer.SGLD(learning_rate=0.1, wd=0.01, clip_gradient=1.0)
    expected = w.asnumpy() - 0.05 * (np.clip(g.asnumpy(), -1, 1) + 0.01 * w.asnumpy())
    mx.random.seed(7)
    noise = mx.nd.random.normal(0, math.sqrt(0.1), shape=(2, 2)).asnumpy()
    mx.random.seed(7)
    opt.update(0, w, g, opt.create_state(0, w))
    np.testing.assert_allclose(w.asnumpy(), expected + noise, rtol=1e-5, atol=1e-6)
    assert isinstance(mx.optimizer.create("sgld"), mx.optimizer.SGLD)


def test_op_lr_mult_reaches_created_variables_and_the_optimizer():
    data = mx.sym.var("data")
    bias = mx.sym.var("fc1_bias", lr_mult=1.0)
    fc1 = mx.sym.FullyConnected(data=data, bias=bias, name="fc1", num_hidden=4, lr_mult=0)
    fc2 = mx.sym.FullyConnected(data=fc1, name="fc2", num_hidden=4, wd_mult=0.5)
    attrs = fc2.attr_dict()
    assert attrs["fc1_weight"]["__lr_mult__"] == "0" and attrs["fc1_bias"]["__lr_mult__"] == "1.0"
    assert attrs["fc2_bias"]["__wd_mult__"] == "0.5"
    mod = mx.mod.Module(symbol=fc2, label_names=None)
    mod.bind(data_shapes=[("data", (2, 3))])
    mod.init_params(initializer=mx.init.Uniform(1.0))
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    before = mod.get_params()[0]["fc1_weight"].asnumpy()
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones((2, 3))], label=None), is_train=True)
    mod.backward(mod.get_outputs())
    mod.update()
    assert mod._optimizer.lr_mult == {"fc1_bias": 1.0, "fc1_weight": 0.0}
    assert mod._optimizer.wd_mult == {"fc2_bias": 0.5, "fc2_weight": 0.5, "fc1_bias": 0.0}
    np.testing.assert_array_equal(mod.get_params()[0]["fc1_weight"].asnumpy(), before)
