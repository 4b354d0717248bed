"""gluon.contrib: contributed layers (MXNet 1.x `mx.gluon.contrib`)."""
from . import nn  # noqa: F401
