"""mixnet.horovod pieces that need no MPI job: the optimizer wrapper's forwarding and the API's surface."""
import pytest

import mixnet as mx
import mixnet.horovod as hvd


def test_distributed_optimizer_reads_and_writes_the_wrapped_optimizer():
    inner = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    opt = hvd.DistributedOptimizer(inner)
    assert isinstance(opt, mx.optimizer.Optimizer)
    assert opt.learning_rate == 0.1 and opt.momentum == 0.9
    opt.rescale_grad = 0.25                    # what Trainer.step does
    opt.set_learning_rate(0.5)                 # a method Optimizer defines must act on the wrapped one
    assert inner.rescale_grad == 0.25 and inner.learning_rate == 0.5
    w = mx.nd.ones((2,))
    assert opt.create_state(0, w)._data.shape == (2,)
    with pytest.raises(AttributeError):
        opt._optimizer = None


def test_distributed_trainer_unwraps_a_distributed_optimizer(monkeypatch):
    # the trainer asks for the job's size (its rescale holds 1 / size, as Horovod's): a job of one, without MPI
    monkeypatch.setattr("mixnet.horovod.training.size", lambda: 1)
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    with pytest.warns(UserWarning, match="unwrapped"):
        trainer = hvd.DistributedTrainer(net.collect_params(), hvd.DistributedOptimizer(mx.optimizer.SGD()))
    assert type(trainer.optimizer) is mx.optimizer.SGD


def test_invalid_arguments_are_refused():
    with pytest.raises(ValueError, match="gradient_predivide_factor"):
        hvd.DistributedOptimizer(mx.optimizer.SGD(), gradient_predivide_factor=0)
    with pytest.raises(TypeError, match="Optimizer"):
        hvd.DistributedOptimizer("sgd")
    with pytest.raises(mx.base.MXNetError, match="global process set"):
        hvd.add_process_set([0])
    with pytest.raises(mx.base.MXNetError, match="global_process_set"):
        hvd.DistributedOptimizer(mx.optimizer.SGD(), process_set=hvd.ProcessSet([0]))
    hvd.shutdown()                             # (no-op unless something in this process called init)
    with pytest.raises(hvd.NotInitializedError, match="hvd.init"):
        hvd.rank()


def test_fp16_compression_round_trip():
    x = mx.nd.array([1.0, 2.5, -3.0])
    packed, ctx = hvd.Compression.fp16.compress(x)
    assert packed.dtype.__name__ == "float16"
    back = hvd.Compression.fp16.decompress(packed, ctx)
    assert back.dtype.__name__ == "float32" and back.asnumpy().tolist() == [1.0, 2.5, -3.0]
    same, none_ctx = hvd.Compression.none.compress(x)
    assert same is x and hvd.Compression.none.decompress(same, none_ctx) is x
