"""gluon.contrib.data (MXNet 1.x): `IntervalSampler` and the WikiText language-model datasets (`text`)."""
from . import sampler, text  # noqa: F401
from .sampler import IntervalSampler  # noqa: F401
