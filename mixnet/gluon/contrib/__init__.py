"""gluon.contrib: contributed layers and recurrent cells (MXNet 1.x `mx.gluon.contrib`)."""
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
from . import data  # noqa: F401  (IntervalSampler, WikiText datasets)
from . import estimator  # noqa: F401  (Estimator.fit/evaluate and event handlers)
