"""`mx.image` (also `mx.img`): image decoding, resizing, cropping and rotation, as MXNet 1.x's."""
from .image import *  # noqa: F401,F403
from .image import __all__  # noqa: F401
