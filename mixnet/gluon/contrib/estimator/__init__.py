"""gluon.contrib.estimator: `Estimator.fit`/`evaluate` with event handlers (MXNet 1.9's API), plus progress bars.

    from mixnet.gluon.contrib.estimator import Estimator, EarlyStoppingHandler, CheckpointHandler
    est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer)
    est.fit(train_loader, val_data=val_loader, epochs=10,
            event_handlers=[EarlyStoppingHandler(monitor=est.val_metrics[0], patience=2)])

Modules: estimator (the loops), event_handler (the handlers and their mixins), batch_processor (one batch's
work), utils (argument checks and the error types). docs/estimator.md has the guide.
"""
from . import batch_processor, estimator, event_handler  # noqa: F401
from .batch_processor import *  # noqa: F401,F403
from .estimator import *  # noqa: F401,F403
from .event_handler import *  # noqa: F401,F403
from .utils import ContextError, EstimatorError  # noqa: F401
