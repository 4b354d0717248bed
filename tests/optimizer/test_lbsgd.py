"""optimizer.LBSGD against MXNet 1.9.1 (tests/data/make_lbsgd_reference.py wrote the reference weights)."""
import os

import numpy as np
import pytest

import mixnet as mx

REF = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "optimizer", "lbsgd_mxnet.npz"))
# the generator's cases (tests/data/make_lbsgd_reference.py)
CASES = {
    "linear": dict(learning_rate=0.1, momentum=0.9, wd=1e-4, warmup_strategy="linear", warmup_epochs=1,
                   updates_per_epoch=4, batch_scale=1),
    "linear_bs2": dict(learning_rate=0.1, momentum=0.9, wd=1e-3, warmup_strategy="linear", warmup_epochs=2,
                       updates_per_epoch=3, batch_scale=2),
    "power2": dict(learning_rate=0.05, warmup_strategy="power2", warmup_epochs=2, updates_per_epoch=4,
                   batch_scale=2),
    "sqrt": dict(learning_rate=0.05, momentum=0.5, warmup_strategy="sqrt", warmup_epochs=1, updates_per_epoch=5,
                 batch_scale=3, clip_gradient=0.5, rescale_grad=0.5, begin_epoch=1),
    "lars": dict(learning_rate=0.1, momentum=0.9, wd=1e-3, warmup_strategy="lars", batch_scale=1),
    "lars_bs2": dict(learning_rate=0.1, wd=1e-2, warmup_strategy="lars", batch_scale=2),
    "scheduler": dict(momentum=0.9, warmup_strategy="linear", warmup_epochs=1, updates_per_epoch=3,
                      batch_scale=1, scheduler=True),
    "fp16_mp": dict(learning_rate=0.1, momentum=0.9, wd=1e-4, warmup_epochs=1, updates_per_epoch=4,
                    multi_precision=True, float16=True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mxnet(name):
    kw = dict(CASES[name])
    dtype = np.float16 if kw.pop("float16", False) else np.float32
    if kw.pop("scheduler", False):
        kw["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.2)
    opt = mx.optimizer.create("lbsgd", **kw)
    assert isinstance(opt, mx.optimizer.LBSGD)
    weight = mx.nd.array(REF["weight"], dtype=dtype)
    state = opt.create_state_multi_precision(0, weight)
    for step, grad in enumerate(REF["grads"]):
        opt.update_multi_precision(0, weight, mx.nd.array(grad, dtype=dtype), state)
        tol = 1e-3 if dtype == np.float16 else 1e-6
        np.testing.assert_allclose(weight.asnumpy(), REF[f"{name}_weight{step}"], rtol=tol, atol=tol,
                                   err_msg=f"{name}, step {step}")


def test_trainer_reusing_grad_buffers_sums_the_macro_batch():
    """Through gluon.Trainer the gradient buffer is rewritten by every backward: the macro-batch must still sum
    both gradients (the first is copied)."""
    net = mx.gluon.nn.Dense(1, use_bias=False, in_units=2)
    net.initialize(mx.init.Constant(1.0))
    trainer = mx.gluon.Trainer(net.collect_params(), "lbsgd",
                               dict(learning_rate=1.0, batch_scale=2, warmup_epochs=0))
    xs = [mx.nd.array([[1.0, 0.0]]), mx.nd.array([[0.0, 3.0]])]
    for x in xs:
        with mx.autograd.record():
            y = net(x)
        y.backward()
        trainer.step(1)
    # mean of the two gradients [1, 0] and [0, 3], times lr * batch_scale (warmup over: mult = 2)
    np.testing.assert_allclose(net.weight.data().asnumpy(), [[1 - 1.0, 1 - 3.0]])


def test_states_roundtrip_keeps_the_warmup_count(tmp_path):
    opt = mx.optimizer.LBSGD(learning_rate=0.1, warmup_epochs=1, updates_per_epoch=10, batch_scale=4)
    updater = mx.optimizer.get_updater(opt)
    w = mx.nd.ones((2,))
    for _ in range(3):
        updater(0, mx.nd.ones((2,)), w)
    path = str(tmp_path / "lbsgd.states")
    with open(path, "wb") as f:
        f.write(updater.get_states(dump_optimizer=True))
    other = mx.optimizer.get_updater(mx.optimizer.LBSGD())
    with open(path, "rb") as f:
        other.set_states(f.read())
    assert other.optimizer.batch_scale == 4 and other.optimizer.cumgrads[0]["num_cums"] == 3


def test_bad_settings_are_clear_errors():
    with pytest.raises(mx.MXNetError, match="warmup_strategy"):
        mx.optimizer.LBSGD(warmup_strategy="cosine")
    with pytest.raises(mx.MXNetError, match="batch_scale"):
        mx.optimizer.LBSGD(batch_scale=0)
