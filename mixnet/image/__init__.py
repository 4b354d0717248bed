"""`mx.image` (also `mx.img`): image decoding, resizing, cropping and rotation, augmenters and ImageIter, as
MXNet 1.x's."""
from .image import *  # noqa: F401,F403
from .augment import *  # noqa: F401,F403
from .iter import ImageIter  # noqa: F401
