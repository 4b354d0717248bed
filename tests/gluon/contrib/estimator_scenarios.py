"""Tiny Estimator scenarios that run unchanged under real MXNet 1.9.1 and under mixnet.

`run_all(mx, workdir)` returns a JSON-able dict: the order in which handlers see events (and what they observe:
trainer updates, metric counts), where fit stops (epochs, batches, a handler's stop), which epoch early
stopping picks for scripted metric sequences, the checkpoint files left on disk (periods, max_checkpoints,
resume), LoggingHandler's lines with times masked, and the numbers after training a net with fixed weights.
make_estimator_reference.py stores MXNet's answers in estimator_reference.json; test_estimator_reference.py
compares mixnet's with them. Only mixnet's documented bug fixes are kept out of the scenarios (early stopping
'auto' on a loss, deleting checkpoints found on resume).
"""
import io
import logging
import os
import re

import numpy as np

X = np.arange(36, dtype=np.float32).reshape(12, 3) / 36.0
Y = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0], dtype=np.float32)
W1 = (np.arange(12, dtype=np.float32).reshape(4, 3) - 6.0) / 10.0
W2 = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3.0) / 7.0


def _loader(mx, n=12, batch_size=4):
    data = mx.gluon.data.ArrayDataset(mx.nd.array(X[:n]), mx.nd.array(Y[:n]))
    return mx.gluon.data.DataLoader(data, batch_size=batch_size, shuffle=False)


def _net(mx, hybrid=False):
    nn = mx.gluon.nn
    net = nn.HybridSequential() if hybrid else nn.Sequential()
    net.add(nn.Dense(4, activation="relu", in_units=3), nn.Dense(2, in_units=4))
    net.initialize(mx.init.Zero())
    net[0].weight.set_data(mx.nd.array(W1))
    net[1].weight.set_data(mx.nd.array(W2))
    if hybrid:
        net.hybridize()
    return net


def _estimator(mx, net=None, **kwargs):
    from_mx = mx.gluon.contrib.estimator
    net = net or _net(mx)
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    est = from_mx.Estimator(net, loss=mx.gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer, **kwargs)
    est.logger.handlers = []      # keep the reference run quiet; tests attach their own stream
    return est


def _scripted_metric(mx, name, values):
    """A metric whose value in epoch k is values[k] (the epoch is told by a _Clock handler)."""
    class Scripted(mx.metric.EvalMetric):
        def __init__(self):
            self.epoch = 0
            super().__init__(name)

        def update(self, labels, preds):
            self.num_inst += 1

        def get(self):
            return (self.name, float(values[min(self.epoch, len(values) - 1)]))
    return Scripted()


def _clock(mx, target):
    ev = mx.gluon.contrib.estimator.event_handler

    class Clock(ev.EpochBegin):
        priority = -5000

        def __init__(self):
            self.epoch = 0
            self.target = target

        def epoch_begin(self, estimator, *args, **kwargs):
            self.target.epoch = self.epoch
            self.epoch += 1
    return Clock()


def _recorder(mx, tag, priority, log):
    ev = mx.gluon.contrib.estimator.event_handler

    class Recorder(ev.TrainBegin, ev.EpochBegin, ev.BatchBegin, ev.BatchEnd, ev.EpochEnd, ev.TrainEnd):
        def __init__(self):
            self.priority = priority

        def _note(self, est, event):
            updates = est.trainer._optimizer.num_update
            train_n = est.train_metrics[0].num_inst
            val_n = est.val_metrics[0].num_inst
            log.append("%s:%s:upd=%d:train_n=%d:val_n=%d" % (tag, event, updates, train_n, val_n))

        def train_begin(self, est, *args, **kwargs):
            self._note(est, "train_begin")

        def epoch_begin(self, est, *args, **kwargs):
            self._note(est, "epoch_begin")

        def batch_begin(self, est, *args, **kwargs):
            self._note(est, "batch_begin")

        def batch_end(self, est, *args, **kwargs):
            self._note(est, "batch_end")
            return False

        def epoch_end(self, est, *args, **kwargs):
            self._note(est, "epoch_end")
            return False

        def train_end(self, est, *args, **kwargs):
            self._note(est, "train_end")
    return Recorder()


def handler_order(mx):
    """Events seen by recorders around the default handlers' priorities, with validation data."""
    log = []
    est = _estimator(mx)
    recorders = [_recorder(mx, "r%s" % p, p, log) for p in (-3000, -1500, -1000, 0, np.inf)]
    est.fit(_loader(mx), val_data=_loader(mx, n=8), epochs=2, event_handlers=recorders)
    types = [type(h).__name__ for h in est._prepare_default_handlers(val_data=_loader(mx), event_handlers=[])]
    return {"events": log, "default_handlers": types}


def stopping(mx):
    """How far fit runs for epochs=, batches= and a handler that stops at a batch or an epoch end."""
    ev = mx.gluon.contrib.estimator.event_handler
    out = {}
    for label, kwargs in (("epochs2", {"epochs": 2}), ("batches5", {"batches": 5}), ("batches3", {"batches": 3})):
        log = []
        est = _estimator(mx)
        est.fit(_loader(mx), event_handlers=[_recorder(mx, "r", 0, log)], **kwargs)
        out[label] = [line.split(":")[1] for line in log]

    class StopAt(ev.BatchEnd, ev.EpochEnd):
        def __init__(self, batch=None, epoch=None):
            self.batch, self.epoch, self.batches, self.epochs = batch, epoch, 0, 0

        def batch_end(self, est, *args, **kwargs):
            self.batches += 1
            return self.batches == self.batch

        def epoch_end(self, est, *args, **kwargs):
            self.epochs += 1
            return self.epochs == self.epoch

    for label, handler in (("stop_batch4", StopAt(batch=4)), ("stop_epoch2", StopAt(epoch=2))):
        est = _estimator(mx)
        est.fit(_loader(mx), epochs=5, event_handlers=[handler])
        out[label] = [handler.batches, handler.epochs, est.trainer._optimizer.num_update]
    return out


def evaluate_events(mx):
    log = []
    est = _estimator(mx)
    est.evaluate(_loader(mx, n=8), event_handlers=[_recorder(mx, "r", 0, log)])
    return {"events": log, "metrics": [[n, round(v, 5)] for n, v in (m.get() for m in est.val_metrics)]}


EARLY_CASES = [
    # name, mode, values per epoch, patience, min_delta, baseline
    ("min_p0", "min", [5, 4, 4, 3, 2, 1], 0, 0, None),
    ("min_p1", "min", [5, 4, 4, 3, 3, 3, 2], 1, 0, None),
    ("min_p2", "min", [5, 4, 4, 3, 3, 3, 2, 2, 2, 2], 2, 0, None),
    ("min_delta", "min", [5, 4.5, 4.2, 4.0, 3.95, 3.9, 1], 1, 0.25, None),
    ("max_p1", "max", [0.1, 0.2, 0.2, 0.3, 0.25, 0.2, 0.9], 1, 0, None),
    ("max_delta", "max", [0.1, 0.3, 0.35, 0.38, 0.5, 0.52, 0.53], 0, 0.1, None),
    ("min_baseline", "min", [5, 4, 3, 2, 1], 1, 0, 3.5),
    ("max_baseline", "max", [0.1, 0.2, 0.3, 0.9, 0.9], 1, 0, 0.25),
    ("auto_acc", "auto", [0.1, 0.2, 0.2, 0.2, 0.9], 1, 0, None),
]


def early_stopping(mx):
    ev = mx.gluon.contrib.estimator.event_handler
    out = {}
    for name, mode, values, patience, min_delta, baseline in EARLY_CASES:
        metric = _scripted_metric(mx, "acc" if "acc" in name else "score", values)
        est = _estimator(mx, train_metrics=[metric])
        stop = ev.EarlyStoppingHandler(monitor=metric, patience=patience, min_delta=min_delta, mode=mode,
                                       baseline=baseline)
        est.fit(_loader(mx), epochs=12, event_handlers=[_clock(mx, metric), stop])
        out[name] = {"current_epoch": stop.current_epoch, "stopped_epoch": stop.stopped_epoch,
                     "best": float(stop.best), "updates": est.trainer._optimizer.num_update}
    return out


def _files(folder):
    return sorted(os.listdir(folder))


def checkpoints(mx, workdir):
    ev = mx.gluon.contrib.estimator.event_handler
    out = {}
    folder = os.path.join(workdir, "epochs")
    metric = _scripted_metric(mx, "acc", [0.2, 0.5, 0.4, 0.45, 0.6])
    est = _estimator(mx, train_metrics=[metric])
    handler = ev.CheckpointHandler(folder, model_prefix="m", monitor=metric, save_best=True, mode="max",
                                   max_checkpoints=2)
    est.fit(_loader(mx), epochs=5, event_handlers=[_clock(mx, metric), handler])
    out["epochs"] = {"files": _files(folder), "best": float(handler.best),
                     "counters": [handler.current_epoch, handler.current_batch]}

    folder = os.path.join(workdir, "batches")
    est = _estimator(mx, net=_net(mx, hybrid=True))
    handler = ev.CheckpointHandler(folder, model_prefix="h", epoch_period=None, batch_period=2, max_checkpoints=3)
    est.fit(_loader(mx), batches=7, event_handlers=[handler])
    out["batches"] = {"files": _files(folder), "counters": [handler.current_epoch, handler.current_batch]}

    folder = os.path.join(workdir, "resume_epochs")
    est = _estimator(mx)
    est.fit(_loader(mx), epochs=2, event_handlers=[ev.CheckpointHandler(folder, model_prefix="r")])
    first = _files(folder)
    weights = est.net[0].weight.data().asnumpy()
    est2 = _estimator(mx)
    handler = ev.CheckpointHandler(folder, model_prefix="r", resume_from_checkpoint=True)
    loaded = []

    class Peek(ev.TrainBegin):
        priority = 10     # after the checkpoint handler (priority 0) loaded the weights

        def train_begin(self, est, *args, **kwargs):
            loaded.append(bool(np.array_equal(est.net[0].weight.data().asnumpy(), weights)))
    est2.fit(_loader(mx), epochs=5, event_handlers=[handler, Peek()])
    out["resume_epochs"] = {"first": first, "files": _files(folder), "max_epoch": est2.max_epoch,
                            "loaded": loaded, "trained": [handler.trained_epoch, handler.trained_batch]}

    folder = os.path.join(workdir, "resume_batches")
    est = _estimator(mx)
    est.fit(_loader(mx), batches=4, event_handlers=[
        ev.CheckpointHandler(folder, model_prefix="b", epoch_period=None, batch_period=2)])
    first = _files(folder)
    est2 = _estimator(mx)
    handler = ev.CheckpointHandler(folder, model_prefix="b", epoch_period=None, batch_period=2,
                                   resume_from_checkpoint=True)
    est2.fit(_loader(mx), batches=9, event_handlers=[handler])
    out["resume_batches"] = {"first": first, "files": _files(folder), "max_batch": est2.max_batch,
                             "trained": [handler.trained_epoch, handler.trained_batch]}
    return out


def _mask(line):
    line = re.sub(r"\d+\.\d+s\b", "<T>s", line)
    return re.sub(r"total \d+s", "total <T>s", line)


def logging_lines(mx):
    ev = mx.gluon.contrib.estimator.event_handler
    out = {}
    for label, interval in (("epoch", "epoch"), ("interval2", 2)):
        train = _scripted_metric(mx, "acc", [0.25, 0.5, 0.75])
        val = _scripted_metric(mx, "acc", [0.125, 0.375])
        est = _estimator(mx, train_metrics=[train], val_metrics=[val])
        stream = io.StringIO()
        est.logger.addHandler(logging.StreamHandler(stream))
        est.fit(_loader(mx), val_data=_loader(mx, n=8), epochs=2, event_handlers=[
            _clock(mx, train), ev.LoggingHandler(log_interval=interval, metrics=est.train_metrics)])
        out[label] = [_mask(line) for line in stream.getvalue().splitlines()]
    return out


def numbers(mx):
    """Training results with fixed weights and data: the loss metric and the weights after two epochs."""
    est = _estimator(mx)
    est.fit(_loader(mx), val_data=_loader(mx, n=8), epochs=2)
    return {"train": [[n, float(v)] for n, v in (m.get() for m in est.train_metrics)],
            "val": [[n, float(v)] for n, v in (m.get() for m in est.val_metrics)],
            "w1": est.net[0].weight.data().asnumpy().tolist(), "w2": est.net[1].weight.data().asnumpy().tolist(),
            "b2": est.net[1].bias.data().asnumpy().tolist()}


def run_all(mx, workdir):
    return {"handler_order": handler_order(mx), "stopping": stopping(mx), "evaluate": evaluate_events(mx),
            "early_stopping": early_stopping(mx), "checkpoints": checkpoints(mx, workdir),
            "logging": logging_lines(mx), "numbers": numbers(mx)}
