"""mx.mod (Module, BucketingModule), mx.model checkpoints and mx.callback.

The reference files in tests/data/module/ were made by real MXNet 1.9.1 (tests/data/make_module_checkpoint.py).
"""
import json
import logging
import os

import numpy as np
import pytest

import mixnet as mx
from mixnet.base import MXNetError

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "module")
PREFIX = os.path.join(DATA, "mlp")


def mlp(hidden=5, classes=3):
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=classes, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def reference_io():
    with open(os.path.join(DATA, "mlp-io.json")) as f:
        io = json.load(f)
    return (np.array(io["data"], dtype=np.float32), np.array(io["label"], dtype=np.float32),
            np.array(io["predict"], dtype=np.float32))


def random_params(seed=0):
    rng = np.random.RandomState(seed)
    shapes = {"fc1_weight": (5, 6), "fc1_bias": (5,), "fc2_weight": (3, 5), "fc2_bias": (3,)}
    return {k: mx.nd.array(rng.normal(0, 0.5, s).astype(np.float32)) for k, s in shapes.items()}


def numpy_params(params):
    return {k: v.asnumpy() for k, v in params.items()}


def test_fit_matches_mxnet_training_from_its_checkpoint():
    # MXNet's checkpoint before training, trained the same way, gives MXNet's parameters after training
    x, y, _ = reference_io()
    _, args, auxs = mx.model.load_checkpoint(PREFIX, 0)
    _, expected, _ = mx.model.load_checkpoint(PREFIX, 2)
    it = mx.io.NDArrayIter(x, y, batch_size=4, shuffle=False)
    mod = mx.mod.Module(mlp())
    mod.fit(it, num_epoch=2, optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            arg_params=args, aux_params=auxs, eval_metric="acc")
    got, _ = mod.get_params()
    assert sorted(got) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(got[name].asnumpy(), expected[name].asnumpy(), rtol=1e-5, atol=1e-6)


def test_module_load_predicts_like_mxnet_and_saves_the_same_bytes(tmp_path):
    x, _, expected = reference_io()
    mod = mx.mod.Module.load(PREFIX, 2)
    mod.bind(data_shapes=[("data", (4, 6))], for_training=False)
    np.testing.assert_allclose(mod.predict(mx.io.NDArrayIter(x, batch_size=4)).asnumpy(), expected, rtol=1e-5,
                               atol=1e-6)
    # a numpy array predicts in one batch (the module re-binds for 8 rows)
    np.testing.assert_allclose(mod.predict(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    out = str(tmp_path / "copy")
    mod.save_checkpoint(out, 2)
    with open(PREFIX + "-0002.params", "rb") as f, open(out + "-0002.params", "rb") as g:
        assert f.read() == g.read()
    sym, args, auxs = mx.model.load_checkpoint(out, 2)
    assert sym.list_arguments() == mlp().list_arguments() and auxs == {}


def test_fit_equals_the_same_training_done_with_the_executor_by_hand():
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (12, 6)).astype(np.float32)
    y = rng.randint(0, 3, (12,)).astype(np.float32)
    init = random_params()
    lr, batch = 0.5, 4

    mod = mx.mod.Module(mlp())
    mod.fit(mx.io.NDArrayIter(x, y, batch_size=batch), num_epoch=3, optimizer="sgd",
            optimizer_params={"learning_rate": lr}, arg_params=init, eval_metric="acc")
    got, _ = mod.get_params()

    exe = mlp().simple_bind(mx.cpu(), data=(batch, 6), softmax_label=(batch,))
    for name, value in init.items():
        value.copyto(exe.arg_dict[name])
    for _ in range(3):
        for start in range(0, 12, batch):
            exe.forward(is_train=True, data=x[start:start + batch], softmax_label=y[start:start + batch])
            exe.backward()
            for name in init:                    # plain SGD, gradients rescaled by 1/batch_size as Module does
                w = exe.arg_dict[name]
                w[:] = w - lr * exe.grad_dict[name] / batch
    for name in init:
        np.testing.assert_allclose(got[name].asnumpy(), exe.arg_dict[name].asnumpy(), rtol=1e-5, atol=1e-6)


def test_step_by_step_api_and_score():
    x, y, _ = reference_io()
    it = mx.io.NDArrayIter(x, y, batch_size=4)
    mod = mx.mod.Module(mlp())
    mod.bind(it.provide_data, it.provide_label, inputs_need_grad=True)
    assert mod.data_shapes[0].shape == (4, 6) and mod.label_shapes[0].name == "softmax_label"
    assert mod.output_shapes == [("softmax_output", (4, 3))]
    mod.init_params(initializer=mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    before = numpy_params(mod.get_params()[0])
    batch = next(iter(it))
    mod.forward(batch, is_train=True)
    mod.backward()
    (grad,) = mod.get_input_grads()
    assert grad.shape == (4, 6) and np.abs(grad.asnumpy()).sum() > 0
    mod.update()
    after = numpy_params(mod.get_params()[0])
    assert all(not np.allclose(before[k], after[k]) for k in ("fc2_weight", "fc2_bias"))
    metric = mx.metric.Accuracy()
    mod.update_metric(metric, batch.label)
    assert metric.num_inst == 4
    (name, acc), = mod.score(it, "acc")
    assert name == "accuracy" and 0.0 <= acc <= 1.0


def test_fixed_params_are_not_updated_and_init_attributes_are_honoured():
    data = mx.sym.var("data")
    w = mx.sym.var("fc_weight", init=mx.init.Constant(0.5))
    net = mx.sym.make_loss(mx.sym.sum(mx.sym.FullyConnected(data, weight=w, num_hidden=2, name="fc")))
    mod = mx.mod.Module(net, label_names=None, fixed_param_names=["fc_weight"])
    mod.bind([("data", (3, 4))])
    mod.init_params(initializer=mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    mod.forward(mx.io.DataBatch([mx.nd.ones((3, 4))]), is_train=True)
    mod.backward()
    mod.update()
    args, _ = mod.get_params()
    assert (args["fc_weight"].asnumpy() == 0.5).all()           # fixed: keeps its Constant init
    np.testing.assert_allclose(args["fc_bias"].asnumpy(), -1.0 * np.ones(2), rtol=1e-6)  # sum's grad 3 / batch 3


def test_optimizer_states_round_trip_continues_training_exactly(tmp_path):
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (8, 6)).astype(np.float32)
    y = rng.randint(0, 3, (8,)).astype(np.float32)
    opt = {"learning_rate": 0.1, "momentum": 0.9}

    def it():
        return mx.io.NDArrayIter(x, y, batch_size=4)

    straight = mx.mod.Module(mlp())
    straight.fit(it(), num_epoch=2, optimizer_params=opt, arg_params=random_params())
    first = mx.mod.Module(mlp())
    first.fit(it(), num_epoch=1, optimizer_params=opt, arg_params=random_params())
    prefix = str(tmp_path / "ckpt")
    first.save_checkpoint(prefix, 1, save_optimizer_states=True)
    assert os.path.exists(prefix + "-0001.states")
    resumed = mx.mod.Module.load(prefix, 1, load_optimizer_states=True)
    resumed.fit(it(), num_epoch=2, begin_epoch=1, optimizer_params=opt)
    want, got = straight.get_params()[0], resumed.get_params()[0]
    for name in want:
        np.testing.assert_allclose(got[name].asnumpy(), want[name].asnumpy(), rtol=1e-5, atol=1e-6)


def test_forward_with_another_batch_size_reshapes_and_keeps_params():
    mod = mx.mod.Module(mlp())
    mod.bind([("data", (4, 6))], [("softmax_label", (4,))])
    mod.init_params(arg_params=random_params())
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 6))], [mx.nd.zeros((2,))]), is_train=False)
    assert mod.get_outputs()[0].shape == (2, 3)
    assert mod.data_shapes[0].shape == (2, 6)
    np.testing.assert_array_equal(mod.get_params()[0]["fc1_weight"].asnumpy(),
                                  random_params()["fc1_weight"].asnumpy())


def bucket_sym_gen(seq_len):
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, flatten=False, name="fc")
    net = mx.sym.mean(net, axis=1)
    return mx.sym.SoftmaxOutput(net, name="softmax"), ("data",), ("softmax_label",)


def bucket_batch(seq_len, seed):
    rng = np.random.RandomState(seed)
    data = [mx.nd.array(rng.uniform(-1, 1, (2, seq_len, 4)))]
    label = [mx.nd.array(rng.randint(0, 3, (2,)))]
    return mx.io.DataBatch(data, label, bucket_key=seq_len,
                           provide_data=[mx.io.DataDesc("data", (2, seq_len, 4))],
                           provide_label=[mx.io.DataDesc("softmax_label", (2,))])


def test_bucketing_module_buckets_share_parameters():
    mod = mx.mod.BucketingModule(bucket_sym_gen, default_bucket_key=5)
    mod.bind([("data", (2, 5, 4))], [("softmax_label", (2,))])
    mod.init_params(initializer=mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    before = numpy_params(mod.get_params()[0])
    batch = bucket_batch(3, seed=0)
    mod.forward(batch, is_train=True)
    mod.backward()
    mod.update()
    assert mod.get_outputs()[0].shape == (2, 3)
    assert sorted(mod._buckets) == [3, 5]
    short, default = mod._buckets[3], mod._buckets[5]
    for name in ("fc_weight", "fc_bias"):       # one array per parameter, whichever bucket runs
        assert short._exec.arg_dict[name] is default._exec.arg_dict[name]
    after = numpy_params(mod.get_params()[0])
    assert not np.allclose(before["fc_weight"], after["fc_weight"])
    # the default bucket sees the update made through bucket 3
    mod.forward(bucket_batch(5, seed=1), is_train=False)
    x = bucket_batch(5, seed=1).data[0].asnumpy()
    logits = (x @ after["fc_weight"].T + after["fc_bias"]).mean(axis=1)
    expected = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), expected / expected.sum(axis=1, keepdims=True),
                               rtol=1e-5)


def test_callbacks(tmp_path, caplog):
    x, y, _ = reference_io()
    prefix = str(tmp_path / "cb")
    batches = []
    mod = mx.mod.Module(mlp())
    with caplog.at_level(logging.INFO):
        mod.fit(mx.io.NDArrayIter(x, y, batch_size=2), num_epoch=2, arg_params=random_params(),
                epoch_end_callback=mx.callback.do_checkpoint(prefix, period=2),
                batch_end_callback=[mx.callback.Speedometer(2, frequent=2), mx.callback.log_train_metric(3),
                                    lambda p: batches.append((p.epoch, p.nbatch))])
    assert batches == [(e, b) for e in range(2) for b in range(4)]
    assert not os.path.exists(prefix + "-0001.params") and os.path.exists(prefix + "-0002.params")
    _, args, _ = mx.model.load_checkpoint(prefix, 2)
    np.testing.assert_array_equal(args["fc1_weight"].asnumpy(), mod.get_params()[0]["fc1_weight"].asnumpy())
    text = caplog.text
    assert "Speed:" in text and "Iter[0] Batch[3] Train-accuracy=" in text and "Epoch[1] Train-accuracy=" in text


def test_clear_errors(tmp_path):
    mod = mx.mod.Module(mlp())
    with pytest.raises(MXNetError, match="bind"):
        mod.forward(mx.io.DataBatch([mx.nd.ones((4, 6))]))
    with pytest.raises(ValueError, match="not found in symbol.list_arguments"):
        mx.mod.Module(mlp(), data_names=("pixels",))
    with pytest.raises(MXNetError, match="one context"):
        mx.mod.Module(mlp(), context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([("data", (4, 6))], [("softmax_label", (4,))], for_training=False)
    mod.init_params()
    with pytest.raises(MXNetError, match="for_training"):
        mod.backward()
    bad = str(tmp_path / "bad")
    mlp().save(bad + "-symbol.json")
    mx.nd.save(bad + "-0001.params", {"weight": mx.nd.ones((2,))})
    with pytest.raises(MXNetError, match="'arg:<name>'"):
        mx.model.load_checkpoint(bad, 1)
