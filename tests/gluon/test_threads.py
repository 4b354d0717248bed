"""Hybridized blocks called from several threads give exactly the results of sequential calls: inference with and
without static_alloc, fused and unfused, first calls raced, training on separate nets, and forward values and
`autograd.grad` gradients when several threads record calls of one block."""
import threading
import time

import numpy as np
import pytest

import mixnet as mx
from mixnet import autograd, config, gluon
from mixnet.gluon import cached_op, nn

THREADS = 4


def _in_threads(work, jobs, threads=THREADS):
    """Runs work(job) for every job, the jobs dealt round-robin to `threads` threads that start together.
    Returns the results in job order; an exception in a thread is raised here."""
    results, errors = [None] * len(jobs), []
    start = threading.Barrier(threads)

    def worker(t):
        try:
            start.wait()
            for k in range(t, len(jobs), threads):
                results[k] = work(jobs[k])
        except BaseException as err:      # noqa: BLE001 - handed to the test's thread
            errors.append(err)

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(60)
    assert not any(thread.is_alive() for thread in pool), "a thread hangs"
    if errors:
        raise errors[0]
    return results


class _Chain(gluon.HybridBlock):
    """Dense layers around an elementwise chain that fuses into one kernel."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.fc1 = nn.Dense(48, in_units=20)
            self.fc2 = nn.Dense(6, in_units=48)

    def hybrid_forward(self, F, x):
        h = self.fc1(x)
        return self.fc2(F.tanh(h * 0.5 + 1) * F.sigmoid(h) - h * 0.25)


def _mlp():
    return _Chain(), (32, 20)


def _convnet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, 3, in_channels=3, activation="relu"), nn.MaxPool2D(), nn.Flatten(),
            nn.Dense(16, in_units=6 * 5 * 5, activation="tanh"), nn.Dense(4, in_units=16))
    return net, (8, 3, 12, 12)


def _inputs(shape, count, seed=0):
    rng = np.random.default_rng(seed)
    return [mx.nd.array(rng.standard_normal(shape).astype(np.float32)) for _ in range(count)]


@pytest.mark.parametrize("static_alloc", [True, False])
@pytest.mark.parametrize("fusion", [True, False])
@pytest.mark.parametrize("make", [_mlp, _convnet])
def test_one_block_called_from_threads_gives_the_sequential_results(make, fusion, static_alloc, monkeypatch):
    monkeypatch.setattr(config, "FUSE", fusion)
    net, shape = make()
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=static_alloc)
    xs = _inputs(shape, THREADS * 30)
    want = [net(x).asnumpy() for x in xs]
    plan = net._last_graph.inference
    assert (plan.fused_groups > 0) == (fusion and make is _mlp)
    assert (plan.memory_report()["planned"] is not None) == static_alloc
    got = _in_threads(lambda x: net(x).asnumpy(), xs)
    wrong = [k for k, (a, b) in enumerate(zip(want, got)) if not np.array_equal(a, b)]
    assert not wrong, f"{len(wrong)} of {len(xs)} threaded calls differ from the sequential ones"
    assert len(plan._current._idle) <= cached_op.IDLE_BUFFER_SETS


def test_buffer_sets_beyond_the_kept_ones_are_made_for_the_call_and_dropped(monkeypatch):
    monkeypatch.setattr(cached_op, "IDLE_BUFFER_SETS", 1)
    net, shape = _mlp()
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True)
    xs = _inputs(shape, THREADS * 20, seed=1)
    want = [net(x).asnumpy() for x in xs]
    got = _in_threads(lambda x: net(x).asnumpy(), xs)
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
    assert len(net._last_graph.inference._current._idle) == 1


class _Counted(gluon.HybridBlock):
    """A Dense layer with a deferred input size that counts its traces."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.traces = 0
        with self.name_scope():
            self.fc = nn.Dense(8)

    def hybrid_forward(self, F, x):
        if F is mx.sym:
            self.traces += 1
        return F.relu(self.fc(x)) * 2


def test_a_first_call_raced_from_threads_traces_and_initializes_once(monkeypatch):
    built = []
    real = cached_op.InferencePlan

    def counted(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(cached_op, "InferencePlan", counted)
    net = _Counted()
    net.initialize(mx.init.Uniform())                   # the weight's shape is known only at the first call
    net.hybridize(static_alloc=True)
    x = _inputs((4, 10), 1)[0]
    got = _in_threads(lambda _: net(x).asnumpy(), list(range(THREADS)))
    assert net.traces == 1 and len(net._cached_graphs) == 1 and len(built) == 1
    want = net(x).asnumpy()                            # the weights every thread saw: initialized once
    for out in got:
        np.testing.assert_array_equal(out, want)


def _train(net, xs, labels, steps):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    loss_fn.hybridize(static_alloc=True)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    losses = []
    for k in range(steps):
        x, y = xs[k % len(xs)], labels[k % len(labels)]
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        losses.append(loss.asnumpy())
    return losses, [p.data().asnumpy() for p in net.collect_params().values()]


@pytest.mark.parametrize("static_alloc", [True, False])
def test_two_nets_trained_in_two_threads_match_sequential_training(static_alloc):
    def fresh():
        nets = []
        for seed, make in ((1, _mlp), (2, _convnet)):
            mx.random.seed(seed)
            net, shape = make()
            net.initialize(mx.init.Xavier())
            net.hybridize(static_alloc=static_alloc)
            rng = np.random.default_rng(seed)
            labels = [mx.nd.array(rng.integers(0, 4, shape[0]).astype(np.float32)) for _ in range(3)]
            nets.append((net, _inputs(shape, 3, seed), labels))
        return nets

    want = [_train(net, xs, labels, 8) for net, xs, labels in fresh()]
    got = _in_threads(lambda job: _train(*job, 8), fresh(), threads=2)
    for (losses, params), (want_losses, want_params) in zip(got, want):
        for a, b in zip(losses, want_losses):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(params, want_params):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("static_alloc", [True, False])
def test_threads_recording_calls_of_one_block_get_their_own_outputs_and_gradients(static_alloc):
    net, shape = _mlp()
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=static_alloc)
    params = [p.data() for p in net.collect_params().values()]

    def step(x):
        with autograd.record():
            out = net(x)
            loss = (out * out).sum()
        return [out.asnumpy()] + [g.asnumpy() for g in autograd.grad(loss, params)]

    xs = _inputs(shape, THREADS * 10, seed=3)
    want = [step(x) for x in xs]
    got = _in_threads(step, xs)
    for k, (a, b) in enumerate(zip(want, got)):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v, err_msg=f"call {k}")


def test_concurrent_backward_into_one_parameter_leaves_the_outputs_right():
    """backward() from several threads into the same parameters' gradient buffers races on those buffers (not
    supported: cached_op.py, "Threads"), but each call's outputs are still its own."""
    net, shape = _mlp()
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True)

    def step(x):
        with autograd.record():
            out = net(x)
        out.backward()
        return out.asnumpy()

    xs = _inputs(shape, THREADS * 10, seed=4)
    want = [step(x) for x in xs]
    got = _in_threads(step, xs)
    assert all(np.array_equal(a, b) for a, b in zip(want, got))


def test_calls_running_while_the_fused_plan_is_swapped_in_stay_right(monkeypatch):
    from mixnet.codegen import numba_cpu
    shape = _mlp()[1]
    warm, _ = _mlp()                                   # its kernel goes into the cache: no compiling child below
    warm.initialize()
    warm.hybridize()
    warm(_inputs(shape, 1)[0])
    monkeypatch.setattr(config, "COMPILE_BACKGROUND", True)
    gate = threading.Event()
    real = numba_cpu.compile_kernel

    def held_compile(*args, **kwargs):
        gate.wait(10)                                  # the fused plan comes only once the threads run
        return real(*args, **kwargs)

    monkeypatch.setattr(numba_cpu, "compile_kernel", held_compile)
    net, _ = _mlp()
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True)
    xs = _inputs(shape, 16, seed=5)
    want = [net(x).asnumpy() for x in xs]              # unfused: the kernel is held back
    plan = net._last_graph.inference
    assert plan.fused_groups == 0

    def calls(t):
        """Calls until this thread has run 10 calls on the fused plan (at most 20 s): some before the swap,
        some while it happens, some after."""
        done, fused, deadline = [], 0, time.monotonic() + 20
        while fused < 10 and time.monotonic() < deadline:
            k = (t + len(done)) % len(xs)
            fused += plan.fused_groups > 0
            done.append((k, net(xs[k]).asnumpy()))
            if t == 0 and len(done) == 5:
                gate.set()
        return done

    got = _in_threads(calls, list(range(THREADS)))
    assert plan.fused_groups == 1
    assert len(got[0]) > 10                            # thread 0 ran unfused calls before it let the kernel come
    for done in got:
        for k, out in done:                            # fused and unfused agree to rounding, not bitwise
            np.testing.assert_allclose(out, want[k], rtol=1e-5, atol=1e-6, err_msg=f"input {k}")
